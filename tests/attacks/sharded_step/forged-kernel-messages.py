# scenario: a correct notebook whose kernel signs and sends malformed messages (truncated JSON, a 5,000-digit integer, deep nesting, a lone surrogate, an execution count quoting hidden-test source) hoping for a grader error that shows hidden tests, or an unrenderable notebook
# base: solution
# expect-status: suspicious graded
# expect-fail:
# %% append test-loss-and-gradient
import sys
_kernel = get_ipython().kernel
_parent = _kernel.get_parent()
for _content in [b'{"data": {"text/plain": "ok"', b'{"data": {}, "metadata": {"n": ' + b"9" * 5000 + b"}}",
                 b"[" * 100000 + b"]" * 100000, b'{"name": "stdout", "text": "x\\ud800y"}']:
    _kernel.session.send(_kernel.iopub_socket, "display_data", content=_content, parent=_parent)
    _kernel.session.send(_kernel.iopub_socket, "stream", content=_content, parent=_parent)
_hidden = [s for s in In if "BEGIN HIDDEN" in s]
_leak = _hidden[-1][_hidden[-1].find("HIDDEN"):] if _hidden else "HIDDEN"
sys.stdout.session.send(sys.stdout.pub_thread, "execute_result",
                        {"data": {}, "metadata": {}, "execution_count": _leak}, parent=sys.stdout.parent_header)
sys.stdout.session.send(sys.stdout.pub_thread, "stream", {"name": "stdout", "text": ["not", 1]},
                        parent=sys.stdout.parent_header)
