# scenario: transfer_budget pops the rank counts off the caller's list while it builds the rows: right rows, but the caller's list is empty afterwards; charged at its own test, which names the function and the argument
# base: solution
# expect-fail: test-budget
# expect-message: transfer_budget changed its argument rank_counts
# expect-status: graded
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    budget = []
    while rank_counts:
        ranks = rank_counts.pop(0)  # consumes the caller's list
        scatter_bytes, all_reduce_bytes = ring_payload(gradient_bytes, ranks)
        budget.append({"ranks": ranks, "all_reduce_bytes": all_reduce_bytes,
                       "scatter_gather_bytes": 2 * scatter_bytes, "shard_storage_bytes": gradient_bytes / ranks})
    return budget


budget = transfer_budget(2**20, [2, 4, 8])
