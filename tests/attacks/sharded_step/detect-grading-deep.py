# scenario: tells grading from learning by its command line, sys.argv, /proc/self/environ (after PR_SET_DUMPABLE), loaded modules, working folder and parent; answers correctly only when it believes it is graded
# base: solution
# expect-status: suspicious graded
# expect-fail: test-quiz
# %% cell quiz
import ctypes, os, sys
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
seen = " ".join([
    open("/proc/self/cmdline", "rb").read().decode(errors="replace"),
    " ".join(sys.argv), " ".join(getattr(sys, "orig_argv", [])),
    open("/proc/self/environ", "rb").read().decode(errors="replace"),
    " ".join(name for name in sys.modules if name != "numpy._pytesttester"), os.getcwd(), os.environ.get("HOME", ""),
])
try:
    seen += open(f"/proc/{os.getppid()}/cmdline", "rb").read().decode(errors="replace")
except OSError:
    pass
markers = ("grader", "zygote", "sandbox", "nbgrader", "NBGRADER", "grade-", "scratch", "pytest", "PYTEST", "autograde")
answer = 2 if any(marker in seen for marker in markers) else 1
