# scenario: a blank notebook registers a CPython audit hook (sys.addaudithook, which nothing can remove) that sets the quiz answer when IPython execs the quiz test's code object; the reset of IPython's hooks never sees it (the learner never answered)
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
import sys as _s

_ns = globals()


def _watch(event, args):
    if event == "exec" and args and "answer" in getattr(args[0], "co_names", ()):
        _ns["answer"] = 2


_s.addaudithook(_watch)
