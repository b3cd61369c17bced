"""The lessons' last stage, "Keep your evidence": a receipt of the learner's own work, written beside the notebook.

(In the grader's code "evidence" is what a test is judged from; what the learner keeps is their receipt.)
A lesson's last code cell calls ``keep_receipt``. The receipt (``evidence/<assignment>-receipt.json``) holds
the learner's cells as saved in the notebook file (the TODO cells, the written answers, the cells they added),
the key numbers the lesson computed (looked up by name in the kernel, so a name that was never computed is
noted, not an error) and the ``prediction`` string the learner wrote. Nothing here decides a grade, and the
grader ignores the receipt: when its kernel runs the cell there is no saved notebook (and the folder may be
read-only), so nothing is written and the cell says why in one line instead of failing. It prints where it wrote, never
the values.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import re
import sys
from pathlib import Path

FOLDER = "evidence"
_SOLUTION_MARK = "### BEGIN SOLUTION"
_MAX_ITEMS = 10_000
_PREDICTION = re.compile(r"^\s*prediction\s*=", re.MULTILINE)  # the lesson's prediction cell sets it


def notebook_path(assignment: str) -> Path:
    """The notebook this kernel runs for: JupyterLab names it (``JPY_SESSION_NAME``); otherwise, as under
    ``nbgrader validate``, ``<assignment>.ipynb`` in the working folder."""
    session = os.environ.get("JPY_SESSION_NAME", "")
    if session.endswith(".ipynb"):
        return Path(session)
    return Path.cwd() / f"{assignment}.ipynb"


def your_cells(notebook: dict) -> list[dict]:
    """The learner's cells of a saved notebook: solution cells (code and written answers), code cells without
    nbgrader metadata (added by the learner, or the lesson's ``prediction`` cell) and cells the lesson marks as
    the learner's (``metadata.course.evidence``)."""
    kept = []
    for cell in notebook.get("cells", []):
        if not isinstance(cell, dict):
            continue
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        grading = metadata.get("nbgrader") if isinstance(metadata.get("nbgrader"), dict) else {}
        course = metadata.get("course") if isinstance(metadata.get("course"), dict) else {}
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if grading.get("solution"):
            name = str(grading.get("grade_id", "answer"))
        elif course.get("evidence"):
            name = str(course["evidence"])
        elif cell.get("cell_type") == "code" and not grading:
            name = "your prediction" if _PREDICTION.search(source) else "your own cell"
        else:
            continue
        kept.append({"cell": name, "type": str(cell.get("cell_type")), "source": source})
    return kept


def plain(value, depth: int = 0):
    """``value`` as JSON data: numbers, strings, lists and dicts; arrays (NumPy or JAX) as nested lists."""
    if depth > 8:
        return repr(value)[:200]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(key): plain(item, depth + 1) for key, item in list(value.items())[:_MAX_ITEMS]}
    if isinstance(value, (list, tuple)):
        return [plain(item, depth + 1) for item in list(value)[:_MAX_ITEMS]]
    if hasattr(value, "__array__") or type(value).__module__.startswith("numpy"):
        import numpy as np

        array = np.asarray(value)
        if array.size > _MAX_ITEMS:
            return f"array of shape {array.shape}, too large to keep"
        return plain(array.tolist(), depth + 1)
    return repr(value)[:200]


def _namespace() -> dict:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - notebooks always have IPython
        shell = None
    else:
        shell = get_ipython()
    return shell.user_ns if shell is not None else sys._getframe(2).f_globals


def keep_receipt(assignment: str, outputs: dict[str, str], namespace: dict | None = None,
                  notebook: Path | None = None, folder: Path | None = None) -> Path | None:
    """Write ``evidence/<assignment>-receipt.json`` beside the notebook; return its path, or None.

    ``outputs`` maps a label (what the number is) to the name of a variable of the kernel. The prediction is
    the kernel's ``prediction`` string. ``notebook`` and ``folder`` default to the notebook the kernel runs for
    and ``evidence/`` beside it."""
    if os.environ.get("NBGRADER_VALIDATING") == "1":  # nbgrader's Validator sets it for the kernels it starts
        print("Validate runs every cell, this one too: no receipt is written during Validate, so a Validate of a "
              "broken version never replaces your receipt. Run this cell yourself to write it.")
        return None
    namespace = _namespace() if namespace is None else namespace
    path = notebook or notebook_path(assignment)
    receipt: dict = {"assignment": assignment, "notebook": str(path),
                     "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(saved, dict):
            raise ValueError("not a notebook")
    except (OSError, ValueError) as error:
        print(f"Could not read your saved notebook {path} ({_reason(error)}): no receipt written. Save the notebook "
              f"(Ctrl+S) and run this cell again. (When the grader runs this cell there is no saved notebook: that "
              f"is expected and changes no grade.)")
        return None
    cells = your_cells(saved)
    if any(_SOLUTION_MARK in cell["source"] for cell in cells):
        print(f"{path.name} is the instructor's notebook (it holds the solutions): receipts are kept for the "
              f"learner's copy only; nothing written.")
        return None
    receipt["your_cells"] = cells
    prediction = namespace.get("prediction")
    receipt["prediction"] = prediction if isinstance(prediction, str) else None
    kept, missing = {}, []
    for label, name in outputs.items():
        if name not in namespace:
            missing.append(label)
            continue
        try:
            kept[label] = plain(namespace[name])
        except Exception as error:  # noqa: BLE001 - a value that cannot be read is noted, never fatal
            kept[label] = f"could not be read ({type(error).__name__})"
    receipt["outputs"] = kept
    receipt["not_computed"] = missing
    modules = sys.modules
    receipt["environment"] = {"python": sys.version.split()[0],
                              "jax": getattr(modules.get("jax"), "__version__", None),
                              "numpy": getattr(modules.get("numpy"), "__version__", None)}
    target = (folder or path.parent / FOLDER) / f"{assignment}-receipt.json"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(receipt, indent=1) + "\n", encoding="utf-8")
    except OSError as error:
        print(f"Could not write the receipt to {target} ({_reason(error)}); nothing was kept. Open the notebook "
              f"from a folder you may write to and run this cell again.")
        return None
    words = "your prediction" if receipt["prediction"] else "no prediction yet (set `prediction` above)"
    note = f"; not computed yet: {', '.join(missing)}" if missing else ""
    print(f"Receipt written to {target}: {len(cells)} of your cells, {len(kept)} outputs, {words}{note}.")
    return target


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return f"{type(error).__name__}: {str(error)[:120]}"
