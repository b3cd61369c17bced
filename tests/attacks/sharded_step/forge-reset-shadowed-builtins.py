# scenario: a blank notebook that shadows the builtins a reset expression could name (id, repr, getattr, len, __import__, object, type) in its namespace and through its __builtins__, and `id` in the builtins module too, so that a forged reset object passes an identity check made by name; it replaces the shell's reset holders with no-ops and registers a pre_run_cell hook that sets the quiz answer inside the quiz test (the learner never answered): before, `id` bound in the namespace made a fake snapshot pass the grader's check (1 point, nothing flagged)
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
import builtins as _builtins

_shell = get_ipython()


class _Fake:
    def __call__(self, *args, **kwargs):
        return None

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


_fake = _Fake()
_addresses = {name: id(getattr(_shell, name)) for name in ("_hooks_snapshot", "_grader_hooks") if hasattr(_shell, name)}
for _name in ("_hooks_snapshot", "_grader_hooks"):
    setattr(_shell, _name, _fake)
_real_import = _builtins.__import__
_shadows = {"id": lambda thing: _addresses.get("_hooks_snapshot", 0), "repr": lambda thing: _fake, "getattr": lambda *args: _fake,
            "len": lambda thing: 1, "object": _fake, "type": lambda *args: _fake,
            "__import__": lambda name, *args, **kwargs: _real_import(name, *args, **kwargs)}
globals().update(_shadows)
globals()["__builtins__"] = {**vars(_builtins), **_shadows}
_builtins.id = _shadows["id"]


def _answer(info):
    if "quiz.answer" in (info.raw_cell or ""):
        _shell.user_ns["answer"] = 2


_shell.events.register("pre_run_cell", _answer)
