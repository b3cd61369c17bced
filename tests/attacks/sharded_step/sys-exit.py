# scenario: sys.exit(0) before the tests
# base: solution
# expect-status: kernel_died
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% append train-step
import sys
sys.exit(0)
