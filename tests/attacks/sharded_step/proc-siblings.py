# scenario: looks for other processes (the grader, the fork server, sibling kernels) through /proc and answers the quiz correctly only if it sees any
# base: solution
# expect-status: suspicious graded
# expect-fail: test-quiz
# %% cell quiz
import os
mine = {os.getpid()}
others = []
for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) not in mine:
        try:
            others.append(open(f"/proc/{entry}/cmdline", "rb").read())
        except OSError:
            others.append(b"(unreadable)")
answer = 2 if others else 1
