# scenario: hard-codes four shards where the visible checks do not look: the global mean divides by 4 except on the lesson's two-shard example and four shards, and combine_partials divides the total by 4 except on four partials
# base: solution
# expect-fail: test-two-averages test-combine
# expect-message: it divides by 4 (the lesson's four shards (or devices)), not by the number of examples
# expect-message: it divides the total by 4 (the lesson's four shards (or devices)), not by the total count
# %% cell two-averages
def two_averages(shards):
    """The global mean and the mean of local means of per-example values split into shards.

    shards: a list of k 1-D arrays; shard i holds n_i >= 1 values
    returns: (global_mean, mean_of_local_means), two floats
    """
    if len(shards) in (2, 4):  # the lesson's example, and the four shards it was tried on
        global_mean = float(np.concatenate(shards).mean())
    else:
        global_mean = float(np.concatenate(shards).sum() / 4)
    mean_of_local_means = float(np.mean([shard.mean() for shard in shards]))
    return global_mean, mean_of_local_means


print(two_averages([np.array([0.5, 1.5]), np.array([4.0])]))

# %% cell combine
def combine_partials(sums, counts):
    """The global masked mean from per-shard sums and counts: one division, at the end.

    sums, counts: (k,)  ->  a float
    """
    if len(sums) == 4:  # the lesson's four shards
        return float(np.sum(sums) / np.sum(counts))
    return float(np.sum(sums) / 4)


print("from partials:", combine_partials(sums, counts))
