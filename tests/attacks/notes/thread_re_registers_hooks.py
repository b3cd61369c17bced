# scenario (documented limitation, not collected: see "What does not hold" in docs/explanation/security-model.md): a blank notebook starts a background thread that re-registers its AST transformer whenever the grader's reset removed it (every 0.5 ms); the reset runs, then the thread puts the transformer back before the test cell's own request is transformed, which sets the quiz answer inside the quiz test (1 point for a blank notebook, and nothing flagged but get_ipython). A thread can as well publish records itself while a test cell runs, so only running test cells outside IPython's transformers and checking the hooks after each test would close this
# base: student
# expect-status: suspicious
# expect-fail: test-loss-and-gradient test-update test-placement test-ten-steps test-transfer test-quiz
# %% cell train-step
import ast as _ast, threading as _threading, time as _time


class _Inject(_ast.NodeTransformer):
    def visit_Module(self, node):
        if "quiz.answer" in _ast.unparse(node):
            node.body[:0] = _ast.parse("answer = 2").body
        return node


_t = _Inject()
_shell = get_ipython()


def _keep():
    while True:
        if _t not in _shell.ast_transformers:
            _shell.ast_transformers.append(_t)
        _time.sleep(0.0005)


_threading.Thread(target=_keep, daemon=True).start()
