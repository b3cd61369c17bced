# scenario: combine_partials divides the total by the number of non-empty shards
# base: solution
# expect-fail: test-combine
# expect-message: the global mean from partial sums and counts
# %% cell combine
def combine_partials(sums, counts):
    return float(np.sum(sums) / np.count_nonzero(counts))
