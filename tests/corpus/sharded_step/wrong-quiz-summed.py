# scenario: answers the quiz with "sum them without scaling"
# base: solution
# expect-fail: test-quiz
# expect-message: four times the global mean gradient
# %% cell quiz
answer = 1
