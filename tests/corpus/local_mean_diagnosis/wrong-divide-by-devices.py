# scenario: the summed partials divided by the number of shards (devices) instead of the valid-token count
# base: solution
# expect-fail: test-combine
# expect-message: divides the total by the number of shards
# expect-status: graded
# %% cell combine
def combine_partials(sums, counts):
    """The global masked mean from per-shard sums and counts: one division, at the end.

    sums, counts: (k,)  ->  a float
    """
    return float(np.sum(sums) / len(sums))


print("from partials:", combine_partials(sums, counts))
