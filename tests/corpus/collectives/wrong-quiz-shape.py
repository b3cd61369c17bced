# scenario: answers that an unchanged global shape shows the communication is the same
# base: solution
# expect-fail: test-quiz
# expect-message: says nothing about communication
# %% cell quiz
answer = 3
