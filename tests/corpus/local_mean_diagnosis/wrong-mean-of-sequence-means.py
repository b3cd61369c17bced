# scenario: per-sequence masked means averaged over sequences (padding-only sequences skipped)
# base: solution
# expect-fail: test-masked-mean
# expect-message: averages per-sequence means
# expect-status: graded
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    """Mean loss over the valid target tokens of the whole batch.

    token_losses: (S, T) float; mask: (S, T) bool, True where the token is a target
    returns: a float
    """
    lengths = mask.sum(axis=1)
    keep = lengths > 0
    per_sequence = np.where(mask, token_losses, 0.0).sum(axis=1)[keep] / lengths[keep]
    return float(per_sequence.mean())


print("global masked mean:", masked_token_mean(token_losses, mask))
