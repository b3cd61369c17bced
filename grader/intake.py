"""Find and read a submitted notebook without trusting anything in it."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024


class InvalidSubmission(Exception):
    """The submission cannot be graded; ``status`` says why."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Submission:
    path: Path
    notebook: nbformat.NotebookNode
    sha256: str
    duplicate_cell_ids: list[str]


def locate(folder: Path, expected_name: str) -> Path:
    """The notebook the course asked for, or ``InvalidSubmission``."""
    expected = folder / expected_name
    if expected.is_file() and not expected.is_symlink():
        return expected
    others = sorted(p.name for p in folder.glob("*.ipynb")) if folder.is_dir() else []
    if others:
        raise InvalidSubmission(
            "invalid_notebook", f"expected a notebook named {expected_name}, found {', '.join(others)}"
        )
    raise InvalidSubmission("missing", f"no {expected_name} was submitted")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read(path: Path) -> Submission:
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise InvalidSubmission("invalid_notebook", f"the notebook is {size} bytes; the limit is {MAX_NOTEBOOK_BYTES}")
    raw_bytes = path.read_bytes()
    try:
        raw = json.loads(raw_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidSubmission("invalid_notebook", f"the file is not valid JSON ({error})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise InvalidSubmission("invalid_notebook", "the file is JSON but not a Jupyter notebook")
    ids = [c.get("id") for c in raw["cells"] if isinstance(c, dict) and isinstance(c.get("id"), str)]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    for number, cell in enumerate(raw["cells"]):
        if isinstance(cell, dict) and "id" in cell:
            cell["id"] = f"submitted-{number}"  # duplicates would make nbformat reject or rewrite them
    try:
        if raw.get("nbformat") != 4:
            raise ValueError(f"nbformat {raw.get('nbformat')!r} is not supported (expected 4)")
        notebook = nbformat.reads(json.dumps(raw), as_version=4)
        nbformat.validate(notebook)
    except (ValueError, nbformat.ValidationError, KeyError, TypeError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InvalidSubmission("invalid_notebook", f"the file is not a valid notebook: {first_line}") from None
    return Submission(path, notebook, hashlib.sha256(raw_bytes).hexdigest(), duplicates)
