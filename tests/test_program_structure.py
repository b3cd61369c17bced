"""What the program runner reports of a program's structure (``grader.programs.runner``, ``.structure``).

``manual_only``: one shard_map region, manual over the axis the inputs are split on, computes everything, and
the compiled program communicates with nothing the region does not write, so the collectives the rubric reads
are the ones doing the work; a global program beside a decorative shard_map, a shard_map that gets its inputs
resharded or whose result is resharded (the compiler gathers it), or a region manual over no axis, is not one.
Collectives are counted among the parsed operations and in the compiled program, never in text: a function
named "stablehlo.all_gather" adds none. JAX runs in subprocesses with 4 CPU devices, as in the grader.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest

from grader.programs import Expect, Input, Output, Program, ProgramRun, run_to_json
from grader.programs import runner
from grader.programs.launch import parse_verdict, run_from_json
from grader.programs.structure import Structure

SETUP = """
import base64, dataclasses, json
import jax, numpy as np
jax.config.update("jax_platforms", "cpu"); jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from coursekit.programs import exported
from grader.programs.runner import run_one


def request(key, blob, arrays, specs, run=True):
    return {"key": key, "mesh": 4, "program": blob, "run": run,
            "inputs": [{"shape": list(a.shape), "dtype": a.dtype.name, "spec": list(s),
                        "data": np.asarray(a).astype(np.float64).ravel().tolist()} for a, s in zip(arrays, specs)]}


def rewritten(blob, *replacements):
    \"\"\"The program with its module text rewritten (as a learner who wraps jax.export can), re-serialized.\"\"\"
    from jax._src.export import _export
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    program = jax.export.deserialize(bytearray(base64.b64decode(blob)))
    text = program.mlir_module()
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    with mlir.make_ir_context():
        module = _export._module_to_bytecode(ir.Module.parse(text))
    return base64.b64encode(dataclasses.replace(program, mlir_module_serialized=module).serialize()).decode()
"""

STRUCTURES = SETUP + """
mesh = Mesh(np.array(jax.devices()), ("data",))
rows, split, rep = (NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P("data")), NamedSharding(mesh, P()))
specs = (P("data", None), P("data"), P())


def term(a, b, w):
    return 2 * a.T @ (a @ w - b) / 8


def global_gradient(a, b, w):
    return 2 * a.T @ (a @ w - b) / 8


def named(fn, name):
    fn.__name__ = fn.__qualname__ = name
    return fn


psum_program = jax.shard_map(lambda a, b, w: lax.psum(term(a, b, w), "data"), mesh=mesh, in_specs=specs,
                             out_specs=P())
decoration = jax.shard_map(lambda a: lax.psum(jnp.sum(a) * 0.0, "data"), mesh=mesh, in_specs=P("data", None),
                           out_specs=P())
inner = jax.jit(jax.shard_map(lambda a, b, w: lax.psum(jax.jit(term)(a, b, w), "data"), mesh=mesh,
                              in_specs=specs, out_specs=P()))
whole_inputs = jax.shard_map(lambda a, b, w: global_gradient(a, b, w) + lax.psum(jnp.sum(a) * 0.0, "data"),
                             mesh=mesh, in_specs=(P(), P(), P()), out_specs=P())
keep = jax.shard_map(lambda v: v, mesh=mesh, in_specs=P("data"), out_specs=P("data"))
whole_global = jax.shard_map(named(global_gradient, "stablehlo.all_reduce"), mesh=mesh, in_specs=(P(), P(), P()),
                             out_specs=P(), check_vma=False)


def everyone(block):  # every device's rows into a zero buffer of the whole batch, psummed: a gather, not a reduction
    buffer = jnp.zeros((block.shape[0] * 4,) + block.shape[1:], block.dtype)
    start = (lax.axis_index("data") * block.shape[0],) + (0,) * (block.ndim - 1)
    return lax.psum(lax.dynamic_update_slice(buffer, block, start), "data")


def psum_twice_in_a_loop(a, b, w):
    return lax.fori_loop(0, 2, lambda i, total: total + lax.psum(term(a, b, w), "data") / 2, jnp.zeros_like(w))


def squared_error_gradient(row, target, w):  # one micro-batch (a row) of the device's block
    return jax.grad(lambda w: jnp.sum((row @ w - target) ** 2))(w)


def grad_of_replicated_w_in_scan(a, b, w):  # jax.grad of the replicated w psums it: once per micro-batch
    total, _ = lax.scan(lambda t, rb: (t + squared_error_gradient(*rb, w), None), jnp.zeros_like(w), (a, b))
    return total / 8


def psum_after_scan(a, b, w):  # each device's micro-batches added locally, one psum after the loop
    local = lax.pcast(w, "data", to="varying")
    total, _ = lax.scan(lambda t, rb: (t + squared_error_gradient(*rb, local), None), jnp.zeros_like(local), (a, b))
    return lax.psum(total, "data") / 8


def psum_unrolled(a, b, w):  # a Python loop of psums: no loop in the program, one all-reduce per micro-batch
    local = lax.pcast(w, "data", to="varying")
    return sum(lax.psum(squared_error_gradient(a[i], b[i], local), "data") for i in range(a.shape[0])) / 8


gathered_by_psum = jax.shard_map(lambda a, b, w: global_gradient(everyone(a), everyone(b), w), mesh=mesh,
                                 in_specs=specs, out_specs=P(), check_vma=False)
psum_in_loop = jax.shard_map(psum_twice_in_a_loop, mesh=mesh, in_specs=specs, out_specs=P())
gradient_programs = {
    "shard_map": jax.jit(psum_program),
    "nested_jit_and_convert": jax.jit(lambda a, b, w: inner(a, b, w).astype(jnp.float32).reshape(8)),
    "global_jit": jax.jit(global_gradient, in_shardings=(rows, split, rep), out_shardings=rep),
    "global_jit_named_all_reduce": jax.jit(named(lambda a, b, w: global_gradient(a, b, w), "stablehlo.all_reduce"),
                                           in_shardings=(rows, split, rep), out_shardings=rep),
    "decorated_global_jit": jax.jit(lambda a, b, w: global_gradient(a, b, w) + decoration(a),
                                    in_shardings=(rows, split, rep), out_shardings=rep),
    "arithmetic_after_shard_map": jax.jit(lambda a, b, w: psum_program(a, b, w) * 1.0),
    "two_shard_maps": jax.jit(lambda a, b, w: psum_program(a, b, w) + decoration(a)),
    "inputs_resharded_into_shard_map": jax.jit(whole_inputs),
    "result_resharded_by_out_shardings": jax.jit(psum_program, out_shardings=split),
    "region_manual_over_no_axis": jax.jit(whole_global),
    "batch_gathered_by_psum": jax.jit(gathered_by_psum),
    "psum_in_a_loop": jax.jit(psum_in_loop),
    **{fn.__name__: jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=specs, out_specs=P()))
       for fn in (grad_of_replicated_w_in_scan, psum_after_scan, psum_unrolled)},
}
vector_programs = {
    "gather": jax.jit(jax.shard_map(lambda v: lax.all_gather(v, "data", tiled=True), mesh=mesh, in_specs=P("data"),
                                    out_specs=P(), check_vma=False)),
    "copy_then_constraint_named_all_gather": jax.jit(named(
        lambda v: lax.with_sharding_constraint(keep(v), rep), "stablehlo.all_gather")),
    "copy_then_replicated_out_shardings": jax.jit(keep, out_shardings=rep),
}
a, b, w = np.ones((8, 8), np.float32), np.ones(8, np.float32), np.ones(8, np.float32)
placed = (jax.device_put(a, rows), jax.device_put(b, split), jax.device_put(w, rep))
found = {}
for name, program in [*gradient_programs.items(), *vector_programs.items()]:
    vector = name in vector_programs
    arrays, spec = ((b,), [("data",)]) if vector else ((a, b, w), [("data", None), ("data",), ()])
    blob = exported(program, *(placed[1:2] if vector else placed))
    if name == "region_manual_over_no_axis":  # the inputs as placed, into a region manual over no axis
        blob = rewritten(blob, ('manual_axes={"data"}', "manual_axes={}"),
                         ("in_shardings=[<@mesh, [{}, {}]>, <@mesh, [{}]>, <@mesh, [{}]>]",
                          'in_shardings=[<@mesh, [{"data"}, {}]>, <@mesh, [{"data"}]>, <@mesh, [{}]>]'))
    verdict = run_one(request(name, blob, arrays, spec))
    found[name] = {"error": verdict.get("error"), "manual": verdict["manual"], "manual_only": verdict["manual_only"],
                   "written": {k: n for k, n in verdict["collectives"].items() if n},
                   "compiled": verdict.get("compiled_collectives"), "moves_data": verdict.get("moves_data"),
                   "looped": verdict.get("looped"), "carries_more": verdict.get("carries_more")}
print(json.dumps(found))
"""


def run_script(script: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_manual_only_is_one_region_that_computes_everything_and_communicates_as_written():
    found = run_script(STRUCTURES)
    assert {name: (v["manual"], v["manual_only"]) for name, v in found.items()} == {
        "shard_map": (True, True),
        "nested_jit_and_convert": (True, True),  # calls, a conversion and a reshape outside the region
        "global_jit": (False, False),
        "global_jit_named_all_reduce": (False, False),
        "decorated_global_jit": (True, False),  # the computation is outside the region
        "arithmetic_after_shard_map": (True, False),
        "two_shard_maps": (True, False),
        "inputs_resharded_into_shard_map": (True, False),  # the compiler gathers the inputs before the region
        "result_resharded_by_out_shardings": (True, False),  # the result's sharding is not the region's
        "region_manual_over_no_axis": (False, False),  # manual_axes={}: the compiler partitions it
        "batch_gathered_by_psum": (True, True),  # one region, one psum: but the psum carries the batch (below)
        "psum_in_a_loop": (True, True),
        "grad_of_replicated_w_in_scan": (True, True),
        "psum_after_scan": (True, True),
        "psum_unrolled": (True, True),
        "gather": (True, True),
        "copy_then_constraint_named_all_gather": (True, False),  # the compiler gathers what the region returns
        "copy_then_replicated_out_shardings": (True, False),
    }
    assert all(v["error"] is None for v in found.values()), found
    # the written collectives are the parsed operations: a function's name adds none
    assert found["global_jit_named_all_reduce"]["written"] == {}
    assert found["copy_then_constraint_named_all_gather"]["written"] == {}
    assert found["region_manual_over_no_axis"]["written"] == {}
    assert found["shard_map"]["written"] == found["shard_map"]["compiled"] == {"all_reduce": 1}
    assert found["gather"]["written"] == found["gather"]["compiled"] == {"all_gather": 1}
    # what the compiler adds is read from the compiled program
    assert found["global_jit"]["compiled"] == {"all_reduce": 1}
    assert found["copy_then_constraint_named_all_gather"]["compiled"] == {"all_gather": 1}
    assert found["copy_then_replicated_out_shardings"]["compiled"] == {"all_gather": 1}
    assert found["inputs_resharded_into_shard_map"]["compiled"].get("all_gather", 0) >= 1
    # collectives that carry a whole input (an all-gather written as a psum of zero buffers), or that a loop may
    # repeat any number of times, move the data; every reduction of local results above moves only results
    assert {name for name, v in found.items() if v["moves_data"]} == {"batch_gathered_by_psum", "psum_in_a_loop",
                                                                       "grad_of_replicated_w_in_scan"}
    # reduce once (gradient accumulation): a collective a loop repeats, written or added by jax.grad's transpose of a
    # replicated input, is read from where the operation sits; a Python loop of psums carries more than the result
    assert {name for name, v in found.items() if v["looped"]} == {"psum_in_a_loop", "grad_of_replicated_w_in_scan"}
    assert {name for name, v in found.items() if v["carries_more"]} == {
        "batch_gathered_by_psum", "psum_in_a_loop", "grad_of_replicated_w_in_scan", "psum_unrolled"}
    assert found["psum_after_scan"]["written"] == {"all_reduce": 1}
    assert found["psum_unrolled"]["written"] == {"all_reduce": 2}  # two micro-batches (rows) per device


CUSTOM_CALLS = SETUP + """
evil = jax.jit(lambda v: jax.ffi.ffi_call("evil_target", jax.ShapeDtypeStruct((8,), np.float32))(v))
spec = jax.ShapeDtypeStruct((8,), np.float32)
calls = base64.b64encode(jax.export.export(evil, disabled_checks=[
    jax.export.DisabledSafetyCheck.custom_call("evil_target")])(spec).serialize()).decode()
def plain(v):
    return v * 2.0
plain.__name__ = 'stablehlo.custom_call @evil_target "call_target_name = evil"'
named = base64.b64encode(jax.export.export(jax.jit(plain))(spec).serialize()).decode()
from grader.programs.structure import read_module
found = {}
for key, blob in [("calls", calls), ("named", named)]:
    program = jax.export.deserialize(bytearray(base64.b64decode(blob)))
    found[key] = sorted(read_module(program.mlir_module()).targets)
print(json.dumps(found))
"""


def test_custom_call_targets_come_from_the_parsed_operation_never_from_names():
    assert run_script(CUSTOM_CALLS) == {"calls": ["evil_target"], "named": []}


def test_refusal_counts_custom_call_targets_and_never_names_them():
    exported = SimpleNamespace(nr_devices=4, platforms=("cpu",), ordered_effects=(), unordered_effects=(),
                               disabled_safety_checks=())
    structure = Structure(targets={"hidden_line_rot13_uvqqra", "Sharding", "second_secret"})
    message = runner._inspect(exported, structure, 4)
    assert message and "2 custom_call target(s)" in message
    assert "hidden_line" not in message and "second_secret" not in message and "uvqqra" not in message


def test_manual_only_is_read_as_untrusted_data_on_both_paths():
    program = Program("program.x", 4, (Input((8,), ("data",)),))
    inputs = [np.zeros(8, np.float32)]
    base = {"key": "program.x", "collectives": {"all_reduce": 1}, "manual": True, "in_shardings": [None],
            "expected_in_shardings": [""], "out_shardings": [None], "outputs": []}
    assert parse_verdict({**base, "manual_only": True}, program, inputs).manual_only is True
    for forged in ("true", 1, [True], None):
        assert parse_verdict({**base, "manual_only": forged}, program, inputs).manual_only is False
    assert parse_verdict(base, program, inputs).manual_only is False
    run = ProgramRun("program.x", inputs=inputs, manual=True, manual_only=True, collectives={"all_reduce": 1},
                     outputs=[Output(np.zeros(8), "('data',)", False, [(2,)] * 4, True)])
    assert run_from_json(run_to_json(run), program).manual_only is True
    sent = run_to_json(run)
    sent["manual_only"] = "yes"
    assert run_from_json(sent, program).manual_only is False


def test_compiled_collectives_are_read_as_untrusted_data_on_both_paths():
    """The compiled program's collectives (what the sharded step's all-gather check reads) keep only names with
    non-negative integer counts, on the local path (the runner's verdict) and the Dask path (a worker's run)."""
    program = Program("program.x", 4, (Input((8,), ("data",)),))
    inputs = [np.zeros(8, np.float32)]
    base = {"key": "program.x", "collectives": {}, "manual": True, "in_shardings": [None],
            "expected_in_shardings": [""], "out_shardings": [None], "outputs": []}
    forged = {"all_gather": -1, "all_reduce": 1, "collective_permute": "2", "x" * 80: 3, "send_recv": True}
    assert parse_verdict({**base, "compiled_collectives": forged}, program, inputs).compiled_collectives == {
        "all_reduce": 1, "x" * 50: 3}
    for junk in ("all_gather", [1], None, {str(n): 1 for n in range(65)}):
        assert parse_verdict({**base, "compiled_collectives": junk}, program, inputs).compiled_collectives == {}
    run = ProgramRun("program.x", inputs=inputs, compiled_collectives={"all_gather": 2},
                     outputs=[Output(np.zeros(8), "()", True, [(8,)] * 4, True)])
    assert run_from_json(run_to_json(run), program).compiled_collectives == {"all_gather": 2}
    sent = run_to_json(run)
    sent["compiled_collectives"] = forged
    assert run_from_json(sent, program).compiled_collectives == {"all_reduce": 1, "x" * 50: 3}


NAMES = SETUP + """
import sys
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

devices = np.array(jax.devices())
TRICKS = ["stablehlo.all_gather", "stablehlo.all_reduce", "stablehlo.reduce_scatter", "sdy.manual_computation",
          'stablehlo.custom_call @evil', 'a"b', "'", '"stablehlo.all_gather"', 'manual_axes={}', "SPMDFullToShardShape",
          "main", "loc(", "{", "}", "@mesh", "#sdy.sharding", "all-gather(", "\\\\", "\\n"]
names = st.sampled_from(TRICKS) | st.text(min_size=1, max_size=16)
# Mesh axis names are printable ASCII without quotes or backslashes: XLA's Shardy import unescapes the names the
# MLIR printer escapes with absl::CUnescape and aborts (a CHECK failure) on "\\C2": such a mesh crashes the
# learner's own kernel, and the runner only for that notebook's programs.
AXIS_CHARACTERS = "".join(c for c in map(chr, range(32, 127)) if c not in '"\\\\')
axes = st.sampled_from(["data", *(t for t in TRICKS if set(t) <= set(AXIS_CHARACTERS))]) | st.text(
    AXIS_CHARACTERS, min_size=1, max_size=8)


def programs(name: str, module: str, axis: str) -> list:
    \"\"\"The lesson's programs (and two wrong ones) with every function named ``name`` in module ``module``, on
    a mesh whose axis is ``axis``: (key, blob, host arrays, the course's specs).\"\"\"
    mesh = Mesh(devices, (axis,))
    rows, split, rep = (NamedSharding(mesh, P(axis, None)), NamedSharding(mesh, P(axis)), NamedSharding(mesh, P()))
    specs = (P(axis, None), P(axis), P())

    def term(a, b, w):
        return 2 * a.T @ (a @ w - b) / 8

    def reduce_all(a, b, w):
        return lax.psum(term(a, b, w), axis)

    def reduce_shard(a, b, w):
        return lax.psum_scatter(term(a, b, w), axis, tiled=True)

    def gather_all(v):
        return lax.all_gather(v, axis, tiled=True)

    def masked_mean(losses, mask):
        return lax.psum(jnp.sum(jnp.where(mask, losses, 0.0)), axis) / lax.psum(jnp.sum(mask), axis)

    def global_gradient(a, b, w):
        return term(a, b, w) + jax.shard_map(lambda x: lax.psum(jnp.sum(x) * 0.0, axis), mesh=mesh,
                                             in_specs=P(axis, None), out_specs=P())(a)

    def step(w, x, y):
        value, gradient = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - 0.1 * gradient, value, gradient

    for fn in (term, reduce_all, reduce_shard, gather_all, masked_mean, global_gradient, step):
        fn.__name__ = fn.__qualname__ = name
        fn.__module__ = module
    a, b, w = np.ones((8, 8), np.float32), np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    tokens, mask = np.ones((8, 3), np.float32), np.ones((8, 3), bool)
    gradient_args = (jax.device_put(a, rows), jax.device_put(b, split), jax.device_put(w, rep))
    course = [("data", None), ("data",), ()]
    return [
        ("all_gradient", exported(jax.jit(jax.shard_map(reduce_all, mesh=mesh, in_specs=specs, out_specs=P())),
                                  *gradient_args), (a, b, w), course),
        ("shard_gradient", exported(jax.jit(jax.shard_map(reduce_shard, mesh=mesh, in_specs=specs,
                                                          out_specs=P(axis))), *gradient_args), (a, b, w), course),
        ("gather", exported(jax.jit(jax.shard_map(gather_all, mesh=mesh, in_specs=P(axis), out_specs=P(),
                                                  check_vma=False)), jax.device_put(b, split)), (b,), [("data",)]),
        ("masked_mean", exported(jax.jit(jax.shard_map(masked_mean, mesh=mesh, in_specs=(P(axis, None),) * 2,
                                                       out_specs=P())),
                                 jax.device_put(tokens, rows), jax.device_put(mask, rows)), (tokens, mask),
         [("data", None)] * 2),
        ("decorated_global_jit", exported(jax.jit(global_gradient, in_shardings=(rows, split, rep),
                                                  out_shardings=rep), *gradient_args), (a, b, w), course),
        ("step", exported(jax.jit(step, out_shardings=(rep, rep, rep)), gradient_args[2], gradient_args[0],
                          gradient_args[1]), (w, a, b), [(), ("data", None), ("data",)]),
    ]


def verdicts(name, module, axis):
    return {key: run_one(request(key, blob, arrays, specs)) for key, blob, arrays, specs in programs(name, module, axis)}


baseline = verdicts("make_collectives", "__main__", "data")
assert baseline["all_gradient"]["manual_only"] and baseline["gather"]["manual_only"], baseline
assert baseline["masked_mean"]["manual_only"] and not baseline["decorated_global_jit"]["manual_only"], baseline
assert baseline["step"]["compiled_collectives"].get("all_gather", 0) == 0, baseline
seen = []


@settings(max_examples=int(sys.argv[1]), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(name=names, module=names, axis=axes)
def test_names_never_change_a_verdict(name, module, axis):
    seen.append((name, module, axis))
    assert verdicts(name, module, axis) == baseline


test_names_never_change_a_verdict()
print(json.dumps({"examples": len(seen)}))
"""


def test_names_of_functions_modules_and_mesh_axes_never_change_a_verdict():
    """Hypothesis: the lesson's programs exported under any function, module and mesh-axis names, including the
    names of the operations counted, get the same verdict from the runner (collectives written and compiled, the
    region, manual_only, shardings and outputs) as under the lesson's own names."""
    found = run_script(NAMES.replace("sys.argv[1]", "20"))
    assert found["examples"] >= 20


# -- payloads in bytes, collectives counted, constants of any type --------------------------------------------------
# Gradient accumulation (local_mean_diagnosis): the devices reduce once, after the loop over micro-batches. A Python
# loop of psums, one per micro-batch, carries several times the gradient; packed two float32 to one complex64 element
# it stayed under a bound that counted elements. Bytes are counted, and so are the collectives the lesson allows.
ACCUMULATION = SETUP + """
from coursekit import data

mesh = Mesh(np.array(jax.devices()), ("data",))
ACC_SPECS = (P(None, "data", None, None), P(None, "data", None), P(None, "data", None), P())


def partials(x, y, mask, w):  # one device's block of one micro-batch: the gradient sum and the valid count
    return jax.grad(lambda w: jnp.sum(jnp.where(mask, (x @ w - y) ** 2, 0.0)))(w), jnp.sum(mask)


def solution(x, y, mask, w):  # the lesson's: a scan adds the micro-batches locally, one psum of each after it
    w_local = lax.pcast(w, "data", to="varying")
    start = (jnp.zeros_like(w_local), lax.pcast(jnp.zeros((), jnp.int32), "data", to="varying"))
    (total, count), _ = lax.scan(lambda c, mb: ((c[0] + partials(*mb, w_local)[0], c[1] + partials(*mb, w_local)[1]),
                                                None), start, (x, y, mask))
    return lax.psum(total, "data") / lax.psum(count, "data")


def complex_constant(x, y, mask, w):  # the solution through a complex64 constant: an honest program
    w_local = lax.pcast(w, "data", to="varying")
    start = (jnp.zeros_like(w_local), lax.pcast(jnp.zeros((), jnp.int32), "data", to="varying"))
    (total, count), _ = lax.scan(lambda c, mb: ((c[0] + partials(*mb, w_local)[0], c[1] + partials(*mb, w_local)[1]),
                                                None), start, (x, y, mask))
    total = jnp.real(total * jnp.complex64(1 + 0j))
    return lax.psum(total, "data") / lax.psum(count, "data")


def per_micro_batch(pack, unpack):
    \"\"\"A Python loop over the micro-batches, each one's gradient packed by ``pack`` and psummed on its own (one
    all-reduce per micro-batch, no loop in the program), the count psummed once after it.\"\"\"
    def program(x, y, mask, w):
        w_local = lax.pcast(w, "data", to="varying")
        total, count = jnp.zeros_like(w), 0
        for m in range(x.shape[0]):
            gradient, valid = partials(x[m], y[m], mask[m], w_local)
            total, count = total + unpack(lax.psum(pack(gradient), "data")), count + valid
        return total / lax.psum(count, "data")
    return program


SCALE = 2.0 ** 12
programs = {
    "solution": solution,
    "complex_constant": complex_constant,
    # two float32 to one complex64 element: d / 2 elements per micro-batch, 8 bytes each
    "complex64": per_micro_batch(lambda g: lax.complex(g[0::2], g[1::2]),
                                 lambda z: jnp.stack([jnp.real(z), jnp.imag(z)], -1).reshape(-1)),
    "float32": per_micro_batch(lambda g: g, lambda g: g),
    # each float32 as two bfloat16 (its bits): 2 d elements of 2 bytes
    "bfloat16": per_micro_batch(lambda g: lax.bitcast_convert_type(g, jnp.bfloat16),
                                lambda b: lax.bitcast_convert_type(b, jnp.float32)),
    # fixed point: one int32 per float32
    "int32": per_micro_batch(lambda g: jnp.round(g * SCALE).astype(jnp.int32), lambda i: i.astype(jnp.float32) / SCALE),
    # rounded to bfloat16: half the bytes of the gradient per micro-batch (and not its precision)
    "bfloat16_rounded": per_micro_batch(lambda g: g.astype(jnp.bfloat16), lambda b: b.astype(jnp.float32)),
}
batch = data.accumulation_batch(seed=0, num_shards=4, empty=(1,))
placed = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(batch, ACC_SPECS)]
found = {}
for name, fn in programs.items():
    blob = exported(jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=ACC_SPECS, out_specs=P())), *placed)
    verdict = run_one(request(name, blob, batch, [tuple(s) for s in ACC_SPECS]))
    value = np.array(verdict["outputs"][0]["data"]) if verdict.get("outputs") else None
    found[name] = {"module": jax.export.deserialize(bytearray(base64.b64decode(blob))).mlir_module(),
                   "error": verdict.get("error"), "manual_only": verdict.get("manual_only"),
                   "written": {k: n for k, n in verdict.get("collectives", {}).items() if n},
                   "looped": verdict.get("looped"), "carries_more": verdict.get("carries_more"),
                   "moves_data": verdict.get("moves_data"), "value": None if value is None else value.tolist()}
mask = batch[2]
residual = np.where(mask, batch[0].astype(np.float64) @ batch[3] - batch[1], 0.0)
found["expected"] = (2 * np.einsum("mst,mstd->d", residual, batch[0].astype(np.float64)) / mask.sum()).tolist()
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def accumulation() -> dict:
    """The lesson's accumulation program, one with a complex constant, and per-micro-batch reductions packed several
    ways, exported on 4 CPU devices and run by the runner (``run_one``) in a subprocess: the verdict and the module."""
    return run_script(ACCUMULATION)


#: every attack carries 3 micro-batches x 8 bytes of gradient plus a 4-byte count; in elements the complex64 one
#: carried 3 + 1, no more than the result (2) plus 2
PACKED = ("complex64", "float32", "bfloat16", "int32")


def test_a_per_micro_batch_reduction_is_refused_however_its_gradient_is_packed(accumulation):
    from grader.programs.structure import carries_more, read_module, too_many

    found = accumulation
    for name in ("solution", "complex_constant", *PACKED, "bfloat16_rounded"):
        assert found[name]["error"] is None and found[name]["manual_only"] and not found[name]["looped"], name
        assert np.allclose(found[name]["value"], found["expected"], rtol=5e-3), name  # right numbers, all of them
    returned = 2 * 4  # the gradient: two float32
    for name in PACKED:
        structure = read_module(found[name]["module"])
        assert structure.payload == 3 * 8 + 4, name
        assert carries_more(structure.payload, returned), name
        assert found[name]["carries_more"] is True, name  # the runner's verdict, which reduce_once reads
        assert found[name]["written"] == {"all_reduce": 4} and too_many(structure.collectives, 2), name
    # rounded to bfloat16, three micro-batches carry no more bytes than one float32 gradient and a count (and lose its
    # precision): the collectives the lesson allows refuse it
    rounded = read_module(found["bfloat16_rounded"]["module"])
    assert rounded.payload == 3 * 4 + 4 and not carries_more(rounded.payload, returned)
    assert too_many(rounded.collectives, 2)
    for name in ("solution", "complex_constant"):  # one psum of the gradient sum, one of the count
        structure = read_module(found[name]["module"])
        assert structure.payload == 2 * 4 + 4 and not carries_more(structure.payload, returned), name
        assert found[name]["carries_more"] is False and not too_many(structure.collectives, 2), name
    assert "complex<f32>" in found["complex_constant"]["module"]


def test_a_program_writing_more_collectives_than_its_expect_allows_carries_more_on_both_paths():
    """``Expect.collectives`` is read against the collectives the runner reports, on the local path (its verdict) and
    the Dask path (a worker's run, made without the rubric's Expect)."""
    expect = Expect(outputs=(True,), region="all_reduce", reduce_once=True, collectives=2)
    program = Program("program.accumulation", 4, (Input((8,), ("data",)),), expect=expect)
    unbounded = Program("program.accumulation", 4, (Input((8,), ("data",)),))
    inputs = [np.zeros(8, np.float32)]
    base = {"key": "program.accumulation", "manual": True, "manual_only": True, "in_shardings": [None],
            "expected_in_shardings": [""], "out_shardings": [None], "outputs": [], "carries_more": False}
    for written, refused in [({"all_reduce": 2}, False), ({"all_reduce": 3}, True),
                             ({"all_reduce": 1, "collective_permute": 2}, True)]:
        verdict = {**base, "collectives": written}
        assert parse_verdict(verdict, program, inputs).carries_more is refused, written
        assert parse_verdict(verdict, unbounded, inputs).carries_more is False, written
        run = ProgramRun("program.accumulation", inputs=inputs, manual=True, manual_only=True, collectives=written,
                         outputs=[Output(np.zeros(2), "()", True, [(2,)] * 4, True)])
        assert run_from_json(run_to_json(run), program).carries_more is refused, written
    assert parse_verdict({**base, "collectives": {}, "carries_more": True}, program, inputs).carries_more is True
    from grader.programs.judged import program_key
    assert program_key("blob", program, 4) != program_key("blob", unbounded, 4)  # a reused run was judged by it


# One collective of ``{count}`` elements of ``{type}`` in a program StableHLO text writes by hand.
ALL_REDUCE = """
func.func public @main(%arg0: tensor<{count}x{type}>) -> tensor<{count}x{type}> {{
  %0 = "stablehlo.all_reduce"(%arg0) <{{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}}> ({{
  ^bb0(%a: tensor<{type}>, %b: tensor<{type}>):
    %s = stablehlo.add %a, %b : tensor<{type}>
    stablehlo.return %s : tensor<{type}>
  }}) : (tensor<{count}x{type}>) -> tensor<{count}x{type}>
  return %0 : tensor<{count}x{type}>
}}
"""
WIDTHS = {"f32": 4, "i32": 4, "ui32": 4, "f16": 2, "bf16": 2, "complex<f32>": 8, "complex<f64>": 16, "f64": 8,
          "i64": 8, "ui64": 8, "i16": 2, "i8": 1, "ui8": 1, "i1": 1, "i4": 1, "f8E4M3FN": 1, "f8E5M2": 1}


@pytest.mark.parametrize("element", sorted(WIDTHS))
def test_a_collective_carries_its_elements_times_their_byte_width(element):
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    from grader.programs.structure import element_bytes, read_module

    with mlir.make_ir_context():
        assert element_bytes(ir.Type.parse(element)) == WIDTHS[element]
    structure = read_module(ALL_REDUCE.format(count=3, type=element))
    assert structure.collectives["all_reduce"] == 1
    assert structure.payload == 3 * WIDTHS[element]


def test_bytes_of_results_and_inputs_and_the_bounds_read_in_bytes():
    import ml_dtypes

    from grader.programs.structure import (SPARE_BYTES, carries_more, moves_data, read_module, returned_bytes,
                                           value_bytes)

    results = [SimpleNamespace(shape=(2,), dtype=np.dtype("float32")),
               SimpleNamespace(shape=(), dtype=np.dtype(ml_dtypes.bfloat16))]  # a narrower result: a float32 sum
    assert returned_bytes(results) == 2 * 4 + 4
    assert value_bytes((3, 8, 4), "bool") == 96 and value_bytes((3, 8, 4, 2), "float32") == 768
    assert value_bytes((2,), "complex64") == 16 and value_bytes((2,), ml_dtypes.bfloat16) == 4
    assert not carries_more(8 + SPARE_BYTES, 8) and carries_more(8 + SPARE_BYTES + 1, 8)
    # three quarters of a 768-byte input passed around as complex64 (a ring of ppermutes): 72 elements, half of 192
    # float32 would be 96, but it is 576 bytes, more than half of the input's 768
    ring = read_module(ALL_REDUCE.format(count=72, type="complex<f32>")).payload
    assert ring == 576 and moves_data(ring, 8, [768, 96])
    assert not moves_data(read_module(ALL_REDUCE.format(count=2, type="f32")).payload, 8, [768])


# Constants of every type StableHLO writes, and a function reached only through an array that holds a complex
# constant before its symbol: the reader reads them all (the bindings refuse to hand back a complex dense attribute).
CONSTANTS = """
func.func private @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.all_reduce"(%arg0) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %c0 = stablehlo.constant dense<(1.000000e+00,2.000000e+00)> : tensor<complex<f32>>
  %c1 = stablehlo.constant dense<[(1.0,2.0),(3.0,-4.5)]> : tensor<2xcomplex<f64>>
  %c2 = stablehlo.constant dense<"0x0000803F00000040"> : tensor<2xf32>
  %c3 = stablehlo.constant dense<"0x0000803F0000004000004040000080400000A0400000C040"> : tensor<3xcomplex<f32>>
  %c4 = stablehlo.constant dense<true> : tensor<3xi1>
  %c5 = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %c6 = stablehlo.constant dense<1.500000e+00> : tensor<2xbf16>
  %c7 = stablehlo.constant dense<1.0> : tensor<4x4xf16>
  %c8 = stablehlo.constant dense<3> : tensor<2xi4>
  %c9 = stablehlo.constant dense<1.0> : tensor<2xf8E4M3FN>
  %c10 = stablehlo.constant dense<[1, 2]> : tensor<2xui64>
  %c11 = stablehlo.constant dense<(0.0,1.0)> : tensor<2x2xcomplex<f32>>
  %1 = stablehlo.real %c0 : (tensor<complex<f32>>) -> tensor<f32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<2xf32>
  %3 = stablehlo.add %arg0, %2 {refs = [dense<(1.0,2.0)> : tensor<complex<f32>>, @helper]} : tensor<2xf32>
  %4 = func.call @helper(%3) {cst = dense<(1.0,2.0)> : tensor<complex<f32>>} : (tensor<2xf32>) -> tensor<2xf32>
  return %4 : tensor<2xf32>
}
"""


def test_constants_of_any_type_are_read_and_hide_no_function():
    from grader.programs.structure import read_module

    structure = read_module(CONSTANTS)  # once a TypeError: the program was refused as unreadable
    assert structure.collectives["all_reduce"] == 2  # the call, and the reference behind the complex constant
    assert structure.payload == 2 * 2 * 4


# -- every exported program held to its expectations as data (issue 58, item 2) ---------------------------------------
def _rubric_module(assignment: str, module: str = "rubric"):
    from grader.layout import Course
    from grader.submission.rubric_loading import load_rubric

    load_rubric(Course.default().rubric(assignment))
    return sys.modules[f"_course_rubric_{assignment}.{module}"]


@pytest.mark.parametrize("assignment", ["sharded_step", "local_mean_diagnosis", "collectives"])
@pytest.mark.parametrize("devices", [2, 4])
def test_every_program_a_test_exports_declares_what_it_must_look_like(assignment, devices):
    declared = _rubric_module(assignment).rubric.declared(devices)
    assert declared
    assert not [key for key, program in declared.items() if program.expect is None], "a program with no Expect"


def _step_run(key: str, mesh: int, **structure) -> ProgramRun:
    """A step's run as the runner reports it: three replicated outputs, its collectives as given."""
    outputs = [Output(np.zeros(shape, np.float32), "P()", True, [shape] * mesh, True) for shape in [(3,), (), (3,)]]
    return ProgramRun(key, inputs=[np.zeros(3, np.float32)], outputs=outputs, **structure)


def test_the_steps_on_smaller_meshes_and_at_another_rate_are_held_to_keeping_the_batch_split():
    """The step on a smaller mesh, or make_train_step(0.37)'s, that gathers the batch (or copies it with a psum,
    or leaves a result split) loses the placement test, each named by where it ran; one that did not run is charged
    where it runs. Without their Expect, only program.placed was read and these passed."""
    from grader.submission.judge import Evidence, Mismatch

    module = _rubric_module("sharded_step", "rubric_step")
    keys = list(module.step_programs(4))
    assert keys == ["program.step", "program.mesh1.step", "program.mesh2.step", "program.mesh3.step",
                    "program.step_0.37"]
    assert all(module.rubric.declared(4)[key].expect is module.STEP_DATA_PARALLEL for key in keys)
    meshes = {"program.step": 4, "program.mesh1.step": 1, "program.mesh2.step": 2, "program.mesh3.step": 3,
              "program.step_0.37": 4}

    def judged(**changed) -> str | None:
        runs = {key: _step_run(key, meshes[key], compiled_collectives={"all_reduce": 2}) for key in keys}
        runs.update(changed)
        try:
            module.steps_stay_data_parallel(Evidence({}, num_devices=4, programs=runs))
        except Mismatch as failure:
            return str(failure)
        return None

    assert judged() is None
    said = judged(**{"program.mesh3.step": _step_run("program.mesh3.step", 3, compiled_collectives={
        "all_gather": 1, "all_reduce": 2})})
    assert said and "on a mesh of 3 device(s)" in said and "gathers the batch onto every device" in said, said
    said = judged(**{"program.step_0.37": _step_run("program.step_0.37", 4, moves_data=True)})
    assert said and "make_train_step(0.37)" in said and "copies the batch to every device" in said, said
    split = _step_run("program.step", 4)
    split.outputs[2] = Output(np.zeros(3, np.float32), "P('data',)", False, [(1,)] * 4, True)
    said = judged(**{"program.step": split})
    assert said and "output 3 should be replicated" in said, said
    failed = ProgramRun("program.mesh2.step", error="it did not compile for a mesh of 2 device(s)")
    assert judged(**{"program.mesh2.step": failed}) is None  # charged by test-loss-and-gradient, which runs it
