# scenario: a fork bomb (only graded where the process limit is proven, see tests/test_sandbox.py)
# base: solution
# requires: process-limit
# expect-status: timed_out kernel_died suspicious
# expect-fail: test-quiz
# %% cell quiz
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
