# scenario: the file is not JSON
# expect-status: invalid_notebook
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% raw
{"cells": [ this is not json
