# scenario: answers that a reduce-scatter followed by a gather halves the communication
# base: solution
# expect-fail: test-quiz
# expect-message: moves as many bytes as the all-reduce
# %% cell quiz
answer = 1
