"""Compute nodes that are hosts of their own, on one machine: a Linux network namespace per node, joined to the head
by a veth pair into a bridge, with its own loopback, host name (a UTS namespace) and temporary folder (a mount
namespace with a fresh ``/tmp``), as ``python -m grader slurm up --separate-hosts`` makes them.

What crosses between the head and a node then crosses a network: a node reaches the head only at the bridge's
address (``HEAD``), never the head's 127.0.0.1, and the head reaches a node only at its own address. ``/home``, the
course's folders and the learners' environment stay shared, as a site's shared filesystem is; folders under ``/tmp``
that must be seen on the nodes (a checkout or its virtual environment cloned there, as CI does) are bound into each
node's fresh ``/tmp`` at their own paths, as a site mounts a project folder on every node.

Names and the subnet are this module's alone (``jdt-*``, 10.77.0.0/24): one cluster per machine, as
``/etc/slurm/slurm.conf`` is one per machine. Traffic in the tests goes only to these addresses.
"""
from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BRIDGE = "jdt-br0"
PREFIX = "10.77.0"
HEAD = f"{PREFIX}.1"


@dataclass(frozen=True)
class Host:
    name: str  # its host name and Slurm NodeName
    address: str

    @property
    def netns(self) -> str:
        return f"jdt-{self.name}"

    @property
    def veth(self) -> str:  # the head's end; the node's end is called eth0, as a host's interface is
        return f"jdt-v{self.name[-1]}"


def hosts(count: int = 2) -> list[Host]:
    return [Host(f"node{n}", f"{PREFIX}.{n + 1}") for n in range(1, count + 1)]


def _ip(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(["ip", *argv], capture_output=True, text=True)
    except FileNotFoundError:  # no iproute2: there is nothing of ours to remove, and nothing can be made
        done = subprocess.CompletedProcess(["ip"], 127, "", "ip (iproute2) is not installed")
    if check and done.returncode:
        raise RuntimeError(f"ip {' '.join(argv)} failed: {(done.stderr or done.stdout).strip()}")
    return done


def exists(host: Host) -> bool:
    return Path("/run/netns", host.netns).exists()


def up(nodes: list[Host]) -> None:
    """The bridge on the head (``HEAD``/24) and each node's namespace, address and links; what exists is kept."""
    if _ip("link", "show", BRIDGE, check=False).returncode:
        _ip("link", "add", BRIDGE, "type", "bridge")
        _ip("addr", "add", f"{HEAD}/24", "dev", BRIDGE)
    _ip("link", "set", BRIDGE, "up")
    for host in nodes:
        if exists(host):
            continue
        _ip("netns", "add", host.netns)
        _ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
        _ip("link", "set", host.veth, "master", BRIDGE)
        _ip("link", "set", host.veth, "up")
        _ip("netns", "exec", host.netns, "ip", "addr", "add", f"{host.address}/24", "dev", "eth0")
        _ip("netns", "exec", host.netns, "ip", "link", "set", "eth0", "up")
        _ip("netns", "exec", host.netns, "ip", "link", "set", "lo", "up")


def down(nodes: list[Host]) -> None:
    """Remove the nodes' namespaces and links and the bridge (after their processes are gone)."""
    for host in nodes:
        _ip("netns", "del", host.netns, check=False)
        _ip("link", "del", host.veth, check=False)
    _ip("link", "del", BRIDGE, check=False)


def shared_under_tmp() -> list[str]:
    """Folders under /tmp a node must still see: the interpreter's environment and this checkout (CI clones to /tmp)."""
    here = Path(__file__).resolve().parents[2]
    paths = {Path(sys.prefix), Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), here}
    return sorted({str(p) for p in paths if str(p).startswith("/tmp/")})


def on(host: Host, argv: list[str]) -> list[str]:
    """``argv`` as a process of ``host``: its network namespace (``nsenter --net``: ``ip netns exec`` would mount a
    fresh /sys, where slurmd finds no cgroup filesystem), its own host name and a fresh /tmp."""
    line = "hostname \"$0\" && mkdir -p /run/jdt-tmp && mount --bind /tmp /run/jdt-tmp && " \
           "mount -t tmpfs -o mode=1777 tmpfs /tmp"
    for path in shared_under_tmp():  # parents first (sorted): a folder inside another is bound on top of it
        line += f" && mkdir -p {shlex.quote(path)} && mount --bind {shlex.quote('/run/jdt-tmp' + path[4:])} " \
                f"{shlex.quote(path)}"
    line += " && umount -l /run/jdt-tmp && exec \"$@\""
    return ["nsenter", f"--net=/run/netns/{host.netns}", "unshare", "--uts", "--mount", "--propagation", "private",
            "sh", "-c", line, host.name, *argv]
