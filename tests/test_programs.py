"""Learners' programs as evidence (``grader.programs``): exported in a kernel, run outside it.

JAX runs in subprocesses here (each with its own device count), as in the
grader: the test process itself never starts a JAX backend.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.submission.pipeline import Settings
from grader.programs import Input, Program
from grader.programs import runner
from grader.programs.launch import _run_confined, _sandbox, parse_verdict, run_programs
from grader.programs.structure import Structure
from grader.sandbox import Limits

ROOT = os.geteuid() == 0
STEP = (Input((2,)), Input((12, 2), ("data", None)), Input((12,), ("data",)))

# Builds programs the way a kernel does (coursekit.programs.exported), in a process with 4 CPU devices.
EXPORTER = """
import base64, json, sys
import jax, numpy as np
jax.config.update("jax_platforms", "cpu"); jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from coursekit.programs import exported

def placed(size, rows=12):
    mesh = Mesh(np.array(jax.devices()[:size]), ("data",))
    return (mesh, jax.device_put(np.zeros(2, np.float32), NamedSharding(mesh, P())),
            jax.device_put(np.zeros((rows, 2), np.float32), NamedSharding(mesh, P("data", None))),
            jax.device_put(np.zeros(rows, np.float32), NamedSharding(mesh, P("data"))))

def step(w, x, y):
    value, gradient = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * gradient, value, gradient

blobs = {}
"""


def export(code: str) -> dict[str, str]:
    """Run ``code`` after EXPORTER; it fills ``blobs`` with programs, returned here."""
    script = EXPORTER + textwrap.dedent(code) + "\nprint(json.dumps(blobs))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def blobs() -> dict[str, str]:
    return export("""
        mesh, w, x, y = placed(4)
        rep = NamedSharding(mesh, P())
        blobs["step"] = exported(jax.jit(step, out_shardings=(rep, rep, rep)), w, x, y)
        def make_on_host():  # a step that wraps its jitted program to hand back NumPy arrays
            compiled = jax.jit(step, out_shardings=(rep, rep, rep))
            return lambda *a: tuple(np.asarray(v) for v in compiled(*a))
        blobs["wrapped"] = exported(make_on_host(), w, x, y)
        blobs["doubled"] = exported(jax.jit(lambda w, x, y: step(2 * w, x, y), out_shardings=(rep, rep, rep)), w, x, y)
        blobs["host"] = exported(lambda w, x, y: np.asarray(x) @ np.asarray(w), w, x, y)
        evil = jax.jit(lambda v: jax.ffi.ffi_call("evil_target", jax.ShapeDtypeStruct((12,), np.float32))(v))
        blobs["custom_call"] = base64.b64encode(jax.export.export(evil, disabled_checks=[
            jax.export.DisabledSafetyCheck.custom_call("evil_target")])(
            jax.ShapeDtypeStruct((12,), np.float32)).serialize()).decode()
    """)


def settings_for(tmp_path: Path) -> Settings:
    return Settings(out=tmp_path / "out", limits=Limits())


def test_a_step_runs_on_the_graders_own_inputs(blobs, tmp_path):
    runs = run_programs({"step": blobs["step"]}, [Program("step", 4, STEP)], 4, settings_for(tmp_path))
    run = runs["step"]
    assert run.error is None
    w, x, y = (a.astype(np.float64) for a in run.inputs)
    assert np.any(x != 0), "the grader draws its own inputs; the kernel's zeros were only the signature"
    np.testing.assert_allclose(run.outputs[2].value, 2 * x.T @ (x @ w - y) / len(y), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run.outputs[1].value, np.mean((x @ w - y) ** 2), rtol=1e-4)
    assert run.in_shardings == run.expected_in_shardings
    assert all(o.replicated and len(o.shard_shapes) == 4 and o.shards_consistent for o in run.outputs)
    assert run.compiled_collectives.get("all_reduce", 0) >= 1 and "all_gather" not in run.compiled_collectives
    # the inputs come from the programs' own bytes: the same programs, the same inputs, in any grading on any machine
    # (a regrade or a cluster's worker says the same "off by"); another program, other inputs
    from grader.programs.launch import _seed, fresh_inputs

    seed = _seed({"step": blobs["step"]}, [Program("step", 4, STEP)])
    again = fresh_inputs(Program("step", 4, STEP), np.random.default_rng(seed))
    assert all(np.array_equal(a, b) for a, b in zip(run.inputs, again))
    assert seed != _seed({"step": blobs["doubled"]}, [Program("step", 4, STEP)])
    assert seed != _seed({"step": blobs["step"]}, [Program("step", 2, STEP)])


@pytest.mark.skipif(not ROOT, reason="the compilation cache is bound into sealed runners (root) only")
def test_the_runner_reads_the_instructors_compiled_programs_and_never_writes_them(blobs, tmp_path):
    import dataclasses

    from grader.classroom import compile_cache
    from grader.programs.launch import _request, fresh_inputs

    settings, program = settings_for(tmp_path), Program("step", 4, STEP)
    staging = tmp_path / "sealed"  # the fill: the instructor's program, in a runner that may write it
    assert run_programs({"step": blobs["step"]}, [program], 4, settings, fill_cache=staging)["step"].error is None
    assert compile_cache.seal(staging) >= 1
    before = {entry.name: entry.read_bytes() for entry in staging.iterdir()}
    sealed = dataclasses.replace(settings, compile_cache_dir=tmp_path / "sealed")

    def report(blob: str) -> dict:
        inputs = {"step": fresh_inputs(program, np.random.default_rng(7))}
        with _sandbox(sealed) as conf:
            return _run_confined(conf, _request({"step": blob}, [program], inputs, 4))

    same, other = report(blobs["step"]), report(blobs["doubled"])
    assert same["verdicts"][0].get("error") is None and same["cache_hits"] >= 1  # a learner's identical program
    # an executable read from the cache still shows its collectives: the step's partial sums are all-reduced
    assert same["verdicts"][0]["compiled_collectives"] == other["verdicts"][0]["compiled_collectives"] == {
        "all_reduce": 1}  # (XLA combines the loss's and the gradient's)
    assert other["verdicts"][0].get("error") is None and other["cache_hits"] == 0  # compiled by the runner itself
    assert {entry.name: entry.read_bytes() for entry in staging.iterdir()} == before  # and nothing written


def test_a_wrapper_is_judged_by_the_program_it_wraps_and_host_code_is_not_a_program(blobs, tmp_path):
    from coursekit.programs import NOT_EXPORTED

    assert blobs["host"].startswith(NOT_EXPORTED + ": ")  # and the class of JAX's error, nothing of its text
    forged = NOT_EXPORTED + ": <script>anything the kernel writes"
    runs = run_programs({"wrapped": blobs["wrapped"], "host": blobs["host"], "forged": forged},
                        [Program("wrapped", 4, STEP), Program("host", 4, STEP), Program("forged", 4, STEP)], 4,
                        settings_for(tmp_path))
    assert runs["wrapped"].error is None and len(runs["wrapped"].outputs) == 3
    # NumPy on a traced value: the feedback says which rule the program broke, in words the grader wrote
    assert "could not export" in runs["host"].error and "here: a traced" in runs["host"].error, runs["host"].error
    assert "could not export" in runs["forged"].error and "here:" not in runs["forged"].error
    assert "script" not in runs["forged"].error and "anything" not in runs["forged"].error


def test_a_program_for_another_mesh_size_is_not_run(blobs, tmp_path):
    three = (Input((2,)), Input((12, 2), ("data", None)), Input((12,), ("data",)))
    run = run_programs({"step": blobs["step"]}, [Program("step", 3, three)], 4, settings_for(tmp_path))["step"]
    assert "built for 4 device(s)" in run.error and not run.outputs


def test_custom_calls_and_disabled_checks_are_refused(blobs, tmp_path):
    run = run_programs({"evil": blobs["custom_call"]}, [Program("evil", 1, (Input((12,)),))], 4,
                       settings_for(tmp_path))["evil"]
    assert run.error and not run.outputs
    # The refusal on its own, for a program that does not declare its disabled checks: the targets are read from
    # each custom_call's parsed attribute (tests/test_program_structure.py).
    declared = SimpleNamespace(nr_devices=1, platforms=("cpu",), ordered_effects=(), unordered_effects=(),
                               disabled_safety_checks=())
    assert "outside the compiler" in runner._inspect(declared, Structure(targets={"xla_ffi_python_cpu_callback"}), 1)
    assert runner._inspect(declared, Structure(targets={"Sharding"}), 1) is None


@pytest.mark.parametrize("blob", ["not base64!", "QUJD", "A" * 64])
def test_garbage_is_an_error_of_that_program_only(blob, blobs, tmp_path):
    runs = run_programs({"bad": blob, "step": blobs["step"]}, [Program("bad", 4, STEP), Program("step", 4, STEP)],
                        4, settings_for(tmp_path))
    assert runs["bad"].error and runs["step"].error is None


def test_a_program_the_kernel_did_not_record_fails_with_a_message(tmp_path):
    run = run_programs({}, [Program("step", 4, STEP)], 4, settings_for(tmp_path))["step"]
    assert "no program was recorded" in run.error


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner,
                                                                                       max_size=5), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(verdict=st.one_of(json_values, st.fixed_dictionaries(
    {"key": st.just("step"), "outputs": st.lists(st.dictionaries(
        st.sampled_from(["shape", "data", "dtype", "shards", "sharding", "replicated"]), json_values), max_size=3),
     "in_shardings": json_values, "expected_in_shardings": json_values, "out_shardings": json_values,
     "collectives": json_values})))
def test_the_runners_report_is_untrusted_data(verdict):
    """Whatever the runner writes (it ran learner bytes), parsing gives a run or an error, never an exception."""
    run = parse_verdict(verdict, Program("step", 4, STEP), [])
    assert run.error is None or isinstance(run.error, str)
    assert all(isinstance(o.value, np.ndarray) for o in run.outputs)


@pytest.mark.skipif(not ROOT, reason="the runner's sandbox (namespaces, private root, uid) needs root")
def test_the_runner_is_sealed_like_a_kernel(tmp_path):
    """The process that reads the learner's bytes sees no host file, no network, and is not root."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    address = listener.getsockname()
    probe = textwrap.dedent(f"""
        import json, os, socket
        def reach(host, port):
            try:
                socket.create_connection((host, port), timeout=2).close()
                return True
            except OSError:
                return False
        json.dump({{"uid": os.getuid(), "root": sorted(os.listdir("/")),
                   "course": os.path.exists({str(Path(__file__).resolve().parents[1] / 'source')!r}),
                   "grading": os.path.exists({str(tmp_path)!r}),
                   "reached": reach(*{address!r})}}, open("verdict.json", "w"))
    """)
    with listener, _sandbox(settings_for(tmp_path)) as conf:
        report = _run_confined(conf, {"programs": []}, runner=[sys.executable, "-c", probe])
    assert report["uid"] != 0
    assert report["course"] is False and report["grading"] is False  # no instructor file, no grading output
    assert report["reached"] is False


def test_runs_a_dask_worker_sends_back_are_checked_and_never_replaced_by_local_runs():
    from grader.classroom.cluster import programs_from
    from grader.programs import Output, ProgramRun, run_to_json

    declared = [Program("test-step/step", 4, STEP)]
    inputs = [np.ones(2, np.float32), np.ones((12, 2), np.float32), np.ones(12, np.float32)]
    good = run_to_json(ProgramRun("test-step/step", inputs=inputs,
                                  outputs=[Output(np.arange(2.0), "()", True, [(2,)] * 4, True)],
                                  collectives={"all_reduce": 1}, compiled_collectives={"all_reduce": 1}, manual=True))
    run = programs_from({"programs": {"test-step/step": json.loads(json.dumps(good))}}, declared)["test-step"]["step"]
    assert run.error is None and run.manual and run.collectives == {"all_reduce": 1}
    assert run.compiled_collectives == {"all_reduce": 1}
    np.testing.assert_array_equal(run.outputs[0].value, [0.0, 1.0])
    assert "did not report" in programs_from({"programs": {}}, declared)["test-step"]["step"].error
    for forged in [dict(good, inputs=good["inputs"][:2]), dict(good, outputs="all fine"),
                   dict(good, inputs=[{"shape": [2], "dtype": "float32", "data": [1, 2]}] * 3), "not a run"]:
        run = programs_from({"programs": {"test-step/step": forged}}, declared)["test-step"]["step"]
        assert "could not be read" in run.error


# -- identical programs judged once per grading run (grader.programs.judged) -------------------------------------
@pytest.fixture
def launches(monkeypatch):
    """Every sandbox the programs were run in (the real runner still runs)."""
    from grader.programs import launch

    started, real = [], launch._run_confined

    def counted(conf, request, *args, **kwargs):
        started.append([p["key"] for p in request["programs"]])
        return real(conf, request, *args, **kwargs)

    monkeypatch.setattr(launch, "_run_confined", counted)
    return started


def test_identical_programs_are_run_once_per_grading_run_and_each_learner_gets_a_copy(blobs, tmp_path, launches):
    from grader.programs.judged import Judged

    judged, settings = Judged(), settings_for(tmp_path)
    first = run_programs({"step": blobs["step"]}, [Program("step", 4, STEP)], 4, settings, judged=judged)["step"]
    again = run_programs({"program.step": blobs["step"], "doubled": blobs["doubled"]},
                         [Program("program.step", 4, STEP), Program("doubled", 4, STEP)], 4, settings, judged=judged)
    assert launches == [["step"], ["doubled"]]  # the second notebook's step was not run again; its other program was
    reused = again["program.step"]
    assert reused.key == "program.step" and reused.error is None and judged.reused == 1
    for mine, theirs in zip(first.inputs + [o.value for o in first.outputs],
                            reused.inputs + [o.value for o in reused.outputs]):
        np.testing.assert_array_equal(mine, theirs)
    reused.outputs[2].value[:] = 0  # a rubric that writes into a run changes nothing for the next learner
    third = run_programs({"step": blobs["step"]}, [Program("step", 4, STEP)], 4, settings, judged=judged)["step"]
    np.testing.assert_array_equal(third.outputs[2].value, first.outputs[2].value)
    assert np.any(third.outputs[2].value != 0) and len(launches) == 2
    # other bytes, another declaration (only read, not run) and no Judged at all: run anew
    run_programs({"step": blobs["step"]}, [Program("step", 4, STEP, run=False)], 4, settings, judged=judged)
    run_programs({"step": blobs["step"]}, [Program("step", 4, STEP)], 4, settings)
    assert len(launches) == 4


def test_a_learner_cannot_make_a_classmates_identical_program_fail_by_running_it_first(blobs, tmp_path, launches,
                                                                                        monkeypatch):
    """Learner A exports the correct step beside a program that holds the runner past its time limit (or crashes it,
    or fails on purpose): the failure is A's sandbox's, never a fact about the step's bytes, so learner B's identical
    step runs on its own and passes."""
    from grader.programs import launch
    from grader.programs.judged import Judged

    spin = export("""
        spin = jax.jit(lambda v: jax.lax.fori_loop(0, 2**31 - 1, lambda i, a: jnp.sin(a) + 1e-9 * i, v))
        blobs["spin"] = exported(spin, jnp.zeros(12))
    """)["spin"]
    judged, settings = Judged(), settings_for(tmp_path)
    monkeypatch.setattr(launch, "RUN_TIMEOUT_S", 8.0)
    a = run_programs({"step": blobs["step"], "spin": spin}, [Program("step", 4, STEP), Program("spin", 1, (Input((12,)),))],
                     4, settings, judged=judged)
    assert "did not finish" in a["step"].error and "did not finish" in a["spin"].error
    monkeypatch.setattr(launch, "RUN_TIMEOUT_S", 90.0)
    failing = run_programs({"bad": "QUJD", "step": blobs["step"]}, [Program("bad", 4, STEP)], 4, settings,
                           judged=judged)["bad"]  # an error the runner reports for one program: not kept either
    b = run_programs({"step": blobs["step"], "bad": "QUJD"}, [Program("step", 4, STEP), Program("bad", 4, STEP)], 4,
                     settings, judged=judged)
    assert failing.error and b["bad"].error and b["step"].error is None and len(b["step"].outputs) == 3
    assert launches == [["step", "spin"], ["bad"], ["step", "bad"]] and judged.reused == 0


def _concurrently(first, second, started_first):
    """Run ``first()`` in a thread, then ``second()`` here once ``started_first`` is set; both results."""
    import threading

    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("first", first()))
    thread.start()
    assert started_first.wait(60)
    out["second"] = second()
    thread.join(120)
    return out["first"], out["second"]


def test_a_program_two_notebooks_run_at_the_same_moment_is_run_once(blobs, tmp_path, launches, monkeypatch):
    """Learner B's notebook reaches its programs while A's runner is still running the same step: B waits for that
    run and gets a copy of it instead of compiling and running the step a second time beside it."""
    import threading

    from grader.programs import launch
    from grader.programs.judged import Judged

    judged, settings, b_waits = Judged(), settings_for(tmp_path), threading.Event()
    a_running, real = threading.Event(), launch._run_confined

    def held(conf, request, *args, **kwargs):  # A's runner reports only once B is waiting for it
        a_running.set()
        assert b_waits.wait(60)
        return real(conf, request, *args, **kwargs)

    monkeypatch.setattr(launch, "_run_confined", held)
    claim = judged.claim

    def watched(*args):
        got = claim(*args)
        if got[1] is not None:
            threading.Thread(target=lambda: (time.sleep(0.2), b_waits.set())).start()
        return got

    monkeypatch.setattr(judged, "claim", watched)
    a, b = _concurrently(
        lambda: run_programs({"step": blobs["step"]}, [Program("step", 4, STEP)], 4, settings, judged=judged),
        lambda: run_programs({"program.step": blobs["step"]}, [Program("program.step", 4, STEP)], 4, settings,
                             judged=judged), a_running)
    assert launches == [["step"]] and b_waits.is_set() and judged.reused == 1 and judged.kept == 1
    assert a["step"].error is None and b["program.step"].error is None and b["program.step"].key == "program.step"
    for mine, theirs in zip(a["step"].inputs, b["program.step"].inputs):
        np.testing.assert_array_equal(mine, theirs)


def test_a_learner_cannot_make_a_classmate_waiting_for_their_run_fail(blobs, tmp_path, launches, monkeypatch):
    """A's runner, holding the step B waits for, runs past its time limit (A's spin program): B's step is run on its
    own and passes; the timeout is A's alone."""
    import threading

    from grader.programs import launch
    from grader.programs.judged import Judged

    spin = export("""
        spin = jax.jit(lambda v: jax.lax.fori_loop(0, 2**31 - 1, lambda i, a: jnp.sin(a) + 1e-9 * i, v))
        blobs["spin"] = exported(spin, jnp.zeros(12))
    """)["spin"]
    judged, settings, a_claimed = Judged(), settings_for(tmp_path), threading.Event()
    monkeypatch.setattr(launch, "RUN_TIMEOUT_S", 8.0)
    claim = judged.claim

    def watched(*args):
        got = claim(*args)
        a_claimed.set()
        return got

    monkeypatch.setattr(judged, "claim", watched)
    a, b = _concurrently(
        lambda: run_programs({"step": blobs["step"], "spin": spin},
                             [Program("step", 4, STEP), Program("spin", 1, (Input((12,)),))], 4, settings, judged=judged),
        lambda: run_programs({"step": blobs["step"]}, [Program("step", 4, STEP)], 4, settings, judged=judged),
        a_claimed)
    assert "did not finish" in a["step"].error and "did not finish" in a["spin"].error
    assert b["step"].error is None and len(b["step"].outputs) == 3 and judged.reused == 0
    assert launches == [["step", "spin"], ["step"]]


def test_the_key_is_the_programs_bytes_its_declaration_and_the_device_count_only():
    from grader.programs.judged import program_key

    step = Program("program.step", 4, STEP)
    assert program_key("AAAA", step, 4) == program_key("AAAA", Program("another.key", 4, STEP), 4)
    others = [program_key("AAAB", step, 4), program_key("AAAA", step, 8), program_key("AAAA", Program("k", 2, STEP), 4),
              program_key("AAAA", Program("k", 4, STEP[:2]), 4), program_key("AAAA", Program("k", 4, STEP, False), 4),
              program_key("AAAA", Program("k", 4, (Input((2,), (), "float64"),) + STEP[1:]), 4)]
    assert len({program_key("AAAA", step, 4), *others}) == 1 + len(others)


def test_a_dask_worker_reuses_runs_within_one_grading_run_only():
    from grader.classroom import worker

    first = worker._judged_for("a" * 32)
    assert worker._judged_for("a" * 32) is first
    assert worker._judged_for("b" * 32) is not first and worker._judged_for("a" * 32) is not first
    assert worker._judged_for(None) is None and worker._judged_for("short") is None and worker._judged_for(7) is None
