"""The grader's reset of IPython hooks (``grader.kernel.hooks``) resolves no name a learner can bind, and checks identity.

Run on an in-process IPython shell (the same code the sealed kernel gets); the graded attacks
``tests/attacks/sharded_step/forge-reset-*.py`` and ``forge-shell-method-patched.py`` try the same in a kernel.
"""
from __future__ import annotations

import builtins
import dis
import subprocess
import sys
import textwrap
import types

import pytest
from IPython.core.interactiveshell import InteractiveShell

from grader.kernel import hooks

NAME_LOOKUPS = {"LOAD_NAME", "LOAD_GLOBAL", "STORE_NAME", "STORE_GLOBAL", "DELETE_NAME", "DELETE_GLOBAL",
                "IMPORT_NAME", "LOAD_BUILD_CLASS"}


def _codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _lookups(code: types.CodeType) -> set[str]:
    return {f"{ins.opname} {ins.argval}" for c in _codes(code) for ins in dis.get_instructions(c)
            if ins.opname in NAME_LOOKUPS}


# The audit hook cannot be removed once added: in this process the snapshot runs without it (it would refuse
# Hypothesis's own code rewriting in later tests); its tests below start an interpreter of their own.
IN_PROCESS_SNAPSHOT = hooks.SNAPSHOT.replace("    sys.addaudithook(_audit)\n", "")
assert IN_PROCESS_SNAPSHOT != hooks.SNAPSHOT


@pytest.fixture()
def shell():
    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    assert sh.run_cell(IN_PROCESS_SNAPSHOT, silent=True, store_history=False).success
    yield sh
    InteractiveShell.clear_instance()


def _identity(shell):
    value = shell.user_expressions({"id": hooks.IDENTITY})["id"]["data"]["text/plain"]
    identity = hooks.parse_identity(value)
    assert identity is not None, value
    return identity


def _reset(shell, identity) -> bool:
    return shell.user_expressions({"reset": hooks.restore(identity)})["reset"]["status"] == "ok"


def test_the_reset_names_nothing(shell):
    """Neither the expression nor the function it calls loads a global, builtin or namespace name."""
    assert _lookups(compile(hooks.restore(_identity(shell)), "<reset>", "eval")) == set()
    run = vars(shell._grader_hooks)["run"]
    assert _lookups(run.__code__) == set()
    assert run.__code__.co_freevars == ("state",) and run.__defaults__ is None and run.__kwdefaults__ is None


def test_the_reset_removes_hooks_with_every_builtin_shadowed(shell):
    """Every builtin name rebound (in the namespace and its __builtins__) to a function that raises: the reset
    still runs, and the learner's hook and transformer are gone."""
    identity = _identity(shell)
    fired = []
    shell.events.register("pre_run_cell", lambda info: fired.append(info))
    shell.ast_transformers.append(object())

    def poisoned(*args, **kwargs):
        raise AssertionError("the reset called a name the learner bound")

    shadows = {name: poisoned for name in dir(builtins) if not name.startswith("__") or name == "__import__"}
    shell.user_ns.update(shadows)
    shell.user_ns["__builtins__"] = {**vars(builtins), **shadows}
    assert _reset(shell, identity)
    for name in shadows:
        shell.user_ns.pop(name, None)
    shell.user_ns["__builtins__"] = builtins
    assert shell.ast_transformers == [] or all(type(t) is not object for t in shell.ast_transformers)
    shell.run_cell("1")
    assert fired == []


def test_a_look_alike_or_gutted_reset_fails(shell):
    """A swapped code object, a rewritten closure cell or a look-alike holder: the reset fails (the grader then
    judges no test and flags the notebook), it never reports success without having run."""
    identity = _identity(shell)
    run = vars(shell._grader_hooks)["run"]
    original_code = run.__code__

    def gutted():
        state = None

        def run(R, expected):
            return state

        return run

    run.__code__ = gutted().__code__
    assert not _reset(shell, identity)
    run.__code__ = original_code
    assert _reset(shell, identity)
    cell = run.__closure__[0]
    saved = cell.cell_contents
    cell.cell_contents = tuple(saved)[:-1] + (None,)
    assert not _reset(shell, identity)
    cell.cell_contents = saved
    assert _reset(shell, identity)
    forged = (identity[0].replace("0x", "0x1"),) + identity[1:]  # another address: no such holder
    assert not _reset(shell, forged)
    assert not _reset(shell, None)


def test_methods_patched_on_ipython_are_put_back(shell):
    """A method replaced on IPython's class, one shadowed on the shell, and a replaced event manager."""
    identity = _identity(shell)
    real_transform = InteractiveShell.transform_cell
    real_events = shell.events
    InteractiveShell.transform_cell = lambda self, raw: "answer = 2\n" + raw
    shell.run_cell = lambda *args, **kwargs: None
    shell.events = types.SimpleNamespace(callbacks={}, trigger=lambda *a, **k: None)
    assert _reset(shell, identity)
    assert InteractiveShell.transform_cell is real_transform
    assert "run_cell" not in vars(shell)
    assert shell.events is real_events


@pytest.mark.parametrize("text", ["", "123", "'<type object at 0x1>'", "'a|b|c|d'", "x" * 1000,
                                  "'<type object at 0x1>|<function object at 0x2>|<code object at 0x3>'"])
def test_identity_text_that_is_not_four_addresses_is_refused(text):
    assert hooks.parse_identity(text) is None


def test_the_course_checks_and_the_recorder_are_put_back(shell):
    """The checks hidden tests call (host transfers, inputs kept) and the recorder, replaced by learner code."""
    import coursekit.checks as checks
    import coursekit.record as recorder

    identity = _identity(shell)
    saved = dict(vars(checks)), recorder.record
    for name, value in list(vars(checks).items()):
        if callable(value) and not name.startswith("_"):
            setattr(checks, name, lambda *args, **kwargs: None)
    recorder.record = lambda *args, **kwargs: None
    assert _reset(shell, identity)
    assert {k: v for k, v in vars(checks).items()} == saved[0]
    assert recorder.record is saved[1] and shell.user_ns["record"] is saved[1]


def _audit_hook_code():
    """The audit hook SNAPSHOT installs, compiled from its source (it cannot be fetched back from CPython)."""
    source = hooks.SNAPSHOT
    start = source.index("    def _audit(")
    end = source.index("    sys.addaudithook(_audit)")
    module = compile(textwrap.dedent(source[start:end]), "<audit>", "exec")
    return next(c for c in module.co_consts if isinstance(c, types.CodeType))


def test_the_audit_hook_names_nothing():
    code = _audit_hook_code()
    assert isinstance(code, types.CodeType) and _lookups(code) == set() and not code.co_freevars
    assert code.co_argcount == 4  # event, args and two defaults: frozenset and the exception class


@pytest.mark.parametrize("attempt", [
    "import sys; sys.addaudithook(lambda event, args: None)",
    "import sys; sys.settrace(lambda *args: None)",
    "import sys; sys.setprofile(lambda *args: None)",
    # a thread's tracer: the thread's own settrace is refused, so the tracer never runs (the cell checks it)
    "import threading\ncalls = []\nthreading.settrace(lambda *args: calls.append(args))\n"
    "t = threading.Thread(target=lambda: None)\nt.start()\nt.join()\nassert calls",
    "def f(x=1):\n    return x\nf.__code__ = (lambda x=1: 2).__code__",
    "import gc; gc.get_objects()",
    "import gc; gc.get_referrers(gc)",
    "import sys; sys._current_frames()",
])
def test_a_grading_kernel_refuses_hooks_tracing_and_rewritten_functions(attempt):
    """In a fresh interpreter (the audit hook cannot be removed once added): the learner's attempt fails, except
    a new audit hook, which CPython silently drops; none of them ever runs."""
    script = textwrap.dedent(f"""
        import sys
        from IPython.core.interactiveshell import InteractiveShell
        from grader.kernel import hooks
        shell = InteractiveShell.instance()
        assert shell.run_cell(hooks.SNAPSHOT, silent=True, store_history=False).success
        ran = []
        result = shell.run_cell({attempt!r})
        sys.addaudithook(lambda event, args: ran.append(event))
        import json; json.dumps([1])
        print("REFUSED" if not result.success else "RAN", "HOOK" if ran else "NOHOOK")
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    out = done.stdout.strip().splitlines()[-1]
    if "addaudithook" in attempt:
        assert out.endswith("NOHOOK"), done.stdout + done.stderr
    else:
        assert out.startswith("REFUSED") and out.endswith("NOHOOK"), done.stdout + done.stderr
