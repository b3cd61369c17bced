"""Import an assignment's rubric (trusted instructor code) as it is on disk now: ``load_rubric``.

Kept apart from the judges (``grader.submission.judge``, which this module alone imports, lazily): importing a package
from a folder, and noticing when the instructor changed it, is a job of its own.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
import threading
import types
from pathlib import Path

_LOADING = threading.Lock()
_LOADED: dict[str, bytes] = {}  # package name -> the digest of the rubric files it was imported from


def _rubric_digest(folder: Path) -> bytes:
    """A digest of every ``rubric*.py`` in ``folder``: names and contents (a sibling module changes it too)."""
    return hashlib.sha256(b"".join(f.name.encode() + b"\0" + f.read_bytes() + b"\0"
                                   for f in sorted(folder.glob("rubric*.py")))).digest()


def load_rubric(path: Path):
    """Import ``rubric.py`` from an assignment folder (trusted instructor code), as it is on disk now.

    The folder is imported as a package of its own (``_course_rubric_<assignment>``), so a rubric may keep groups of
    tests in sibling modules (``rubric_<group>.py``, imported by ``rubric.py`` with ``from . import rubric_<group>``);
    nbgrader and the learner's workspace leave every ``rubric*.py`` out. The import is kept while the folder's
    ``rubric*.py`` files are unchanged; once the instructor edits one (a test fixed during the term), the next call
    imports the package afresh, so a running grading service judges with the fixed rubric without a restart."""
    package = f"_course_rubric_{path.parent.name}"
    name = f"{package}.rubric"
    with _LOADING:  # one import at a time: threads grading the same assignment share it
        digest = _rubric_digest(path.parent)
        if name in sys.modules and _LOADED.get(package) == digest:
            return sys.modules[name].rubric
        for loaded in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
            del sys.modules[loaded]  # the package and its sibling modules, imported again below
        folder = types.ModuleType(package)
        folder.__path__ = [str(path.parent)]
        sys.modules[package] = folder
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            _LOADED.pop(package, None)
            raise
        from grader.submission.judge import Rubric

        if not isinstance(rubric := getattr(module, "rubric", None), Rubric):
            raise TypeError(f"{path} must define `rubric = Rubric()`")
        _LOADED[package] = digest
        return rubric
