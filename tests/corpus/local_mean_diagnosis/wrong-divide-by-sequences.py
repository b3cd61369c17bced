# scenario: the masked loss divided by the number of sequences instead of the number of valid tokens
# base: solution
# expect-fail: test-masked-mean
# expect-message: number of sequences
# expect-status: graded
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    """Mean loss over the valid target tokens of the whole batch.

    token_losses: (S, T) float; mask: (S, T) bool, True where the token is a target
    returns: a float
    """
    per_sequence = np.sum(token_losses * mask, axis=1)
    return float(per_sequence.sum() / token_losses.shape[0])


print("global masked mean:", masked_token_mean(token_losses, mask))
