"""local_mean_diagnosis's rubric, composed: the grader imports this file (``load_rubric``), and it names, in order,
the modules that register judges on the one ``rubric``, then wraps the judges that also check their function's inputs.

    rubric_cases.py          the hidden cases (as released: its text draws the programs' inputs)
    rubric_keys.py           the keys the test cells record under with their words, the drawn cases' words
    rubric_means.py          the ``Rubric``, the averages, the masked mean, the partials and the sharded masked mean
    rubric_accumulation.py   the block partials and the accumulated gradient

Every reference is plain float64 NumPy arithmetic (global sums divided by global counts, never JAX); a wrong value
that matches a mistake the lesson warns about is named in the message.
"""
from grader.rubric import keeps_inputs

from . import rubric_accumulation  # noqa: F401 - registers its judges on `rubric`
from .rubric_means import rubric

# Each function the tests call with the caller's arrays is charged at its own test if it writes into them.
for _grade_id, _function, _arguments in [
    ("test-two-averages", "two_averages", ["shards"]),
    ("test-local-gradients", "local_mean_gradients", ["x", "y", "w", "sizes"]),
    ("test-equal-shards", "equal_shard_gradient", ["local_gradients"]),
    ("test-unequal-shards", "weighted_gradient", ["local_gradients", "sizes"]),
    ("test-masked-mean", "masked_token_mean", ["token_losses", "mask"]),
    ("test-shard-statistics", "shard_statistics", ["token_losses", "mask", "num_shards"]),
    ("test-combine", "combine_partials", ["sums", "counts"]),
]:
    keeps_inputs(rubric, _grade_id, f"inputs.{_function}", _function, _arguments)

__all__ = ["rubric"]
