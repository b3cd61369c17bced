"""What a learner's program is and does, read from its parsed operations and from its compiled form, never from text.

Two readings, both of structure the learner cannot name:

* ``read_module``: the StableHLO module the kernel exported, parsed by MLIR (jaxlib's bindings). Every operation
  is named by the parser (``op.operation.name``); symbols, locations, attributes and the module's own name (all
  of them text the learner chooses: ``fn.__name__ = "stablehlo.all_gather"``) are never searched. Collectives
  are counted among the operations reachable from ``main`` (regions and called functions included),
  ``custom_call`` targets read from the parsed attribute, what they carry counted in bytes (each operand's
  elements times its element type's width, read from the parsed type: ``complex<f32>`` is 8 bytes, ``i1`` one;
  a constant of any type is read, or skipped when the bindings cannot hand it back), and the shard_map
  (``sdy.manual_computation``) region found by walking ``main``: it counts only when it is manual over the mesh
  axes its inputs are split on (``manual_axes={}`` is a region the compiler partitions like any global program),
  and a program is one per-device program (``one_region``) only when exactly one such region takes its inputs as
  they are placed and what surrounds it only calls, converts and reshapes, never reshards (a sharding constraint
  or a result sharding other than the region's gathers what it returns).
* ``compiled_collectives``: the collectives of the program XLA compiled for the grader's inputs, after SPMD
  partitioning, by instruction opcode (jaxlib's ``HloModule`` bindings). Collectives the compiler adds, which
  the exported text never shows, are seen here.
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field

COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "collective_permute",
               "collective_broadcast")
COLLECTIVE_OPS = {f"stablehlo.{name}": name for name in COLLECTIVES}
#: compiled HLO opcodes that move data between devices, by the collective they are (async starts count once)
COMPILED_OPCODES = {"kAllReduce": "all_reduce", "kAllReduceStart": "all_reduce", "kReduceScatter": "reduce_scatter",
                    "kAllGather": "all_gather", "kAllGatherStart": "all_gather", "kAllToAll": "all_to_all",
                    "kRaggedAllToAll": "all_to_all", "kCollectivePermute": "collective_permute",
                    "kCollectivePermuteStart": "collective_permute", "kCollectiveBroadcast": "collective_broadcast",
                    "kSend": "send_recv", "kRecv": "send_recv"}
ALLOWED_CUSTOM_CALLS = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "xla.sdy.GlobalToLocalShape",
                        "xla.sdy.LocalToGlobalShape", "xla.sdy.FuncResultSharding", "annotate_device_placement"}
MAX_OPS = 1 << 18  # operations walked, all readings together: a larger module is not read
UNBOUNDED = 1 << 62  # the payload of a collective that a loop may repeat any number of times
#: the bytes a collective's element type is given when the bindings name no width for it (no collective of the course
#: carries one): the widest StableHLO element (complex<f64>), so an unknown type never carries less than it could
WIDEST = 16
#: what a reduction may carry beyond the program's results: two 4-byte values (a count beside the numerators, a loss)
SPARE_BYTES = 8
#: the narrowest element a result is counted at: a float32 or int32 accumulator may reduce a narrower result
ACCUMULATOR_BYTES = 4
LOOPS = {"stablehlo.while", "scf.while", "scf.for"}


class Unreadable(Exception):
    """The module is too large, recursive or malformed to read: it is not run."""


class _NotOne(Exception):
    """Not one per-device program (``one_region`` is False)."""


@dataclass
class Structure:
    collectives: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COLLECTIVES, 0))
    targets: set[str] = field(default_factory=set)  # custom_call targets anywhere in the module
    manual: bool = False  # a shard_map region manual over the inputs' mesh axes, reachable from main
    one_region: bool = False  # exactly one such region computes everything (see the module's docstring)
    key: str = ""  # a digest of the program without its locations: equal programs compile alike
    #: bytes the collectives reached from main carry, per device, summed over every collective and call site: each
    #: operand's elements times its element type's width (``element_bytes``), so packing two floats into one
    #: complex64 element carries as much as the two floats (a collective inside a loop counts as unbounded:
    #: ``UNBOUNDED``)
    payload: int = 0
    #: collectives a loop repeats: written inside a loop (``stablehlo.while``, a ``lax.scan``), or in a function
    #: a loop calls
    looped: int = 0


def _is(attr, kind) -> bool:
    """Whether an MLIR attribute is of the attribute class ``kind`` (the bindings refuse to cast it otherwise)."""
    if isinstance(attr, kind):
        return True
    try:
        kind(attr)
    except (ValueError, TypeError):
        return False
    return True


def element_bytes(element) -> int:
    """The bytes one element of a parsed MLIR type takes: a complex number twice its part's, a float or integer its
    width rounded up to whole bytes (``i1``, ``i4`` and ``f4`` one byte each), ``index`` eight, anything else
    ``WIDEST``."""
    from jax._src.lib.mlir import ir

    if _is(element, ir.ComplexType):
        return 2 * element_bytes(ir.ComplexType(element).element_type)
    for kind in (ir.IntegerType, ir.FloatType):
        if _is(element, kind):
            return max(1, -(-int(kind(element).width) // 8))
    if _is(element, ir.IndexType):
        return 8
    return WIDEST


def value_bytes(shape, dtype, floor: int = 1) -> int:
    """The bytes of an array of ``shape`` and NumPy ``dtype`` (``ml_dtypes``' bfloat16 included), each element
    counted at no fewer than ``floor`` bytes."""
    import numpy as np

    return math.prod(shape) * max(int(np.dtype(dtype).itemsize), floor)


def _attribute(op, name: str):
    """``op``'s attribute ``name``, or None when the bindings cannot read it: they refuse to hand back a dense
    constant of an element type they have no class for (``dense<(1.0,2.0)> : tensor<complex<f32>>``, a
    ``TypeError``), which holds numbers, never a symbol."""
    try:
        return op.attributes[name]
    except TypeError:
        return None


def _elements(array) -> list:
    """The elements of an ``ArrayAttr`` the bindings can read (see ``_attribute``), each read on its own so that one
    unreadable element hides none after it."""
    found = []
    for index in range(len(array)):
        try:
            found.append(array[index])
        except TypeError:
            continue
    return found


def _operations(root):
    """Every operation nested in ``root``'s regions (not ``root`` itself), depth first."""
    stack = [op for region in root.regions for block in region.blocks for op in block.operations]
    while stack:
        op = stack.pop().operation
        yield op
        stack.extend(inner for region in op.regions for block in region.blocks for inner in block.operations)


class _Reader:
    def __init__(self, module):
        from jax._src.lib.mlir import ir

        self.ir = ir
        self.funcs, self.meshes = {}, {}
        for op in module.body.operations:
            op = op.operation
            if op.name in ("func.func", "sdy.mesh") and "sym_name" in op.attributes:
                name = ir.StringAttr(op.attributes["sym_name"]).value
                (self.funcs if op.name == "func.func" else self.meshes)[name] = op
        self.steps = 0
        self.split_axes: set[str] = set()
        self.memo: dict[str, Counter] = {}
        self.active: set[str] = set()
        self.regions = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_OPS:
            raise Unreadable("too many operations")

    # -- shardings, as the parsed attributes give them -------------------------------------------------
    def mesh(self, sharding):
        """``((axis, size), ...), device ids`` of a ``TensorShardingAttr``'s mesh, or None."""
        from jax._src.lib.mlir.dialects import sdy

        ref = sharding.mesh_or_ref
        if _is(ref, self.ir.FlatSymbolRefAttr):
            op = self.meshes.get(self.ir.FlatSymbolRefAttr(ref).value)
            if op is None or "mesh" not in op.attributes:
                return None
            ref = op.attributes["mesh"]
        if not _is(ref, sdy.MeshAttr):
            return None
        mesh = sdy.MeshAttr(ref)
        axes = tuple((sdy.MeshAxisAttr(a).name, int(sdy.MeshAxisAttr(a).size)) for a in mesh.axes)
        return axes, tuple(int(d) for d in mesh.device_ids)

    def sharding(self, attr):
        """A canonical form of a ``TensorShardingAttr``: its mesh, each dimension's axes, its unreduced axes."""
        from jax._src.lib.mlir.dialects import sdy

        sharding = sdy.TensorShardingAttr(attr)
        dims = tuple(tuple(str(axis) for axis in sdy.DimensionShardingAttr(d).axes)
                     for d in sharding.dimension_shardings)
        return self.mesh(sharding), dims, tuple(str(a) for a in sharding.unreduced_axes)

    def split_on(self, attr) -> set[str]:
        from jax._src.lib.mlir.dialects import sdy

        return {sdy.AxisRefAttr(axis).name for d in sdy.TensorShardingAttr(attr).dimension_shardings
                for axis in sdy.DimensionShardingAttr(d).axes}

    def per_value(self, op, name: str) -> list:
        from jax._src.lib.mlir.dialects import sdy

        if name not in op.attributes:
            raise _NotOne
        return list(sdy.TensorShardingPerValueAttr(op.attributes[name]).shardings)

    def value_shardings(self, func, kind: str) -> list:
        """The ``sdy.sharding`` of each argument (``arg_attrs``) or result (``res_attrs``) of ``func``, or None."""
        count = len(func.regions[0].blocks[0].arguments) if kind == "arg_attrs" else \
            len(self.ir.FunctionType(self.ir.TypeAttr(func.attributes["function_type"]).value).results)
        if kind not in func.attributes:
            return [None] * count
        attrs = self.ir.ArrayAttr(func.attributes[kind])
        found = []
        for index in range(count):
            entry = self.ir.DictAttr(attrs[index]) if index < len(attrs) else None
            found.append(entry["sdy.sharding"] if entry is not None and "sdy.sharding" in entry else None)
        return found

    def manual_over_inputs(self, op) -> bool:
        """The region is manual over every axis its program's inputs are split on and every axis of its mesh that
        has more than one device: nothing in it is left for the compiler to partition."""
        from jax._src.lib.mlir.dialects import sdy

        if "manual_axes" not in op.attributes:
            return False
        axes = sdy.ManualAxesAttr(op.attributes["manual_axes"])
        manual = {str(axes[i]) for i in range(len(axes))}
        meshes = {self.mesh(sdy.TensorShardingAttr(s)) for name in ("in_shardings", "out_shardings")
                  if name in op.attributes for s in sdy.TensorShardingPerValueAttr(op.attributes[name]).shardings}
        if len(meshes) != 1 or None in meshes or not manual:
            return False
        (sizes, _), = meshes
        names = {axis for axis, _ in sizes}
        return (manual <= names and self.split_axes <= manual
                and all(axis in manual for axis, size in sizes if size > 1))

    # -- what main reaches ---------------------------------------------------------------------------------
    def callees(self, op) -> list[str]:
        """Functions an operation refers to by symbol (a call's callee, a composite's decomposition, ...)."""
        ir, found = self.ir, []
        for name in list(op.attributes.keys()):
            attr = _attribute(op, name)
            if attr is None:
                continue
            values = _elements(ir.ArrayAttr(attr)) if _is(attr, ir.ArrayAttr) else [attr]
            found += [ir.FlatSymbolRefAttr(v).value for v in values if _is(v, ir.FlatSymbolRefAttr)]
        return [name for name in found if name in self.funcs]

    def reach(self, name: str) -> Counter:
        """Collectives and manual regions reachable from function ``name``, at every call site."""
        if name in self.memo:
            return self.memo[name]
        if name in self.active:
            raise Unreadable("a recursive call")
        self.active.add(name)
        counts: Counter = Counter()
        for op in _operations(self.funcs[name]):
            self.tick()
            if op.name in COLLECTIVE_OPS:
                counts[COLLECTIVE_OPS[op.name]] += 1
                counts["@payload"] += self.carried(op)
                counts["@looped"] += self.in_loop(op)
            elif op.name == "sdy.manual_computation" and self.manual_over_inputs(op):
                counts["@region"] += 1
            callees = self.callees(op)
            looping = bool(callees) and self.in_loop(op)
            for callee in callees:
                called = self.reach(callee)
                counts.update(called)
                if looping:  # a function a loop calls: its collectives repeated any number of times
                    counts["@payload"] += UNBOUNDED if called.get("@payload") else 0
                    counts["@looped"] += sum(called.get(name, 0) for name in COLLECTIVES)
        self.active.discard(name)
        self.memo[name] = counts
        return counts

    @staticmethod
    def in_loop(op) -> bool:
        """Whether ``op`` is nested in a loop within its function."""
        parent = op.parent
        while parent is not None and parent.name != "func.func":
            if parent.name in LOOPS:
                return True
            parent = parent.parent
        return False

    def carried(self, op) -> int:
        """The bytes one collective carries per device: its operands' elements times their element type's width
        (per device inside a manual region, where shapes are local), ``UNBOUNDED`` inside a loop or for a tensor
        whose shape is not static (a token carries nothing)."""
        if self.in_loop(op):
            return UNBOUNDED
        total = 0
        for value in op.operands:
            if not _is(value.type, self.ir.RankedTensorType):
                if _is(value.type, self.ir.ShapedType):  # an unranked tensor
                    return UNBOUNDED
                continue
            tensor = self.ir.RankedTensorType(value.type)
            if any(n < 0 for n in tensor.shape):
                return UNBOUNDED
            total += math.prod(tensor.shape) * element_bytes(tensor.element_type)
        return min(total, UNBOUNDED)

    # -- one per-device program ----------------------------------------------------------------------------
    def replicated_like(self, sharding, rank: int):
        if sharding is None or sharding[2] or any(sharding[1]):
            return None
        return sharding[0], ((),) * rank, ()

    def outside(self, name: str, shardings: list, depth: int = 0) -> list:
        """The shardings of what function ``name`` returns, given its arguments' (None: not known); ``_NotOne`` if
        anything in it but one region computes, or anything reshards."""
        ir = self.ir
        func = self.funcs.get(name)
        if func is None or depth > 64 or len(func.regions[0].blocks) != 1:
            raise _NotOne
        block = func.regions[0].blocks[0]
        env = dict(zip(block.arguments, shardings))
        results = [None if s is None else self.sharding(s) for s in self.value_shardings(func, "res_attrs")]
        for op in block.operations:
            op = op.operation
            self.tick()
            kind = op.name
            operands = [env.get(value) for value in op.operands]
            if kind == "func.return":
                if len(operands) != len(results) or any(w is not None and g != w for g, w in zip(operands, results)):
                    raise _NotOne  # the compiler would reshard the result to the function's result sharding
                return [g if w is None else w for g, w in zip(operands, results)]
            if kind == "sdy.manual_computation":
                if not self.manual_over_inputs(op):
                    raise _NotOne
                if operands != [self.sharding(s) for s in self.per_value(op, "in_shardings")]:
                    raise _NotOne  # its inputs would be moved first
                outs = [self.sharding(s) for s in self.per_value(op, "out_shardings")]
                self.regions += 1
            elif kind == "func.call" and "callee" in op.attributes:
                outs = self.outside(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, operands, depth + 1)
            elif kind in ("sdy.sharding_constraint", "sdy.reshard") and len(operands) == 1:
                target = self.sharding(op.attributes["sharding"])
                if operands[0] != target:
                    raise _NotOne  # a reshard of what the region returns (or of an input): the compiler moves data
                outs = [target]
            elif kind == "stablehlo.convert" and len(operands) == 1:
                outs = operands
            elif kind == "stablehlo.reshape" and len(operands) == 1:
                outs = [self.replicated_like(operands[0], ir.RankedTensorType(op.results[0].type).rank)]
            elif kind == "stablehlo.custom_call" and self.target(op) in ALLOWED_CUSTOM_CALLS:
                outs = [None] * len(op.results)
            else:
                raise _NotOne
            if "sdy.sharding" in op.attributes:  # a sharding the compiler enforces on the results
                named = [self.sharding(s) for s in self.per_value(op, "sdy.sharding")]
                if named != outs:
                    raise _NotOne
            env.update(zip(op.results, outs))
        raise _NotOne

    def target(self, op) -> str | None:
        attr = op.attributes["call_target_name"] if "call_target_name" in op.attributes else None
        return self.ir.StringAttr(attr).value if attr is not None and _is(attr, self.ir.StringAttr) else None


def read_module(text: str) -> Structure:
    """The structure of a StableHLO module (``Exported.mlir_module()``); ``Unreadable`` if it cannot be read."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    found = Structure()
    with mlir.make_ir_context():
        try:
            module = ir.Module.parse(text)
        except Exception as error:  # malformed text is the program's fault
            raise Unreadable("not a module") from error
        reader = _Reader(module)
        found.key = hashlib.sha256(module.operation.get_asm(enable_debug_info=False).encode()).hexdigest()
        for op in _operations(module.operation):
            reader.tick()
            if op.name == "stablehlo.custom_call":
                found.targets.add(reader.target(op) or "")
        main = reader.funcs.get("main")
        if main is None:
            raise Unreadable("no main function")
        arguments = reader.value_shardings(main, "arg_attrs")
        reader.split_axes = set().union(*(reader.split_on(s) for s in arguments if s is not None))
        reached = reader.reach("main")
        found.collectives = {name: reached.get(name, 0) for name in COLLECTIVES}
        found.manual = reached.get("@region", 0) >= 1
        found.payload = min(reached.get("@payload", 0), UNBOUNDED)
        found.looped = reached.get("@looped", 0)
        try:
            reader.outside("main", [None if s is None else reader.sharding(s) for s in arguments])
            found.one_region = reader.regions == 1
        except _NotOne:
            found.one_region = False
    return found


def compiled_collectives(compiled) -> dict[str, int]:
    """The collectives of a ``jax.stages.Compiled`` program, after partitioning, by opcode (every computation)."""
    counts: Counter = Counter()
    for module in compiled.runtime_executable().hlo_modules():
        for computation in module.computations():
            for instruction in computation.instructions():
                kind = COMPILED_OPCODES.get(instruction.opcode.name)
                if kind:
                    counts[kind] += 1
    return dict(counts)


def moves_data(payload: int, outputs: int, split_inputs: list[int]) -> bool:
    """Whether the collectives carry the data rather than results, all in bytes (``payload``: ``Structure.payload``;
    ``outputs``: ``returned_bytes``; ``split_inputs``: each input split across the devices, ``value_bytes``): more
    than the program returns (plus ``SPARE_BYTES``: a numerator and a count psummed beside a scalar mean), and at
    least half of the largest split input (a ring of ppermutes that passes every block around carries (p - 1)/p of
    it). A reduction of local results (a gradient, numerators and counts, even reduced twice) carries about what the
    program returns; a psum of zero buffers that each device fills with its rows (an all-gather written as an
    all-reduce) carries a whole input, however its values are packed (two float32 to a complex64 element halve the
    elements, not the bytes). Meant for the course's full mesh, where the inputs hold several times more than the
    results."""
    return bool(split_inputs) and carries_more(payload, outputs) and 2 * payload >= max(split_inputs)


def returned_bytes(results) -> int:
    """The bytes of a program's results (``exported.out_avals``: shape and dtype), each element counted at no fewer
    than ``ACCUMULATOR_BYTES`` (a float32 sum may be reduced for a narrower result)."""
    return sum(value_bytes(aval.shape, aval.dtype, ACCUMULATOR_BYTES) for aval in results)


def carries_more(payload: int, outputs: int) -> bool:
    """Whether the collectives carry more bytes than the program returns (``returned_bytes``) plus ``SPARE_BYTES``
    (a count beside the numerators, a loss): a reduction repeated per micro-batch, unrolled by a Python loop, carries
    several times its results even when no loop of the program repeats it, in whatever element type it packs them
    (an element count let two float32 ride in one complex64 element)."""
    return payload > outputs + SPARE_BYTES


def too_many(collectives: dict[str, int], bound: int | None) -> bool:
    """Whether the program writes more collective operations (every kind together, each counted where it is written
    and at every call site: ``Structure.collectives``) than ``bound`` (None: no bound). Values that count is not a
    number (a runner's report is untrusted) count as unbounded."""
    if bound is None:
        return False
    counts = list(collectives.values())
    return not all(type(n) is int and n >= 0 for n in counts) or sum(counts) > bound


def only_written(compiled: dict[str, int], written: dict[str, int]) -> bool:
    """Whether the compiled program communicates with no collective beyond those the module writes itself."""
    return all(count <= written.get(kind, 0) for kind, count in compiled.items())
