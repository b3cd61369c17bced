"""References for sharded_step's ten steps, transfer and quiz tests, computed by the grader in NumPy (the step's
references and the other tests are in ``rubric_step``)."""
import numpy as np

from coursekit import data
from grader.rubric import Evidence, Mismatch, Reference, mistake

from . import rubric_cases as cases
from . import rubric_keys as keys
from .rubric_step import gradient, is_a_gradient, lesson, rubric


def _follows_first_step(e: Evidence, key: str, x, y, start, steps: int = 10):
    """Ten weights after ``start``, each one step of the rule the learner's first step applied (from its own values)."""
    name = e.name(key)
    trajectory = e.array(key, shape=(steps + 1, len(start))).astype(np.float64)
    e.require(np.allclose(trajectory[0], start), f"{name}: the loop should start from the given weights")
    g0 = gradient(x, y, trajectory[0])
    moved = trajectory[0] - trajectory[1]
    rate = float(np.dot(moved, g0) / np.dot(g0, g0))
    e.require(rate != 0 and np.allclose(moved, rate * g0, rtol=1e-3, atol=1e-6),
              f"{name}: the first step does not move the weights along the gradient, so the loop cannot be "
              "compared with a host loop (see the gradient and update tests)")
    expected = [trajectory[0]]
    for _ in range(steps):
        expected.append(expected[-1] - rate * gradient(x, y, expected[-1]))
    expected = np.stack(expected)
    scale = max(1.0, float(np.max(np.abs(expected))))
    e.require(np.allclose(trajectory, expected, rtol=1e-4, atol=1e-5 * scale),
              f"{name}: the steps drift away from a host loop that repeats your first step with the loss's gradient: "
              "either a call does not start from the weights the previous call returned (or carries something else "
              "over between calls), or your step's gradient is wrong at weights other than the first (see the "
              "gradient test)")


@rubric.test("test-ten-steps")
def judge_ten_steps(e: Evidence):
    x, y, w = lesson()  # the visible record first: Validate judges it, then stops at the hidden one
    _follows_first_step(e, keys.LESSON_TRAJECTORY, x, y, w)
    hx, hy, hw = cases.ten_steps_batch(e.num_devices, e.draw)  # over the step's contract, this learner's draw
    _follows_first_step(e, keys.HIDDEN_TRAJECTORY, hx, hy, hw.astype(np.float64))  # a fresh step: its first call


def _transfer(true_weights, start, rate, labels_from=None):
    x, _ = data.lesson_batch()
    y = x.astype(np.float64) @ np.asarray(true_weights) if labels_from is None else labels_from
    start = np.asarray(start, dtype=np.float64)
    return start - rate * gradient(x, y, start)


def _gradient_at(true_weights, start):
    """The transfer batch's gradient at ``start``: the lesson's features, the labels of ``true_weights``."""
    x, _ = data.lesson_batch()
    return gradient(x, x.astype(np.float64) @ np.asarray(true_weights), np.asarray(start, dtype=np.float64))


#: one step of the transfer (true_weights, start, rate), and the mistakes named on it (``devices``: the notebook's)
TRANSFER = Reference(_transfer, (
    mistake("it uses the lesson's labels y, not the labels of the new target host_x @ true_weights",
            lambda target, start, rate, **_: _transfer(target, np.asarray(start, dtype=np.float64), rate,
                                                       labels_from=data.lesson_batch()[1])),
    mistake("it uses the lesson's learning rate 0.1 (train_step), not learning_rate",
            lambda target, start, rate, **_: np.asarray(start, dtype=np.float64) - 0.1 * _gradient_at(target, start)),
    mistake("it starts from w = 0, not from start", lambda target, start, rate, **_: _transfer(target, np.zeros(2), rate)),
    mistake("its gradient is {devices} times the global gradient: summed local means",
            lambda target, start, rate, *, devices: np.asarray(start, dtype=np.float64)
            - rate * devices * _gradient_at(target, start)),
    mistake("its gradient is divided by the number of devices ({devices}): the mean over N = {n} examples already "
            "has the right denominator", lambda target, start, rate, *, devices: (
                np.asarray(start, dtype=np.float64) - rate * _gradient_at(target, start) / devices,
                {"n": len(data.lesson_batch()[1])}))))
COPIED = mistake("it is a copy of the sharded result (np.asarray of the device weights): derive the host update "
                 "from the formula with host_gradient in NumPy", lambda own_step: own_step + 1.0)
STEPPED_WITH_ITS_GRADIENT = mistake(
    "it steps with the gradient the sharded step returned (np.asarray of the device gradient), so it checks nothing: "
    "derive the host update with host_gradient in NumPy", lambda start, rate, own: start - rate * (own + 1.0))


def _steps_with_a_gradient(new_weights, true_weights, start, rate) -> bool:
    """Whether one step from ``start`` to ``new_weights`` moved along the loss's gradient on the transfer batch
    (up to a scale: a wrong denominator costs the gradient test, not the transfer)."""
    x, _ = data.lesson_batch()
    y = x.astype(np.float64) @ np.asarray(true_weights)
    start = np.asarray(start, dtype=np.float64)
    return is_a_gradient((start - np.asarray(new_weights, dtype=np.float64)) / rate, x, y, start)


def _given_to_the_step(e: Evidence, target, start, rate) -> None:
    """What transfer_step handed make_train_step and its step in the hidden call (the test noted it): the rate, the
    start and the target's labels it was called with. A step from the lesson's start or at the lesson's rate can
    still point along the gradient (the check above allows any scale), so those are compared here, exactly."""
    what = e.name(keys.OTHER_SHARDED)
    if not e.has(keys.OTHER_GIVEN_RATE):
        return
    given_rate = e.number(keys.OTHER_GIVEN_RATE, what="the learning rate transfer_step gave make_train_step")
    e.require(np.isclose(given_rate, rate, rtol=1e-6),
              f"{what}: transfer_step built make_train_step({given_rate:g}), not make_train_step({rate:g}) with the "
              "learning_rate it was called with")
    given_start = np.asarray(e.get(keys.OTHER_GIVEN_START).value, dtype=np.float64).ravel()
    e.require(given_start.shape == np.shape(start) and np.allclose(given_start, start, rtol=1e-6),
              f"{what}: transfer_step's step starts from {np.round(given_start, 4).tolist()[:4]}, not from the start "
              f"{list(np.asarray(start).tolist())} it was called with")
    x, _ = data.lesson_batch()
    labels = (x.astype(np.float32) @ np.asarray(target, dtype=np.float32)).astype(np.float64)
    given_labels = np.asarray(e.get(keys.OTHER_GIVEN_LABELS).value, dtype=np.float64).ravel()
    e.require(given_labels.shape == labels.shape and np.allclose(given_labels, labels, rtol=1e-5, atol=1e-5),
              f"{what}: transfer_step's step is given other labels than host_x @ {list(target)}, the target it was "
              "called with")


@rubric.test("test-transfer")
def judge_transfer(e: Evidence):
    p = e.num_devices
    expected = _transfer([-1.0, 3.0], [0.2, -0.1], 0.05)
    own = e.values(keys.TRANSFER_OWN_STEP, (2,))
    reason = "is not one step of your make_train_step(0.05) from [0.2, -0.1] on the labels host_x @ [-1, 3]"
    if not _steps_with_a_gradient(own, [-1.0, 3.0], [0.2, -0.1], 0.05):
        # the learner's step computes no gradient: its own result proves nothing here, and the message says only
        # what it can check (a result equal to that step's is one step of it: a wrong loss is charged elsewhere)
        if np.allclose(e.values(keys.TRANSFER_SHARDED, (2,)), own, rtol=1e-5, atol=1e-6):
            reason = ("is one step of your make_train_step(0.05), but that step does not move the weights along the "
                      "loss's gradient (see the loss and gradient test), so this test cannot credit it: it differs "
                      "from start - 0.05 * host_gradient(host_x, host_x @ [-1, 3], start)")
        else:
            reason = ("differs from start - 0.05 * host_gradient(host_x, host_x @ [-1, 3], start), and your "
                      "make_train_step(0.05) does not move the weights along the loss's gradient (see the loss and "
                      "gradient test)")
        own = expected
    e.close_to_any(keys.TRANSFER_SHARDED, [own], rtol=1e-5, atol=1e-6, reason=reason,
                   mistakes=TRANSFER.named([-1.0, 3.0], [0.2, -0.1], 0.05, devices=p))
    e.check(keys.TRANSFER_HOST, TRANSFER, ([-1.0, 3.0], [0.2, -0.1], 0.05), rtol=1e-5, atol=1e-6, devices=p)
    if e.get(keys.TRANSFER_SHARDED).kind == "jax_array":  # its placement, before any hidden value (Validate's)
        _placed_as_the_step(e, keys.TRANSFER_SHARDED, keys.TRANSFER_OWN_STEP)
    other_target, other_start, other_rate = cases.transfer_case(e.draw)  # over transfer_step's contract
    other_start = np.array(other_start)
    other = _transfer(other_target, other_start, other_rate)
    mistakes = TRANSFER.named(other_target, other_start, other_rate, devices=p)
    if e.has(keys.OTHER_OWN_STEP) and e.get(keys.OTHER_OWN_STEP).kind != "scalar":
        # Inside this call every output of make_train_step was moved by +1: the sharded result must carry the
        # shift, and a host result that carries it too was taken from the device (its weights or its gradient).
        own_other = e.values(keys.OTHER_OWN_STEP, (2,))
        _given_to_the_step(e, other_target, other_start, other_rate)
        if not _steps_with_a_gradient(own_other, other_target, other_start, other_rate):
            own_other = other
        # the shift was added in the step's own dtype (a float16 step rounds it: that costs the update test only)
        dtype = np.asarray(e.get(keys.OTHER_OWN_STEP).value).dtype
        shift_tol = max(1e-5, 4 * float(np.finfo(dtype).eps)) if dtype.kind == "f" else 1e-5
        e.close_to_any(keys.OTHER_SHARDED, [own_other + 1.0], rtol=shift_tol, atol=1e-6,
                       reason="is not the result of your make_train_step for the other target: return the "
                              "step's new weights unchanged")
        recorded_gradient = e.get(keys.OTHER_OWN_GRADIENT) if e.has(keys.OTHER_OWN_GRADIENT) else None
        stepped = []
        if recorded_gradient is not None and recorded_gradient.kind in ("array", "jax_array") and \
                np.shape(recorded_gradient.value) == (2,):  # a wrong gradient costs the gradient test, not this one
            stepped = STEPPED_WITH_ITS_GRADIENT(other_start, other_rate,
                                                np.asarray(recorded_gradient.value, dtype=np.float64))
        mistakes = COPIED(own_other) + stepped + mistakes
    else:
        e.close(keys.OTHER_SHARDED, other, rtol=1e-5, atol=1e-6, mistakes=mistakes)
        raise Mismatch(f"{e.name(keys.OTHER_SHARDED)}: transfer_step did not run make_train_step(learning_rate):"
                       " the sharded result must be the jitted step's new weights, computed on the devices")
    e.close(keys.OTHER_HOST, other, rtol=1e-5, atol=1e-6, mistakes=mistakes)
    # A host result is told last: the hidden values above name its cause (transfer_step did not run the step).
    _placed_as_the_step(e, keys.TRANSFER_SHARDED, keys.TRANSFER_OWN_STEP)
    _placed_as_the_step(e, keys.OTHER_SHARDED, keys.OTHER_OWN_STEP)


def _placed_as_the_step(e: Evidence, key: str, own_key: str) -> None:
    """The sharded result is placed as the learner's own step places its new weights (a step that returns host
    arrays, or places them wrongly, loses the placement test, not this one)."""
    own_step = e.get(own_key)
    if own_step.kind == "jax_array":
        e.array(key, shape=(2,), jax=True)
        e.replicas_close(key, e.values(key, (2,)), rtol=1e-6, atol=1e-7, against="the result's own value")
        e.shard_shapes(key, (2,), devices=len(own_step.shards))


@rubric.test("test-quiz")
def judge_quiz(e: Evidence):
    e.equal(keys.QUIZ, 2, mistakes={
        1: "summing four local means gives four times the global mean gradient",
        3: "one device's gradient is a local quantity; it does not follow the global loss",
    })
