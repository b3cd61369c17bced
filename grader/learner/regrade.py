"""``/course/regrade``: the learner's regrade request, as a page of their own JupyterLab server.

The Assignment List links here ("ask for a regrade", beside "view feedback": ``grader/course/labextension.py``), and
the feedback page names it. The page is a plain form: the assignment, one of its tests (read from the learner's own
copy of the notebook: the autograded test cells' ids), and the reason (at most ``MAX_REASON`` characters). Sending
it makes the same request as ``python -m grader appeal`` from the server's own process, so the grading service
records it in the name of the Unix account this server runs as (``grader.service.appeals``): a page of one
learner's server can only ever ask in that learner's name. Below the form: the learner's requests and their answers.

Everything a learner or the service wrote is escaped (``html.escape``) before it reaches the page; the form carries
the server's ``_xsrf`` token like every form of Jupyter's. Nothing here judges or reads a rubric: the service checks
the test against the attempt that counts, and answers with the sentence shown.
"""
from __future__ import annotations

import html
import http.client
import json
import os
import ssl
import urllib.parse
from pathlib import Path

import nbformat
from jupyter_server.base.handlers import JupyterHandler
from tornado import web

from grader import cells
from grader.learner.report import (DEFAULT_PORT, URL_VARIABLE, course_ids, is_loopback_host, service_url,
                                   tls_context, token_headers)

test_name = cells.test_name

ROUTE = r"/course/regrade"
MAX_REASON = 2000  # characters, as the service keeps (grader.service.appeals.MAX_REASON)
TIMEOUT_S = 15


def service_address(default_port: int = DEFAULT_PORT, course: str | None = None) -> str:
    """The grading service as this server knows it: ``COURSE_GRADING_URL`` (set by the hub for every learner's server
    and its terminals and kernels: plain http on this machine, https to another host; on a hub of several courses,
    ``course``'s), else the course's port here."""
    if os.environ.get(URL_VARIABLE, "").strip():
        return service_url(course)  # raises ValueError for a URL that may not carry the token (plain http off this host)
    return f"http://127.0.0.1:{default_port}/"


def send(url: str, assignment: str | None, test: str | None = None, reason: str | None = None) -> tuple[int, dict]:
    """A regrade request (``assignment`` given) or the list of this account's requests, from this process's account
    (with the hub's token for the service, where the server has one). Returns the service's status and answer;
    raises ``OSError`` or ``ValueError`` when it does not answer."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":  # verified against the site's CA (COURSE_GRADING_CA) and the host's name
        connection = http.client.HTTPSConnection(parts.hostname, parts.port or 443, timeout=TIMEOUT_S,
                                                 context=tls_context(url))
    elif parts.hostname and is_loopback_host(parts.hostname):
        connection = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=TIMEOUT_S)
    else:
        raise ValueError(f"{url}: plain http only to this machine")
    headers = token_headers()  # over TLS, or to this machine only (above)
    base = parts.path.rstrip("/")
    try:
        if assignment is None:
            connection.request("GET", f"{base}/appeals", headers=headers)
        else:
            connection.request("POST", f"{base}/appeal", json.dumps({"assignment": assignment, "test": test,
                                                                     "reason": reason or ""}),
                               {"Content-Type": "application/json", **headers})
        response = connection.getresponse()
        answer = json.loads(response.read(64 * 1024) or b"{}")
        return response.status, answer if isinstance(answer, dict) else {}
    finally:
        connection.close()


def tests_of(root: Path, assignment: str) -> list[tuple[str, str]]:
    """(grade id, the test's name) of each autograded test cell in the learner's copy of ``assignment``."""
    found: list[tuple[str, str]] = []
    folder = root / assignment
    for path in sorted(folder.glob("*.ipynb"))[:10] if folder.is_dir() else []:
        try:
            notebook = nbformat.read(path, as_version=4)
        except Exception:  # noqa: BLE001 - a notebook the learner broke offers no tests; the form says so
            continue
        for cell in notebook.get("cells", []):
            if cells.is_autograded_test(cell) and (gid := cells.grade_id(cell)) and gid not in dict(found):
                found.append((gid, f"The {test_name(gid)} test"))
    return found


def assignments_in(root: Path) -> list[str]:
    """The learner's fetched assignments: folders of the server's root that hold a notebook, and on a hub of several
    courses ``COURSE/ASSIGNMENT`` for those in a course's folder."""
    found = []
    for folder, prefix in ((root, ""), *((root / course, f"{course}/") for course in course_ids())):
        try:
            found += sorted(prefix + p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")
                            and any(p.glob("*.ipynb")))
        except OSError:
            continue
    return found[:50]


def course_and_assignment(chosen: str) -> tuple[str | None, str]:
    """``COURSE/ASSIGNMENT`` (a course's folder on a hub of several courses) as (course, assignment); else (None,
    the name as it is)."""
    course, _, assignment = chosen.rpartition("/")
    return (course, assignment) if course in course_ids() else (None, chosen)


STYLE = """body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}
label{display:block;font-weight:600;margin-top:1rem}select,textarea{font:inherit;width:100%;box-sizing:border-box}
button{font:inherit;margin-top:1rem;padding:.4rem 1.2rem}.said{border-left:4px solid #2f6f3e;padding:.3rem .8rem}
.refused{border-left:4px solid #a4262c;padding:.3rem .8rem}li{margin:.4rem 0}"""


def page(*, xsrf: str, assignments: list[str], assignment: str, tests: list[tuple[str, str]], test: str,
         said: str = "", refused: bool = False, requests: list[dict] | None = None, unreachable: str = "") -> str:
    e = html.escape
    options = lambda items, chosen: "".join(  # noqa: E731
        f'<option value="{e(value)}"{" selected" if value == chosen else ""}>{e(text)}</option>' for value, text in items)
    lines = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f'<title>Ask for a regrade</title><style>{STYLE}</style></head><body><main>',
             '<h1>Ask for a regrade</h1>',
             '<p>If you think a test graded your answer wrongly, say which test and why. Your instructor reads your '
             'answer, the test\'s message and your reason, and answers; the answer comes with your feedback (Fetch '
             'Feedback in the Assignment List) and is listed below. You can ask about each test once at a time, '
             'and about three tests per assignment.</p>']
    if said:
        lines.append(f'<p role="status" class="{"refused" if refused else "said"}">{e(said)}</p>')
    lines += ['<form method="post">', xsrf,
              '<label for="assignment">Assignment</label>',
              f'<select id="assignment" name="assignment" required>{options([(a, a) for a in assignments], assignment)}'
              '</select>',
              '<label for="test">Test</label>']
    if tests:
        lines.append(f'<select id="test" name="test" required>'
                     f'{options([(g, f"{name} ({g})") for g, name in tests], test)}</select>')
    else:
        lines.append('<input id="test" name="test" required aria-describedby="no-tests" style="width:100%">'
                     '<p id="no-tests">Your copy of this assignment has no tests to choose from: type the test\'s '
                     'id as your feedback page shows it (for example test-update).</p>')
    lines += ['<label for="reason">Why you think the test is wrong</label>',
              f'<textarea id="reason" name="reason" rows="6" maxlength="{MAX_REASON}" required '
              'aria-describedby="reason-limit"></textarea>',
              f'<p id="reason-limit">At most {MAX_REASON:,} characters. Your instructor reads it as plain text.</p>',
              '<button type="submit">Send the request</button></form>',
              '<h2>Your requests</h2>']
    if unreachable:
        lines.append(f'<p>{e(unreachable)}</p>')
    elif requests:
        lines.append("<ul>" + "".join(f"<li>{e(str(r.get('assignment', '')))}: {e(str(r.get('said', '')))}</li>"
                                      for r in requests) + "</ul>")
    else:
        lines.append("<p>None yet.</p>")
    lines.append("</main></body></html>")
    return "\n".join(lines)


class RegradeHandler(JupyterHandler):
    """The form (GET) and the request it sends (POST), both as the account this server runs as."""

    def _show(self, assignment: str, test: str = "", said: str = "", refused: bool = False) -> None:
        root = Path(self.settings["root_dir"])
        assignments = assignments_in(root)
        if assignment not in assignments:  # the Assignment List's link names the assignment; its course folder first
            assignment = next((a for a in assignments if a.endswith(f"/{assignment}")),
                              assignments[0] if assignments else "")
        try:
            url = service_address()
            status, answer = send(url, None)
            requests, unreachable = (answer.get("appeals", []) if status == 200 else []), ""
        except (OSError, ValueError) as error:
            requests, unreachable = [], (f"The grading service does not answer ({_why(error)}); your requests are "
                                         "listed here once it does.")
        self.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                                   "frame-ancestors 'self'")
        self.finish(page(xsrf=self.xsrf_form_html(), assignments=assignments, assignment=assignment,
                         tests=tests_of(root, assignment) if assignment else [], test=test, said=said,
                         refused=refused, requests=requests, unreachable=unreachable))

    @web.authenticated
    def get(self):
        self._show(self.get_argument("assignment", ""), self.get_argument("test", ""))

    @web.authenticated
    def post(self):
        assignment = self.get_argument("assignment", "")[:200]
        test = self.get_argument("test", "")[:200]
        reason = self.get_argument("reason", "")
        if not assignment or not test or not reason.strip():
            return self._show(assignment, test, "Choose the assignment and the test, and say why you think the "
                                                "test is wrong.", refused=True)
        if len(reason) > MAX_REASON:
            return self._show(assignment, test, f"Your reason is {len(reason):,} characters long; shorten it to at "
                                                f"most {MAX_REASON:,}.", refused=True)
        course, name = course_and_assignment(assignment)
        try:
            status, answer = send(service_address(course=course), name, test, reason)
        except (OSError, ValueError) as error:
            return self._show(assignment, test, f"The grading service does not answer ({_why(error)}), so nothing "
                                                "was sent; try again later.", refused=True)
        if status == 200:
            return self._show(assignment, "", str(answer.get("said", "Your request is recorded.")))
        return self._show(assignment, test, f"Not recorded: {answer.get('error', f'the service answered {status}')}",
                          refused=True)


def _why(error: Exception) -> str:
    """Why the service did not answer, in a few words a learner can pass on (never a traceback)."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return "its certificate is not the site's: tell your instructor"
    return f"{URL_VARIABLE}: {error}" if isinstance(error, ValueError) else f"{type(error).__name__}"
