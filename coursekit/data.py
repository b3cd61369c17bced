"""Deterministic data sets shared by notebooks and the grader's references.

Pure NumPy, so the grader can rebuild hidden-test inputs in its own process.
"""
from __future__ import annotations

import numpy as np

LESSON_X = np.array(
    [[1, 0], [0, 1], [1, 1], [2, 0], [0, 2], [2, 1], [1, 2], [2, 2]], dtype=np.float32
)
LESSON_TRUE_W = np.array([2.0, -1.0], dtype=np.float32)


def lesson_batch() -> tuple[np.ndarray, np.ndarray]:
    """The 8x2 regression batch of lesson 09.02 and its noiseless labels."""
    return LESSON_X.copy(), LESSON_X @ LESSON_TRUE_W


def random_regression(seed: int, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, labels and starting weights drawn from ``seed`` (float32)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, cols)).astype(np.float32)
    y = (x @ rng.normal(size=cols) + 0.1 * rng.normal(size=rows)).astype(np.float32)
    w = rng.normal(size=cols).astype(np.float32)
    return x, y, w


def collectives_batch() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 16x8 regression of lesson 09.03: features, labels, weights."""
    x = np.arange(16 * 8, dtype=np.float32).reshape(16, 8) / 128 - 0.5
    y = x @ np.linspace(-0.4, 0.3, 8, dtype=np.float32)
    w = np.linspace(0.1, -0.2, 8, dtype=np.float32)
    return x, y, w
