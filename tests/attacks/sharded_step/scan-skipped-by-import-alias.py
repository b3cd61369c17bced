# scenario: a blank notebook reaches the shell as `from IPython import get_ipython as shell` and names the record MIME type as text, so the scan saw neither `get_ipython` nor `MIME_TYPE` and the notebook was `graded`, with nothing listed for the instructor; names imported under another name and these texts are flagged now
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
from IPython import get_ipython as shell
from IPython.display import display as show


def after(result):
    if "quiz.answer" in result.info.raw_cell:
        show({"application/vnd.jax-course.record+json": {"key": "quiz.answer", "value": {"kind": "scalar", "value": 2}}},
             raw=True)


shell().events.register("post_run_cell", after)
