# scenario: a correct notebook whose training step also publishes malformed records while the tests run (shards that are numbers, wrong types, huge numbers, nested junk); they are unusable keys, never a grader error
# base: solution
# expect-status: graded suspicious
# expect-fail:
# %% append train-step
from IPython.display import display as _show

_GOOD = {"kind": "array", "dtype": "float32", "shape": [2], "data": [1.0, 2.0]}
_JUNK = [
    {"kind": "jax_array", "dtype": "float32", "shape": [2], "data": [1.0, 2.0], "sharding": "P()", "shards": [1, 2, 3]},
    {"kind": "jax_array", "dtype": "float32", "shape": [2], "data": [1.0, 2.0], "shards": [{"device": 0, "value": 7}]},
    {"kind": "jax_array", "dtype": "float32", "shape": [2], "data": [1.0, 2.0],
     "shards": [{"device": "cpu:0", "index": [["a", "b"]], "value": _GOOD}]},
    {"kind": "jax_array", "dtype": "float32", "shape": [2], "data": [1.0, 2.0], "shards": {"0": _GOOD}},
    {"kind": "array", "dtype": ["float32"], "shape": [2], "data": [1, 2]},
    {"kind": "array", "dtype": "int8", "shape": [1], "data": [10 ** 30]},
    {"kind": "array", "dtype": "float64", "shape": [2 ** 62, 2 ** 62], "data": []},
    {"kind": "array", "dtype": "float64", "shape": [1], "data": [10 ** 400]},
    {"kind": "array"},
    {"kind": "sequence", "items": 5},
    {"kind": "mapping", "items": [1, 2]},
    {"kind": {"nested": ["junk"]}},
    "not a record",
]
_nested = {"kind": "scalar", "value": 1}
for _ in range(40):
    _nested = {"kind": "sequence", "items": [_nested]}
_JUNK.append(_nested)
_real_train_step = train_step


def train_step(*args):
    for number, value in enumerate(_JUNK):
        _show({"application/vnd.jax-course.record+json": {"key": f"junk.{number}", "value": value}}, raw=True)
    _show({"application/vnd.jax-course.record+json": {"key": 12345, "value": _GOOD}}, raw=True)
    return _real_train_step(*args)
