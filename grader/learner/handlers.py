"""``POST /assignments/validate``: nbgrader's route and request, the course's honest answer.

The request is nbgrader's (``path`` as a query argument from the notebook toolbar, or a JSON body ``{"path": ...}``
from the Assignment List), checked as nbgrader checks it: the notebook must lie inside the server's root folder.
nbgrader's own ``Validator`` runs it (a fresh kernel, nbgrader's configuration, its cell-changed and type-changed
checks); ``KeepingValidator`` keeps the executed notebook, whose test cells' records and errors go to the course's
grading service (``report.ask``). A notebook whose locked cells changed gets nbgrader's answer unchanged.
"""
from __future__ import annotations

import asyncio
import json
import os
import threading
import traceback
from pathlib import Path

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

from grader.learner import report

ROUTE = r"/assignments/validate"
_ONE_AT_A_TIME = threading.Lock()  # nbgrader's Validator changes the process's working folder while it runs


def keeping_validator(config):
    """nbgrader's Validator, keeping the notebook its preprocessors executed in ``executed``."""
    from nbgrader.validator import Validator

    class KeepingValidator(Validator):
        executed = None

        def _preprocess(self, nb):
            nb = super()._preprocess(nb)
            self.executed = nb
            return nb

    return KeepingValidator(config=config)


def nbgrader_config():
    """nbgrader's configuration as its own Validate handler loads it (the working folder first, then Jupyter's
    configuration path: the learner's ``lab/learner/nbgrader_config.py``)."""
    from jupyter_core.paths import jupyter_config_path
    from nbgrader.apps import NbGrader

    paths = jupyter_config_path()
    paths.insert(0, os.getcwd())
    app = NbGrader()
    app.config_file_paths.append(paths)
    app.load_config_file()
    return app.config


def validate(fullpath: str) -> dict:
    """nbgrader's answer shape: {"success": bool, "value": result}; the result carries ``summary`` and titles."""
    from nbgrader.nbgraderformat import SchemaTooNewError, SchemaTooOldError

    try:
        with _ONE_AT_A_TIME:
            validator = keeping_validator(nbgrader_config())
            result = validator.validate(fullpath)
    except SchemaTooOldError:
        return {"success": False, "value": f"The notebook '{fullpath}' uses an old version of the nbgrader metadata "
                                           f"format. Please back up this notebook and then run: nbgrader update "
                                           f"{fullpath}"}
    except SchemaTooNewError:
        return {"success": False, "value": f"The notebook '{fullpath}' uses a newer version of the nbgrader metadata "
                                           "format than this nbgrader reads."}
    except Exception:  # noqa: BLE001 - nbgrader's handler answers any failure with its traceback, and so do we
        return {"success": False, "value": traceback.format_exc()}
    if "type_changed" in result or "changed" in result or validator.executed is None:
        return {"success": True, "value": result}  # nbgrader's own words: the notebook must be restored first
    tests = report.tested(validator.executed)
    assignment, course = Path(fullpath).parent.name, Path(fullpath).parent.parent.name  # ~/[COURSE/]ASSIGNMENT/
    service, why_not = report.ask(assignment, tests, course) if tests else (None, "this notebook has no autograded tests")
    return {"success": True, "value": report.dialog(tests, service, why_not, report.manual_answers(validator.executed),
                                                    report.cell_errors(validator.executed))}


class ValidateHandler(JupyterHandler):
    """nbgrader's ``ValidateAssignmentHandler``, answering with the course's summary."""

    @property
    def root_dir(self) -> str:
        return self.settings["root_dir"]

    def target(self, path: str) -> str:
        root = Path(self.root_dir).resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise web.HTTPError(403, "Access denied: path outside allowed directory")
        return str(target)

    @web.authenticated
    async def post(self):
        try:
            path = self.get_argument("path")
        except web.MissingArgumentError:
            body = self.get_json_body()
            path = body.get("path") if isinstance(body, dict) else None
        if not isinstance(path, str):
            raise web.HTTPError(400, "no notebook path")
        fullpath = self.target(path)
        output = await asyncio.get_running_loop().run_in_executor(None, validate, fullpath)
        self.finish(json.dumps(output))


def register(serverapp) -> None:
    serverapp.log.info("grader.learner: Validate answers with the course's summary (nbgrader's route); regrade "
                       "requests at /course/regrade")
    webapp = serverapp.web_app
    webapp.settings["root_dir"] = serverapp.root_dir  # as nbgrader's extensions set it
    base_url = webapp.settings["base_url"]
    from grader.learner.duedates import ROUTE as DUE_ROUTE, DueDatesHandler
    from grader.learner.regrade import ROUTE as REGRADE_ROUTE, RegradeHandler

    webapp.add_handlers(".*$", [(url_path_join(base_url, ROUTE), ValidateHandler),
                                (url_path_join(base_url, REGRADE_ROUTE), RegradeHandler),
                                (url_path_join(base_url, DUE_ROUTE), DueDatesHandler)])  # the Assignment List's dates
