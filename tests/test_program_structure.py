"""What the program runner reports of a program's structure (``grader.programs.runner``).

``manual_only``: one shard_map region computes everything, so the collectives the
rubric reads are the ones doing the work; a global program beside a decorative
shard_map, or a shard_map that gets its inputs resharded, is not one. JAX runs in
a subprocess with 4 CPU devices, as in the grader.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import numpy as np

from grader.programs import Input, Output, Program, ProgramRun, run_to_json
from grader.programs import runner
from grader.programs.launch import parse_verdict, run_from_json

STRUCTURES = """
import base64, json
import jax, numpy as np
jax.config.update("jax_platforms", "cpu"); jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from coursekit.programs import exported
from grader.programs.runner import manual_only

mesh = Mesh(np.array(jax.devices()), ("data",))
rows, split, rep = (NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P("data")), NamedSharding(mesh, P()))
specs = (P("data", None), P("data"), P())


def term(a, b, w):
    return 2 * a.T @ (a @ w - b) / 8


def global_gradient(a, b, w):
    return 2 * a.T @ (a @ w - b) / 8


psum_program = jax.shard_map(lambda a, b, w: lax.psum(term(a, b, w), "data"), mesh=mesh, in_specs=specs,
                             out_specs=P())
decoration = jax.shard_map(lambda a: lax.psum(jnp.sum(a) * 0.0, "data"), mesh=mesh, in_specs=P("data", None),
                           out_specs=P())
inner = jax.jit(jax.shard_map(lambda a, b, w: lax.psum(jax.jit(term)(a, b, w), "data"), mesh=mesh,
                              in_specs=specs, out_specs=P()))
whole_inputs = jax.shard_map(lambda a, b, w: global_gradient(a, b, w) + lax.psum(jnp.sum(a) * 0.0, "data"),
                             mesh=mesh, in_specs=(P(), P(), P()), out_specs=P())
programs = {
    "shard_map": jax.jit(psum_program),
    "nested_jit_and_convert": jax.jit(lambda a, b, w: inner(a, b, w).astype(jnp.float32).reshape(8)),
    "global_jit": jax.jit(global_gradient, in_shardings=(rows, split, rep), out_shardings=rep),
    "decorated_global_jit": jax.jit(lambda a, b, w: global_gradient(a, b, w) + decoration(a),
                                    in_shardings=(rows, split, rep), out_shardings=rep),
    "arithmetic_after_shard_map": jax.jit(lambda a, b, w: psum_program(a, b, w) * 1.0),
    "two_shard_maps": jax.jit(lambda a, b, w: psum_program(a, b, w) + decoration(a)),
    "inputs_resharded_into_shard_map": jax.jit(whole_inputs),
}
args = (jax.device_put(np.ones((8, 8), np.float32), rows), jax.device_put(np.ones(8, np.float32), split),
        jax.device_put(np.ones(8, np.float32), rep))
found = {}
for name, program in programs.items():
    text = jax.export.deserialize(bytearray(base64.b64decode(exported(program, *args)))).mlir_module()
    found[name] = manual_only(text)
print(json.dumps(found))
"""


def test_manual_only_is_one_region_that_computes_everything():
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(STRUCTURES)], capture_output=True, text=True,
                          timeout=300, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {
        "shard_map": True,
        "nested_jit_and_convert": True,  # calls, a conversion and a reshape outside the region
        "global_jit": False,
        "decorated_global_jit": False,  # the computation is outside the region
        "arithmetic_after_shard_map": False,
        "two_shard_maps": False,
        "inputs_resharded_into_shard_map": False,  # the compiler gathers the inputs before the region
    }


def test_refusal_counts_custom_call_targets_and_never_names_them():
    exported = SimpleNamespace(nr_devices=4, platforms=("cpu",), ordered_effects=(), unordered_effects=(),
                               disabled_safety_checks=())
    text = ('%0 = stablehlo.custom_call @hidden_line_rot13_uvqqra(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n'
            '%1 = stablehlo.custom_call @Sharding(%0) : (tensor<2xf32>) -> tensor<2xf32>\n'
            '%2 = "stablehlo.custom_call"(%1) {call_target_name = "second_secret"} : (tensor<2xf32>) -> tensor<2xf32>')
    message = runner._inspect(exported, text, 4)
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
