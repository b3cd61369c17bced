# scenario: a blank notebook registers a text/plain printer for None (IPython's display formatter, a documented extension point the reset did not put back); the grader's reset is a user expression whose value (None) IPython formats after the reset ran, so the printer re-registers the learner's AST transformer just before the test cell, which sets the quiz answer inside the quiz test; the reset now also puts the display formatters back
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
import ast as _ast


class _Inject(_ast.NodeTransformer):
    def visit_Module(self, node):
        if "quiz.answer" in _ast.unparse(node):
            node.body[:0] = _ast.parse("answer = 2").body
        return node


_t = _Inject()
_shell = get_ipython()


def _printer(value, printer, cycle):
    if _t not in _shell.ast_transformers:
        _shell.ast_transformers.append(_t)
    printer.text("None")


_shell.display_formatter.formatters["text/plain"].singleton_printers[id(None)] = _printer
