"""Two courses on one hub (issue 56, item 4): ``python -m grader hub --course ID:ROSTER:GRADERS``.

What separates the courses is configuration, checked here without starting a hub: each course its own root, groups,
grading service (port, course id, gradebook, members) and formgrader; no course's staff the hub's admin; a learner's
Validate sent to the service of the course the notebook lies under; a course's service refusing (403) every account
outside its groups, Validate included. ``tests/test_hub.py`` runs the same on a real hub with a second course: a
learner of both sees both, and a grader of one is refused by the other's formgrader, service and files.
"""
from __future__ import annotations

import contextlib
import grp
import json
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import threading
import types
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from grader.hub import courses
from test_hub import _configured

SECOND = "jax-second"


def _second(tmp_path: Path, *graders: str) -> tuple[courses.Course, courses.Course]:
    roster = tmp_path / "second.csv"
    roster.write_text("id,first_name,last_name,email,lms_user_id\nada,Ada,L,,\n", encoding="utf-8")
    hub = courses.first("xyz", Path("/c"), 4)
    return hub, courses.others([f"{SECOND}:{roster}:{','.join(graders or ('grader2',))}"], hub, Path("/srv/t"))[0]


def test_a_further_course_has_its_own_root_groups_and_service(tmp_path):
    hub, second = _second(tmp_path, "grader2", "ta3")
    assert (hub.learners, hub.graders, hub.service, hub.port) == ("jdt-learners", "jdt-graders", "grading", 4)
    assert second.root == Path("/srv/t/courses") / SECOND and second.port == hub.port + 1
    assert (second.learners, second.graders) == (f"jdt-{SECOND}-learners", f"jdt-{SECOND}-graders")
    assert second.instructor == "grader2" and second.staff == ("grader2", "ta3") and second.service == f"grading-{SECOND}"
    assert [(a.name, a.groups) for a in courses.staff_accounts([second])] == [
        ("grader2", (second.graders,)), ("ta3", (second.graders,))]
    roster = tmp_path / "second.csv"
    for spec, said in ((f"{SECOND}:{roster}", "ID:ROSTER:GRADERS"), (f"Jax:{roster}:g", "not a course id"),
                       (f"{'a' * 20}:{roster}:g", "not a course id"), (f"xyz:{roster}:g", "taken on this hub"),
                       (f"{SECOND}:{tmp_path / 'none.csv'}:g", "is not a file"),
                       (f"{SECOND}:{roster}:g;rm", "not an account name")):
        with pytest.raises(courses.CourseRefused, match=said):
            courses.others([spec], hub, Path("/srv/t"))
    with pytest.raises(courses.CourseRefused, match="taken on this hub"):
        courses.others([f"{SECOND}:{roster}:g", f"{SECOND}:{roster}:h"], hub, Path("/srv/t"))
    # the learners' nbgrader: one course, its id (as before); several, each one's notebooks under ~/COURSE/
    assert courses.learner_exchange_config([hub]) == "c.CourseDirectory.course_id = 'xyz'\n"
    assert "path_includes_course = True" in courses.learner_exchange_config([hub, second])
    assert "course_id" not in courses.learner_exchange_config([hub, second])


def _groups(monkeypatch, member_of: dict[str, set[str]]) -> None:
    """The machine's groups as the hub's configuration reads them: ``member_of`` {account: its groups' names}."""
    gids = {name: 5000 + i for i, name in enumerate(sorted({g for gs in member_of.values() for g in gs} |
                                                            {"jdt-graders", f"jdt-{SECOND}-graders"}))}
    monkeypatch.setattr(grp, "getgrnam", lambda name: types.SimpleNamespace(gr_gid=gids[name]) if name in gids
                        else (_ for _ in ()).throw(KeyError(name)))
    monkeypatch.setattr(pwd, "getpwnam", lambda name: types.SimpleNamespace(pw_gid=1) if name in member_of
                        else (_ for _ in ()).throw(KeyError(name)))
    monkeypatch.setattr(os, "getgrouplist", lambda name, gid: [gid, *(gids[g] for g in member_of[name])])


def test_each_course_gets_its_own_service_and_formgrader_and_no_staff_is_the_hubs_admin(tmp_path, monkeypatch):
    hub, second = _second(tmp_path)
    first = {**hub.settings(), "learners": "a", "graders": "b"}  # the groups _configured's settings name
    config = _configured(tmp_path, monkeypatch, ["--cull-idle", "0"], courses=[first, second.settings()])
    services = {s["name"]: s["command"] for s in config.JupyterHub.services}
    assert list(services) == ["grading", f"grading-{SECOND}"]

    def option(command, name):
        return command[command.index(name) + 1]

    for name, course in (("grading", first), (f"grading-{SECOND}", second.settings())):
        command = services[name]
        assert option(command, "--course-id") == course["id"] and option(command, "--out") == course["root"]
        assert option(command, "--gradebook") == f"sqlite:///{course['root']}/gradebook.db"
        assert option(command, "--port") == str(course["port"])
        assert option(command, "--members") == f"{course['learners']},{course['graders']}"
    assert config.PAMAuthenticator.allowed_groups == {"a", "b", "c", second.learners, second.graders}
    assert config.PAMAuthenticator.admin_groups == set()  # an admin opens every server: no course's staff is one
    alone = _configured(tmp_path, monkeypatch, ["--cull-idle", "0"])
    assert alone.PAMAuthenticator.admin_groups == {"c"} and "COURSE_GRADING_URLS" not in alone.Spawner.environment
    assert "--members" in alone.JupyterHub.services[0]["command"]  # one course's service: its own members too
    environment = config.Spawner.environment
    assert environment["COURSE_GRADING_URL"] == "http://127.0.0.1:4/"
    assert json.loads(environment["COURSE_GRADING_URLS"]) == {"xyz": "http://127.0.0.1:4/",
                                                              SECOND: "http://127.0.0.1:5/"}
    # each grader's server opens on their own course's root and service; a learner's on their home, with their
    # (first) course's service for the Assignment List's due dates and regrade requests
    _groups(monkeypatch, {"grader2": {second.graders}, "instructor": {"b", "c"}, "ada": {"a", second.learners},
                          "chen": {second.learners}})
    opened = {}
    for name in ("grader2", "instructor", "ada", "chen"):
        user = types.SimpleNamespace(name=name, new_api_token=lambda **kw: "t0ken")
        spawner = types.SimpleNamespace(user=user, environment=dict(environment), notebook_dir="~",
                                        default_url="/lab", log=None)
        config.Spawner.pre_spawn_hook(spawner)
        opened[name] = (spawner.notebook_dir, spawner.environment.get("COURSE_ROOT"),
                        spawner.environment["COURSE_GRADING_URL"])
    assert opened == {"grader2": (str(second.root), str(second.root), "http://127.0.0.1:5/"),
                      "instructor": ("/c", "/c", "http://127.0.0.1:4/"), "ada": ("~", None, "http://127.0.0.1:4/"),
                      "chen": ("~", None, "http://127.0.0.1:5/")}  # a learner of the second course only: its service


def test_validate_asks_the_service_of_the_course_the_notebook_lies_under(monkeypatch):
    from grader.learner import handlers, report

    monkeypatch.setenv("COURSE_GRADING_URL", "http://127.0.0.1:4/")
    monkeypatch.setenv("COURSE_GRADING_URLS", json.dumps({"x": "http://127.0.0.1:4/", SECOND: "http://127.0.0.1:5/"}))
    assert report.service_url(SECOND) == "http://127.0.0.1:5/"
    assert report.service_url("ada") == report.service_url(None) == "http://127.0.0.1:4/"  # ~/ASSIGNMENT/: the hub's
    monkeypatch.setenv("COURSE_GRADING_URLS", json.dumps({SECOND: "http://10.0.0.9:5/"}))
    with pytest.raises(ValueError, match="plain http only to this machine"):  # a course's URL checked as the one URL
        report.service_url(SECOND)
    monkeypatch.setenv("COURSE_GRADING_URLS", json.dumps({"x": "http://127.0.0.1:4/", SECOND: "http://127.0.0.1:5/"}))
    asked = []

    class Validator:
        executed = object()

        def validate(self, path):
            return {}

    monkeypatch.setattr(handlers, "nbgrader_config", lambda: None)
    monkeypatch.setattr(handlers, "keeping_validator", lambda config: Validator())
    monkeypatch.setattr(report, "tested", lambda notebook: [{"grade_id": "test-loss"}])
    monkeypatch.setattr(report, "ask", lambda assignment, tests, course=None: asked.append((assignment, course)) or
                        (None, "asked"))
    monkeypatch.setattr(report, "manual_answers", lambda notebook: 0)
    monkeypatch.setattr(report, "cell_errors", lambda notebook: {})
    monkeypatch.setattr(report, "dialog", lambda *args: {})
    handlers.validate(f"/home/ada/{SECOND}/sharded_step/sharded_step.ipynb")
    handlers.validate("/home/ada/sharded_step/sharded_step.ipynb")
    assert [(a, report.service_url(c)) for a, c in asked] == [("sharded_step", "http://127.0.0.1:5/"),
                                                              ("sharded_step", "http://127.0.0.1:4/")]


def test_a_regrade_request_goes_to_the_service_of_its_course(tmp_path, monkeypatch):
    """The regrade page lists each course's fetched assignments as COURSE/ASSIGNMENT and sends a request about one
    to that course's service, naming the assignment alone."""
    import nbformat

    from grader.learner import regrade

    monkeypatch.setenv("COURSE_GRADING_URL", "http://127.0.0.1:4/")
    monkeypatch.setenv("COURSE_GRADING_URLS", json.dumps({"xyz": "http://127.0.0.1:4/", SECOND: "http://127.0.0.1:5/"}))
    for course in ("xyz", SECOND):
        (tmp_path / course / "sharded_step").mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(), tmp_path / course / "sharded_step" / "sharded_step.ipynb")
    assert regrade.assignments_in(tmp_path) == [f"{SECOND}/sharded_step", "xyz/sharded_step"]
    assert regrade.course_and_assignment(f"{SECOND}/sharded_step") == (SECOND, "sharded_step")
    assert regrade.course_and_assignment("sharded_step") == (None, "sharded_step")
    assert regrade.service_address(course=SECOND) == "http://127.0.0.1:5/"
    assert regrade.service_address() == "http://127.0.0.1:4/"


@contextlib.contextmanager
def _service(monkeypatch, members: tuple[str, ...]):
    """A course's grading service's routes on a loopback port (``serve --members MEMBERS``), judging and recording
    nothing: each route that ran says so."""
    from grader.layout import Course
    from grader.service import appeals, routes, validation

    ran = []
    monkeypatch.delenv("JUPYTERHUB_API_URL", raising=False)  # the account at accept decides, as on the hub's machine
    monkeypatch.setattr(validation, "handle", lambda course, body: ran.append("validate") or (200, {"ok": True}))
    monkeypatch.setattr(appeals, "mine", lambda out, uid: ran.append("appeals") or (200, {"appeals": []}))
    fake = types.SimpleNamespace(course=Course.default(), status=lambda: {},
                                 options=types.SimpleNamespace(members=members, out=Path("/nonexistent")))
    server = routes.Server(("127.0.0.1", 0), routes.handler(fake))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", ran
    finally:
        server.shutdown()
        server.server_close()


def _ask(url: str, route: str, body: bytes | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url + route, data=body, method="POST" if body is not None else "GET",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_a_courses_service_answers_its_members_only_validate_included(monkeypatch):
    """The attack: an account of another course asks this course's service for Validate's diagnoses (its rubric's
    named mistakes) and for regrade requests. Refused, and nothing runs; the course's own members are answered."""
    mine = grp.getgrgid(pwd.getpwuid(os.geteuid()).pw_gid).gr_name  # this process's account's own group
    body = json.dumps({"assignment": "sharded_step", "tests": []}).encode()
    with _service(monkeypatch, ("jdt-no-such-course-learners",)) as (url, ran):
        for route, sent in (("/validate", body), ("/appeals", None)):
            code, answer = _ask(url, route, sent)
            assert code == 403 and "not enrolled in this course" in answer["error"], (route, code, answer)
        assert ran == []
    with _service(monkeypatch, ("jdt-no-such-course-learners", mine)) as (url, ran):
        assert _ask(url, "/validate", body)[0] == 200 and _ask(url, "/appeals")[0] == 200
        assert ran == ["validate", "appeals"]
    with _service(monkeypatch, ()) as (url, ran):  # serve without --members: anyone on the machine, as before
        assert _ask(url, "/validate", body)[0] == 200


@pytest.mark.skipif(os.geteuid() != 0, reason="makes Unix accounts and groups")
def test_a_courses_exchange_folder_admits_its_own_learners_only():
    """A further course's learner is made locked (no course password) in its learners' group, and its exchange folder
    (``install.exchange_folders``, as the hub makes it) lets that learner fetch and submit, and nobody else in: an
    account of no group of the course cannot list it or make a submission folder in it."""
    from grader.hub import install

    tag = secrets.token_hex(3)
    member, outsider = f"mc{tag}a", f"mc{tag}b"
    course = courses.Course(f"c{tag}", Path("/nonexistent"), f"jdt-c{tag}-learners", f"jdt-c{tag}-graders",
                            member, f"grading-c{tag}", 1)
    srv = Path(tempfile.mkdtemp(prefix="courses-"))
    os.chmod(srv, 0o755)
    try:
        courses.join(course, [member])
        subprocess.run(["useradd", outsider], check=True, capture_output=True)
        shadow = {line.split(":")[0]: line.split(":")[1] for line in Path("/etc/shadow").read_text().splitlines()}
        assert shadow[member].startswith(("!", "*")) and member in install.accounts.members(course.learners)
        paths = install.Paths(opt=srv / "opt", srv=srv)
        paths.exchange.mkdir(mode=0o1777)
        os.chmod(paths.exchange, 0o1777)
        install.exchange_folders(paths, course)
        folder = paths.exchange / course.id
        tried = {}
        for name in (member, outsider):
            done = subprocess.run(["runuser", "-u", name, "--", "python3", "-c",
                                   "import os, sys; os.listdir(sys.argv[1]); "
                                   "os.mkdir(os.path.join(sys.argv[1], 'inbound', sys.argv[2] + '+a+1'))",
                                   str(folder), name], capture_output=True, text=True, cwd="/")
            tried[name] = "PermissionError" if "PermissionError" in done.stderr else done.returncode
        assert tried == {member: 0, outsider: "PermissionError"}, tried
    finally:
        for name in (member, outsider):
            subprocess.run(["userdel", "--remove", name], capture_output=True)
        for group in (course.learners, course.graders):
            subprocess.run(["groupdel", group], capture_output=True)
        shutil.rmtree(srv, ignore_errors=True)
