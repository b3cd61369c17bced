# scenario: ring_payload and transfer_budget use integer (floor) division on byte counts: right whenever p divides G, wrong otherwise
# base: solution
# expect-fail: test-payload test-budget
# expect-status: graded
# expect-message: integer (floor) division
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    # integer arithmetic on byte counts: floor((p - 1) * G / p)
    scatter_bytes = (ranks - 1) * gradient_bytes // ranks
    return scatter_bytes, 2 * scatter_bytes
# %% cell budget
def transfer_budget(gradient_bytes, rank_counts):
    budget = []
    for ranks in rank_counts:
        scatter_bytes, all_reduce_bytes = ring_payload(gradient_bytes, ranks)
        budget.append({
            "ranks": ranks,
            "all_reduce_bytes": all_reduce_bytes,
            "scatter_gather_bytes": scatter_bytes + scatter_bytes,
            "shard_storage_bytes": gradient_bytes // ranks,
        })
    return budget


budget = transfer_budget(2**20, [2, 4, 8])
print("MODEL, not observed traffic:")
for row in budget:
    print("  " + ", ".join(f"{key} {value:.0f}" for key, value in row.items()))
