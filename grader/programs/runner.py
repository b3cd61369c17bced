"""``python -m grader.programs.runner``: run exported learner programs, confined, and report what they did.

Runs in a sandbox of its own (``grader.sandbox``: no network, private root,
seccomp, a leased uid), never in the learner's kernel and never in the
grader's process: the programs are untrusted bytes that the C++ parsers of
JAX and XLA read. It reads ``request.json`` from its working folder and
writes ``verdict.json`` there. For each program it:

1. decodes and deserializes it (``jax.export.deserialize``), with a size cap;
2. refuses to run it if it calls anything outside the compiler
   (``custom_call`` targets other than the sharding annotations, effects such
   as host callbacks, disabled safety checks) or was exported for another
   device count or platform;
3. reads its structure from the parsed module, never from its text
   (``grader.programs.structure``): the collectives its operations write,
   and whether it is one per-device program: a single ``shard_map`` region,
   manual over the mesh axes its inputs are split on, that takes its inputs
   as they are placed, with nothing outside it but calls, reshapes and
   conversions, and no resharding of what it returns;
4. places the grader's fresh inputs with the expected shardings on a mesh of
   its device count and compiles the program once for them: the compiled
   (partitioned) HLO's collectives are the communication it performs, so
   collectives the compiler adds are seen (``compiled_collectives``;
   ``manual_only`` also requires that it has none the region did not write);
5. runs that executable (unless the program is only read) and reports every
   output with its shards.

The verdict is plain data: the grader judges it against NumPy references.
"""
from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

from grader.programs.structure import (ALLOWED_CUSTOM_CALLS, COLLECTIVES, Structure, Unreadable,  # noqa: F401
                                      carries_more, compiled_collectives, moves_data, only_written,
                                      read_module, returned_bytes, value_bytes)

MAX_PROGRAM_BYTES = 4 << 20


def _array(value) -> dict:
    import numpy as np

    host = np.asarray(value)
    return {"dtype": host.dtype.name, "shape": list(host.shape),
            "data": [None if not np.isfinite(v) else v for v in host.astype(np.float64).ravel().tolist()]}


def _output(value) -> dict:
    import numpy as np

    described = _array(value)
    shards = getattr(value, "addressable_shards", [])
    described["shards"] = [{"device": int(s.device.id), "shape": list(s.data.shape),
                            "equal_to_slice": bool(np.array_equal(np.asarray(s.data), np.asarray(value)[s.index],
                                                                  equal_nan=True))}
                           for s in shards]
    spec = getattr(value.sharding, "spec", None)
    described["sharding"] = str(tuple(spec)) if spec is not None else type(value.sharding).__name__
    described["replicated"] = bool(value.sharding.is_fully_replicated)
    return described


def _shown(aval) -> str:
    """An argument's dtype and shape as a message may quote them: a plain dtype and a small shape, else less."""
    import numpy as np

    dtype = aval.dtype.name if np.dtype(aval.dtype).kind in "biufc" and aval.dtype.name.isalnum() else "another dtype"
    shape = list(aval.shape)
    small = len(shape) <= 3 and all(isinstance(n, int) and 0 <= n <= 64 for n in shape)
    return f"{dtype}{shape}" if small else f"{dtype} of another shape"


def _inspect(exported, structure: Structure, mesh_size: int) -> str | None:
    """Why this program must not run, or None."""
    if exported.nr_devices != mesh_size:
        built = exported.nr_devices if 0 < exported.nr_devices <= 64 else "another number of"
        return (f"it was built for {built} device(s) when the grader gave it {mesh_size}: the grader also runs your "
                "code with other numbers of devices than the lesson's four; write nothing that assumes four devices "
                "(use len(devices) and the arrays' shapes) and use the mesh and shardings the notebook defines, not "
                "a mesh of your own")
    if "cpu" not in exported.platforms:
        return "it was exported for another platform, not for the CPU"  # (the names are the program's own text)
    if exported.ordered_effects or exported.unordered_effects:
        return "it has side effects (a host callback, print or I/O): the program must be pure JAX"
    if exported.disabled_safety_checks:
        return "it was exported with JAX's safety checks disabled"
    targets = structure.targets - ALLOWED_CUSTOM_CALLS  # read from each custom_call's parsed attribute
    if targets:  # how many, never their names: the kernel chose them
        return (f"it calls code outside the compiler ({len(targets)} custom_call target(s) other than the sharding "
                "annotations): the program must be pure JAX")
    return None


def _compile_key(exported, structure: Structure, inputs: list) -> str:
    """Programs with this key compile to the same executable: the module without its locations, its calling
    convention and the inputs' placement."""
    return json.dumps([structure.key, str(exported.in_tree), str(exported.out_tree),
                       list(exported.module_kept_var_idx), list(exported.platforms),
                       [[spec["shape"], spec["dtype"], spec["spec"]] for spec in inputs]])


def run_one(program: dict, compiled_programs: dict | None = None) -> dict:
    """The verdict on one program; ``compiled_programs`` (``_compile_key`` -> executable) holds the executables of
    the request's earlier programs, so a program the notebook records twice compiles once."""
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    compiled_programs = {} if compiled_programs is None else compiled_programs
    verdict: dict = {"key": program["key"]}
    try:
        blob = base64.b64decode(program["program"], validate=True)
    except (ValueError, TypeError):
        return {**verdict, "error": "the recorded program is not base64 text"}
    if len(blob) > MAX_PROGRAM_BYTES:
        return {**verdict, "error": f"the program is larger than {MAX_PROGRAM_BYTES >> 20} MiB"}
    try:
        exported = jax.export.deserialize(bytearray(blob))
        structure = read_module(exported.mlir_module())
    except Exception as error:  # noqa: BLE001 - anything malformed is the program's fault
        return {**verdict, "error": f"the program could not be read ({type(error).__name__})"}
    size = int(program["mesh"])
    verdict["collectives"] = dict(structure.collectives)  # the operations it writes, reached from main
    verdict["manual"] = structure.manual
    verdict["manual_only"] = False  # until the compiled program shows no collective the region did not write
    refused = _inspect(exported, structure, size)
    if refused:
        return {**verdict, "error": refused}
    mesh = Mesh(np.array(jax.devices()[:size]), ("data",))
    inputs = program["inputs"]
    if len(inputs) != len(exported.in_avals):
        count = len(exported.in_avals) if len(exported.in_avals) <= 64 else "more"
        return {**verdict, "error": f"it takes {count} argument(s), not {len(inputs)}"}
    args, expected_in = [], []
    for spec, aval in zip(inputs, exported.in_avals):
        host = np.asarray(spec["data"], dtype=np.float64).reshape(spec["shape"]).astype(spec["dtype"])
        if tuple(aval.shape) != host.shape or aval.dtype != host.dtype:
            return {**verdict, "error": f"it takes {_shown(aval)} where the course passes "
                                        f"{host.dtype.name}{list(host.shape)}"}
        sharding = NamedSharding(mesh, PartitionSpec(*spec["spec"]))
        expected_in.append(str(sharding._to_xla_hlo_sharding(host.ndim)))
        args.append(jax.device_put(host, sharding))
    verdict["in_shardings"] = [None if s is None else str(s) for s in exported.in_shardings_hlo]
    verdict["expected_in_shardings"] = expected_in
    verdict["out_shardings"] = [None if s is None else str(s) for s in exported.out_shardings_hlo]
    # Compiled once, for the grader's inputs as placed: its partitioned HLO is the communication it performs
    # (collectives the compiler adds included), and the same executable runs it.
    key = _compile_key(exported, structure, inputs)
    try:
        compiled = compiled_programs.get(key)
        if compiled is None:
            compiled = compiled_programs[key] = jax.jit(exported.call).lower(*args).compile()
        verdict["compiled_collectives"] = compiled_collectives(compiled)
    except Exception as error:  # noqa: BLE001
        # The type only: JAX's messages quote the program's own names (its function name is any text the learner
        # chose), which would carry hidden-test text into the feedback page.
        return {**verdict, "error": f"it failed on the grader's inputs ({type(error).__name__})"}
    verdict["manual_only"] = structure.one_region and only_written(verdict["compiled_collectives"],
                                                                   structure.collectives)
    # in bytes, as the structure counts what the collectives carry
    split = [value_bytes(spec["shape"], spec["dtype"]) for spec in inputs
             if any(axis is not None for axis in spec["spec"])]
    returned = returned_bytes(exported.out_avals)
    verdict["moves_data"] = moves_data(structure.payload, returned, split)
    verdict["looped"] = structure.looped > 0
    verdict["carries_more"] = carries_more(structure.payload, returned)
    if program.get("run") is False:  # read (and compiled), not run
        verdict["outputs"] = []
        return verdict
    try:
        outputs = jax.tree_util.tree_leaves(compiled(*args))
        verdict["outputs"] = [_output(value) for value in outputs]
    except Exception as error:  # noqa: BLE001
        return {**verdict, "error": f"it failed on the grader's inputs ({type(error).__name__})"}
    return verdict


def use_compilation_cache(jax) -> None:
    """Reuse compiled XLA programs from the folder the sandbox binds below this runner's home, when it binds one.

    JAX's persistent compilation cache, keyed by a hash of the program, the compile options, the devices and the
    JAX/XLA versions (``grader.classroom.compile_cache``). A folder this process cannot write is only read: nothing is
    written there. Kernels never have this folder: only runners, which report no timings, may read it.
    """
    from grader.sandbox.view import COMPILE_CACHE

    folder = Path.home() / COMPILE_CACHE
    if not folder.is_dir():
        return
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_compilation_cache_max_size", -1)  # no eviction: a read writes no access times
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
    writable = os.access(folder, os.W_OK)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0 if writable else float("inf"))


def main(folder: Path) -> None:
    request = json.loads((folder / "request.json").read_text())
    import jax

    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", int(request["num_devices"]))
    use_compilation_cache(jax)  # the instructor's programs, compiled (read only; written only when filling it)
    from jax import monitoring

    events: list[str] = []
    monitoring.register_event_listener(lambda name, **_: events.append(name))
    verdicts, compiled_programs = [], {}
    for program in request["programs"]:
        try:
            verdicts.append(run_one(program, compiled_programs))
        except Exception as error:  # noqa: BLE001 - one bad program never hides the others
            verdicts.append({"key": program.get("key"), "error": f"the program could not be run ({type(error).__name__})"})
    # The cache hits are for the tests and benchmarks only; the grader reads nothing else of the report.
    hits = events.count("/jax/compilation_cache/cache_hits")
    (folder / "verdict.json").write_text(json.dumps({"verdicts": verdicts, "cache_hits": hits}))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd())
