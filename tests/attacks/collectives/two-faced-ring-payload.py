# scenario: ring_payload answers the payload test right (its hidden part runs at the end, after a last cell flips it back), while a cell the learner adds after that test flips it to a named mistake (the all-reduce payload without its factor 2), and transfer_budget is built from the flipped payloads: the budget test took "the budget of your own ring_payload" from the budget cell's own record and gave it full marks, though the payload test saw the lesson's rule. The own budget now counts only when the payload test recorded the same rule
# base: solution
# expect-status: graded
# expect-fail: test-budget
# expect-message: follow neither the lesson's rule nor the one the payload test recorded from it
# %% cell payload
_without_factor_2 = [False]


def ring_payload(gradient_bytes, ranks):
    scatter_bytes = (ranks - 1) / ranks * gradient_bytes
    return scatter_bytes, scatter_bytes if _without_factor_2[0] else 2 * scatter_bytes


print("ring_payload(32, 4) =", ring_payload(32, 4))
# %% append test-payload
_without_factor_2[0] = True
# %% append
_without_factor_2[0] = False  # right again at the end, where the hidden parts of the tests run
