# scenario: the student notebook submitted as released, every TODO left unanswered
# base: student
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# expect-message: raised NotImplementedError
