# scenario: deletes the quiz test cell (its answer is wrong); the rest is correct
# base: solution
# delete: test-quiz
# expect-status: tampered
# expect-fail: test-quiz
# %% cell quiz
answer = 1
