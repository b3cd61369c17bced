"""The documented Slurm recipe (docs/how-to/grade-on-a-cluster.md, "Recipes"), run for real: dask-jobqueue's
``SLURMCluster`` with the recipe's arguments and this deployment's certificates, its job scripts submitted with the
real ``sbatch`` to a real ``slurmctld`` (the one-machine Slurm of ``python -m grader slurm up --separate-hosts``: two
nodes, each a host of its own, its own network namespace, host name and /tmp, reached over a bridge).

What a Slurm site runs: the scheduler that ``SLURMCluster`` starts in this process, the job script it generates
(``dask worker`` command line with the TLS files) queued and placed by Slurm on its nodes, each worker in its job's
cgroup with the job's memory limit, the workers registering over mutual TLS, and
``grader.classroom.cluster.grade_all_on_cluster`` with the cluster object. Every connection crosses the bridge
between the head (10.77.0.1) and the nodes (10.77.0.2, 10.77.0.3); none can use the head's loopback. What the jobs
read and write (the certificates, their logs) is in a folder every node shares, as a site's shared filesystem.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from grader.classroom.batch import grade_all
from grader.classroom.certs import make_certificates
from grader.classroom.cluster import deployment_security, grade_all_on_cluster
from grader.slurm import hosts
from grader.submission.pipeline import Settings

jobqueue = pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is installed with the test extras")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "submitted"
ONLY = ["sharded_step"]


@pytest.fixture(scope="module")
def site(slurm):
    """The session's one-machine Slurm, whose nodes are hosts of their own, and a folder every node shares, as a
    site's."""
    assert slurm.separate_hosts
    shared = slurm.state / "shared" / uuid.uuid4().hex
    shared.mkdir(parents=True)
    try:
        yield slurm, shared
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _listener(address: str) -> tuple[socket.socket, int]:
    server = socket.socket()
    server.bind((address, 0))
    server.listen()
    threading.Thread(target=lambda: [server.accept()[0].sendall(b"head\n") for _ in range(4)], daemon=True).start()
    return server, server.getsockname()[1]


@pytest.mark.skipif(os.geteuid() != 0, reason="Slurm's daemons and network namespaces need root")
def test_a_node_is_a_host_of_its_own(site):
    """A job on a node sees its own host name, address and /tmp; it reaches the head at the bridge's address and not
    at the head's loopback, where a server of the head listens too."""
    cluster, shared = site
    marker = Path("/tmp") / f"head-only-{uuid.uuid4().hex}"
    marker.write_text("the head's /tmp")
    on_bridge, bridge_port = _listener(hosts.HEAD)
    on_loopback, loopback_port = _listener("127.0.0.1")
    probe = (f"import socket, os\nfrom pathlib import Path\n"
             f"def reach(address, port):\n"
             f"    try:\n        return socket.create_connection((address, port), timeout=3).recv(5).decode().strip()\n"
             f"    except OSError as error:\n        return type(error).__name__\n"
             f"print(socket.gethostname(), reach({hosts.HEAD!r}, {bridge_port}), reach('127.0.0.1', {loopback_port}), "
             f"Path({str(marker)!r}).exists())\n")
    (shared / "probe.py").write_text(probe)
    try:
        for node in cluster.nodes:
            out = shared / f"{node}.out"
            done = subprocess.run(["sbatch", "--wait", "-w", node, "-o", str(out), "--wrap",
                                   f"{sys.executable} {shared / 'probe.py'}; ip -4 -o addr show"],
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            first, *addresses = out.read_text().splitlines()
            name, bridge, loopback, sees_marker = first.split()
            address = next(h.address for h in hosts.hosts() if h.name == node)
            assert (name, bridge, loopback, sees_marker) == (node, "head", "ConnectionRefusedError", "False"), first
            assert [a.split()[3] for a in addresses] == ["127.0.0.1/8", f"{address}/24"], addresses
    finally:
        marker.unlink()
        on_bridge.close()
        on_loopback.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="workers seal kernels only as root, as the documented recipe requires")
def test_the_documented_slurm_recipe_grades_like_the_local_grader(tmp_path, course, site):
    slurm, shared = site
    tls = make_certificates(shared / "tls").folder
    logs_dir = shared / "jobs"
    # The recipe's arguments (docs/how-to/grade-on-a-cluster.md); only the scheduler's address (the head's, on the
    # network the nodes reach), the workers' interface (each node's own) and no dashboard are added.
    with jobqueue.SLURMCluster(cores=3, processes=1, job_cpu=2, memory="4GiB", walltime="01:00:00",
                               python=sys.executable, protocol="tls://", security=deployment_security(tls),
                               scheduler_options={"host": hosts.HEAD, "dashboard_address": None},
                               worker_extra_args=["--interface", "eth0"], log_directory=str(logs_dir)) as cluster:
        script = cluster.job_script()
        assert "#SBATCH --cpus-per-task=2" in script and "#SBATCH --mem=" in script
        for flag in ("--tls-ca-file", "--tls-cert", "--tls-key", "--nthreads 3", "--protocol tls://"):
            assert flag in script, script  # the workers are started with this deployment's certificates
        assert str(tls) in script and cluster.scheduler_address.startswith(f"tls://{hosts.HEAD}:")
        cluster.scale(jobs=2)
        try:
            remote = grade_all_on_cluster(SAMPLES, course, Settings(out=tmp_path / "cluster"), cluster, only=ONLY)
            queued = subprocess.run(["squeue", "-h", "-o", "%i %j %T %N %m"], capture_output=True, text=True).stdout
            jobs = [line.split() for line in queued.splitlines() if "dask-worker" in line]
        finally:
            ids = [job.job_id for job in cluster.workers.values() if getattr(job, "job_id", None)]
        # both workers were Slurm jobs, running, each placed by slurmctld on a node of its own (least loaded first),
        # each with the recipe's memory
        assert len(jobs) == 2 and {j[2] for j in jobs} == {"RUNNING"}, queued
        assert {j[3] for j in jobs} == set(slurm.nodes) and {j[4] for j in jobs} == {"4G"}, queued
        logs = "".join(p.read_text() for p in logs_dir.glob("*.err"))
        assert "Registered to:" in logs and f"tls://{hosts.HEAD}" in logs, logs[-2000:]
        for host in hosts.hosts():  # each worker listened on its own node's address
            assert f"tls://{host.address}:" in logs, logs[-2000:]
    left = subprocess.run(["squeue", "-h", "-j", ",".join(ids)], capture_output=True, text=True).stdout
    subprocess.run(["scancel", *ids], capture_output=True)  # dask-jobqueue cancels them; only a crash leaves any
    assert ids and not [line for line in left.splitlines() if " R " in line], left
    local = grade_all(SAMPLES, course, Settings(out=tmp_path / "local"), workers=2, only=ONLY)
    assert {r.status.value for r in remote} == {"graded"} and len(remote) == len(local)
    assert (tmp_path / "cluster" / "results.json").read_text() == (tmp_path / "local" / "results.json").read_text()
    assert (tmp_path / "cluster" / "grades.csv").read_text() == (tmp_path / "local" / "grades.csv").read_text()
