# scenario: ring_payload returns its two payloads in the wrong order (all-reduce first)
# base: solution
# expect-fail: test-payload
# expect-message: the two payloads are swapped
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    scatter_bytes = (ranks - 1) / ranks * gradient_bytes
    return 2 * scatter_bytes, scatter_bytes
