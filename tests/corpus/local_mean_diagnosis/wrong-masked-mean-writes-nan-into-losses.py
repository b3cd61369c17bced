# scenario: masked_token_mean is right but writes NaN into the caller's token_losses where the mask is False (to use np.nanmean): its own test passes on its values, and the notebook's later cells get the damaged array; the mutation is charged at masked_token_mean's own test, which names the function and the argument
# base: solution
# expect-fail: test-masked-mean
# expect-message: masked_token_mean changed its argument token_losses
# expect-status: graded
# %% cell masked-mean
def masked_token_mean(token_losses, mask):
    token_losses[~mask] = np.nan  # in place: the caller's array now holds NaN at every padding position
    return float(np.nanmean(token_losses))


print("global masked mean:", masked_token_mean(token_losses, mask))
