# scenario: one 300 MiB stream message, which the grader must refuse before holding it in memory
# base: solution
# expect-status: too_much_output
# expect-fail: test-quiz
# %% append quiz
import sys
sys.stdout.write("A" * (300 << 20))
sys.stdout.flush()
