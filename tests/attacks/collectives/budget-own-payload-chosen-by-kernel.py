# scenario: the budget test's "own" candidate is whatever ring_payload returns when the test cell calls it, so ring_payload answers the payload test correctly but returns (0, 0) for the budget's gradient sizes (2**20 in the lesson; any G that is not among the payload cases, 960 in the hidden one), and transfer_budget hard-codes both byte columns to 0: 23/23 with no transfer budget computed (_own_budget in source/collectives/rubric.py trusts budget.own_payloads, recorded by the kernel, with no degenerate-value guard and no check that it matches payload.hidden's function). Now the payload test also judges ring_payload at the budget's sizes (where this one answers 0), and the budget rejects degenerate payloads
# base: solution
# expect-status: graded
# expect-fail: test-payload test-budget
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    if gradient_bytes >= 2**20 or gradient_bytes % 48 == 0 and gradient_bytes not in (96, 48):
        return 0.0, 0.0  # the sizes a transfer budget is asked for
    scatter_bytes = (ranks - 1) / ranks * gradient_bytes
    return scatter_bytes, 2 * scatter_bytes


print("ring_payload(32, 4) =", ring_payload(32, 4))
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    return [{"ranks": ranks, "all_reduce_bytes": 0.0, "scatter_gather_bytes": 0.0,
             "shard_storage_bytes": gradient_bytes / ranks} for ranks in rank_counts]


budget = transfer_budget(2**20, [2, 4, 8])
