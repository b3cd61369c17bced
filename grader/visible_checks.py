"""Which visible check of a test cell failed: the instructor's own assertion message, quoted from the course's source
(an assertion without one is named by the value it checks: its code is never shown).

Shared vocabulary: the grader's feedback (``grader.submission.pipeline``), Validate's diagnoses in the service and
the learner's own Validate without a service (``grader.learner``, which may import nothing that judges) all quote
a failed visible check this one way.

The kernel's traceback only points at a line (``Cell In [n], line k``); the text shown is the course's, never the
kernel's, and never a line inside a hidden block."""
from __future__ import annotations

import ast
import re

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_FRAME = re.compile(r"(?:Cell In ?\[\s*\d{0,9}\s*\]|Input In ?\[\s*\d{0,9}\s*\]|<ipython-input-[\d-]{1,40}>)"
                         r", line (\d{1,6})\b")
_HIDDEN_BEGIN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS", re.M)
SHOWN_CHECK_CHARS = 240


def visible_check(source: str, error: dict) -> str | None:
    """The visible check of a test cell that raised ``error``, quoted from the instructor's ``source``.

    Only for an ``AssertionError``. The kernel's error output only chooses
    *which* line: its line number (from the traceback's frame of the test
    cell) is looked up in the course's own source, and only a line before the
    hidden tests that is an assertion (``assert`` or ``np.testing.assert_*``)
    is quoted, by its message when it has one (an f-string's placeholders
    shown as ``<expression>``). Nothing the kernel printed (the exception's
    text could hold anything, hidden source included) reaches the message.
    """
    if not isinstance(error, dict) or error.get("ename") != "AssertionError":
        return None
    if not isinstance(error.get("traceback"), list):
        return None
    text = _ANSI.sub("", "\n".join(str(line) for line in error["traceback"][:50]))
    frame = _CELL_FRAME.search(text)
    if frame is None:
        return None
    line = int(frame.group(1))
    hidden = _HIDDEN_BEGIN.search(source)
    visible = source[:hidden.start()] if hidden else source
    try:
        tree = ast.parse(visible)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or not (node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        if isinstance(node, ast.Assert):
            message = node.msg
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _is_testing_assert(node.value.func):
            message = next((k.value for k in node.value.keywords if k.arg == "err_msg"), None)
        else:
            continue
        if isinstance(message, ast.Constant) and isinstance(message.value, str):
            said = message.value
        elif isinstance(message, ast.JoinedStr):  # an f-string: its literal parts, placeholders named
            said = "".join(v.value if isinstance(v, ast.Constant) else "<" + ast.unparse(v.value) + ">"
                           for v in message.values)
        else:  # no message: the value it checks, by name, never the check's code
            checked = _checked_name(node)
            return f"the visible check of {checked} failed" if checked else "a visible check failed"
        said = " ".join(said.split())
        if len(said) > SHOWN_CHECK_CHARS:
            said = said[:SHOWN_CHECK_CHARS - 3] + "..."
        return f"the visible check failed: {said}"
    return None


def _checked_name(node: ast.stmt) -> str | None:
    """The variable an assertion without a message checks: the first name in its test (``assert x == 1``) or its
    first argument (``np.testing.assert_allclose(np.asarray(x), ...)``)."""
    first = node.test if isinstance(node, ast.Assert) else (node.value.args[0] if node.value.args else None)
    for part in ast.walk(first) if first is not None else ():
        if isinstance(part, ast.Name) and part.id not in ("np", "jnp", "jax", "all", "any", "len", "float", "int"):
            return part.id
    return None


def _is_testing_assert(func: ast.AST) -> bool:
    return isinstance(func, ast.Attribute) and func.attr.startswith("assert_") and "testing" in ast.unparse(func)
