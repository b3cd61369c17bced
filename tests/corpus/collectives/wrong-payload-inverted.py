# scenario: ring payload written as p/(p-1) G instead of (p-1)/p G
# base: solution
# expect-fail: test-payload
# expect-message: the fraction is inverted
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    scatter_bytes = ranks / (ranks - 1) * gradient_bytes
    return scatter_bytes, 2 * scatter_bytes
