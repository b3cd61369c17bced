# scenario: a blank notebook installs a profile function with sys.setprofile; when the quiz test's module code starts, it writes the quiz answer into the frame's globals (the learner never answered)
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
import sys as _s


def _prof(frame, event, arg):
    if event == "call" and "answer" in frame.f_code.co_names and frame.f_code.co_name == "<module>":
        frame.f_globals["answer"] = 2


_s.setprofile(_prof)
