# scenario: the student notebook submitted as released, every TODO left unanswered
# base: student
# expect-fail: test-local-contribution test-all-reduce test-reduce-scatter test-all-gather test-lowered test-timing test-payload test-momentum test-make-it-yours test-budget test-quiz
# expect-message: raised NotImplementedError
