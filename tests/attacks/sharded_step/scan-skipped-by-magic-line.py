# scenario: forge-hooks-snapshot-replaced with one IPython line magic (%xmode Plain) on top of the cell: grader/submission/scan.py's ast.parse fails on the magic and the whole cell is skipped as 'not Python', so nothing is flagged and the forged quiz record earns its point under status graded, with no review flag
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
%xmode Plain
get_ipython()._hooks_snapshot = lambda: None  # grader.kernel.hooks.RESTORE now restores nothing
import ast as _ast

import coursekit.record as _recorder
from IPython.display import display as _display


def _publish(key, value):
    _display({_recorder.MIME_TYPE: {"key": key, "value": _recorder.encode(value)}}, raw=True)


def _after(result):
    if "quiz.answer" in result.info.raw_cell:
        _publish("quiz.answer", 2)


def _before(info):
    if "lesson.loss" in info.raw_cell:
        _publish("lesson.loss", 4.875)


class _Inject(_ast.NodeTransformer):  # the ten-steps test crashes before recording: supply its record
    def visit_Module(self, node):
        node.body[:0] = _ast.parse("if 'lesson.trajectory' in In[-1]: _publish('lesson.trajectory', "
                                   "[[0.0, 0.0]] * 11)").body
        return node


get_ipython().events.register("post_run_cell", _after)
get_ipython().events.register("pre_run_cell", _before)
get_ipython().ast_transformers.append(_Inject())
