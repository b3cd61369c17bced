"""The Slurm spawner's part of JupyterHub's internal TLS (``grader.slurm.spawner``): each server's key reaches its
node through the learner's home, written there by the learner's own account, never by root.

The attack: a learner who controls their home plants ``~/.jupyterhub-certs`` as a link to a folder of root's (or a
key's name as a link to a root-only file) before their server starts. JupyterHub's ``LocalProcessSpawner`` moves the
files there as root and hands them to the learner (``chown``), which would put the key into, and give away, whatever
the link names. Here the spawner is given a home owned by ``nobody``, and must leave root's folder as it was."""
from __future__ import annotations

import asyncio
import os
import pwd
import types
from pathlib import Path

import pytest

from grader.slurm import spawner as slurm_spawner

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="writes as another account (runuser): needs root")


def _spawner(monkeypatch, home: Path):
    nobody = pwd.getpwnam("nobody")
    monkeypatch.setattr(slurm_spawner.pwd, "getpwnam", lambda name: types.SimpleNamespace(
        pw_dir=str(home), pw_uid=nobody.pw_uid, pw_gid=nobody.pw_gid))
    monkeypatch.setattr(slurm_spawner, "PYTHON", "/usr/bin/python3")  # this checkout is closed to other accounts
    this = types.SimpleNamespace(user=types.SimpleNamespace(name="nobody"))
    return lambda paths: asyncio.run(slurm_spawner.CourseSlurmSpawner.move_certs(this, paths))


@pytest.fixture
def tmp_path():
    """A folder every account can reach (pytest's own is under a root-only one), as /home is."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="spawner-test-", dir="/tmp"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _hub_copies(folder: Path) -> dict[str, str]:
    folder.mkdir()
    paths = {}
    for key, name in (("keyfile", "user-x.key"), ("certfile", "user-x.crt"), ("cafile", "notebooks-ca_trust.crt")):
        (folder / name).write_text(f"{key} bytes\n")
        paths[key] = str(folder / name)
    return paths


def test_the_servers_key_is_written_by_the_learner_into_their_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, pwd.getpwnam("nobody").pw_uid, pwd.getpwnam("nobody").pw_gid)
    paths = _hub_copies(tmp_path / "hub")
    moved = _spawner(monkeypatch, home)(paths)
    folder = home / ".jupyterhub-certs"
    assert moved == {k: str(folder / Path(v).name) for k, v in paths.items()}
    assert Path(moved["keyfile"]).read_text() == "keyfile bytes\n" and folder.stat().st_mode & 0o777 == 0o700
    assert {p.stat().st_uid for p in folder.iterdir()} == {pwd.getpwnam("nobody").pw_uid}
    assert not Path(paths["keyfile"]).exists() and Path(paths["cafile"]).exists()  # the key lives in one place


@pytest.mark.parametrize("planted", ["folder", "file"])
def test_a_link_planted_in_the_home_never_makes_root_write_or_give_away(tmp_path, monkeypatch, planted):
    home, roots = tmp_path / "home", tmp_path / "roots"
    home.mkdir()
    roots.mkdir(mode=0o700)
    (roots / "user-x.key").write_text("root's own file\n")
    nobody = pwd.getpwnam("nobody")
    os.chown(home, nobody.pw_uid, nobody.pw_gid)
    if planted == "folder":
        (home / ".jupyterhub-certs").symlink_to(roots)
    else:
        (home / ".jupyterhub-certs").mkdir()
        (home / ".jupyterhub-certs" / "user-x.key").symlink_to(roots / "user-x.key")
        os.chown(home / ".jupyterhub-certs", nobody.pw_uid, nobody.pw_gid)
    paths = _hub_copies(tmp_path / "hub")
    with pytest.raises(RuntimeError, match="could not be written") as refused:
        _spawner(monkeypatch, home)(paths)
    assert ("is not a folder" if planted == "folder" else "Too many levels of symbolic links") in str(refused.value)
    assert sorted(p.name for p in roots.iterdir()) == ["user-x.key"]
    assert (roots / "user-x.key").read_text() == "root's own file\n" and (roots / "user-x.key").stat().st_uid == 0
    assert roots.stat().st_uid == 0 and roots.stat().st_mode & 0o777 == 0o700


def test_every_node_is_named_in_a_servers_certificate(monkeypatch):
    listed = ("NodeName=node1 Arch=x86_64 NodeAddr=10.77.0.2 NodeHostName=node1 Version=22.05\n"
              "NodeName=node2 NodeAddr=10.77.0.3 NodeHostName=node2.cluster\n")
    monkeypatch.setattr(slurm_spawner.subprocess, "run", lambda *a, **k: types.SimpleNamespace(
        returncode=0, stdout=listed, stderr=""))
    assert slurm_spawner.node_alt_names() == ["DNS:node1", "DNS:node2", "DNS:node2.cluster", "IP:10.77.0.2",
                                              "IP:10.77.0.3"]
