"""A one-machine Slurm cluster with two compute nodes: ``python -m grader slurm up|down|status`` (as root).

What a site's Slurm gives the course, on this machine, for a demo and for the tests: Debian's ``slurm-wlm`` 22.05 and
``munge`` (installed with apt-get when missing), a controller, and two ``slurmd`` nodes on 127.0.0.1 and 127.0.0.2 in
one partition, ``course``. The daemons are started directly (no systemd) and write their pid files in the state
folder, so ``down`` stops exactly what ``up`` started. Jobs are tracked and confined by Slurm's cgroups (v1), so a
job over its ``--mem`` is killed, as on a site.

``slurm.conf`` goes where Slurm's commands read it (``/etc/slurm/slurm.conf``), marked as this module's: ``up``
refuses to replace one it did not write (that is a site's), and ``down`` removes only its own.
"""
from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from grader.slurm import hosts

MARK = "# written by `python -m grader slurm up` (grader/slurm/local.py): a one-machine cluster for a demo and tests"
PARTITION = "course"
SECOND_NODE_ADDR = "127.0.0.2"


class SlurmRefused(RuntimeError):
    """The one-machine cluster cannot be set up or stopped safely; the message names the fix."""


@dataclass(frozen=True)
class LocalSlurm:
    state: Path = Path("/var/lib/jax-course-slurm")
    conf_dir: Path = Path("/etc/slurm")
    cpus: int = 4  # per node, declared (SlurmdParameters=config_overrides): a Jupyter server needs no whole core
    memory_mb: int = 10000  # per node, declared
    separate_hosts: bool = False  # each node a host of its own (grader.slurm.hosts), else two loopback addresses

    @property
    def conf(self) -> Path:
        return self.conf_dir / "slurm.conf"

    @property
    def nodes(self) -> tuple[str, str]:
        if self.separate_hosts:
            return tuple(h.name for h in hosts.hosts())
        host = socket.gethostname().split(".")[0]
        return host, f"{host}-2"

    @property
    def head_address(self) -> str:
        """The head's address the nodes reach: the bridge's, or loopback when the nodes are this host's."""
        return hosts.HEAD if self.separate_hosts else "127.0.0.1"

    def slurm_conf(self) -> str:
        first, second = self.nodes
        s = self.state
        node = f"CPUs={self.cpus} RealMemory={self.memory_mb} State=UNKNOWN"
        return "\n".join([
            MARK,
            "ClusterName=course",
            f"SlurmctldHost={socket.gethostname().split('.')[0]}({self.head_address})",
            "AuthType=auth/munge",
            "SlurmUser=slurm",
            f"StateSaveLocation={s}/ctld",
            f"SlurmdSpoolDir={s}/spool/%n",
            f"SlurmctldPidFile={s}/slurmctld.pid",
            f"SlurmdPidFile={s}/slurmd-%n.pid",
            f"SlurmctldLogFile={s}/slurmctld.log",
            f"SlurmdLogFile={s}/slurmd-%n.log",
            "ProctrackType=proctrack/cgroup",
            "TaskPlugin=task/cgroup,task/affinity",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory,CR_LLN",  # least-loaded node first: servers spread over both
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "MpiDefault=none",
            "DefMemPerCPU=1000",
            "SchedulerType=sched/backfill",
            "KillWait=5",
            "InactiveLimit=0",
            *([f"NodeName={h.name} NodeHostname={h.name} NodeAddr={h.address} {node}" for h in hosts.hosts()]
              if self.separate_hosts else
              [f"NodeName={first} NodeAddr=127.0.0.1 {node}",
               f"NodeName={second} NodeHostname={second} NodeAddr={SECOND_NODE_ADDR} Port=6828 {node}"]),
            f"PartitionName={PARTITION} Nodes={first},{second} Default=YES MaxTime=INFINITE State=UP",
            "",
        ])

    @staticmethod
    def cgroup_conf() -> str:
        return "\n".join([MARK, "CgroupPlugin=cgroup/v1", "ConstrainCores=yes", "ConstrainRAMSpace=yes", ""])

    # -- the steps of `up`, in order -------------------------------------------------------------------------------

    def install(self) -> str:
        """Debian's packages, when a daemon is missing (about 10 s; ``apt-get update`` first only when needed)."""
        if all(shutil.which(name, path="/usr/sbin:/usr/bin") for name in ("slurmctld", "slurmd", "munged", "sbatch")):
            return "slurm-wlm and munge: installed already"
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        command = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "slurm-wlm", "munge"]
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode:
            subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env)
            done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode:
            raise SlurmRefused(f"apt-get could not install slurm-wlm and munge:\n{done.stderr[-2000:]}")
        return "slurm-wlm and munge: installed with apt-get"

    def configure(self) -> bool:
        """Write the configuration; whether it changed (then running daemons must be started again)."""
        for path in (self.conf, self.conf_dir / "cgroup.conf"):
            if path.exists() and MARK not in path.read_text():
                raise SlurmRefused(f"{path} is not this module's (a site's Slurm?): the one-machine cluster would "
                                   "replace it. Use the site's Slurm as it is, or move the file away first")
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        slurm = pwd.getpwnam("slurm")
        for folder in (self.state, self.state / "ctld", self.state / "spool"):
            folder.mkdir(parents=True, exist_ok=True)
            os.chmod(folder, 0o755)
        os.chown(self.state / "ctld", slurm.pw_uid, slurm.pw_gid)
        changed = False
        for path, text in ((self.conf, self.slurm_conf()), (self.conf_dir / "cgroup.conf", self.cgroup_conf())):
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
                changed = True
        return changed

    def start(self, timeout: float = 60) -> None:
        """Start what is not running (munged where none answers, the controller, each node), wait until idle."""
        running = self.pids()
        munge = pwd.getpwnam("munge")
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        os.chown("/run/munge", munge.pw_uid, munge.pw_gid)
        if subprocess.run(["munge", "-n"], capture_output=True).returncode:  # no munged answering yet: ours
            _run("runuser", "-u", "munge", "--", "/usr/sbin/munged")
            (self.state / "munged.ours").touch()
        if self.separate_hosts:
            hosts.up(hosts.hosts())
        if "slurmctld" not in running:  # -c: no job of an earlier run recovered (`down` cancelled them all)
            _run("/usr/sbin/slurmctld", "-c")
        for node, host in zip(self.nodes, hosts.hosts()):
            if f"slurmd-{node}" not in running:
                command = ["/usr/sbin/slurmd", "-N", node]
                _run(*(hosts.on(host, command) if self.separate_hosts else command))
        deadline = time.monotonic() + timeout
        while self.idle_nodes(set(self.nodes)) < 2:
            if time.monotonic() > deadline:
                raise SlurmRefused(f"the nodes were not idle within {timeout:.0f} s:\n{self.status()}\n"
                                   f"{self._log_tail()}")
            time.sleep(0.5)

    def up(self, say=print) -> None:
        say(f"slurm: {self.install()}")
        if self.configure() and self.pids():
            say(f"slurm: the configuration changed: stopping {', '.join(self.down(keep_conf=True))} to start again")
        began = time.monotonic()
        self.start()
        addresses = ", ".join(h.address for h in hosts.hosts()) if self.separate_hosts else f"127.0.0.1, {SECOND_NODE_ADDR}"
        say(f"slurm: partition {PARTITION!r} on nodes {', '.join(self.nodes)} ({addresses}), idle "
            f"in {time.monotonic() - began:.1f} s; configuration {self.conf}, logs and state {self.state}")

    # -- reading and stopping ------------------------------------------------------------------------------------

    def pids(self) -> dict[str, int]:
        """The live daemons this module started: the controller and every node's (of either layout)."""
        found = {}
        for path in [self.state / "slurmctld.pid", *sorted(self.state.glob("slurmd-*.pid"))]:
            try:
                found[path.stem] = int(path.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
        return {name: pid for name, pid in found.items() if _alive(pid)}

    def idle_nodes(self, names: set[str] | None = None) -> int:
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True)
        return sum(1 for line in done.stdout.splitlines() if line.split()[-1:] in (["idle"], ["mix"], ["alloc"])
                   and (names is None or line.split()[0] in names))

    def status(self) -> str:
        done = subprocess.run(["sinfo", "-N", "-l"], capture_output=True, text=True)
        return (done.stdout or done.stderr).strip()

    def _log_tail(self) -> str:
        path = self.state / "slurmctld.log"
        return path.read_text()[-2000:] if path.exists() else ""

    def down(self, timeout: float = 20, keep_conf: bool = False) -> list[str]:
        """Cancel every job, stop the daemons this module started, remove its configuration; what was stopped."""
        if not self.conf.exists() or MARK not in self.conf.read_text():
            return []
        subprocess.run(["scancel", "--full", "--partition", PARTITION], capture_output=True, timeout=30)
        deadline = time.monotonic() + timeout  # the jobs end (their step daemons report to the controller) first
        while _listed_jobs() and time.monotonic() < deadline:
            time.sleep(0.2)
        stopped = []
        for name, pid in self.pids().items():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            stopped.append(name)
        if (self.state / "munged.ours").exists() and not keep_conf:  # munged only where `up` started it
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(Path("/run/munge/munged.pid").read_text().split()[0]), signal.SIGTERM)
                stopped.append("munged")
            (self.state / "munged.ours").unlink(missing_ok=True)
        for pid in _step_daemons():  # a job's step daemon that outlived its node's slurmd would hold the job in
            with contextlib.suppress(ProcessLookupError):  # "completing" through the next `up` (its network gone)
                os.kill(pid, signal.SIGKILL)
            stopped.append(f"slurmstepd {pid}")
        hosts.down(hosts.hosts())  # the nodes' namespaces, once their daemons are gone
        if not keep_conf:
            for path in (self.conf, self.conf_dir / "cgroup.conf"):
                path.unlink(missing_ok=True)
        return stopped


def _listed_jobs() -> bool:
    try:
        done = subprocess.run(["squeue", "-h", "-p", PARTITION], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and bool(done.stdout.strip())


def _step_daemons() -> list[int]:
    """The ``slurmstepd`` processes of this machine (the one-machine cluster's: ``down`` runs only on it)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "slurmstepd":
                found.append(int(pid))
        except OSError:
            continue
    return found


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        raise SlurmRefused(f"{' '.join(argv)} failed:\n{(done.stderr or done.stdout)[-2000:]}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False



def main(action: str, cluster: LocalSlurm | None = None, separate_hosts: bool = False) -> int:
    """``python -m grader slurm up|down|status [--separate-hosts]``."""
    cluster = cluster or LocalSlurm(separate_hosts=separate_hosts)
    try:
        if action == "up":
            cluster.up()
        elif action == "down":
            print(f"slurm: stopped {', '.join(cluster.down()) or 'nothing (not running, or not this module’s)'}")
        else:
            print(cluster.status())
    except (SlurmRefused, RuntimeError) as error:  # RuntimeError: a node's network could not be made (hosts.py)
        print(f"slurm: {error}", file=sys.stderr)
        return 2
    return 0
