# scenario: a payload formula the course names no mistake for ((p - 1) / (p + 1) of G): the payload test charges it; the budget, built from it, is compared with the lesson's and its message does not claim it was compared with this learner's own ring_payload
# base: solution
# expect-fail: test-payload test-budget
# expect-message: follow neither the lesson's rule nor the one the payload test recorded from it
# expect-no-message: the budget of your own ring_payload
# %% cell payload
def ring_payload(gradient_bytes, ranks):
    scatter_bytes = (ranks - 1) / (ranks + 1) * gradient_bytes
    return scatter_bytes, 2 * scatter_bytes
