"""``GET /course/duedates``: the learner's own due dates, for the Assignment List, from the grading service.

The Assignment List (nbgrader's, in the course's checked copy: ``grader/course/labextension.py``) asks this route
once per refresh and shows each assignment's line under its name: "Due Sun 2026-12-20 17:00 UTC", "Extended for
you until ... (the class's due date: ...)" or "No due date". The learner's server holds neither the gradebook nor
the course root, so it asks the grading service (``GET /duedates``, ``grader.service.accommodations.mine``) as
Validate does (``report.service_url``, the hub's token for the service where the server has one): the service tells
whose dates to answer from the connection or the token, never from anything this route sends, so a learner's server
can only ever show that learner's own extension.

To the learner's own JupyterLab (the server's token or cookie; anyone else gets 403) the answer is 200:
``{"assignments": {name: {"said": ...}}}``, or ``{"error": sentence}`` when the service cannot be asked (the list then
says the due dates cannot be shown now). Only the service's sentences pass, and the list writes them as text.
"""
from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request

from jupyter_server.base.handlers import APIHandler
from tornado import web

from grader.learner import report

ROUTE = r"/course/duedates"
TIMEOUT_S = 10
MAX_ANSWER_BYTES = 256 * 1024
MAX_SAID_CHARS = 300
UNAVAILABLE = "Due dates cannot be shown now: the grading service does not answer"


def ask() -> dict:
    """The service's answer for this server's account, reduced to each assignment's sentence; or an ``error``."""
    try:
        url = urllib.parse.urljoin(report.service_url(), "duedates")
    except ValueError as refused:
        return {"error": f"{UNAVAILABLE} ({refused})"}
    request = urllib.request.Request(url, headers=report.token_headers())
    tls = report.tls_context(url)  # https to another host: verified against the site's CA
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=tls) as response:
            answer = json.loads(response.read(MAX_ANSWER_BYTES + 1)[:MAX_ANSWER_BYTES])
    except urllib.error.HTTPError as refused:
        return {"error": f"Due dates cannot be shown now: the grading service refused ({refused.code})"}
    except (OSError, ValueError):
        return {"error": UNAVAILABLE}
    listed = answer.get("assignments") if isinstance(answer, dict) else None
    if not isinstance(listed, dict):
        return {"error": UNAVAILABLE}
    return {"assignments": {str(name): {"said": entry["said"][:MAX_SAID_CHARS]} for name, entry in listed.items()
                            if isinstance(entry, dict) and isinstance(entry.get("said"), str)}}


class DueDatesHandler(APIHandler):
    """The learner's own due dates, asked of the service as the account this server runs as."""

    @web.authenticated
    async def get(self):
        answer = await asyncio.get_running_loop().run_in_executor(None, ask)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps(answer))
