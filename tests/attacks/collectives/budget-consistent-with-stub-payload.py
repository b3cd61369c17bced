# scenario: ring_payload left as a stub that returns (0, 0) and transfer_budget with both byte columns hard-coded to 0 (only G/p is computed): test-budget accepts the table because it equals "the budget of your own ring_payload" (source/collectives/rubric.py _own_budget has no degenerate-value guard, unlike own_or_reference's norm check), so transfer_budget earns 2/2 without computing a single payload
# base: solution
# expect-status: graded
# expect-fail: test-payload test-budget
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    """Idealized ring payload per rank: (reduce_scatter_bytes, all_reduce_bytes)."""
    return 0.0, 0.0  # TODO


print("ring_payload(32, 4) =", ring_payload(32, 4))
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    return [{"ranks": ranks, "all_reduce_bytes": 0.0, "scatter_gather_bytes": 0.0,
             "shard_storage_bytes": gradient_bytes / ranks} for ranks in rank_counts]


budget = transfer_budget(2**20, [2, 4, 8])
