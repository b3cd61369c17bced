# scenario: ignores SIGINT, then loops forever
# base: solution
# expect-status: timed_out
# expect-fail: test-quiz
# %% cell quiz
import signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
answer = 2
while True:
    pass
