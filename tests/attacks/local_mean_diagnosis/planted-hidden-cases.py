# scenario: a cell at the end plants its own rubric_cases (a file beside the notebook and a module registered under that name) whose "hidden inputs" are the lesson's own small data; the answers are correct. The hidden parts must still judge on the course's cases (the grader registers the real module on their first line), so every test passes and nothing the learner planted is used
# base: solution
# expect-status: suspicious
# expect-fail:
# %% append
import sys
import types
from pathlib import Path

PLANTED = '''
import numpy as np
def shard_counts(devices): return [2]
def ragged(count): return [np.array([0.5, 1.5]), np.array([4.0])]
def masked_tokens(devices): raise RuntimeError("planted rubric_cases used")
'''
try:
    Path("rubric_cases.py").write_text(PLANTED)
except OSError as error:
    print("could not write rubric_cases.py:", type(error).__name__)
planted = types.ModuleType("rubric_cases")
exec(PLANTED, planted.__dict__)
sys.modules["rubric_cases"] = planted
print("planted")
