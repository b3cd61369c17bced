# scenario: a payload formula the course names no mistake for ((p - 1) / (p + 1) of G): the payload test charges it, once; the budget, built from it by a right transfer_budget, is judged against the budget of this learner's own ring_payload (the payloads the payload test recorded at the budget's sizes) and passes
# base: solution
# expect-fail: test-payload
# expect-message: the payload at G = 32 bytes, p = 4: differs from the host NumPy reference
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    scatter_bytes = (ranks - 1) / (ranks + 1) * gradient_bytes
    return scatter_bytes, 2 * scatter_bytes
