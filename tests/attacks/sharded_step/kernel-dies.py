# scenario: os._exit(0) right after the training step
# base: solution
# expect-status: kernel_died
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% append train-step
import os
os._exit(0)
