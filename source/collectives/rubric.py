"""References for collectives' test cells, computed by the grader in NumPy.

Gradients come from the analytic 2/N X^T (Xw - y), payloads from the ring
formulas; hidden inputs are rebuilt from the seeds the hidden tests use. The
timing test is judged on how the learner's timer measured a probe whose result
completes a known time after the call returns, never on speed.

One skill per test: a program's values are compared with the reference or,
where the program is built from an earlier TODO, with the sum of the learner's
own local contributions (a wrong denominator in ``local_contribution`` costs that
test only). Hidden runs use sub-meshes of the kernel's devices
(``coursekit.meshes``), so code that assumes four devices fails in a default run.
"""
import numpy as np

from coursekit import data
from coursekit.checks import CONCRETE_ATTRIBUTE, NO_HOST_COPY
from coursekit.meshes import sub_mesh_sizes
from grader.judge import Evidence, Mismatch, Mistake, Rubric, keeps_inputs, scaled
from grader.programs import Input, Program

rubric = Rubric(names={
    "lesson.terms": "the local contributions on the lesson data",
    "lesson.all_reduce": "the all-reduced gradient",
    "lesson.own_sum": "the sum of your local contributions",
    "lesson.reduce_scatter": "the reduce-scattered gradient",
    "timing.sample_count": "the number of samples by default",
    "payload.lesson": "the payload at G = 32 bytes, p = 4",
    "payload.hidden": "ring_payload at other sizes and rank counts",
    "momentum.new_v": "the new momentum",
    "momentum.new_w": "the new weights",
    "yours.all_reduced": "the all-reduced gradient of the jointly reversed data",
    "yours.gathered": "the gathered gradient of the jointly reversed data",
    "yours.original_all_reduced": "all_gradient on the original order",
    "yours.original_gathered": "gather(shard_gradient(...)) on the original order",
    "yours.label_only": "the label-only reversal gradient",
    "hidden.yours.all_reduced": "the all-reduced gradient of an unseen reversed batch",
    "hidden.yours.gathered": "the gathered gradient of an unseen reversed batch",
    "hidden.yours.original_all_reduced": "all_gradient on an unseen batch in its original order",
    "hidden.yours.original_gathered": "gather(shard_gradient(...)) on an unseen batch in its original order",
    "hidden.yours.label_only": "the label-only reversal gradient of an unseen batch",
    "budget.lesson": "the 1 MiB transfer budget",
    "budget.hidden": "transfer_budget at another size and rank counts",
    "quiz.answer": "the multiple-choice answer",
})

ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER = "stablehlo.all_reduce", "stablehlo.reduce_scatter", "stablehlo.all_gather"


def program_meshes(p: int) -> list[int]:
    """The sub-mesh size the hidden program tests use: all devices but one (3 of 4), one compilation per test."""
    return sub_mesh_sizes(p)[-1:]


def gradient(x, y, w):
    x = x.astype(np.float64)
    return 2 * x.T @ (x @ np.asarray(w, dtype=np.float64) - y) / len(y)


def terms(x, y, w, devices):
    """Each device's term 2/N X_r^T (X_r w - y_r), rows split into equal consecutive blocks."""
    block = len(y) // devices
    x = x.astype(np.float64)
    return np.stack([
        2 * x[r * block:(r + 1) * block].T @ (x[r * block:(r + 1) * block] @ w - y[r * block:(r + 1) * block]) / len(y)
        for r in range(devices)
    ])


def own_or_reference(e: Evidence, own_key: str, reference) -> list:
    """The values a program may match: the host reference, and the sum of the learner's own local contributions."""
    candidates = [np.asarray(reference, dtype=np.float64)]
    if e.has(own_key):
        own = e.array(own_key, shape=np.shape(reference)).astype(np.float64)
        if np.linalg.norm(own) > 1e-3 * np.linalg.norm(reference):  # a degenerate (zero) sum proves nothing
            candidates.append(own)
    return candidates


def program_close(e: Evidence, key: str, candidates: list, what: str, mistakes, *, rtol: float, atol: float):
    e.close_to_any(key, candidates, rtol=rtol, atol=atol, what=what, mistakes=mistakes,
                   reason="differs from the host NumPy reference (and from the sum of your own local contributions)")


def portions_close(e: Evidence, key: str, expected, devices: int, *, rtol=1e-5, atol=1e-7, what: str,
                   candidates=None, mistakes=()):
    """Each of ``devices`` shards holds exactly its consecutive slice of the global value."""
    expected = np.asarray(expected, dtype=np.float64)
    transposed = expected.reshape(-1, devices).T.ravel() if len(expected) % devices == 0 else None
    layout = [Mistake(transposed, f"the values are right but in the wrong places: device r should hold the "
                                  f"consecutive slice r*d/p ... (r+1)*d/p; this is a transposed shard layout "
                                  f"(reshape to (p, d/p), not (d/p, p))")] if transposed is not None else []
    actual = e.close_to_any(key, candidates or [expected], rtol=rtol, atol=atol, what=what,
                            mistakes=layout + list(mistakes),
                            reason="differs from the host NumPy reference")
    portion = len(expected) // devices
    recorded = e.get(key, what=what)
    shapes = sorted({tuple(s.value.shape) for s in recorded.shards}) if recorded.kind == "jax_array" else []
    if devices > 1 and shapes == [tuple(expected.shape)]:
        raise Mismatch(f"{what}: every device holds all {len(expected)} values: the result should stay "
                       f"partitioned, {portion} per device (out_specs P('data'))")
    e.shard_shapes(key, (portion,), devices=devices, what=what)
    starts = set()
    for shard in recorded.shards:
        try:
            start, stop = shard.index[0]
        except (TypeError, ValueError, IndexError):
            raise Mismatch(f"{what}: the shard on device {shard.device} has no slice index") from None
        start = 0 if start is None else start
        stop = len(expected) if stop is None else stop
        e.require(type(start) is int and type(stop) is int and 0 <= start < stop <= len(expected),
                  f"{what}: the shard on device {shard.device} has a slice index outside the value")
        e.require(stop - start == portion, f"{what}: device {shard.device} should hold {portion} consecutive values")
        e.require(np.allclose(shard.value.astype(np.float64), actual[start:stop], rtol=rtol, atol=atol),
                  f"{what}: the portion on device {shard.device} is not its slice of the global value")
        starts.add(start)
    e.require(len(starts) == devices, f"{what}: the devices should hold different portions")


def contribution_mistakes(expected, p: int, mesh: int | None = None) -> list[Mistake]:
    k = mesh or p
    return scaled(expected, {
        float(k): f"{k} times the global gradient: divided by the local row count n_local = N/{k} instead of "
                  "the global count N (the summed gradient is p times too large)",
        1.0 / k: f"the global gradient divided by the number of devices ({k})",
        k / 4: f"scaled by {k}/4 with {k} device(s): the code assumes four devices",
        0.5: "half the reference: the factor 2 is missing",
        -1.0: "the sign is flipped",
    })


def own_base(e: Evidence, own_key: str, reference, mesh: int | None = None):
    """``(base, known)``: the sum of the learner's own local contributions when it is the reference times a factor
    of a mistake the lesson names (``contribution_factors``: the local count is then known), else the reference."""
    reference = np.asarray(reference, dtype=np.float64)
    if e.has(own_key):
        own = e.array(own_key, shape=reference.shape).astype(np.float64)
        factor = float(np.dot(own, reference) / max(np.dot(reference, reference), 1e-300))
        if np.allclose(own, factor * reference, rtol=1e-4, atol=1e-6) and \
                any(abs(factor - known) <= 1e-4 * max(1.0, abs(known)) for known in contribution_factors(mesh or e.num_devices)):
            return own, True
    return reference, False


def reduction_mistakes(base, p: int, mesh: int | None = None, *, own_known: bool) -> list[Mistake]:
    """The mistakes of a collective program whose value should be ``base``: the learner's own summed local
    contributions when ``own_known`` (their local count is then judged by the local-contribution test alone, so a
    program k times that sum reduced twice), else the reference, where k times is either mistake."""
    k = mesh or p
    twice = (f"{k} times the sum of your own local contributions (which are right, or judged on their own): the "
             f"reduction was applied twice: a psum of a value already summed over the {k} devices (psum twice, or "
             "psum and psum_scatter both) multiplies it by the device count: combine the local contributions with "
             "one collective") if own_known else (
             f"{k} times the global gradient: either each device divided by its local row count n_local = N/{k} "
             f"instead of N, or the reduction was applied twice (a psum of a value already summed over the {k} "
             "devices)")
    mistakes = [Mistake(m.value, twice) if np.allclose(m.value, k * np.asarray(base, dtype=np.float64)) and k != 1
                else m for m in contribution_mistakes(base, p, mesh)]
    if k > 1 and not own_known:
        mistakes += scaled(base, {float(k * k): f"{k * k} times the global gradient: the normalization went wrong "
                                                f"twice: each device divided by its local row count N/{k} and the "
                                                "reduction was applied twice"})
    return mistakes


@rubric.test("test-local-contribution")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    expected = terms(x, y, w, p)
    e.close("lesson.terms", expected, rtol=1e-5, atol=1e-7, mistakes=contribution_mistakes(expected, p))
    for count in [p] + sub_mesh_sizes(p):
        hx, hy, hw = data.random_regression(seed=90301 + count, rows=3 * count, cols=5)
        expected = terms(hx, hy, hw, count)
        e.close(f"hidden.{count}.terms", expected, rtol=1e-4, atol=1e-5,
                what=f"local_contribution of {count} block(s) of an unseen batch",
                mistakes=contribution_mistakes(expected, p, mesh=count))


def _meshes_ran(e: Evidence, key: str, size: int, what: str):
    e.require(e.has(key), f"{what}: no result: the program did not run on a mesh of {size} device(s) (does "
                          "make_collectives use the mesh it is given, with any number of devices that divides "
                          "the data, or does it assume the lesson's four devices?)")


@rubric.test("test-all-reduce")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    g = gradient(x, y, w)
    e.array("lesson.all_reduce", shape=(8,), jax=True)
    base, known = own_base(e, "lesson.own_sum", g)
    program_close(e, "lesson.all_reduce", own_or_reference(e, "lesson.own_sum", g), e.name("lesson.all_reduce"),
                  reduction_mistakes(base, p, own_known=known), rtol=1e-5, atol=1e-7)
    e.shard_shapes("lesson.all_reduce", (8,), devices=p)
    e.replicas_close("lesson.all_reduce", e.array("lesson.all_reduce"), rtol=1e-6, atol=1e-7,
                     against="the all-reduced value: the replicas disagree")
    for size in program_meshes(p):
        key, what = f"hidden.mesh{size}.all_reduce", f"all_gradient on a mesh of {size} device(s)"
        _meshes_ran(e, key, size, what)
        hx, hy, hw = data.random_regression(seed=90302 + size, rows=2 * size, cols=2 * size)
        g = gradient(hx, hy, hw)
        e.array(key, shape=g.shape, jax=True, what=what)
        base, known = own_base(e, f"hidden.mesh{size}.own_sum", g, mesh=size)
        program_close(e, key, own_or_reference(e, f"hidden.mesh{size}.own_sum", g), what,
                      reduction_mistakes(base, p, mesh=size, own_known=known), rtol=1e-4, atol=1e-5)
        e.shard_shapes(key, g.shape, devices=size, what=what)
    program_gradient(e, "all_gradient", split_output=False)


@rubric.test("test-reduce-scatter")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    g = gradient(x, y, w)
    e.array("lesson.reduce_scatter", shape=(8,), jax=True)
    base, known = own_base(e, "lesson.own_sum", g)
    portions_close(e, "lesson.reduce_scatter", g, p, what=e.name("lesson.reduce_scatter"),
                   candidates=own_or_reference(e, "lesson.own_sum", g),
                   mistakes=reduction_mistakes(base, p, own_known=known))
    for size in program_meshes(p):
        key, what = f"hidden.mesh{size}.reduce_scatter", f"shard_gradient on a mesh of {size} device(s)"
        _meshes_ran(e, key, size, what)
        # 3 values per device: the lesson and the program keep 2, so a portion size written as 2 shows here
        hx, hy, hw = data.random_regression(seed=90303 + size, rows=2 * size, cols=3 * size)
        g = gradient(hx, hy, hw)
        e.array(key, shape=g.shape, jax=True, what=what)
        base, known = own_base(e, f"hidden.mesh{size}.own_sum", g, mesh=size)
        portions_close(e, key, g, size, rtol=1e-4, atol=1e-5, what=what,
                       candidates=own_or_reference(e, f"hidden.mesh{size}.own_sum", g),
                       mistakes=reduction_mistakes(base, p, mesh=size, own_known=known))
    program_gradient(e, "shard_gradient", split_output=True)


STACKED = "all_gather without tiled=True stacks a new axis: gather with tiled=True to join the portions"


@rubric.test("test-all-gather")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    g = gradient(x, y, w).astype(np.float32).astype(np.float64)  # the test placed the host gradient, split
    e.array("lesson.gathered_here", shape=(8,), jax=True, shape_mistakes={(p, 8 // p): STACKED},
            what="gather of the split host gradient")
    e.close("lesson.gathered_here", g, rtol=1e-6, atol=1e-7, what="gather of the split host gradient")
    e.shard_shapes("lesson.gathered_here", (8,), devices=p, what="gather of the split host gradient")
    e.replicas_close("lesson.gathered_here", g, rtol=1e-6, atol=1e-7, what="gather of the split host gradient",
                     against="the gathered vector: every device should hold all of it")
    for size in program_meshes(p):
        key, what = f"hidden.mesh{size}.gathered", f"gather on a mesh of {size} device(s)"
        _meshes_ran(e, key, size, what)
        _, vector, _ = data.random_regression(seed=90304 + size, rows=3 * size, cols=2)
        e.array(key, shape=vector.shape, jax=True, what=what, shape_mistakes={(size, 3): STACKED})
        e.close(key, vector, rtol=1e-6, atol=1e-7, what=what)
        e.shard_shapes(key, vector.shape, devices=size, what=what)
        e.replicas_close(key, vector, rtol=1e-6, atol=1e-7, what=what)
    what = "gather, run by the grader on a vector it drew"
    run = e.program_shardings("program.gather", outputs=[True], what=what)
    one_region(e, run, ALL_GATHER, what)
    e.program_close("program.gather", 0, run.inputs[0].astype(np.float64), rtol=1e-6, atol=1e-7, what=what)


def _lowered(e: Evidence, prefix: str, where: str):
    expectations = {
        "all_gradient": (ALL_REDUCE, (REDUCE_SCATTER, ALL_GATHER)),
        "shard_gradient": (REDUCE_SCATTER, (ALL_REDUCE, ALL_GATHER)),
        "gather": (ALL_GATHER, (ALL_REDUCE, REDUCE_SCATTER)),
    }
    for name, (wanted, unwanted) in expectations.items():
        what = f"{name} lowered {where}"
        text = e.text(f"{prefix}{name}", what=what)
        e.require("stablehlo" in text and "func.func" in text, f"{what}: this is not lowered StableHLO text")
        e.require(wanted in text, f"{what}: the lowered program has no {wanted}")
        for other in unwanted:
            e.require(other not in text, f"{what}: the lowered program also contains {other}")


def gradient_inputs(p: int) -> tuple[Input, ...]:
    n = 2 * p
    return Input((n, n), ("data", None)), Input((n,), ("data",)), Input((n,))


@rubric.programs("test-all-reduce")
def _(p: int):
    return [Program("program.all_gradient", p, gradient_inputs(p))]


@rubric.programs("test-reduce-scatter")
def _(p: int):
    return [Program("program.shard_gradient", p, gradient_inputs(p))]


@rubric.programs("test-all-gather")
def _(p: int):
    return [Program("program.gather", p, (Input((2 * p,), ("data",)),))]


@rubric.programs("test-lowered")
def _(p: int):  # read for their collectives, not run (the tests above run them)
    return [Program("program.lowered.all_gradient", p, gradient_inputs(p), run=False),
            Program("program.lowered.shard_gradient", p, gradient_inputs(p), run=False),
            Program("program.lowered.gather", p, (Input((2 * p,), ("data",)),), run=False)]


def contribution_factors(p: int) -> list[float]:
    """The factors a local-contribution mistake the lesson names puts on the summed gradient (1 when right)."""
    return [1.0, float(p), 1.0 / p, p / 4, 0.5, -1.0]


def own_factor(e: Evidence) -> float:
    """How the learner's own summed local contributions compare with the gradient (1 when right; p when each
    divides by the local count, ...), from the values the test recorded for the batch of seed 90307.

    Only a factor of a mistake the lesson names (``contribution_factors``) stands for the learner's own
    contributions; any other factor, 0 above all (a program that returns zeros), is judged against the reference:
    the record comes from the kernel and must never let the program compute less than the gradient."""
    p = e.num_devices
    ex, ey, ew = data.random_regression(seed=90307, rows=2 * p, cols=2 * p)
    reference = gradient(ex, ey, ew)
    own = e.array("program.own_sum", shape=reference.shape, what="your summed local contributions")
    factor = float(np.dot(own, reference) / np.dot(reference, reference))
    e.require(np.allclose(own, factor * reference, rtol=1e-4, atol=1e-6),
              "your local contributions do not sum to a multiple of the gradient, so the program cannot be judged "
              "(see the local-contribution test)")
    known = [known for known in contribution_factors(p) if abs(factor - known) <= 1e-4 * max(1.0, abs(known))]
    return known[0] if known else 1.0


def own_factor_known(e: Evidence) -> bool:
    """Whether the learner's own summed contributions (batch of seed 90307) are a factor ``own_factor`` names."""
    p = e.num_devices
    ex, ey, ew = data.random_regression(seed=90307, rows=2 * p, cols=2 * p)
    return own_base(e, "program.own_sum", gradient(ex, ey, ew))[1]


def program_gradient(e: Evidence, name: str, *, split_output: bool):
    """The program itself, run by the grader on a batch it drew: the sum of the learner's own local
    contributions (``own_factor`` times the gradient), replicated or split as the lesson asks."""
    key, what = f"program.{name}", f"{name}, run by the grader on a batch it drew"
    run = e.program_shardings(key, outputs=[not split_output], what=what)
    one_region(e, run, REDUCE_SCATTER if split_output else ALL_REDUCE, what)
    x, y, w = run.inputs
    expected = own_factor(e) * gradient(x, y, w)
    e.program_close(key, 0, expected, rtol=1e-4, atol=1e-5, what=what,
                    mistakes=reduction_mistakes(expected, e.num_devices, own_known=own_factor_known(e)))
    if split_output:
        n, p = len(y), e.num_devices
        e.require(all(shape == (n // p,) for shape in run.outputs[0].shard_shapes),
                  f"{what}: each device should keep only its {n // p} values")


NOT_ONE_REGION = ("the result is not computed inside one jax.shard_map region: outside the per-device program there "
                  "should be nothing but the placement of inputs and results (a computation beside or around the "
                  "shard_map is partitioned by the compiler, which adds collectives of its own, a shard_map whose "
                  "in_specs differ from the inputs' placement makes the compiler move the data first, and a sharding "
                  "constraint or out_shardings that re-places what the shard_map returns makes it move the result)")


def one_region(e: Evidence, run, wanted: str, what: str) -> None:
    """The program computes in one shard_map region and communicates with ``wanted`` only: the collective the
    test is about does the work (a plain jit whose partitioner adds collectives, or a gather of everything
    followed by a local computation, is not the lesson's program, whatever values it returns)."""
    e.require(run.manual, f"{what}: it has no shard_map region: write the per-device program with jax.shard_map, "
                          "manual over the mesh axis the inputs are split on")
    e.require(run.manual_only, f"{what}: {NOT_ONE_REGION}")
    e.require(run.collectives.get(wanted.split(".")[1], 0) >= 1, f"{what}: the program has no {wanted}")
    for other, count in run.collectives.items():
        e.require(other == wanted.split(".")[1] or count == 0,
                  f"{what}: the program also communicates with {other}: use {wanted} only")


def _programs(e: Evidence):
    """The three programs themselves, exported by the kernel and read by the grader: their collectives come
    from the programs, never from text the kernel reports."""
    for name, wanted in [("all_gradient", ALL_REDUCE), ("shard_gradient", REDUCE_SCATTER), ("gather", ALL_GATHER)]:
        key, what = f"program.lowered.{name}", f"{name}, read by the grader from the program itself"
        one_region(e, e.program(key, what=what), wanted, what)
        e.program_inputs(key, what=what)


@rubric.test("test-lowered")
def _(e: Evidence):
    _lowered(e, "lowered.", "on the lesson's mesh")
    _lowered(e, "hidden.lowered.", "for an unseen batch")
    _programs(e)


PROBES = [("timing.probe", 7, 8000.0), ("timing.short", 3, 2000.0)]  # key, repeats, microseconds per call
CALL_SHARE = 0.3  # the probe's call itself takes this share of the time to return; its result is ready the rest later
WARM_UP = 20.0  # the probe's first call (the warm-up, like a compilation) takes this many delays more


def _timer_mistake(samples: dict) -> str | None:
    """Which timer mistake the probes' samples show, if any ({delay in microseconds: samples})."""
    # Completed calls of a real clock never take the same time to the nanosecond: equal samples were not each
    # timed on their own (one average over the loop, or one measurement, repeated as every sample).
    if all(len(s) > 1 and np.unique(s).size == 1 for s in samples.values()):
        return ("the samples are all the same: each sample must time one call on its own (start the clock, call, "
                "block_until_ready(), stop it), not repeat one average of the whole loop")
    long_delay = max(samples)
    longest = samples[long_delay]
    if np.all(np.diff(longest) > 0) and np.all(longest >= 0.95 * long_delay * np.arange(1, len(longest) + 1)):
        return ("the samples add up: each one includes the calls before it (a cumulative time); restart the "
                "clock for every sample")
    for scale, unit, fix in [(1e-6, "seconds", "multiply by 1e6"), (1e-3, "milliseconds", "multiply by 1000"),
                             (1e3, "nanoseconds", "divide perf_counter_ns() differences by 1000")]:
        # A unit scales with the call's duration; a clock stopped too early does not. The probes' delays differ
        # 4x, so a window narrower than 4x never holds one duration for both; 3x leaves room for a loaded
        # machine's late wake-ups (up to twice the delay on top of it).
        if all(0.9 * scale <= np.median(s) / delay <= 3.0 * scale for delay, s in samples.items()):
            return f"the samples are in {unit}, not microseconds: {fix}"
    if all(np.max(s) >= (1 + WARM_UP / 2) * delay for delay, s in samples.items()):
        return ("a sample includes the warm-up call (its compilation): make one untimed warm-up call, then time "
                "repeats further calls")
    # Only the wait for the result was timed: the clock started after the call had returned, so a call that takes
    # time itself (tracing, dispatch, the probe's first share) is left out of every sample.
    if all(np.all(s >= 0.95 * (1 - CALL_SHARE) * delay) and np.median(s) < 0.95 * delay for delay, s in samples.items()):
        return ("each sample leaves out the call itself: the clock started only after fn(*args) had returned; start "
                "the clock before the call and stop it after block_until_ready()")
    return None


def _probe_log(e: Evidence, key: str, repeats: int):
    log = e.text(f"{key}.log", what="the calls completed_samples made").split()
    e.require("call-with-wrong-arguments" not in log,
              "completed_samples should call fn with the arguments it was given")
    e.require(log[:2] == ["call", "ready"],
              "completed_samples should start with one warm-up call and wait for its result")
    e.require(log == ["call", "ready"] * (repeats + 1),
              f"with repeats={repeats}, expected one waited warm-up and {repeats} waited calls")
    return e.array(f"{key}.samples", shape=(repeats,), what="the samples completed_samples returned")


@rubric.test("test-timing")
def _(e: Evidence):
    e.equal("timing.sample_count", 7)
    samples = {delay: _probe_log(e, key, repeats) for key, repeats, delay in PROBES}
    mistake = _timer_mistake(samples)
    if mistake:
        raise Mismatch(f"completed_samples on a call whose result is ready a known time after it returns: {mistake}")
    for delay, values in samples.items():
        where = "completed_samples on a call whose result is ready a known time after it returns"
        e.require(bool(np.all(values >= 0.95 * delay)),
                  f"{where}: a sample ended before the result was ready (or is not in microseconds): stop the "
                  "clock after block_until_ready()")
        e.require(float(np.max(values)) <= 50 * delay and (len(values) < 7 or np.median(values) <= 1.5 * delay + 2000),
                  f"{where}: the samples are far longer than one call: time each call on its own, in microseconds")


def ring(size, ranks):
    scatter = (ranks - 1) / ranks * size
    return scatter, 2 * scatter


FLOOR = ("integer (floor) division: // drops the remainder whenever p does not divide G; a byte count here is a "
         "real number, so divide with /")


def _payload_mistakes(cases, shape) -> list[Mistake]:
    def table(rule):
        return np.reshape([rule(size, ranks) for size, ranks in cases], shape)

    return [
        Mistake(table(lambda g, p: (ring(g, p)[0], ring(g, p)[0])), "the all-reduce payload lacks the factor 2: "
                "it counts only the reduce-scatter phase; B_AR = B_RS + B_AG"),
        Mistake(table(lambda g, p: (p / (p - 1) * g if p > 1 else np.nan, 2 * p / (p - 1) * g if p > 1 else np.nan)),
                "the fraction is inverted: (p - 1)/p of G passes through each rank, not p/(p - 1)"),
        Mistake(table(lambda g, p: (g / p, 2 * g / p)), "G/p is what a rank keeps (storage), not what passes "
                "through it: B_RS = (p - 1)/p G"),
        Mistake(table(lambda g, p: ((p - 1) * g // p, 2 * ((p - 1) * g // p))), FLOOR),
        Mistake(table(lambda g, p: (ring(g, p)[1], ring(g, p)[0])), "the two payloads are swapped: return "
                "(reduce_scatter_bytes, all_reduce_bytes), B_RS first"),
        Mistake(table(lambda g, p: tuple(np.round(ring(g, p)))), "the payloads were rounded to whole bytes: the "
                "model's byte counts are real numbers, (p - 1)/p G need not be whole"),
        Mistake(table(lambda g, p: ((p - 1) * g // p, 2 * (p - 1) * g // p)), FLOOR),
    ]


@rubric.test("test-payload")
def _(e: Evidence):
    e.close("payload.lesson", [24.0, 48.0], rtol=1e-9, atol=1e-9, mistakes=_payload_mistakes([(32, 4)], (2,)))
    cases = [(32, e.num_devices), (1000, 5), (4096, 2), (96, 3), (48, 16), (40, 1), (10, 4), (1000, 3)]
    e.close("payload.hidden", [ring(size, ranks) for size, ranks in cases], rtol=1e-9, atol=1e-9,
            mistakes=_payload_mistakes(cases, (len(cases), 2)))


PARTITIONED = "the momentum is no longer partitioned: keep weights and momentum split P('data')"


def _momentum(e: Evidence, prefix: str, w, v, g, rate, beta, devices: int, where: str, *, rtol, atol):
    new_v = beta * v + g
    new_w = w - rate * new_v
    for name, expected, mistakes in [
        ("new_v", new_v, [Mistake(v + beta * g, "beta multiplies the gradient instead of the old momentum: "
                                                "v' = beta * v + g")]),
        ("new_w", new_w, [Mistake(w - rate * g, "the weights moved by the gradient, not by the new momentum"),
                          Mistake(w + rate * new_v, "the momentum was added: w' = w - learning_rate * v'")]),
    ]:
        what = f"the new {'momentum' if name == 'new_v' else 'weights'} {where}"
        key = f"{prefix}{name}"
        e.require(e.has(key) or not prefix.startswith("hidden."),
                  f"{what}: no result: momentum_step did not run there (does it use the notebook's mesh and split, "
                  "or assume four devices?)")
        e.array(key, shape=expected.shape, jax=True, what=what)
        recorded = e.get(key)
        if {tuple(s.value.shape) for s in recorded.shards} == {tuple(expected.shape)} and devices > 1:
            raise Mismatch(f"{what}: {PARTITIONED}")
        portions_close(e, key, expected, devices, rtol=rtol, atol=atol, what=what, mistakes=mistakes)


@rubric.programs("test-momentum")
def _(p: int):
    return [Program("program.momentum", p, (Input((2 * p,), ("data",)),) * 3)]


def _momentum_program(e: Evidence, rate: float, beta: float):
    """momentum_step itself, exported by the kernel and run by the grader on state it drew: a step computed on
    the host (np.asarray of the state) cannot be exported, and the program's results must stay split."""
    key, what = "program.momentum", "momentum_step, run by the grader on state it drew"
    e.require(not e.has("momentum.traceable") or e.number("momentum.traceable") != CONCRETE_ATTRIBUTE,
              f"{what}: JAX could not trace it: momentum_step must be traceable under jax.jit (the grader exports "
              "it with jax.export), and weights.sharding is not available on a traced value (an attribute only "
              "placed arrays have, like .addressable_shards): take the placement from the notebook's mesh and "
              "split (jax.typeof(weights) gives a traced value's shape and dtype)")
    run = e.program_shardings(key, outputs=[False, False], what=what)
    w, v, g = (value.astype(np.float64) for value in run.inputs)
    new_v = beta * v + g
    new_w = w - rate * new_v
    e.program_close(key, 0, new_w, rtol=1e-5, atol=1e-6, what=f"{what} (new weights)", mistakes=[
        Mistake(w - rate * g, "the weights moved by the gradient, not by the new momentum"),
        Mistake(w + rate * new_v, "the momentum was added: w' = w - learning_rate * v'")])
    e.program_close(key, 1, new_v, rtol=1e-5, atol=1e-6, what=f"{what} (new momentum)", mistakes=[
        Mistake(v + beta * g, "beta multiplies the gradient instead of the old momentum: v' = beta * v + g")])
    portion = len(w) // e.num_devices
    for output in run.outputs:
        e.require(all(shape == (portion,) for shape in output.shard_shapes), f"{what}: {PARTITIONED}")


HOST_ROUND_TRIP = ("momentum_step moves the partitioned state through the host: on every call it copies the "
                   "weights, momentum or gradient to host memory (jax.device_get, np.asarray, printing them) or places "
                   "NumPy results back with jax.device_put, so the whole state is gathered in one place, which the "
                   "partitioned update exists to avoid (the exported program cannot show it: under jax.jit "
                   "device_get hands back its traced arguments): compute the update with JAX operations on the "
                   "devices, each device on its own slices")


def _momentum_on_devices(e: Evidence):
    """The call itself, watched in the kernel (coursekit.checks.host_round_trip): what tracing hides."""
    e.require(e.number("momentum.host_round_trip", what="the host transfers of momentum_step") == NO_HOST_COPY,
              HOST_ROUND_TRIP)


@rubric.test("test-momentum")
def _(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    v = np.linspace(-0.02, 0.03, 8, dtype=np.float32).astype(np.float64)
    g = gradient(x, y, w).astype(np.float32).astype(np.float64)
    _momentum(e, "momentum.", w.astype(np.float64), v, g, 0.1, 0.9, p, "of the lesson", rtol=1e-5, atol=1e-7)
    for size in program_meshes(p):
        _, hw, _ = data.random_regression(seed=90306 + size, rows=3 * size, cols=2)
        _, hv, _ = data.random_regression(seed=90316 + size, rows=3 * size, cols=2)
        _, hg, _ = data.random_regression(seed=90326 + size, rows=3 * size, cols=2)
        _momentum(e, f"hidden.mesh{size}.momentum.", hw.astype(np.float64), hv.astype(np.float64),
                  hg.astype(np.float64), 0.05, 0.8, size, f"on a mesh of {size} device(s)", rtol=1e-5, atol=1e-6)
    _momentum_on_devices(e)
    _momentum_program(e, 0.05, 0.8)


def _reversal(e: Evidence, prefix: str, x, y, w, rtol, atol, devices: int):
    expected = gradient(x, y, w)
    for name in ("all_reduced", "gathered"):
        candidates = own_or_reference(e, f"{prefix}original_{name}", expected)
        key = f"{prefix}{name}"
        actual = e.close_to_any(key, candidates, rtol=rtol, atol=atol,
                                reason="differs from the gradient of the original order (the host reference, and your "
                                       "own programs on it): reverse the rows and their labels together",
                                mistakes=[Mistake(gradient(x, y[::-1], w), "only the rows were reversed, or only the "
                                                  "labels (the same mismatch): reverse them together")])
        # Both results come from the notebook's programs on the devices, as the docstring says: the all-reduced one
        # and the gathered one (gather of shard_gradient's portions) hold the whole vector on every device. A
        # value that is still split was not gathered; a host array was not computed by the programs.
        what = e.name(key)
        recorded = e.get(key, what=what)
        e.require(recorded.kind == "jax_array", f"{what}: expected the JAX array your program returned, got a host "
                                                "array")
        shapes = sorted({tuple(s.value.shape) for s in recorded.shards})
        if devices > 1 and shapes == [(len(expected) // devices,)]:
            raise Mismatch(f"{what}: each device holds only {len(expected) // devices} of the {len(expected)} values: "
                           "every device should hold all of them: run gather on shard_gradient's result")
        e.shard_shapes(key, expected.shape, devices=devices, what=what)
        e.replicas_close(key, actual, rtol=1e-6, atol=1e-7, what=what,
                         against="the result's own value: every device should hold all of it")
    label_only = gradient(x, y[::-1], w)
    e.close(f"{prefix}label_only", label_only, rtol=rtol, atol=atol, mistakes=[
        Mistake(expected, "this is the gradient of the original order (or of a joint reversal): reverse the labels "
                          "alone, keep the rows")])
    e.require(np.max(np.abs(label_only - expected)) > 0.01, "instructor error: reversal data too symmetric")


@rubric.test("test-make-it-yours")
def _(e: Evidence):
    x, y, w = data.collectives_batch()
    p = e.num_devices
    _reversal(e, "yours.", x, y, w + np.float32(0.17), 1e-5, 1e-6, p)
    hx, hy, hw = data.random_regression(seed=90309, rows=16, cols=8)
    _reversal(e, "hidden.yours.", hx, hy, hw, 1e-4, 1e-5, p)
    _reversed_inputs(e, "hidden.yours.", hx, hy)


def _reversed_inputs(e: Evidence, prefix: str, x, y):
    """What reversal_experiment handed the notebook's programs: the gradient cannot tell an order from another (it
    is a sum over rows), so the test noted the batch each program was given."""
    for name in ("all_gradient", "shard_gradient"):
        for part, original in [("features", x), ("labels", y)]:
            key, what = f"{prefix}{name}.{part}", f"the {part} reversal_experiment gave {name} (an unseen batch)"
            e.require(e.has(key) and e.get(key, what=what).kind != "scalar",
                      f"{what}: reversal_experiment should run the notebook's {name} on the reversed batch")
            reversed_ = np.asarray(original, dtype=np.float32).astype(np.float64)[::-1]
            e.close(key, reversed_, rtol=1e-6, atol=1e-6, what=what, mistakes=[
                Mistake(np.asarray(original, dtype=np.float32).astype(np.float64),
                        f"the {part} are in their original order: reverse the rows and their labels together")])


def budget(size, rank_counts):
    return [[p, ring(size, p)[1], 2 * ring(size, p)[0], size / p] for p in rank_counts]


def _budget_mistakes(size, rank_counts) -> list[Mistake]:
    right = np.asarray(budget(size, rank_counts), dtype=np.float64)

    def changed(column, values):
        table = right.copy()
        table[:, column] = values
        return table

    return [
        Mistake(changed(3, size), "shard_storage_bytes is what one rank keeps after the reduce-scatter: G/p, not G"),
        Mistake(changed(2, 2 * right[:, 1]), "scatter_gather_bytes counts the all-reduce twice: it is "
                                            "B_RS + B_AG, which equals one all-reduce"),
        Mistake(changed(2, right[:, 1] / 2), "scatter_gather_bytes counts only the reduce-scatter: add the "
                                            "all-gather's B_AG"),
        Mistake(changed(1, right[:, 1] / 2), "all_reduce_bytes lacks the factor 2: B_AR = 2 (p - 1)/p G"),
        Mistake(changed(3, size // right[:, 0]), FLOOR),
        Mistake(np.asarray([[p, 2 * ((p - 1) * size // p), 2 * ((p - 1) * size // p), size // p] for p in rank_counts],
                           dtype=np.float64), FLOOR),
    ]


def _own_budget(e: Evidence, key: str, size, rank_counts):
    """The budget built from the learner's own ring_payload (a wrong payload costs the payload test only), when
    those payloads are the lesson's or one of its named mistakes: the kernel recorded them, so a stub, a zero or
    a function that answers the budget's sizes differently from the payload test's earns nothing here."""
    if not e.has(key):
        return []
    own = e.array(key, shape=(len(rank_counts), 2)).astype(np.float64)
    cases = [(size, p) for p in rank_counts]
    known = [np.reshape([ring(g, p) for g, p in cases], own.shape)] + [
        np.asarray(m.value, dtype=np.float64) for m in _payload_mistakes(cases, own.shape)]
    if not any(np.allclose(own, value, rtol=1e-9, atol=1e-6, equal_nan=False) for value in known):
        return []
    return [[p, ar, 2 * rs, size / p] for p, (rs, ar) in zip(rank_counts, own)]


@rubric.test("test-budget")
def _(e: Evidence):
    cases = [("budget.lesson", "budget.own_payloads", 2**20, [2, 4, 8]),
             ("budget.hidden", "budget.hidden.own_payloads", 960, [3, 5, 7, 16, e.num_devices])]
    for key, own_key, size, ranks in cases:
        candidates = [budget(size, ranks)] + [table for table in [_own_budget(e, own_key, size, ranks)] if table]
        e.close_to_any(key, candidates, rtol=1e-9, atol=1e-6, mistakes=_budget_mistakes(size, ranks),
                       reason="differs from the host NumPy reference (and from the budget of your own ring_payload)")


@rubric.test("test-quiz")
def _(e: Evidence):
    e.equal("quiz.answer", 2, mistakes={
        1: "a reduce-scatter followed by a gather of the full vector moves as many bytes as the all-reduce",
        3: "an unchanged global shape says nothing about communication",
    })


# Each function the tests call with the caller's arrays is charged at its own test if it writes into them.
for _grade_id, _function, _arguments in [
    ("test-local-contribution", "local_contribution", ["features", "labels", "weights", "global_count"]),
    ("test-make-it-yours", "reversal_experiment", ["features", "labels", "weights"]),
    ("test-budget", "transfer_budget", ["gradient_bytes", "rank_counts"]),
]:
    keeps_inputs(rubric, _grade_id, f"inputs.{_function}", _function, _arguments)
