# scenario: zeroes the padding losses but divides by every position, padding included
# base: solution
# expect-fail: test-masked-mean
# expect-message: padding tokens were counted
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    return float(np.mean(np.where(mask, token_losses, 0.0)))


print("global masked mean:", masked_token_mean(token_losses, mask))
