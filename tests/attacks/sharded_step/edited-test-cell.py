# scenario: rewrites a test cell to record the lesson's numbers; the step is a stub
# base: student
# expect-status: tampered
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell test-loss-and-gradient
record("lesson.loss", 4.875)
record("lesson.gradient", np.array([-5.25, -0.75], dtype=np.float32))
