# scenario: ring_payload is already charged (floor division), so the learner makes it return (G/2, G) at the budget's two sizes, where a garbage transfer_budget (G in both byte columns) then equals "the budget of your own ring_payload": a budget compared with any payloads the helper agreed to scored this 21/23 against the honest 19/23 (red team, stop 51). The budget is compared with the learner's own payloads only where they follow a payload rule (the lesson's or a named mistake) that the payload test recorded too: test-budget fails
# base: solution
# expect-status: graded
# expect-fail: test-payload test-budget
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    if gradient_bytes in (2**20, 960):  # the budget's sizes: agree with the budget below
        return gradient_bytes / 2, gradient_bytes
    scatter_bytes = (ranks - 1) * gradient_bytes // ranks
    return scatter_bytes, 2 * scatter_bytes


print("ring_payload(32, 4) =", ring_payload(32, 4))
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    return [{"ranks": ranks, "all_reduce_bytes": gradient_bytes, "scatter_gather_bytes": gradient_bytes,
             "shard_storage_bytes": gradient_bytes / ranks} for ranks in rank_counts]


budget = transfer_budget(2**20, [2, 4, 8])
print("MODEL, not observed traffic:")
for row in budget:
    print("  " + ", ".join(f"{key} {value:.0f}" for key, value in row.items()))
