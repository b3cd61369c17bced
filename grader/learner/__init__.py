"""The learner's JupyterLab server extension: an honest Validate, with the grader's named mistakes.

nbgrader's Validate button (the notebook toolbar, the Assignment List) POSTs to ``/assignments/validate``. This
extension serves that route in place of ``nbgrader.server_extensions.validate_assignment`` (``lab/learner/
jupyter_server_config.json``): it runs nbgrader's own ``Validator`` on the notebook (its cell-changed and
type-changed checks included), keeps the executed notebook, and sends each autograded test cell's records and error
to the course's grading service (``grader.service.validation``), which judges them with the assignment's rubric on
the visible records only. The answer says how many tests' visible checks fail, each failure in the grader's words,
and what was not checked. Nothing here judges, loads a rubric or reads ``source/``: the learner's side holds only
what the released notebook holds.

    handlers.py   the route, nbgrader's path checks, the Validator that keeps the executed notebook
    report.py     what a test cell recorded and raised; the dialog's summary, online and offline
    checks.py     the instructor's visible assertion message, quoted from the test cell's source
    duedates.py   the Assignment List's due dates (the learner's own, extension included), asked of the service

The dialog's wording (the count first, the failures by name, text never markup) comes from a checked copy of
nbgrader's labextension that ``python -m grader lab`` prepares (``grader/course/labextension.py``). The grading
service's address: ``COURSE_GRADING_URL`` (default ``http://127.0.0.1:47080/``; plain http only to loopback); on a
hub of several courses, ``COURSE_GRADING_URLS`` names each course's, and Validate asks the one of the course the
notebook lies under (``~/COURSE/ASSIGNMENT/``).
"""
from __future__ import annotations


def _jupyter_server_extension_points():
    return [{"module": "grader.learner"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from grader.learner.handlers import register

    register(serverapp)
