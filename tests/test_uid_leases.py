"""Root's sandbox uid leases (``grader.sandbox.lease``) against a learner's account: where the lock files live, and
what every lease checks before root opens one. Each test tries the attack the red team used on the earlier design
(a lock folder in the shared /tmp that a learner could make first) and would fail without the defence."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from grader.sandbox import lease

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534  # an account with no rights: what a learner's account can do, it can

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the leases are root's only when the grader runs as root")

# In a private mount namespace with a fresh /tmp and a fresh /run (as after a reboot, before any grader started), an
# account with no rights makes the lock folder wherever it can, fills it with links to a root-only file, and root
# then leases a uid as ``grade``, ``serve`` or a Dask worker would: the file must keep its bytes.
PLANT = r'''
import json, os, subprocess, sys
from pathlib import Path
from grader.sandbox import lease
victim = Path("/run/root-only/canary")
victim.parent.mkdir(mode=0o700)
victim.write_text("root's file")
planted = {}
for folder in (lease.uid_locks(), Path("/tmp/grader-uid-locks")):  # where root leases, and where it used to
    script = 'mkdir -m 777 "$0" && for uid in $(seq 61000 62499); do ln -s "$1" "$0/$uid" || exit 1; done'
    done = subprocess.run(["/bin/sh", "-c", script, str(folder), str(victim)], capture_output=True, text=True,
                          user=65534, group=65534, extra_groups=[], cwd="/")
    planted[str(folder)] = done.returncode == 0 or done.stderr.strip().splitlines()[-1]
refused = None
try:
    with lease.leased_uid() as uid:
        pass
except lease.LeaseRefused as error:
    refused = str(error)
print("PLANT " + json.dumps({"planted": planted, "refused": refused, "victim": victim.read_text(),
                             "locks": str(lease.uid_locks())}))
'''


@needs_root
def test_a_learner_account_cannot_make_roots_uid_locks_first():
    if subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode:
        pytest.skip("no private mount namespace here")
    keep = sorted({str(p) for p in (ROOT, Path(sys.prefix), Path(sys.prefix).resolve(),
                                    Path(sys.executable).resolve().parent.parent) if str(p).startswith("/tmp/")})
    fresh = ("mkdir -p /dev/shm/old-tmp-$$ && mount --bind /tmp /dev/shm/old-tmp-$$ && mount -t tmpfs -o mode=1777 "
             "tmpfs /tmp && mount -t tmpfs -o mode=0755 tmpfs /run")
    for path in keep:  # a checkout or venv under /tmp is bound back at its own path
        fresh += f" && mkdir -p {path} && mount --bind /dev/shm/old-tmp-$$/{path[5:]} {path}"
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           fresh + ' && cd "$2" && exec "$0" -c "$1"', sys.executable, PLANT, str(ROOT)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("PLANT "))[6:])
    assert found["victim"] == "root's file", f"root truncated a file through a learner's lock link: {found}"
    assert found["refused"] is None, found  # root's own folder: the lease went through
    assert found["locks"].startswith("/run/"), found
    assert "Permission denied" in str(found["planted"][found["locks"]]), found  # the learner could not make it


@pytest.fixture
def locks(tmp_path, monkeypatch):
    """A lock folder of the test's own, where each case plants what a learner would have planted."""
    folder = tmp_path / "locks"
    monkeypatch.setattr(lease, "uid_locks", lambda: folder)
    os.chmod(tmp_path, 0o755)
    return folder


def _lease_once(uids=range(61990, 61992)) -> int:
    """Lease and give back one uid, interrupted after 5 s (a FIFO would block root's open forever)."""
    def stuck(*_):
        raise TimeoutError("the lease blocked")
    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(5)
    try:
        with lease.leased_uid(uids) as uid:
            return uid
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@needs_root
@pytest.mark.parametrize("plant", ["link", "fifo", "hard-link", "someone-elses-file", "folder"])
def test_every_lease_refuses_a_planted_lock_file_without_touching_it(locks, tmp_path, plant):
    victim = tmp_path / "victim"
    victim.write_text("root's file")
    _lease_once()  # makes the folder, root's and 0700
    entry = locks / "61990"
    entry.unlink()
    if plant == "link":
        entry.symlink_to(victim)
    elif plant == "fifo":
        os.mkfifo(entry)
    elif plant == "hard-link":
        os.link(victim, entry)
    elif plant == "someone-elses-file":
        entry.write_text("")
        os.chown(entry, NOBODY, NOBODY)
    else:
        entry.mkdir()
    with pytest.raises(lease.LeaseRefused, match="61990.*someone planted it"):
        _lease_once()
    assert victim.read_text() == "root's file"


@needs_root
@pytest.mark.parametrize("plant", ["someone-elses", "open-to-others", "a-link", "in-an-open-folder"])
def test_every_lease_refuses_a_lock_folder_it_cannot_trust(locks, tmp_path, plant):
    if plant == "someone-elses":
        locks.mkdir(mode=0o700)
        os.chown(locks, NOBODY, NOBODY)
    elif plant == "open-to-others":
        locks.mkdir()
        os.chmod(locks, 0o777)
    elif plant == "a-link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        locks.symlink_to(tmp_path / "elsewhere")
    else:  # the folder above it: anyone could swap the lock folder for their own
        os.chmod(tmp_path, 0o777)
    with pytest.raises(lease.LeaseRefused, match="cannot be trusted|someone else made it|is not a folder"):
        _lease_once()
    assert not (tmp_path / "elsewhere").exists() or not list((tmp_path / "elsewhere").iterdir())
    if plant == "someone-elses":  # the hub checks the same before it starts the service, and says what to do
        from grader.hub import install

        with pytest.raises(install.HubRefused, match=r"rm -r .*locks"):
            install.uid_locks(locks)


@needs_root
def test_a_lock_held_elsewhere_is_skipped_and_the_folder_is_roots(locks):
    import fcntl

    _lease_once()
    held = os.open(locks / "61990", os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        assert _lease_once() == 61991
    finally:
        os.close(held)
    info = os.stat(locks)
    assert (info.st_uid, info.st_mode & 0o777) == (0, 0o700)
