"""The kernel confinement, proven on harmless programs before any attack runs."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from grader.sandbox import Confinement, Limits, launch_command

ROOT = Path(__file__).resolve().parent.parent


def _confined(tmp_path: Path, code: str, limits: Limits, *, uid: int | None = 61900, timeout: int = 60):
    # Like the grader, a fresh folder directly in the system temp dir, so the
    # unprivileged uid can reach it (pytest's tmp_path parents are private).
    scratch = Path(tempfile.mkdtemp(prefix="sandbox-test-"))
    conf = Confinement(scratch=scratch, limits=limits, uid=uid if os.geteuid() == 0 else None,
                       private_root=os.geteuid() == 0,
                       keep=[Path(sys.prefix), Path(sys.base_prefix)])
    conf.home.mkdir()
    command = launch_command(conf, sys.executable) + ["--", sys.executable, "-c", textwrap.dedent(code)]
    try:
        subprocess.run(command, timeout=timeout, check=False)
        return conf.log_file.read_text() + (conf.status_file.read_text() if conf.status_file.exists() else "")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def prove_process_limit() -> bool:
    """Start 40 sleeping children under a limit of 20 processes: the limit must stop them."""
    if os.geteuid() != 0:
        return False  # RLIMIT_NPROC needs a dedicated uid; without root we cannot switch
    log = _confined(Path("."), """
        import subprocess, sys
        children, refused = [], 0
        for _ in range(40):
            try:
                children.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"]))
            except OSError:
                refused += 1
        print("started", len(children), "refused", refused)
        for child in children:
            child.kill()
        """, Limits(max_processes=20))
    words = log.split()
    return "started" in words and int(words[words.index("started") + 1]) < 20 and int(words[words.index("refused") + 1]) > 0


def test_process_limit_holds_on_a_harmless_case():
    if os.geteuid() != 0:
        pytest.skip("not root: no dedicated uid, so RLIMIT_NPROC cannot be enforced per submission; fork bomb not run")
    assert prove_process_limit()


def test_memory_limit_turns_allocation_into_memoryerror(tmp_path):
    log = _confined(tmp_path, """
        try:
            block = bytearray(2 * 1024**3)
            print("allocated")
        except MemoryError:
            print("refused")
        """, Limits(memory_mb=1024))
    assert "refused" in log


def test_course_files_and_home_are_hidden(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mount namespaces need root here")
    log = _confined(tmp_path, f"""
        import os
        print("source", os.path.exists({str(ROOT / 'source')!r}))
        print("rubric", os.path.exists({str(ROOT / 'source' / 'sharded_step' / 'rubric.py')!r}))
        print("uid", os.getuid())
        print("course root holds", sorted(os.listdir({str(ROOT)!r})))
        try:
            open({str(ROOT / 'pwned.txt')!r}, "w")
            print("wrote course")
        except OSError:
            print("course read-only")
        """, Limits())
    assert "source False" in log and "rubric False" in log
    assert "uid 61900" in log
    assert f"course root holds {sorted(p.name for p in [Path(sys.prefix)] if p.parent == ROOT)}" in log
    assert "course read-only" in log
    assert not (ROOT / "pwned.txt").exists()


def test_environment_does_not_reveal_grading(tmp_path):
    log = _confined(tmp_path, """
        import os
        print(sorted(os.environ))
        """, Limits())
    names = log.strip().splitlines()[-1]
    for marker in ("NBGRADER", "GRADER", "PYTEST", "JPY_", "COURSE_ROOT"):
        assert marker not in names
