# scenario: all-reduce payload without the factor 2: counts only the reduce-scatter phase
# base: solution
# expect-fail: test-payload
# expect-message: lacks the factor 2
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    scatter_bytes = (ranks - 1) / ranks * gradient_bytes
    return scatter_bytes, scatter_bytes
