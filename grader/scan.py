"""Flag learner code that reaches for the grader's machinery.

Flags go to the instructor; the grade is still computed (values are judged
outside the kernel, so these tricks cannot earn points, but they deserve a
look). The scan is syntactic: it reads each cell's AST and never runs it.
"""
from __future__ import annotations

import ast

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
}
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


def flags_for(label: str, source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[str] = []
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }

    def note(node: ast.AST, text: str) -> None:
        entry = f"{label} line {getattr(node, 'lineno', '?')}: {text}"
        if entry not in found:
            found.append(entry)

    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                patched = _describe_target(target, imported)
                if patched:
                    note(node, f"assigns to {patched} (monkeypatching a module)")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
                note(node, f"calls {func.id} on {ast.unparse(node.args[0])}")
            outside = _reads_outside(node)
            if outside:
                note(node, f"opens a path outside its folder ({outside})")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for module in modules:
                root = module.split(".")[0]
                if root in ("ctypes", "subprocess", "signal", "builtins", "gc", "inspect", "importlib", "multiprocessing"):
                    note(node, f"imports {module}")
        if isinstance(node, ast.Attribute) and node.attr in SUSPICIOUS_NAMES:
            note(node, f"{SUSPICIOUS_NAMES[node.attr]} ({ast.unparse(node)})")
        elif isinstance(node, ast.Name) and node.id in SUSPICIOUS_NAMES and node.id not in ("signal",):
            note(node, f"{SUSPICIOUS_NAMES[node.id]} ({node.id})")
        elif isinstance(node, ast.FunctionDef) and node.name in SUSPICIOUS_NAMES:
            note(node, f"{SUSPICIOUS_NAMES[node.name]} (def {node.name})")
    return found
