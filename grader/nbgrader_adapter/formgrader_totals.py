"""formgrader's Manage Submissions with the course's totals: the late penalty and the total after it.

formgrader's Score column is nbgrader's sum of the cells' scores, before any late penalty, while ``grades.csv``, the
class report and the Canvas or Moodle export carry the total after it. This server extension (loaded with
``formgrader_guard``) answers ``GET /formgrader/api/course/totals/<assignment>`` with each learner's penalty and
total as the course's ``results.json`` has them (the grading output is the course root, as on the hub and in ``make
serve``), and ``static/course_formgrader/course_totals.js`` adds them to the page as two columns, "Late penalty" and
"Total". Where the grading service grades every submission (the hub: ``c.ProjectAutograde.sealed_only``, formgrader
running as an instructor who cannot seal kernels), the page says so in place of the Autograde button, which would
only refuse.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from jupyter_server.utils import url_path_join
from tornado import web

ROUTE = r"/formgrader/api/course/totals/([^/]+)"


def totals(root: Path, assignment: str) -> dict[str, dict]:
    """student -> {"penalty", "total", "max"} for ``assignment``, summed over its notebooks; a total is None while a
    notebook of it has none (an answer still to grade by hand, or no score). The max is the course's (autograded and
    hand-graded points), not formgrader's, which is 0 on a row nbgrader thinks is not autograded."""
    try:
        rows = json.loads((root / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found: dict[str, dict] = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or row.get("assignment_id") != assignment:
            continue
        mine = found.setdefault(str(row.get("student_id")), {"penalty": 0.0, "total": 0.0, "max": 0.0})
        mine["penalty"] = round(mine["penalty"] + float(row.get("late_penalty") or 0.0), 6)
        mine["max"] = round(mine["max"] + float(row.get("max_score") or 0.0) + float(row.get("manual_max_score") or 0.0), 6)
        total = row.get("total_score")
        mine["total"] = None if total is None or mine["total"] is None else round(mine["total"] + float(total), 6)
    return found


def service_grades(config) -> bool:
    """Whether formgrader's Autograde refuses here because the grading service grades (the hub's configuration)."""
    from grader.nbgrader_adapter.plugins import sealed_only

    return sealed_only(config) and os.geteuid() != 0


def handler():
    """The route's handler: formgrader's own base (its course folder and configuration, its login check)."""
    from nbgrader.server_extensions.formgrader.base import BaseHandler

    class TotalsHandler(BaseHandler):
        @web.authenticated
        def get(self, assignment: str):
            formgrader = self.settings["nbgrader_formgrader"]
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"students": totals(Path(self.coursedir.root), assignment),
                                    "service_grades": service_grades(formgrader.config)}))

    return TotalsHandler


def register(serverapp) -> None:
    webapp = serverapp.web_app
    webapp.add_handlers(".*$", [(url_path_join(webapp.settings["base_url"], ROUTE), handler())])
