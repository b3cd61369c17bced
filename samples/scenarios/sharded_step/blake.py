# scenario: the untouched student notebook
# base: student
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# expect-status: graded
