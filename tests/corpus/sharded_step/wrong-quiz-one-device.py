# scenario: answers the quiz with "use one device's gradient"
# base: solution
# expect-fail: test-quiz
# expect-message: one device's gradient is a local quantity
# %% cell quiz
answer = 3
