"""Flag learner code that reaches for the grader's machinery.

Flags go to the instructor; the grade is still computed (values are judged
outside the kernel, so these tricks cannot earn points, but they deserve a
look). The scan is syntactic: it reads each cell's AST and never runs it.

Its work is linear in the source: flags are collected in an ordered set, each
construct is shown by a bounded excerpt (never by unparsing a large subtree),
at most ``MAX_FLAGS_PER_CELL`` flags per cell and ``MAX_FLAGS`` per notebook
are kept (with a count of the rest), source that is not Python is skipped
(the kernel will report it) while source nested beyond the parser's limits is
itself a flag, and a ``deadline`` (``intake.Deadline``) is checked while walking.

It reads what the kernel runs: IPython's own transformer first turns magics and
shell escapes into the calls IPython makes (``%xmode Plain`` becomes
``get_ipython().run_line_magic('xmode', 'Plain')``), so a magic line never hides a
cell. Shell escapes and magics are flagged, except those that only time or show
code (``SAFE_MAGICS``), whose code is scanned in turn.
"""
from __future__ import annotations

import ast

from grader import cells

MAX_FLAGS_PER_CELL = 20
MAX_FLAGS = 100
SHOWN_CHARS = 80
CHECK_EVERY = 5000  # AST nodes between deadline checks

SUSPICIOUS_NAMES = {
    "__code__": "rewrites a function's code object",
    "__builtins__": "touches builtins",
    "builtins": "touches builtins",
    "modules": "touches sys.modules",
    "excepthook": "replaces the exception hook",
    "set_custom_exc": "installs a custom exception handler in IPython",
    "showtraceback": "patches IPython's traceback display",
    "get_ipython": "uses the IPython shell object",
    "_exit": "exits the process (os._exit)",
    "signal": "changes signal handling",
    "environ": "reads environment variables",
    "getenv": "reads environment variables",
    "fork": "forks processes",
    "system": "runs shell commands",
    "subprocess": "starts processes",
    "ctypes": "loads native code",
    "__import__": "imports dynamically",
    "exec": "executes generated code",
    "eval": "evaluates generated code",
    "__class__": "changes an object's class",
    "__eq__": "defines custom equality",
    "__array__": "imitates an array",
    "MIME_TYPE": "publishes grader records itself",
    "_hooks_snapshot": "touches the grader's reset of IPython hooks",
    "_grader_hooks": "touches the grader's reset of IPython hooks",
    "_GraderHooks": "touches the grader's reset of IPython hooks",
    "__subclasses__": "searches every class of the process",
    "addaudithook": "installs an audit hook (refused while grading)",
    "settrace": "installs a tracing function (refused while grading)",
    "setprofile": "installs a profiling function (refused while grading)",
    "get_objects": "lists every object of the process (refused while grading)",
    "get_referrers": "searches the objects that refer to another (refused while grading)",
    "get_referents": "searches the objects another refers to (refused while grading)",
    "_current_frames": "reads other threads' frames (refused while grading)",
    "__closure__": "reads or rewrites a function's closure",
    "cell_contents": "rewrites a closure variable",
    "__globals__": "reaches a function's module globals",
}
# Names written as text: a lookup such as globals()["get_ipython"] or the record's MIME type spelled out.
SUSPICIOUS_TEXTS = {
    "get_ipython": "uses the IPython shell object",
    "_hooks_snapshot": "touches the grader's reset of IPython hooks",
    "_grader_hooks": "touches the grader's reset of IPython hooks",
    "_GraderHooks": "touches the grader's reset of IPython hooks",
    "application/vnd.jax-course.record+json": "publishes grader records itself",
}
SAFE_MAGICS = {"time", "timeit", "matplotlib", "who", "whos", "pprint"}  # their code arguments are scanned
MAGIC_CALLS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}  # what IPython's transformer writes
MAX_MAGIC_DEPTH = 2
PATCHED_MODULES = {"np", "numpy", "jnp", "jax", "testing", "math", "IPython", "sys", "os", "builtins", "coursekit", "record"}


def _describe_target(node: ast.AST, modules: set[str] = frozenset()) -> str | None:
    """'np.testing.assert_allclose' if ``node`` is an attribute of a module-like name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        if (parts[-1] in PATCHED_MODULES or parts[-1] in modules) and len(parts) > 1:
            return ".".join(reversed(parts))
    return None


def _reads_outside(call: ast.Call) -> str | None:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name not in {"open", "read_text", "read_bytes", "Path", "listdir", "scandir", "glob", "walk", "read"}:
        return None
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if arg.value.startswith(("/", "~")) or ".." in arg.value:
                return arg.value
    return None


def _shown(node: ast.AST) -> str:
    """The construct as written, in at most SHOWN_CHARS characters; a large subtree is never unparsed."""
    width = getattr(node, "end_col_offset", None)
    if getattr(node, "lineno", None) != getattr(node, "end_lineno", None) or width is None \
            or width - getattr(node, "col_offset", 0) > SHOWN_CHARS:
        if isinstance(node, ast.Attribute):
            return f"….{node.attr}"
        return f"a {type(node).__name__.lower()} expression"
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError):
        return type(node).__name__


def _as_run(source: str) -> str:
    """``source`` as IPython runs it: magics and shell escapes become calls (unchanged when it is plain Python)."""
    if "%" not in source and "!" not in source:
        return source
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - not IPython syntax either: the parser below decides
        return source


def _magic(call: ast.Call) -> tuple[str, list[str], ast.Name] | None:
    """``('run_line_magic', ['xmode', 'Plain'], get_ipython)`` for a call IPython's transformer writes."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in MAGIC_CALLS and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name) and func.value.func.id == "get_ipython" and not func.value.args):
        return None
    texts = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return func.attr, texts, func.value.func


def _timed_code(text: str) -> str:
    """The code of a ``%time``/``%timeit`` argument, without the options in front of it."""
    words = text.split()
    while words and words[0].startswith("-"):
        words = words[2:] if words[0] in ("-n", "-r", "-p") else words[1:]
    return " ".join(words) if words != text.split() else text


def _parse(source: str) -> ast.AST | str | None:
    """The AST, None for source that is not Python (the kernel will say so), or why it could not be scanned."""
    source = _as_run(source)
    for _attempt in range(2):
        try:
            return ast.parse(source)
        except (SyntaxError, ValueError, OverflowError):
            return None
        except (RecursionError, MemoryError):
            return "nested too deeply to scan"
        except SystemError:  # CPython 3.11's "AST constructor recursion depth mismatch", seen once between threads
            continue
    return "could not be parsed to scan (the Python parser failed)"


def flags_for(label: str, source: str, deadline=None, _depth: int = 0) -> list[str]:
    if _depth > MAX_MAGIC_DEPTH:
        return [f"{label}: magics nested too deeply to scan"]
    tree = _parse(source) if isinstance(source, str) else None
    if tree is None:
        return []
    if isinstance(tree, str):
        return [f"{label}: {tree}"]
    found: dict[str, None] = {}  # an ordered set: membership is O(1)
    more = 0
    checked = 0

    def note(node: ast.AST, text: str) -> None:
        nonlocal more
        entry = f"{label} line {getattr(node, 'lineno', '?')}: {text}"
        if entry in found:
            return
        if len(found) < MAX_FLAGS_PER_CELL:
            found[entry] = None
        else:
            more += 1

    def nodes():
        nonlocal checked
        for node in ast.walk(tree):
            checked += 1
            if deadline is not None and checked % CHECK_EVERY == 0:
                deadline.check(f"scanning {label}")
            yield node

    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in nodes() if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    generated: set[int] = set()  # the get_ipython() of a magic: flagged as the magic, not as the shell
    for node in nodes():
        magic = _magic(node) if isinstance(node, ast.Call) else None
        if magic is not None:
            how, texts, shell = magic
            generated.add(id(shell))
            if how in ("system", "getoutput"):
                note(node, f"runs a shell command ({_shown(node.args[0]) if node.args else '!'})")
            elif texts and texts[0] in SAFE_MAGICS:
                for text in texts[1:]:
                    for flag in flags_for(label, _timed_code(text) if how == "run_line_magic" else text, deadline,
                                          _depth + 1):
                        note(node, flag.split(": ", 1)[-1])
            else:
                note(node, f"runs the IPython magic %{(texts[0] if texts else '?')[:SHOWN_CHARS]}")
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                patched = _describe_target(target, imported)
                if patched:
                    note(node, f"assigns to {patched} (monkeypatching a module)")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
                note(node, f"calls {func.id} on {_shown(node.args[0])}")
            outside = _reads_outside(node)
            if outside:
                note(node, f"opens a path outside its folder ({outside[:SHOWN_CHARS]})")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for module in modules:
                root = module.split(".")[0]
                if root in ("ctypes", "subprocess", "signal", "builtins", "gc", "inspect", "importlib", "multiprocessing"):
                    note(node, f"imports {module[:SHOWN_CHARS]}")
            if isinstance(node, ast.ImportFrom):  # `from IPython import get_ipython as g` hides the name after it
                for alias in node.names:
                    if alias.name in SUSPICIOUS_NAMES and alias.name != "signal":
                        note(node, f"{SUSPICIOUS_NAMES[alias.name]} (import {alias.name[:SHOWN_CHARS]})")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in SUSPICIOUS_TEXTS:
            note(node, f"{SUSPICIOUS_TEXTS[node.value]} ({node.value!r})")
        if isinstance(node, ast.Attribute) and node.attr in SUSPICIOUS_NAMES:
            note(node, f"{SUSPICIOUS_NAMES[node.attr]} ({_shown(node)})")
        elif isinstance(node, ast.Name) and node.id in SUSPICIOUS_NAMES and node.id not in ("signal",) \
                and id(node) not in generated:
            note(node, f"{SUSPICIOUS_NAMES[node.id]} ({node.id})")
        elif isinstance(node, ast.FunctionDef) and node.name in SUSPICIOUS_NAMES:
            note(node, f"{SUSPICIOUS_NAMES[node.name]} (def {node.name})")
    flags = list(found)
    if more:
        flags.append(f"{label}: {more} more construct(s) flagged")
    return flags


def learner_flags(nb, deadline=None) -> list[str]:
    """Flags for the learner's code in a rebuilt notebook: solution cells and the code cells they added."""
    flags: list[str] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cells.is_solution(cell):
            flags += flags_for(f"cell {cells.grade_id(cell)}", cell.source, deadline)
        elif not cells.nbgrader(cell) and "injected-parameters" not in cell.metadata.get("tags", []):
            flags += flags_for(f"added cell {index}", cell.source, deadline)
    if len(flags) > MAX_FLAGS:
        flags = flags[:MAX_FLAGS] + [f"{len(flags) - MAX_FLAGS} more construct(s) flagged in other cells"]
    return flags
