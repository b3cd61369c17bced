# scenario: reports the full gradient as the storage a rank keeps after the reduce-scatter
# base: solution
# expect-fail: test-budget
# expect-message: G/p, not G
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    budget = []
    for ranks in rank_counts:
        scatter_bytes, all_reduce_bytes = ring_payload(gradient_bytes, ranks)
        budget.append({"ranks": ranks, "all_reduce_bytes": all_reduce_bytes,
                       "scatter_gather_bytes": 2 * scatter_bytes, "shard_storage_bytes": gradient_bytes})
    return budget


budget = transfer_budget(2**20, [2, 4, 8])
