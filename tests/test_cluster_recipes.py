"""The documented Slurm recipe (docs/how-to/grade-on-a-cluster.md, "Recipes"), run for real: dask-jobqueue's
``SLURMCluster`` with the recipe's arguments and this deployment's certificates, its job scripts submitted with the
real ``sbatch`` to a real ``slurmctld`` (the one-machine Slurm of ``python -m grader slurm up``, two nodes).

What a Slurm site runs: the scheduler that ``SLURMCluster`` starts in this process, the job script it generates
(``dask worker`` command line with the TLS files) queued and placed by Slurm on its nodes, each worker in its job's
cgroup with the job's memory limit, the workers registering over mutual TLS, and
``grader.classroom.cluster.grade_all_on_cluster`` with the cluster object. Every connection goes to 127.0.0.1 or
127.0.0.2 (the second node).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.classroom.batch import grade_all
from grader.classroom.certs import make_certificates
from grader.classroom.cluster import deployment_security, grade_all_on_cluster
from grader.submission.pipeline import Settings

jobqueue = pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is installed with the test extras")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "submitted"
ONLY = ["sharded_step"]


@pytest.mark.skipif(os.geteuid() != 0, reason="workers seal kernels only as root, as the documented recipe requires")
def test_the_documented_slurm_recipe_grades_like_the_local_grader(tmp_path, course, slurm):
    tls = make_certificates(tmp_path / "tls").folder
    logs_dir = tmp_path / "jobs"
    # The recipe's arguments (docs/how-to/grade-on-a-cluster.md); only host (loopback, for this machine) and dashboard (none) are added.
    with jobqueue.SLURMCluster(cores=3, processes=1, job_cpu=2, memory="4GiB", walltime="01:00:00",
                               python=sys.executable, protocol="tls://", security=deployment_security(tls),
                               scheduler_options={"host": "127.0.0.1", "dashboard_address": None},
                               worker_extra_args=["--host", "127.0.0.1"], log_directory=str(logs_dir)) as cluster:
        script = cluster.job_script()
        assert "#SBATCH --cpus-per-task=2" in script and "#SBATCH --mem=" in script
        for flag in ("--tls-ca-file", "--tls-cert", "--tls-key", "--nthreads 3", "--protocol tls://"):
            assert flag in script, script  # the workers are started with this deployment's certificates
        assert str(tls) in script and cluster.scheduler_address.startswith("tls://127.0.0.1:")
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
        assert "Registered to:" in logs and "tls://127.0.0.1" in logs, logs[-2000:]
    left = subprocess.run(["squeue", "-h", "-j", ",".join(ids)], capture_output=True, text=True).stdout
    subprocess.run(["scancel", *ids], capture_output=True)  # dask-jobqueue cancels them; only a crash leaves any
    assert ids and not [line for line in left.splitlines() if " R " in line], left
    local = grade_all(SAMPLES, course, Settings(out=tmp_path / "local"), workers=2, only=ONLY)
    assert {r.status.value for r in remote} == {"graded"} and len(remote) == len(local)
    assert (tmp_path / "cluster" / "results.json").read_text() == (tmp_path / "local" / "results.json").read_text()
    assert (tmp_path / "cluster" / "grades.csv").read_text() == (tmp_path / "local" / "grades.csv").read_text()
