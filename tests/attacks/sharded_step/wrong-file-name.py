# scenario: the correct notebook saved under another name
# base: solution
# filename: sharded_step-Copy1.ipynb
# expect-status: invalid_notebook
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
