"""The documented Slurm recipe (docs/how-to/grade-on-a-cluster.md, "Recipes"), run for real: dask-jobqueue's
``SLURMCluster`` with the recipe's arguments and this deployment's certificates, its job scripts submitted to a
local stand-in for ``sbatch``.

Only the queue is replaced: ``sbatch`` here copies the job script that dask-jobqueue wrote and runs it with
bash in the background (``#SBATCH`` lines are comments to bash), ``scancel`` kills that job's process group.
Everything else is what a Slurm site runs: the scheduler that ``SLURMCluster`` starts in this process, the job
script it generates (``dask worker`` command line with the TLS files), the workers registering over mutual
TLS, ``grader.classroom.cluster.grade_all_on_cluster`` with the cluster object. Every connection goes to 127.0.0.1.
"""
from __future__ import annotations

import os
import stat
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

SBATCH = """#!/bin/bash
# A local stand-in for Slurm's sbatch: run the job script in the background, print Slurm's answer.
set -e
jobs={jobs}
copy="$jobs/job-$$-$RANDOM.sh"
cp "$1" "$copy"   # dask-jobqueue deletes its file as soon as sbatch returns
setsid bash "$copy" >"$copy.log" 2>&1 </dev/null &
echo "Submitted batch job $!"
"""

SCANCEL = """#!/bin/bash
kill -TERM -- "-$1" 2>/dev/null || true
"""


@pytest.fixture
def local_queue(tmp_path, monkeypatch) -> Path:
    """``sbatch`` and ``scancel`` on ``PATH`` that run jobs on this machine; returns the jobs' folder."""
    bin_dir, jobs = tmp_path / "bin", tmp_path / "jobs"
    bin_dir.mkdir()
    jobs.mkdir()
    for name, text in (("sbatch", SBATCH.format(jobs=jobs)), ("scancel", SCANCEL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return jobs


@pytest.mark.skipif(os.geteuid() != 0, reason="workers seal kernels only as root, as the documented recipe requires")
def test_the_documented_slurm_recipe_grades_like_the_local_grader(tmp_path, course, local_queue):
    tls = make_certificates(tmp_path / "tls").folder
    # The recipe's arguments (docs/how-to/grade-on-a-cluster.md); only host (loopback, for this machine) and dashboard (none) are added.
    with jobqueue.SLURMCluster(cores=3, processes=1, job_cpu=2, memory="4GiB", walltime="01:00:00",
                               python=sys.executable, protocol="tls://", security=deployment_security(tls),
                               scheduler_options={"host": "127.0.0.1", "dashboard_address": None},
                               worker_extra_args=["--host", "127.0.0.1"]) as cluster:
        script = cluster.job_script()
        assert "#SBATCH --cpus-per-task=2" in script and "#SBATCH --mem=" in script
        for flag in ("--tls-ca-file", "--tls-cert", "--tls-key", "--nthreads 3", "--protocol tls://"):
            assert flag in script, script  # the workers are started with this deployment's certificates
        assert str(tls) in script and cluster.scheduler_address.startswith("tls://127.0.0.1:")
        cluster.scale(jobs=2)
        remote = grade_all_on_cluster(SAMPLES, course, Settings(out=tmp_path / "cluster"), cluster, only=ONLY)
        assert len(list(local_queue.glob("job-*.sh"))) == 2  # both went through the stand-in sbatch
        logs = "".join(p.read_text() for p in local_queue.glob("*.log"))
        assert "Registered to:" in logs and "tls://127.0.0.1" in logs, logs[-2000:]
    local = grade_all(SAMPLES, course, Settings(out=tmp_path / "local"), workers=2, only=ONLY)
    assert {r.status.value for r in remote} == {"graded"} and len(remote) == len(local)
    assert (tmp_path / "cluster" / "results.json").read_text() == (tmp_path / "local" / "results.json").read_text()
    assert (tmp_path / "cluster" / "grades.csv").read_text() == (tmp_path / "local" / "grades.csv").read_text()
