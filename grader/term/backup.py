"""``python -m grader term backup|restore``: every record of a term in one archive, checked, and consistent while the
grading service goes on writing.

The archive is a gzipped tar of the records (``records.RECORDS``) with ``MANIFEST.json`` first: each file's size and
SHA-256. nbgrader's database is copied with SQLite's online backup (a consistent copy while the service writes it);
the other records are written by replacing whole files or appending whole lines, so a copy is consistent when no
record changed while it was taken: ``backup`` takes the list of files, copies them, takes the list again, and tries
again while anything changed (a grading service writes each result in well under a second). ``restore`` refuses a
folder that holds any record, checks every file against the manifest before anything is written, and extracts with
tarfile's ``data`` filter (no links, devices, absolute paths or ``..``).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
import time
from pathlib import Path

from grader.term import guard, records

MANIFEST = "MANIFEST.json"
FORMAT = 1


class BackupFailed(RuntimeError):
    """A backup that could not be taken, or an archive that cannot be restored, with the reason."""


def _state(out: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every record file but the gradebook (copied on its own)."""
    found = {}
    for name in records.files(out):
        if name != records.GRADEBOOK:
            info = os.lstat(out / name)
            found[name] = (info.st_size, info.st_mtime_ns)
    return found


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def _copy_gradebook(source: Path, target: Path) -> None:
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as reading, sqlite3.connect(target) as writing:
        reading.backup(writing)
    writing.close()
    reading.close()


def backup(out: Path, archive: Path, tries: int = 20) -> dict:
    """Write every record of ``out`` into ``archive``; the manifest. Raises BackupFailed."""
    out = out.resolve()
    if not records.present(out):
        raise BackupFailed(f"{out} holds no grading records (none of {', '.join(records.RECORDS)})")
    with tempfile.TemporaryDirectory(prefix="term-backup-") as scratch:
        copy = Path(scratch) / "copy"
        for _ in range(tries):
            shutil.rmtree(copy, ignore_errors=True)
            copy.mkdir()
            before = _state(out)
            for name in before:
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(out / name, copy / name, follow_symlinks=False)
            if (out / records.GRADEBOOK).is_file() and not (out / records.GRADEBOOK).is_symlink():
                _copy_gradebook(out / records.GRADEBOOK, copy / records.GRADEBOOK)
            if _state(out) == before:
                break
            time.sleep(0.2)
        else:
            raise BackupFailed(f"the records in {out} changed during each of {tries} tries: stop the grading service "
                               "(or wait for a quiet moment) and run the backup again")
        files = {name: {"bytes": (copy / name).stat().st_size, "sha256": _digest(copy / name)}
                 for name in records.files(copy)}
        manifest = {"format": FORMAT, "term": (guard.marked(out) or {}).get("term"), "files": files,
                    "taken": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        partial = archive.with_name(f".{archive.name}.{os.getpid()}")
        with tarfile.open(partial, "w:gz") as tar:
            data = json.dumps(manifest, indent=1, sort_keys=True).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime = len(data), int(time.time())
            tar.addfile(info, io.BytesIO(data))
            for name in sorted(files):
                tar.add(copy / name, arcname=name, recursive=False)
        os.replace(partial, archive)
    return manifest


def restore(archive: Path, out: Path) -> dict:
    """Restore the records of ``archive`` into ``out``, which must hold none; the manifest. Raises BackupFailed."""
    out = out.resolve()
    if out.exists() and records.present(out):
        raise BackupFailed(f"{out} already holds grading records ({', '.join(records.present(out))}): restore into "
                           "an empty folder, so that nothing of a term is replaced")
    try:
        tar = tarfile.open(archive, "r:gz")
    except (OSError, tarfile.TarError) as error:
        raise BackupFailed(f"{archive} is not a term backup ({error})") from None
    beside = out.parent if out.parent.exists() else None
    with tar, tempfile.TemporaryDirectory(prefix="term-restore-", dir=beside) as scratch:
        try:
            manifest = json.load(tar.extractfile(MANIFEST))
            tar.extractall(scratch, filter="data")
        except (KeyError, ValueError, TypeError, AttributeError, tarfile.TarError, OSError) as error:
            raise BackupFailed(f"{archive} cannot be restored: {error}") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise BackupFailed(f"{archive}: a backup of another format ({manifest.get('format')!r}) than {FORMAT}")
        staged = Path(scratch)
        found = set(records.files(staged))
        expected = manifest.get("files", {})
        if found != set(expected):
            raise BackupFailed(f"{archive}: its files differ from its manifest ({sorted(found ^ set(expected))[:5]})")
        for name, entry in expected.items():
            if _digest(staged / name) != entry["sha256"]:
                raise BackupFailed(f"{archive}: {name} is not the file that was backed up (its SHA-256 differs)")
        out.mkdir(parents=True, exist_ok=True)
        for name in sorted(expected):
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged / name, out / name)
    return manifest
