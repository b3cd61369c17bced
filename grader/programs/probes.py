"""Further calls of a program the grader runs, to learn what its outputs are of each other.

A step that returns a loss and a gradient is judged in later tests against its own gradient (one wrong loss costs
the loss test, not every test built on it). Only a gradient the program computes from its own loss earns that:
the grader runs the same compiled program again at small steps of one argument (the weights) along each of its
elements, and once with each other argument redrawn, and compares, in NumPy, the returned gradient with the central
differences of the returned loss, and the loss with the loss of another batch. Nothing here comes from the kernel:
the inputs are drawn here, the runs are the sandboxed runner's (``grader.programs.runner``).
"""
from __future__ import annotations

import numpy as np

#: the step along each element of the probed argument (a power of two: exact in float32 for the inputs' range)
STEP = 1 / 32
MAX_PROBED = 16  # elements; a larger argument is not probed (the calls would outnumber the point of them)


def probe_inputs(probed: int | None, inputs: list[np.ndarray], redrawn: list[np.ndarray]) -> list[list[np.ndarray]]:
    """The further calls' inputs: ``inputs`` with argument ``probed`` moved by +STEP and -STEP along each element,
    then ``inputs`` with each other argument replaced by its value in ``redrawn`` (fresh inputs of the same shapes)."""
    if probed is None or not 0 <= probed < len(inputs) or inputs[probed].size > MAX_PROBED:
        return []
    calls = []
    base = inputs[probed]
    for index in range(base.size):
        for sign in (1.0, -1.0):
            moved = base.astype(np.float64).ravel()
            moved[index] += sign * STEP
            calls.append([*inputs[:probed], moved.reshape(base.shape).astype(base.dtype), *inputs[probed + 1:]])
    for other in range(len(inputs)):
        if other != probed:
            calls.append([*inputs[:other], redrawn[other], *inputs[other + 1:]])
    return calls


def _scalar(outputs: list[np.ndarray], index: int) -> float | None:
    if index >= len(outputs) or np.size(outputs[index]) != 1 or not np.all(np.isfinite(outputs[index])):
        return None
    return float(np.asarray(outputs[index], dtype=np.float64).ravel()[0])


def is_own_derivative(run, probed: int, value: int, derivative: int) -> bool:
    """Whether output ``derivative`` of ``run`` is the derivative of its scalar output ``value`` with respect to
    argument ``probed`` (central differences of the probes), and output ``value`` depends on every other argument
    (it changes when that argument is redrawn). False when the program was not probed."""
    if run is None or run.error or len(run.outputs) <= max(value, derivative) or probed >= len(run.inputs):
        return False
    base = run.inputs[probed].astype(np.float64)
    claimed = run.outputs[derivative].value.astype(np.float64)
    loss = _scalar([o.value for o in run.outputs], value)
    others = len(run.inputs) - 1
    if claimed.shape != base.shape or loss is None or len(run.probes) != 2 * base.size + others:
        return False
    differences = np.empty(base.size)
    for index in range(base.size):
        (up_in, up_out), (down_in, down_out) = run.probes[2 * index], run.probes[2 * index + 1]
        up, down = _scalar(up_out, value), _scalar(down_out, value)
        up_at, down_at = (call[probed].astype(np.float64).ravel()[index] for call in (up_in, down_in))
        step = float(up_at - down_at)
        if up is None or down is None or step <= 0:
            return False
        differences[index] = (up - down) / step
    scale = max(1.0, float(np.max(np.abs(claimed))), abs(loss))
    if not np.all(np.isfinite(claimed)) or not np.any(claimed != 0) or \
            not np.allclose(differences, claimed.ravel(), rtol=1e-2, atol=1e-3 * scale):
        return False
    for _, outputs in run.probes[2 * base.size:]:
        other = _scalar(outputs, value)
        if other is None or abs(other - loss) <= 1e-6 * max(1.0, abs(loss)):
            return False  # the same loss on another batch: it is not a loss of the data
    return True
