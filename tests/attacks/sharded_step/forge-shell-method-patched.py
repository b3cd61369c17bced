# scenario: a blank notebook that leaves IPython's hook lists alone and patches IPython itself: InteractiveShell.transform_cell (a method on the class, and a shadowing attribute on the shell) prepends `answer = 2` to the quiz test, and the shell's event manager is replaced by one whose trigger ignores the restored callbacks; restoring only the hook lists' contents left both in place (the learner never answered)
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
from IPython.core import interactiveshell as _interactiveshell

_shell = get_ipython()
_original = _interactiveshell.InteractiveShell.transform_cell


def _transform(self, raw_cell):
    if "quiz.answer" in raw_cell:
        raw_cell = "answer = 2\n" + raw_cell
    return _original(self, raw_cell)


_interactiveshell.InteractiveShell.transform_cell = _transform
type(_shell).transform_cell = _transform


class _Events:
    def __init__(self, real):
        self.real = real
        self.callbacks = {}

    def register(self, *args):
        return self.real.register(*args)

    def unregister(self, *args):
        return self.real.unregister(*args)

    def trigger(self, name, *args, **kwargs):
        if name == "pre_run_cell" and args and "quiz.answer" in (getattr(args[0], "raw_cell", "") or ""):
            _shell.user_ns["answer"] = 2
        return self.real.trigger(name, *args, **kwargs)


_shell.events = _Events(_shell.events)
