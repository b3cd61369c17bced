"""collectives' partitioned momentum step and the make-it-yours reversal experiment, against NumPy references."""
import numpy as np

from coursekit import data
from grader.rubric import Evidence, Expect, HostCopy, Input, Mismatch, Program, Reference, Trace, mistake

from . import rubric_cases as cases
from . import rubric_keys as keys
from .rubric_collectives import gradient, own_values_or_reference, portions_close, program_meshes, rubric


PARTITIONED = "the momentum is no longer partitioned: keep weights and momentum split P('data')"


LESSON_RATE, LESSON_BETA = 0.1, 0.9  # the visible checks' call: momentum_step(w, v, g, 0.1, 0.9)


def _fixed_beta(on_weights: bool):
    """A step that ignores the coefficient it is given and uses the lesson's: its momentum, or its weights (named
    only where the call's coefficient differs from the lesson's, so the value can show it)."""
    def wrong(w, v, g, rate, beta):
        if np.isclose(beta, LESSON_BETA):
            return None
        return (w - rate * (LESSON_BETA * v + g) if on_weights else LESSON_BETA * v + g), {"beta": beta}
    return mistake(f"it uses the coefficient {LESSON_BETA} of the lesson's call, not the beta it is given "
                   "({beta:g}): v' = beta * v + g with momentum_step's own beta argument", wrong)


#: the new momentum and the new weights of momentum_step(w, v, g, rate, beta), each with its named mistakes
NEW_V = Reference(lambda w, v, g, rate, beta: beta * v + g, (
    mistake("beta multiplies the gradient instead of the old momentum: v' = beta * v + g",
            lambda w, v, g, rate, beta: v + beta * g), _fixed_beta(False)))
NEW_W = Reference(lambda w, v, g, rate, beta: w - rate * (beta * v + g), (
    mistake("the weights moved by the gradient, not by the new momentum", lambda w, v, g, rate, beta: w - rate * g),
    mistake("the momentum was added: w' = w - learning_rate * v'",
            lambda w, v, g, rate, beta: w + rate * (beta * v + g)), _fixed_beta(True)))


def _momentum(e: Evidence, prefix: str, w, v, g, rate, beta, devices: int, where: str, *, rtol, atol):
    for name, reference in [("new_v", NEW_V), ("new_w", NEW_W)]:
        expected, mistakes = reference.on(w, v, g, rate, beta)
        what = (f"the new {'momentum' if name == 'new_v' else 'weights'} of momentum_step(w, v, g, {rate:g}, "
                f"{beta:g}) {where}")
        key = f"{prefix}{name}"
        e.require(e.has(key) or not prefix.startswith("hidden."),
                  f"{what}: no result: momentum_step did not run there (does it use the notebook's mesh and split, "
                  "or assume four devices?)")
        e.array(key, shape=expected.shape, jax=True, what=what)
        recorded = e.get(key, what=what)
        if {tuple(s.value.shape) for s in recorded.shards} == {tuple(expected.shape)} and devices > 1:
            raise Mismatch(f"{what}: {PARTITIONED}")
        portions_close(e, key, expected, devices, rtol=rtol, atol=atol, what=what, mistakes=mistakes)


STAYS_PUT = ("keep weights, momentum and gradient split P('data') inside the step too: each device updates its own "
             "slices, with no communication at all (the update is elementwise), and only the gather after the step "
             "moves the weights")
#: the partitioned update: both results stay split, as the state came in, and nothing crosses devices: the program
#: writes no collective and its compiled program performs none (a constraint to replicated inside a jitted step is
#: an all-gather of the whole state, which the outputs' placement alone cannot show)
STATE_STAYS_PUT = Expect(outputs=(False, False), compiled_gather=False, collectives=0, compiled_collectives=0, says=(
    ("output_split", "{what}: its result {index} is replicated: " + STAYS_PUT),
    ("gathers", "{what}: its compiled program gathers the partitioned state onto every device (an all-gather; "
                "a sharding constraint to replicated, or arithmetic on whole vectors, makes the compiler add it): "
                + STAYS_PUT),
    ("collectives", "{what}: the program communicates ({kinds}): " + STAYS_PUT),
    ("compiled_collectives", "{what}: its compiled program communicates between devices ({kinds}): " + STAYS_PUT)))


@rubric.programs("test-momentum")
def programs_momentum(p: int):
    state = Input(cases.momentum_program_state(p).shape, ("data",))
    return [Program("program.momentum", p, (state,) * 3, expect=STATE_STAYS_PUT)]


def _momentum_program(e: Evidence, rate: float, beta: float):
    """momentum_step itself, exported by the kernel and run by the grader on state it drew: a step computed on
    the host (np.asarray of the state) cannot be exported, and the program's results must stay split."""
    key, what = "program.momentum", "momentum_step, run by the grader on state it drew"
    e.require(not e.has(keys.MOMENTUM_TRACEABLE)
              or e.outcome(keys.MOMENTUM_TRACEABLE, Trace) is not Trace.CONCRETE_ATTRIBUTE,
              f"{what}: JAX could not trace it: momentum_step must be traceable under jax.jit (the grader exports "
              "it with jax.export), and weights.sharding is not available on a traced value (an attribute only "
              "placed arrays have, like .addressable_shards): take the placement from the notebook's mesh and "
              "split (jax.typeof(weights) gives a traced value's shape and dtype)")
    run = e.program_expected(key, what=what)
    w, v, g = (value.astype(np.float64) for value in run.inputs)
    e.program_check(key, 0, NEW_W, (w, v, g, rate, beta), rtol=1e-5, atol=1e-6, what=f"{what} (new weights)")
    e.program_check(key, 1, NEW_V, (w, v, g, rate, beta), rtol=1e-5, atol=1e-6, what=f"{what} (new momentum)")
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
    e.require(e.outcome(keys.MOMENTUM_HOST_ROUND_TRIP, HostCopy) is HostCopy.NONE, HOST_ROUND_TRIP)


@rubric.test("test-momentum")
def judge_momentum(e: Evidence):
    p = e.num_devices
    x, y, w = data.collectives_batch()
    v = np.linspace(-0.02, 0.03, 8, dtype=np.float32).astype(np.float64)
    g = gradient(x, y, w).astype(np.float32).astype(np.float64)
    _momentum(e, "momentum.", w.astype(np.float64), v, g, LESSON_RATE, LESSON_BETA, p, "on the lesson's state",
              rtol=1e-5, atol=1e-7)
    rate, beta = cases.momentum_rates(e.draw)  # the hidden calls' coefficients, this learner's draw
    for size in program_meshes(p):
        hw, hv, hg = cases.momentum_state(size, e.draw)
        _momentum(e, f"hidden.mesh{size}.momentum.", hw.astype(np.float64), hv.astype(np.float64),
                  hg.astype(np.float64), rate, beta, size, f"on a mesh of {size} device(s)", rtol=1e-5, atol=1e-6)
    _momentum_on_devices(e)
    _momentum_program(e, rate, beta)


ONE_REVERSED = mistake("only the rows were reversed, or only the labels (the same mismatch): reverse them together",
                       lambda x, y, w: gradient(x, y[::-1], w))
#: the gradient of the labels reversed alone, with its named mistake
LABEL_ONLY = Reference(lambda x, y, w: gradient(x, y[::-1], w), (mistake(
    "this is the gradient of the original order (or of a joint reversal): reverse the labels alone, keep the rows",
    gradient),))
ORIGINAL_ORDER = mistake("the {part} are in their original order: reverse the rows and their labels together",
                         lambda original, part: (np.asarray(original, dtype=np.float32).astype(np.float64),
                                                 {"part": part}))


def _reversal(e: Evidence, data_: str, x, y, w, rtol, atol, devices: int):
    expected = gradient(x, y, w)
    words = keys.REVERSAL_WORDS[data_]
    for reversed_key, original_key in [(keys.REVERSED_ALL_REDUCED, keys.ORIGINAL_ALL_REDUCED),
                                       (keys.REVERSED_GATHERED, keys.ORIGINAL_GATHERED)]:
        key, original = reversed_key(data=data_, **words), original_key(data=data_, **words)
        candidates = own_values_or_reference(e, original, expected)
        actual = e.close_to_any(key, candidates, rtol=rtol, atol=atol,
                                reason="differs from the gradient of the original order (the host reference, and your "
                                       "own programs on it): reverse the rows and their labels together",
                                mistakes=ONE_REVERSED(x, y, w))
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
    e.check(keys.LABEL_ONLY(data=data_, **words), LABEL_ONLY, (x, y, w), rtol=rtol, atol=atol)
    e.require(np.max(np.abs(LABEL_ONLY(x, y, w) - expected)) > 0.01, "instructor error: reversal data too symmetric")


@rubric.test("test-make-it-yours")
def judge_make_it_yours(e: Evidence):
    x, y, w = data.collectives_batch()
    p = e.num_devices
    _reversal(e, "yours", x, y, w + np.float32(0.17), 1e-5, 1e-6, p)
    hx, hy, hw = cases.reversal_batch(e.draw)
    _reversal(e, "hidden.yours", hx, hy, hw, 1e-4, 1e-5, p)
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
            e.close(key, reversed_, rtol=1e-6, atol=1e-6, what=what, mistakes=ORIGINAL_ORDER(original, part))
