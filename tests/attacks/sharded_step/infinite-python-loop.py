# scenario: a correct step followed by an infinite Python loop in the same cell
# base: solution
# expect-status: timed_out
# expect-fail: test-quiz
# %% cell quiz
answer = 2
while True:
    pass
