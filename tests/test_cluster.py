"""The Dask cluster path: a real dask.distributed scheduler and two worker processes on loopback
grade the sample class exactly as the local parallel grader does."""
from __future__ import annotations

import os
from pathlib import Path

import distributed
import pytest

from grader.batch import grade_all
from grader.cluster import WorkerFailed, _claim_attempt, execution_from, grade_all_on_cluster
from grader.pipeline import Settings

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "submitted"
ONLY = ["sharded_step"]


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=40) as local_cluster:
        yield local_cluster


def test_cluster_grades_equal_local_grades(tmp_path, course, cluster):
    local, remote = tmp_path / "local", tmp_path / "cluster"
    expected = grade_all(SAMPLES, course, Settings(out=local), workers=2, only=ONLY)
    results = grade_all_on_cluster(SAMPLES, course, Settings(out=remote), cluster.scheduler_address, only=ONLY)
    assert len(results) == len(expected) == len(list(SAMPLES.glob("*/sharded_step")))
    assert {r.status.value for r in results} == {"graded"}
    assert (remote / "grades.csv").read_text() == (local / "grades.csv").read_text()
    assert (remote / "results.json").read_text() == (local / "results.json").read_text()
    for r in results:
        assert (remote / "autograded" / r.student_id / r.assignment_id / r.notebook).is_file()
        assert (remote / "feedback" / r.student_id / r.assignment_id / "sharded_step.html").is_file()
    # Resuming a finished run needs no cluster at all: nothing is submitted (port 9 is never a scheduler).
    again = grade_all_on_cluster(SAMPLES, course, Settings(out=remote), "tcp://127.0.0.1:9", only=ONLY)
    assert [r.to_dict() for r in again] == [r.to_dict() for r in results]


def test_a_notebook_is_not_run_again_after_its_worker_died(cluster):
    """Dask reschedules a task whose worker died; the second attempt must see the first one."""

    def crash_once():
        earlier = _claim_attempt()
        if earlier is None:
            os._exit(1)  # the worker process dies mid-task, as if the machine had failed
        return earlier

    with distributed.Client(cluster.scheduler_address) as client:
        earlier = client.submit(crash_once, pure=False).result(timeout=120)
    assert earlier.startswith("tcp://127.0.0.1:")
    with pytest.raises(WorkerFailed, match="died while running this notebook"):
        execution_from({"error": f"the worker ({earlier}) died while running this notebook; it was not run again"})
