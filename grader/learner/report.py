"""What each test cell of an executed notebook recorded and raised, and the Validate dialog's words for it.

``tested`` reads, per autograded test cell of the notebook nbgrader's Validator executed, its grade id, points,
the record outputs (``coursekit.record`` publishes them under ``MIME_TYPE``) and the error it raised. ``ask``
sends them to the course's grading service (``POST /validate``) and returns its verdicts, or None when no service
answers. ``dialog`` turns both into the JSON nbgrader's Validate dialog renders: a summary that counts the failing
tests first and says what was not checked, and one entry per failing test headed by its name and points, holding the
grader's message (or, without the service, the instructor's own assertion message), never the test's source.
"""
from __future__ import annotations

import ipaddress
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request

from grader import cells, raised
from grader.visible_checks import visible_check

MIME_TYPE = "application/vnd.jax-course.record+json"
#: The grading service's port on the instructor's machine, unless ``COURSE_GRADING_URL`` says otherwise.
DEFAULT_PORT = 47080  # python -m grader serve --port (grader/service/app.py)
DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}/"
URL_VARIABLE = "COURSE_GRADING_URL"
#: On a hub of several courses: each course's service, ``{course id: URL}`` as JSON (``grader.hub.courses``).
URLS_VARIABLE = "COURSE_GRADING_URLS"
#: The CA file an https ``COURSE_GRADING_URL`` is verified with (the site's; default: the system's CAs).
CA_VARIABLE = "COURSE_GRADING_CA"
#: The token the hub issued this server's user for the grading service alone (``grader.hub.jupyterhub_config``): sent
#: with each request, so the service can ask the hub whose it is (``grader.service.identity``), even from another host.
TOKEN_VARIABLE = "COURSE_GRADING_TOKEN"
TIMEOUT_S = 60.0
MAX_ANSWER_BYTES = 1024 * 1024
MAX_MESSAGE_CHARS = 2000
VERDICTS = {"fails", "visible_pass", "after_submit", "passes"}
NO_SERVICE = ("The named diagnoses need the course's grading service ({why}): only the test cells' own visible "
              "assertions ran here, so a test can pass them and still fail when graded.")


def not_checked(manual: int, quiz: bool) -> str:
    """Without the service: what is graded only after submission, from what the learner's notebook shows."""
    parts = ["The hidden cases (batches you have not seen, your programs run by the grader)"]
    parts += ["the written answer" + ("s" if manual != 1 else "")] if manual else []
    parts += ["the quiz's correctness"] if quiz else []
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{said} are graded after you submit."


def tested(notebook) -> list[dict]:
    """Per autograded test cell, in order: grade_id, points, source, records (payloads), error (or None)."""
    found = []
    for cell in notebook.get("cells", []):
        if not cells.is_autograded_test(cell):
            continue
        records, error = [], None
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind == "error" and error is None:
                error = {"ename": str(output.get("ename", "")),
                         "traceback": [str(line) for line in output.get("traceback", [])]}
            elif kind in ("display_data", "execute_result"):
                payload = (output.get("data") or {}).get(MIME_TYPE)
                if payload is not None:
                    records.append(payload)
        found.append({"grade_id": cells.grade_id(cell), "points": cells.points(cell), "source": str(cell.source),
                      "records": records, "error": error,
                      "ran": cell.get("execution_count") is not None or bool(cell.get("outputs"))})
    return found


SHOWN_CELLS = 6


def _cell_name(cell, index: int) -> str:
    gid = cells.grade_id(cell) if isinstance(cell.get("metadata"), dict) and "nbgrader" in cell["metadata"] else ""
    return gid.replace("-", " ") if gid else f"cell {index + 1}"


def _listed(names: list[str]) -> str:
    shown = names[:SHOWN_CELLS]
    more = f" and {len(names) - len(shown)} more" if len(names) > len(shown) else ""
    return (", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 and not more else ", ".join(shown)) + more


def cell_errors(notebook) -> dict:
    """The TODO cells that still raise ``NotImplementedError`` (not solved yet), and the other code cells, not
    tests, that raised an error: what a learner must fix first, since the tests after them fail because of it."""
    unsolved, others, meaning = [], [], None
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code" or cells.is_autograded_test(cell):
            continue
        error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
        if error is None:
            continue
        solution = bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))
        if solution and error.get("ename") == "NotImplementedError":
            unsolved.append(_cell_name(cell, index))
        else:
            others.append(_cell_name(cell, index))
            meaning = meaning or (raised.meaning(error) and f"{others[-1]} {raised.raised(error)}")
    return {"unsolved": unsolved, "other_errors": others, "first_error": meaning}


def _cell_lines(problems: dict | None) -> list[str]:
    lines = []
    if problems and problems.get("unsolved"):
        names = problems["unsolved"]
        lines.append(f"Not solved yet: the TODO cell{'s' if len(names) > 1 else ''} {_listed(names)} "
                     f"still raise{'s' if len(names) == 1 else ''} NotImplementedError (write your code in place of "
                     "`raise NotImplementedError()`); the tests after a TODO fail until it is solved.")
    if problems and problems.get("other_errors"):
        names = problems["other_errors"]
        lines.append(f"{len(names)} other cell{'s' if len(names) > 1 else ''} of the notebook raised an error: "
                     f"{_listed(names)} (the error is shown under each cell when you run the notebook)."
                     + (f" The first: {problems['first_error']}." if problems.get("first_error") else ""))
    return lines


def manual_answers(notebook) -> int:
    return sum(cells.is_manual_answer(cell) for cell in notebook.get("cells", []))


def service_url(course: str | None = None) -> str:
    """The grading service's address: the service of ``course`` where ``COURSE_GRADING_URLS`` names one (a hub of
    several courses), else ``COURSE_GRADING_URL``, or the course's port on this machine's loopback.

    Only http(s) URLs. A plain-http URL must name a loopback address: the records sent are the learner's own
    work, and the verdicts are trusted on screen, so over a network the service must be reached with TLS."""
    url = os.environ.get(URL_VARIABLE, "").strip() or DEFAULT_URL
    if course:
        try:
            by_course = json.loads(os.environ.get(URLS_VARIABLE, "") or "{}")
        except ValueError:
            by_course = {}
        if isinstance(by_course, dict) and isinstance(by_course.get(course), str):
            url = by_course[course].strip()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{URL_VARIABLE} must be an http(s) URL")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise ValueError(f"{URL_VARIABLE}: plain http only to this machine (127.0.0.1, ::1, localhost); use https")
    return url


def course_ids() -> list[str]:
    """The courses of ``COURSE_GRADING_URLS`` (a hub of several courses: each one's notebooks under ``~/COURSE/``)."""
    try:
        by_course = json.loads(os.environ.get(URLS_VARIABLE, "") or "{}")
    except ValueError:
        return []
    return sorted(k for k in by_course if isinstance(k, str) and k) if isinstance(by_course, dict) else []


def tls_context(url: str) -> ssl.SSLContext | None:
    """How an https service URL is verified: against ``COURSE_GRADING_CA`` (the hub sets it to the site's CA), else
    the system's CAs; the host name always checked. None for http (loopback only: ``service_url``)."""
    if urllib.parse.urlsplit(url).scheme != "https":
        return None
    return ssl.create_default_context(cafile=os.environ.get(CA_VARIABLE, "").strip() or None)


def token_headers() -> dict[str, str]:
    """The ``Authorization`` header with the hub's token for the service, where this server has one (sent only where
    ``service_url`` allows: over TLS, or to this machine)."""
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    return {"Authorization": f"token {token}"} if token else {}


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ask(assignment: str, tests: list[dict], course: str | None = None) -> tuple[dict | None, str]:
    """The service's verdicts by grade id (None when it gave none), and why not; ``course``: the course the notebook
    lies under (``service_url``)."""
    try:
        url = urllib.parse.urljoin(service_url(course), "validate")
    except ValueError as refused:
        return None, str(refused)
    body = json.dumps({"assignment": assignment, "tests": [
        {"grade_id": t["grade_id"], "records": t["records"], "error": t["error"]} for t in tests]}).encode()
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json", **token_headers()})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=tls_context(url)) as response:
            answer = json.loads(response.read(MAX_ANSWER_BYTES + 1)[:MAX_ANSWER_BYTES])
    except urllib.error.HTTPError as refused:
        return None, f"it refused the request ({refused.code})"
    except (OSError, ValueError):
        return None, f"none answered at {url}"
    verdicts = {}
    for test in answer.get("tests", []) if isinstance(answer, dict) else []:
        if isinstance(test, dict) and test.get("verdict") in VERDICTS and isinstance(test.get("message"), str) \
                and isinstance(test.get("grade_id"), str):
            verdicts[test["grade_id"]] = {"verdict": test["verdict"], "message": test["message"][:MAX_MESSAGE_CHARS]}
    later = answer.get("later") if isinstance(answer, dict) else None
    if not isinstance(later, str):
        return None, "its answer did not say what it left for after you submit"
    return {"tests": verdicts, "later": later[:MAX_MESSAGE_CHARS]}, ""


test_name = cells.test_name


def _points(points: float) -> str:
    shown = int(points) if float(points).is_integer() else points
    return f"{shown} point{'s' if points != 1 else ''}"


def _local(test: dict) -> dict:
    """Without the service: whether the cell's own assertions failed, in the instructor's words."""
    if not test["ran"]:
        return {"verdict": "fails", "message": "did not run: the notebook stopped before this test"}
    if test["error"] is None:
        return {"verdict": "visible_pass", "message": "the visible assertions pass"}
    said = visible_check(test["source"], test["error"])
    return {"verdict": "fails", "message": said or f"the test cell {raised.raised(test['error'])}"}


def dialog(tests: list[dict], service: dict | None, why_not: str, manual: int, problems: dict | None = None) -> dict:
    """nbgrader's Validate result (``failed`` entries), with ``summary`` and per-failure ``title``; ``problems``
    (``cell_errors``): the unsolved TODO cells and other cells that raised, said right after the count."""
    verdicts = []
    for test in tests:
        said = (service or {}).get("tests", {}).get(test["grade_id"]) if service else None
        if said is None or not test["ran"]:
            said = _local(test)
        elif test["error"] is not None and said["verdict"] != "fails":  # the service heard the error; be sure
            said = _local(test)
        verdicts.append((test, said))
    failing = [(t, s) for t, s in verdicts if s["verdict"] == "fails"]
    total = len(tests)
    lines = [f"{len(failing)} of {total} visible checks fail." if failing else
             f"No visible check fails (of {total})."]
    lines += _cell_lines(problems)
    for test, said in verdicts:
        if said["verdict"] == "after_submit":
            lines.append(f"The {test_name(test['grade_id'])} test ({_points(test['points'])}): {said['message']}.")
    if service is None:
        lines.append(NO_SERVICE.format(why=why_not))
        lines.append(not_checked(manual, any("quiz" in t["grade_id"] for t in tests)))
    else:
        lines.append(service["later"])
    result = {"summary": "\n".join(lines)}
    if failing:
        result["failed"] = [{
            "title": f"The {test_name(t['grade_id'])} test ({_points(t['points'])}) fails:",
            "source": s["message"],
            "error": "",
            "raw_error": s["message"],
        } for t, s in failing]
    return result
