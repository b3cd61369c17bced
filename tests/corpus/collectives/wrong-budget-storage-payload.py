# scenario: reports the reduce-scatter payload (p-1)/p G as the storage a rank keeps, instead of G/p
# base: solution
# expect-fail: test-budget
# expect-message: the 1 MiB transfer budget
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    budget = []
    for ranks in rank_counts:
        scatter_bytes, all_reduce_bytes = ring_payload(gradient_bytes, ranks)
        budget.append({"ranks": ranks, "all_reduce_bytes": all_reduce_bytes,
                       "scatter_gather_bytes": 2 * scatter_bytes, "shard_storage_bytes": scatter_bytes})
    return budget


budget = transfer_budget(2**20, [2, 4, 8])
