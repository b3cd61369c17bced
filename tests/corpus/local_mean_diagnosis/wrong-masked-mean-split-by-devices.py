# scenario: masked_token_mean splits the sequences into the notebook's device blocks (np.split(token_losses, len(devices))) and adds each block's sum and count before the one division: right whenever the devices divide the sequences evenly, as every fixed hidden batch did (three or two sequences per device); the docstring allows any (S, T), and a batch of 5, 7 or 9 sequences cannot be split that way
# base: solution
# expect-fail: test-masked-mean
# expect-message: raised ValueError
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    """Mean loss over the valid target tokens of the whole batch.

    token_losses: (S, T) float; mask: (S, T) bool, True where the token is a target
    returns: a float
    """
    block_sums = [np.sum(np.where(m, l, 0.0)) for l, m in zip(np.split(token_losses, len(devices)),
                                                               np.split(mask, len(devices)))]
    block_counts = [np.sum(m) for m in np.split(mask, len(devices))]
    return float(sum(block_sums) / sum(block_counts))


print("global masked mean:", masked_token_mean(token_losses, mask))
