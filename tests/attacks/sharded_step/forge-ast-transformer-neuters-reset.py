# scenario: a blank notebook registers an AST transformer that rewrites the grader's own silent reset (IPython applies ast_transformers to silent code too) into a no-op that reports success, so the reset never runs and nothing is flagged as not reset; the transformer stays active in the test cells and sets the quiz answer inside the quiz test (the learner never answered)
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
import ast as _ast


class _Neuter(_ast.NodeTransformer):
    def visit_Module(self, node):
        text = _ast.unparse(node)
        if "_hooks_snapshot" in text:  # the grader's reset: do nothing, successfully
            return _ast.parse("None")
        if "quiz.answer" in text:  # inside the quiz test cell
            node.body[:0] = _ast.parse("answer = 2").body
        return node


get_ipython().ast_transformers.append(_Neuter())
