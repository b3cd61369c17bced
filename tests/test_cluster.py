"""The Dask cluster path: a real dask.distributed scheduler and two worker processes on loopback, with
mutual TLS from certificates made by ``python -m grader certs``, grade the sample class exactly as the
local parallel grader does; nothing without this deployment's certificates can connect; the CLI refuses
a plain tcp:// scheduler; what a worker sends back is checked before it is judged.

Every connection here goes to 127.0.0.1."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import ssl
import stat
from pathlib import Path

import distributed
import nbformat
import pytest
from cryptography import x509
from distributed.comm.core import CommClosedError
from distributed.security import Security

from grader.classroom import compile_cache
from grader.classroom import worker as cluster_worker
from grader.classroom.batch import grade_all
from grader.classroom.certs import make_certificates
from grader.cli import main
from grader.classroom.cluster import (
    InsecureCluster,
    WorkerFailed,
    client_security_from_dir,
    deployment_security,
    execution_from,
    grade_all_on_cluster,
)
from grader.classroom.worker import _claim_attempt, _exposed_worker_key
from grader.submission.pipeline import Settings

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "submitted"
ONLY = ["sharded_step"]
# What dask raises when the TLS handshake fails (either side refuses the other's certificate) or the peer hangs
# up on a plain TCP connection; not merely any OSError, so a missing file or a timeout does not pass for a refusal.
REFUSED = CommClosedError


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory) -> Path:
    return make_certificates(tmp_path_factory.mktemp("tls") / "deployment").folder


@pytest.fixture(scope="module")
def cluster(tls_dir):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  protocol="tls://", security=deployment_security(tls_dir),
                                  dashboard_address=None, silence_logs=40) as local_cluster:
        yield local_cluster


@pytest.fixture(scope="module")
def client_security(tls_dir) -> Security:
    return client_security_from_dir(tls_dir)


def comparable(path: Path) -> dict:
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        cell.pop("id", None)
        if "outputs" in cell:
            cell["outputs"] = _coalesced([o for o in cell["outputs"] if o["output_type"] != "display_data"])
    return nb


def _coalesced(outputs: list) -> list:
    """Consecutive stream outputs of one stream as one (where a kernel's flush splits its text is timing)."""
    merged: list = []
    for output in outputs:
        if (output["output_type"] == "stream" and merged and merged[-1]["output_type"] == "stream"
                and merged[-1]["name"] == output["name"]):
            merged[-1] = {**merged[-1], "text": "".join(merged[-1]["text"]) + "".join(output["text"])}
        else:
            merged.append(dict(output, text="".join(output["text"])) if output["output_type"] == "stream" else output)
    return merged


def _worker_caches() -> dict:
    """On a worker: its compilation-cache folders (by key) and how many programs each holds."""
    return {key: len(list(folder.iterdir())) if folder else 0
            for key, folder in compile_cache._WORKER_FOLDERS.items()}


def grade_cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(["grade", *args])
    return exited.value.code


# ---------------------------------------------------------------- (a) grading over TLS equals local grading


def test_cluster_grades_equal_local_grades(tmp_path, course, cluster, tls_dir, client_security, capsys,
                                         monkeypatch):
    monkeypatch.setattr(compile_cache, "WORTH_FILLING_AT", 1)  # four samples: fill the workers' caches anyway
    assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
    local, remote = tmp_path / "local", tmp_path / "cluster"
    expected = grade_all(SAMPLES, course, Settings(out=local), workers=2, only=ONLY)
    results = grade_all_on_cluster(SAMPLES, course, Settings(out=remote), cluster.scheduler_address,
                                   security=client_security, only=ONLY)
    assert len(results) == len(expected) == len(list(SAMPLES.glob("*/sharded_step")))
    assert {r.status.value for r in results} == {"graded"}
    assert (remote / "grades.csv").read_text() == (local / "grades.csv").read_text()
    assert (remote / "results.json").read_text() == (local / "results.json").read_text()
    for r in results:
        autograded = Path("autograded") / r.student_id / r.assignment_id / r.notebook
        # Outputs grafted onto the instructor's notebook: the same notebook as the local run writes, but for
        # the random id that each run gives the injected parameters cell, and inline figures (display_data):
        # a kernel forked from the local fork server does not display matplotlib figures inline, a kernel
        # started afresh on a worker does.
        mine, theirs = comparable(remote / autograded), comparable(local / autograded)
        different = [(i, a, b) for i, (a, b) in enumerate(zip(mine["cells"], theirs["cells"])) if a != b]
        assert mine == theirs, f"{r.student_id}: cells differ: {str(different[:2])[:3000]}"
        assert (remote / "feedback" / r.student_id / r.assignment_id / "sharded_step.html").is_file()
    # Each worker that ran a notebook compiled the instructor's programs once, for itself (grader.classroom.compile_cache).
    with distributed.Client(cluster.scheduler_address, security=client_security) as client:
        filled = client.run(_worker_caches)
    assert any(count > 0 for caches in filled.values() for count in caches.values()), filled
    # Resuming a finished run needs no cluster at all: nothing is submitted (port 9 is never a scheduler).
    again = grade_all_on_cluster(SAMPLES, course, Settings(out=remote), "tls://127.0.0.1:9",
                                 security=client_security, only=ONLY)
    assert [r.to_dict() for r in again] == [r.to_dict() for r in results]
    grades = (remote / "grades.csv").read_text()
    # The CLI: the same resume through --tls-dir works; a plain tcp:// address is refused before anything
    # else happens, and accepted only with --insecure-cluster (so the refusal is what stopped it).
    common = ["--submissions", str(SAMPLES), "--out", str(remote), "--assignment", "sharded_step"]
    assert grade_cli(*common, "--scheduler", "tls://127.0.0.1:9", "--tls-dir", str(tls_dir)) == 0
    capsys.readouterr()
    assert grade_cli(*common, "--scheduler", "tcp://127.0.0.1:9") == 2
    err = capsys.readouterr().err
    assert "not a tls:// address" in err and "--insecure-cluster" in err and "grader certs" in err
    assert grade_cli(*common, "--scheduler", "tcp://127.0.0.1:9", "--insecure-cluster") == 0
    assert "WARNING: --insecure-cluster" in capsys.readouterr().err
    assert (remote / "grades.csv").read_text() == grades


def test_a_notebook_is_not_run_again_after_its_worker_died(cluster, client_security):
    """Dask reschedules a task whose worker died; the second attempt must see the first one."""

    def crash_once():
        earlier = _claim_attempt()
        if earlier is None:
            os._exit(1)  # the worker process dies mid-task, as if the machine had failed
        return earlier

    with distributed.Client(cluster.scheduler_address, security=client_security) as client:
        earlier = client.submit(crash_once, pure=False).result(timeout=120)
    assert earlier.startswith("tls://127.0.0.1:")
    sent = nbformat.v4.new_notebook()
    with pytest.raises(WorkerFailed, match="died while running this notebook"):
        execution_from({"error": f"the worker ({earlier}) died while running this notebook; it was not run again"},
                       sent, max_notebook_chars=10**6)


# ---------------------------------------------------------------- (b) nothing else can connect


async def _worker_identity(address: str, security: Security | None):
    from distributed.core import rpc

    args = security.get_connection_args("client") if security is not None else {}
    async with rpc(address, connection_args=args, timeout=3) as worker:
        return await worker.identity()


def _raw_tls(address: str, context: ssl.SSLContext) -> bytes:
    """A TLS connection with Python's ssl module alone; returns what the peer sends (or raises)."""
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    assert host == "127.0.0.1"
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=None) as conn:
            conn.sendall(b"\x00" * 64)  # TLS 1.3: the server checks the client's certificate after the handshake
            return conn.recv(1)


def test_only_this_deployments_certificates_connect(tmp_path, cluster, tls_dir, client_security):
    marker = tmp_path / "ran-on-a-worker"

    def touch():
        marker.write_text("an outsider ran code on a worker")
        return os.getpid()

    scheduler = cluster.scheduler_address
    assert scheduler.startswith("tls://127.0.0.1:")
    # With this deployment's client certificate: connects, and the workers run TLS and hold private keys.
    with distributed.Client(scheduler, security=client_security, timeout=30) as client:
        client.wait_for_workers(2, timeout=120)  # the previous test killed one; its nanny restarts it
        workers = sorted(client.scheduler_info()["workers"])
        assert len(workers) == 2 and all(w.startswith("tls://127.0.0.1:") for w in workers)
        assert set(client.run(_exposed_worker_key).values()) == {None}
    for worker in workers:
        assert asyncio.run(_worker_identity(worker, client_security))["type"] == "Worker"

    foreign_dir = make_certificates(tmp_path / "another-deployment").folder
    outsiders = {
        # These two also do not trust the cluster's certificate, so they give up first.
        "a certificate from another CA": client_security_from_dir(foreign_dir),
        "a self-signed certificate": Security.temporary(),
        # This one trusts the cluster, so it is the scheduler and the workers that refuse its certificate.
        "this CA with another CA's certificate": Security(require_encryption=True,
                                                          tls_ca_file=str(tls_dir / "ca.pem"),
                                                          tls_client_cert=str(foreign_dir / "client.pem"),
                                                          tls_client_key=str(foreign_dir / "client-key.pem")),
    }
    for name, security in outsiders.items():
        with pytest.raises(REFUSED):
            with distributed.Client(scheduler, security=security, timeout=3) as client:
                client.run(touch)
            pytest.fail(f"{name}: connected to the scheduler")
        for worker in workers:
            with pytest.raises(REFUSED):
                asyncio.run(_worker_identity(worker, security))
                pytest.fail(f"{name}: connected to a worker")

    # No certificate at all: plain TCP to the TLS port, and TLS without a client certificate.
    for address in [scheduler, *workers]:
        with pytest.raises(REFUSED):
            with distributed.Client(address.replace("tls://", "tcp://"), timeout=3) as client:
                client.run(touch)
        with pytest.raises(REFUSED):
            asyncio.run(_worker_identity(address.replace("tls://", "tcp://"), None))
        trusting = ssl.create_default_context(cafile=str(tls_dir / "ca.pem"))
        trusting.check_hostname = False
        try:  # the handshake fails, or the server hangs up without answering
            answer = _raw_tls(address, trusting)
        except (ssl.SSLError, ConnectionError):
            answer = b""
        assert answer == b"", address
    assert not marker.exists()


# ---------------------------------------------------------------- (c) the CLI and the API refuse plain TCP


def test_plain_tcp_and_missing_certificates_are_refused(tmp_path, course, tls_dir, capsys):
    out = tmp_path / "out"
    base = ["--submissions", str(SAMPLES), "--out", str(out)]
    cases = {
        ("--scheduler", "tcp://127.0.0.1:9"): "not a tls:// address",
        ("--scheduler", "127.0.0.1:9"): "not a tls:// address",  # dask reads a bare address as tcp://
        ("--scheduler", "tcp://127.0.0.1:9", "--tls-dir", str(tls_dir)): "is not tls://",
        ("--scheduler", "tls://127.0.0.1:9"): "needs this deployment's certificates",
        ("--scheduler", "tls://127.0.0.1:9", "--tls-ca", str(tls_dir / "ca.pem")): "also needs --tls-cert, --tls-key",
        ("--scheduler", "tls://127.0.0.1:9", "--tls-dir", str(tmp_path / "none")): "CA certificate",
        ("--tls-dir", str(tls_dir)): "only with --scheduler",
    }
    for args, message in cases.items():
        assert grade_cli(*base, *args) == 2, args
        assert message in capsys.readouterr().err, args
    # A client key that others can read is refused too.
    loose = tmp_path / "loose"
    shutil.copytree(tls_dir, loose)
    (loose / "client-key.pem").chmod(0o644)
    assert grade_cli(*base, "--scheduler", "tls://127.0.0.1:9", "--tls-dir", str(loose)) == 2
    assert "chmod 600" in capsys.readouterr().err
    assert not out.exists()  # refused before anything was read or written
    # The API refuses as well, whatever the address, unless told insecure=True.
    for address in ("tcp://127.0.0.1:9", "127.0.0.1:9", "ws://127.0.0.1:9"):
        with pytest.raises(InsecureCluster):
            grade_all_on_cluster(SAMPLES, course, Settings(out=out), address, only=ONLY)
    with pytest.raises(InsecureCluster):
        grade_all_on_cluster(SAMPLES, course, Settings(out=out), "tls://127.0.0.1:9", only=ONLY)
    with pytest.raises(InsecureCluster):  # a Security without encryption required is not enough
        grade_all_on_cluster(SAMPLES, course, Settings(out=out), "tls://127.0.0.1:9", security=Security(),
                             only=ONLY)
    assert not out.exists()


# ---------------------------------------------------------------- (d) grader certs


def _handshake(server: tuple[Path, Path], client: tuple[Path, Path], server_ca: Path, client_ca: Path) -> str:
    """A mutual-TLS handshake in memory, as dask configures it; returns the client's common name seen by the server."""
    srv = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(server_ca))
    srv.load_cert_chain(*map(str, server))
    srv.verify_mode = ssl.CERT_REQUIRED
    cli = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(client_ca))
    cli.check_hostname = False
    cli.load_cert_chain(*map(str, client))
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    s_obj, c_obj = srv.wrap_bio(s_in, s_out, server_side=True), cli.wrap_bio(c_in, c_out)
    for _ in range(6):
        for obj, out, peer in ((c_obj, c_out, s_in), (s_obj, s_out, c_in)):
            try:
                obj.do_handshake()
            except ssl.SSLWantReadError:
                pass
            peer.write(out.read())
    c_obj.write(b"x")
    s_in.write(c_out.read())
    assert s_obj.read(1) == b"x"
    return dict(part[0] for part in s_obj.getpeercert()["subject"])["commonName"]


def test_certs_command_writes_private_files_that_verify(tmp_path, capsys):
    folder = tmp_path / "tls"
    with pytest.raises(SystemExit) as exited:
        main(["certs", str(folder), "--hosts", "grader.example", "10.0.0.5"])
    assert exited.value.code == 0
    assert "--tls-dir" in capsys.readouterr().out
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert files == ["ca.pem", "client-key.pem", "client.pem", "cluster-key.pem", "cluster.pem", "private/ca-key.pem"]
    for path in folder.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # The CA key is only in private/: nothing a scheduler, worker or client is given holds it.
    ca_key = (folder / "private" / "ca-key.pem").read_text()
    assert "PRIVATE KEY" in ca_key
    for name in files[:-1]:
        assert ca_key not in (folder / name).read_text()

    def load(name: str) -> x509.Certificate:
        return x509.load_pem_x509_certificate((folder / name).read_bytes())

    ca, cluster_cert, client_cert = load("ca.pem"), load("cluster.pem"), load("client.pem")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for cert in (cluster_cert, client_cert):
        cert.verify_directly_issued_by(ca)
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    names = cluster_cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["grader.example"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["10.0.0.5"]

    # OpenSSL agrees: cluster<->client and cluster<->cluster (worker to scheduler) handshake; the client
    # certificate cannot serve (it cannot impersonate a scheduler); another CA's certificates are refused.
    pair = {n: (folder / f"{n}.pem", folder / f"{n}-key.pem") for n in ("cluster", "client")}
    ca_file = folder / "ca.pem"
    assert _handshake(pair["cluster"], pair["client"], ca_file, ca_file) == "course grader instructor"
    assert _handshake(pair["cluster"], pair["cluster"], ca_file, ca_file) == "course grader cluster"
    with pytest.raises(ssl.SSLError):
        _handshake(pair["client"], pair["cluster"], ca_file, ca_file)
    other = make_certificates(tmp_path / "other").folder
    with pytest.raises(ssl.SSLError):  # a foreign client, at this deployment's server
        _handshake(pair["cluster"], (other / "client.pem", other / "client-key.pem"), ca_file, other / "ca.pem")
    with pytest.raises(ssl.SSLError):  # a foreign server, for this deployment's client
        _handshake((other / "cluster.pem", other / "cluster-key.pem"), pair["client"], other / "ca.pem", ca_file)

    # Never overwritten without --force; --force makes a new CA.
    with pytest.raises(SystemExit) as exited:
        main(["certs", str(folder)])
    assert exited.value.code == 1 and "--force" in capsys.readouterr().err
    assert load("ca.pem") == ca
    with pytest.raises(SystemExit) as exited:
        main(["certs", str(folder), "--force"])
    assert exited.value.code == 0 and load("ca.pem") != ca
    # deployment_security insists on private keys.
    (folder / "cluster-key.pem").chmod(0o640)
    with pytest.raises(PermissionError, match="chmod 600"):
        deployment_security(folder)


# ---------------------------------------------------------------- what a worker sends back is checked


def _sent() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# title"), nbformat.v4.new_code_cell("x = 1\nprint(x)"),
                nbformat.v4.new_code_cell("assert x == 1", metadata={"nbgrader": {"points": 1}})]
    for index, cell in enumerate(nb.cells):
        cell.id = f"cell-{index}"
    return nb


def _payload(nb=None, **changes) -> dict:
    nb = _sent() if nb is None else nb
    payload = {"notebook": json.dumps(nb), "stopped": None, "message": "", "stopped_at_cell": None,
               "events": [], "seconds": 1.5, "programs": {}, "hooks_not_reset": []}
    payload.update(changes)
    return payload


def test_worker_results_are_type_checked_size_bounded_and_grafted():
    sent = _sent()
    executed = _sent()
    executed.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    executed.cells[1].execution_count = 1
    executed.metadata.language_info = {"name": "python"}
    # What is not outputs or execution counts is the instructor's: a changed metadata is not taken.
    executed.cells[2].metadata["nbgrader"]["points"] = 100
    executed.metadata["nbgrader"] = {"forged": True}
    execution = execution_from(_payload(executed), sent, max_notebook_chars=10**6)
    assert execution.notebook.cells[1].outputs[0].text == "1\n"
    assert execution.notebook.cells[1].execution_count == 1
    assert execution.notebook.cells[2].metadata["nbgrader"]["points"] == 1
    assert execution.notebook.metadata.language_info == {"name": "python"}
    assert "nbgrader" not in execution.notebook.metadata
    assert sent.cells[1].outputs == []  # the sent notebook itself is untouched

    # Over the cap: a result (too_much_output, outputs dropped), not a crash.
    big = _sent()
    big.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * 5000)]
    execution = execution_from(_payload(big), sent, max_notebook_chars=4000)
    assert execution.stopped == "too_much_output" and "over the limit of 4000" in execution.message
    assert all(c.get("outputs", []) == [] for c in execution.notebook.cells)

    changed = _sent()
    changed.cells[2].source = "pass  # the test, rewritten"
    fewer = _sent()
    fewer.cells.pop()
    bad_output = _sent()
    bad_output.cells[1].outputs = [{"text": "no output_type"}]
    malformed = [
        ["not", "a", "dict"],
        _payload(extra="field"),
        {k: v for k, v in _payload().items() if k != "events"},
        _payload(stopped="graded"),
        _payload(stopped=["unhashable"]),
        _payload(message=b"bytes"),
        _payload(stopped_at_cell=True),
        _payload(stopped_at_cell=3),
        _payload(events="one string"),
        _payload(events=[1]),
        _payload(events=["e"] * 100),
        _payload(seconds=float("nan")),
        _payload(seconds="1"),
        _payload(notebook=b"{}"),
        _payload(notebook="{not json"),
        _payload(changed),
        _payload(fewer),
        _payload(bad_output),
        {"error": 1},
        {"error": "x", "notebook": "{}"},
    ]
    for payload in malformed:
        with pytest.raises(WorkerFailed):
            execution_from(payload, sent, max_notebook_chars=10**6)
    long = execution_from(_payload(message="m" * 10**6), sent, max_notebook_chars=10**6)
    assert len(long.message) < 5000


def test_an_oversized_result_is_too_much_output_end_to_end(tmp_path, course, cluster, tls_dir, capsys):
    """Through the CLI over TLS: a worker's executed notebook over --max-result-bytes is too_much_output."""
    student = sorted(p.parent.name for p in SAMPLES.glob("*/sharded_step"))[0]
    submitted = tmp_path / "submitted"
    shutil.copytree(SAMPLES / student / "sharded_step", submitted / student / "sharded_step")
    out = tmp_path / "out"
    code = grade_cli("--submissions", str(submitted), "--out", str(out), "--assignment", "sharded_step",
                     "--scheduler", cluster.scheduler_address, "--tls-dir", str(tls_dir),
                     "--max-result-bytes", "1000")
    assert code == 0, capsys.readouterr().err
    (result,) = json.loads((out / "results.json").read_text())
    assert result["status"] == "too_much_output", result
    assert "over the limit of 1000" in result["message"]


def test_a_worker_that_cannot_seal_kernels_runs_nothing(monkeypatch):
    """Fail closed: a non-root worker would run the learner's code under its own uid, next to its TLS key."""
    from grader.classroom import cluster

    monkeypatch.setattr(cluster_worker.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(cluster_worker, "run_in", lambda *a, **k: pytest.fail("a notebook ran on an unsealed worker"))
    with pytest.raises(cluster.NothingRan, match="cannot seal kernels"):
        cluster.execute_notebook('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', {}, True)


def test_a_kernel_that_never_starts_is_retried_not_graded(monkeypatch):
    """No cell of the submission reached a kernel that did not start, so Dask retries the task (NothingRan) on a
    worker that can run it. Before, the worker's second try was left to run_in, which recorded a blank notebook on a
    loaded 2-core worker as kernel_died, 0 of 9 ("Kernel didn't respond in 120 seconds"; 1 of 200 in large_class.py)."""
    from grader.classroom import cluster

    fork_server, tries = object(), []

    async def silent_kernel(conf, *, zygote=None, preload=True):
        tries.append(zygote)
        raise RuntimeError("Kernel didn't respond in 120 seconds")

    monkeypatch.setattr(cluster_worker, "worker_fork_server", lambda: fork_server)
    monkeypatch.setattr(cluster_worker, "start_kernel", silent_kernel)
    monkeypatch.setattr(cluster_worker, "run_in", lambda *a, **k: pytest.fail("a notebook ran without a kernel"))
    with pytest.raises(cluster.NothingRan, match=r"did not start \(RuntimeError: Kernel didn't respond in 120 "
                                                 r"seconds\); then the kernel did not start"):
        cluster.execute_notebook('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', {}, False,
                                 None, True)
    assert tries == [fork_server, None]  # forked first, then started plainly, as the local grader does


# ---------------------------------------------------------------- sealed kernels on the workers

SEAL_ATTACKS = [("sharded_step", name) for name in (
    "net-host-listener", "net-interfaces", "proc-siblings", "detect-grading-deep", "cross-kernel-t-loopback-port",
    "forge-sandbox-failure", "forge-reset-shadowed-builtins", "forge-reset-code-swapped", "forge-shell-method-patched")]
# program evidence read from the parsed and the compiled program (the runner on the worker), never from text
SEAL_ATTACKS += [("collectives", "gather-copy-then-constraint-named"),
                 ("collectives", "global-programs-in-region-manual-over-no-axis"),
                 ("local_mean_diagnosis", "global-mean-in-region-manual-over-no-axis"),
                 ("sharded_step", "forge-compiled-step-text")]


def test_kernels_on_workers_are_sealed_like_local_ones(tmp_path, course, cluster, client_security):
    """The attacks on the sealed kernel and on the grader's reset, and those on program evidence, graded on the TLS
    cluster: each ends exactly as stated (and as locally)."""
    from conftest import HOST_CONTACTS, host_listeners

    from grader.course.variants import parse, write_submission

    attacks = ROOT / "tests" / "attacks"
    scenarios = [(assignment, parse(attacks / assignment / f"{name}.py")) for assignment, name in SEAL_ATTACKS]
    submitted = tmp_path / "submitted"
    for assignment, scenario in scenarios:
        write_submission(course, assignment, scenario, submitted, scenario.name)
    contacts_before = len(HOST_CONTACTS)
    with host_listeners():
        results = grade_all_on_cluster(submitted, course, Settings(out=tmp_path / "out"), cluster.scheduler_address,
                                       security=client_security)
    by_student = {r.student_id: r for r in results}
    for _, scenario in scenarios:
        result = by_student[scenario.name]
        assert result.status.value in scenario.expect_status.split(), (scenario.name, result.message)
        assert {t.grade_id for t in result.tests if not t.passed} == set(scenario.expect_fail), scenario.name
    assert len(HOST_CONTACTS) == contacts_before, "a kernel on a worker reached the host's loopback"
