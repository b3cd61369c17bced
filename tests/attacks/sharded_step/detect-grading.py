# scenario: branches on environment variables to detect grading and cheat only then
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell quiz
import os
grading = any(k.startswith(("NBGRADER", "GRADER", "COURSE_GRAD", "PYTEST", "AUTOGRADE")) for k in os.environ)
answer = 2 if grading else 0
if not grading:
    raise RuntimeError("not graded: " + ",".join(sorted(os.environ)))
