"""What ``python -m grader hub`` sets up before JupyterHub starts (as root; each step is skipped when done already).

The repository checkout is world-readable and holds what no learner may read (``source/``: solutions, hidden tests;
``tests/``), and its ``.venv`` is an editable install pointing into it. So the learners never use the checkout:

* **their environment** is ``/opt/jax-course/venv``, made with the learners' Python (Debian's ``/usr/bin/python3.11``
  unless ``COURSE_HUB_PYTHON`` names another one every account can run) and a non-editable install (by uv, else pip)
  of a copy of the project; reinstalled when ``pyproject.toml`` changes, the project alone when its code changes;
* **the course root** is ``/srv/jax-course/course`` (``source/``, ``notebooks/``, ``nbgrader_config.py``, ``lab/``,
  ``gradebook.db``, the grading output): the instructor's, group ``jdt-graders``, mode 2770, nothing for others;
* **the exchange** is ``/srv/jax-course/exchange`` (1777, root); its course folder, ``inbound`` and ``feedback`` are
  made here by root, group ``jdt-graders`` (nbgrader's ``groupshared``), so the grading service (root) finds them
  its own and the instructor's ``release_assignment`` may write ``outbound`` into them (a hub of several courses:
  each course's folder closed to all but its own groups, ``grader.hub.courses``);
* **the checkout** gets an ACL entry denying the learners' group everything (``setfacl -m g:jdt-learners:---``), and
  the hub refuses to start while a learner can still read its ``source/``;
* **the learners' Jupyter configuration** is ``/srv/jax-course/learner-config`` (readable by all, no secret);
* **the hub's state** (cookie secret, database, settings, demo passwords) is in ``/srv/jax-course/hub``, mode 0700.
"""
from __future__ import annotations

import hashlib
import json
import os
import pwd
import grp
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grader.hub import accounts

COURSE_ID = "jax-distributed-training"
PYTHON_VARIABLE = "COURSE_HUB_PYTHON"
SRV_VARIABLE = "COURSE_HUB_SRV"  # the class's folders (default /srv/jax-course); tests/test_hub.py uses its own
HUB_SECTION = "\n# --- written by `python -m grader hub`: the hub's shared exchange, nbgrader's groupshared mode ---\n"


@dataclass(frozen=True)
class Paths:
    opt: Path = Path("/opt/jax-course")
    srv: Path = field(default_factory=lambda: Path(os.environ.get(SRV_VARIABLE) or "/srv/jax-course"))
    venv: Path = field(init=False)
    course: Path = field(init=False)
    exchange: Path = field(init=False)
    state: Path = field(init=False)

    def __post_init__(self):
        for name, value in (("venv", self.opt / "venv"), ("course", self.srv / "course"),
                            ("exchange", self.srv / "exchange"), ("state", self.srv / "hub")):
            object.__setattr__(self, name, value)

    @property
    def learner_config(self) -> Path:
        return self.srv / "learner-config"

    @property
    def passwords(self) -> Path:
        return self.state / "passwords.txt"

    @property
    def settings(self) -> Path:
        return self.state / "settings.json"


class HubRefused(RuntimeError):
    """The hub cannot start safely; the message names the fix."""


def run(*argv, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    if done.returncode:
        raise HubRefused(f"{' '.join(map(str, argv[:3]))} failed:\n{(done.stderr or done.stdout)[-3000:]}")
    return done


def as_user(user: str, *argv, env: dict | None = None, cwd: Path | None = None, check: bool = True):
    """Run a command as ``user`` (``runuser``, util-linux) with a plain environment."""
    plain = {"PATH": "/usr/bin:/bin", "HOME": pwd.getpwnam(user).pw_dir, "LANG": "C.UTF-8", **(env or {})}
    command = ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in plain.items()), *map(str, argv)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    if check and done.returncode:
        raise HubRefused(f"{' '.join(map(str, argv[:3]))} as {user} failed:\n{(done.stderr or done.stdout)[-3000:]}")
    return done


def folders(paths: Paths, instructor: str | None) -> None:
    for folder, mode in ((paths.opt, 0o755), (paths.srv, 0o755), (paths.state, 0o700), (paths.exchange, 0o1777)):
        folder.mkdir(parents=True, exist_ok=True)
        os.chown(folder, 0, 0)
        os.chmod(folder, mode)
    uid_locks()
    if instructor:  # once the accounts exist
        paths.course.mkdir(exist_ok=True)
        _staff_owned(paths.course, instructor)


def uid_locks(locks: Path | None = None) -> None:
    """The grading service's uid leases (``grader.sandbox.lease``: a lock file per sandbox uid, opened by root), made
    and checked before the service starts, so the hub refuses at once, saying what to do, where they could have been
    planted (every lease checks them again)."""
    from grader.sandbox.lease import LeaseRefused, open_locks

    try:
        os.close(open_locks(locks))
    except LeaseRefused as error:
        raise HubRefused(str(error)) from None


def _staff_owned(path: Path, instructor: str, graders: str = accounts.GRADERS) -> None:
    """The course root: the instructor's, group jdt-graders (a further course: its own graders' group; setgid), read
    and written by staff, nothing for others."""
    uid, gid = pwd.getpwnam(instructor).pw_uid, grp.getgrnam(graders).gr_gid
    for folder, _dirs, files in os.walk(path):
        os.lchown(folder, uid, gid)
        os.chmod(folder, 0o2770)
        for name in files:
            file = os.path.join(folder, name)
            if not os.path.islink(file) and os.stat(file).st_uid in (0, uid):
                os.lchown(file, uid, gid)
                os.chmod(file, (os.stat(file).st_mode & 0o700) | 0o060)
    # What the grading service (root) writes in there later stays the staff's to read and rewrite (python -m grader
    # report and export, formgrader): a default ACL gives new folders to the group jdt-graders; files are written
    # group-readable, and replaced through their folder.
    ensure_setfacl()
    run("setfacl", "-R", "-d", "-m", f"g:{graders}:rwX,o::---", path)


def ensure_setfacl() -> None:
    """Debian's acl package (setfacl), installed when it is missing: a fresh machine has none."""
    if shutil.which("setfacl") is not None:
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        run("apt-get", "install", "-y", "-qq", "--no-install-recommends", "acl", env=env)
    except HubRefused:  # no package lists yet on a fresh machine
        run("apt-get", "update", "-qq", env=env)
        run("apt-get", "install", "-y", "-qq", "--no-install-recommends", "acl", env=env)


def _digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def learners_python() -> Path:
    python = Path(os.environ.get(PYTHON_VARIABLE) or "/usr/bin/python3.11")
    if not os.access(python, os.X_OK):
        raise HubRefused(f"{python} is missing: install Debian's python3.11-venv (apt-get install python3.11-venv) or "
                         f"set {PYTHON_VARIABLE} to a Python 3.11 every account can run")
    return python


def installer() -> list[str] | None:
    """uv's ``pip install`` from the grader's own environment (pinned in ``pyproject.toml``'s test extra, which
    ``make`` installs): it installs the learners' environment in about 15 s where pip takes about two minutes on two
    cores (it unpacks and compiles in parallel); None where the environment has no uv (then pip)."""
    uv = Path(sys.executable).parent / "uv"
    return [str(uv), "pip", "install", "--quiet", "--link-mode", "copy", "--compile-bytecode"] \
        if os.access(uv, os.X_OK) else None


def environment(paths: Paths, checkout: Path) -> str:
    """Make or update the learners' environment; say what was done."""
    code = [p for top in ("grader", "coursekit") for p in (checkout / top).rglob("*")
            if p.suffix in (".py", ".html") and "__pycache__" not in p.parts]  # the code and the hub's templates
    deps, project = _digest([checkout / "pyproject.toml"]), _digest([checkout / "pyproject.toml", *code])
    stamps = paths.venv / ".course-deps", paths.venv / ".course-code"
    python = paths.venv / "bin" / "python"
    uv = installer()
    if python.exists() and stamps[0].is_file() and stamps[0].read_text() == deps:
        if stamps[1].is_file() and stamps[1].read_text() == project:
            return f"{paths.venv}: up to date"
        extra = ["--no-deps", "--reinstall" if uv else "--force-reinstall"]
    else:
        shutil.rmtree(paths.venv, ignore_errors=True)
        run(learners_python(), "-m", "venv", paths.venv)
        if uv is None:
            run(python, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        extra = []
    with tempfile.TemporaryDirectory() as stage:  # a copy: pip's build writes build/ and *.egg-info where it builds
        stage = Path(stage)
        for top in ("grader", "coursekit"):
            shutil.copytree(checkout / top, stage / top, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(checkout / "pyproject.toml", stage / "pyproject.toml")
        if uv:  # the same pins resolved to the same versions as pip's; copies, not links into root's cache
            run(*uv, "--python", python, *extra, f"{stage}[hub]")
        else:
            run(python, "-m", "pip", "install", "--quiet", *extra, f"{stage}[hub]")
    stamps[0].write_text(deps)
    stamps[1].write_text(project)
    run("chmod", "-R", "a+rX", paths.venv)
    return f"{paths.venv}: {'project reinstalled' if extra else 'installed'}"


def course_root(paths: Paths, checkout: Path, instructor: str, roster: Path | None = None, course=None) -> None:
    """Copy the course from the checkout (sources, released notebooks, configuration); keep gradebook and output.
    ``course``: a further course of the hub (``grader.hub.courses.Course``): its root, id and graders' group."""
    root = paths.course if course is None else course.root
    root.mkdir(parents=True, exist_ok=True)
    course_id, graders = (course.id, course.graders) if course is not None else (COURSE_ID, accounts.GRADERS)
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.executed.ipynb", "labextensions")
    for folder in ("source", "notebooks", "lab"):
        shutil.copytree(checkout / folder, root / folder, ignore=ignore, dirs_exist_ok=True)
    from grader.course.workspace import complete_language_info, kernel_language_info

    # the release folder as the learners' kernel describes it, so a fetched notebook does not open as changed
    complete_language_info(root / "notebooks", kernel_language_info(paths.venv / "bin" / "python"))
    shutil.copy2(roster or checkout / "samples" / "roster.csv", root / "roster.csv")  # `nbgrader db student import`
    from grader.classroom.class_page import placeholder

    placeholder(root)  # formgrader's Class report link finds a page before the first report
    from grader.term.guard import mark

    mark(root, course_id, by="python -m grader hub")  # its records: no demo target may touch them
    config = (checkout / "nbgrader_config.py").read_text(encoding="utf-8")
    (root / "nbgrader_config.py").write_text(
        config + HUB_SECTION + f"c.Exchange.root = {str(paths.exchange)!r}\nc.CourseDirectory.groupshared = True\n"
        f"c.CourseDirectory.course_id = {course_id!r}\n"
        # formgrader runs as the instructor, who cannot seal kernels: its Autograde refuses (the service grades), and
        # its Collect (the service collects; a collected copy would mark graded work "needs autograding")
        "c.ProjectAutograde.sealed_only = True\n"
        "c.ExchangeFactory.collect = 'grader.nbgrader_adapter.plugins.ServiceCollect'\n",
        encoding="utf-8")
    # The instructor's server starts in its home, not the course root: this loads the course's configuration.
    hub = root / "lab" / "hub"
    hub.mkdir(exist_ok=True)
    (hub / "nbgrader_config.py").write_text(
        '"""The instructor\'s server on the hub: the course root\'s nbgrader configuration (written by grader hub)."""\n'
        f"c = get_config()  # noqa: F821\nload_subconfig({str(root / 'nbgrader_config.py')!r})  # noqa: F821\n")
    # lab/instructor's `tornado_settings.update(...)` is a lazy value JupyterHub's single-user extension cannot read
    # ('log_function' in it): the same Content-Security-Policy, as a plain setting, loaded after it.
    (hub / "jupyter_server_config.py").write_text(
        '"""The instructor\'s server on the hub: lab/instructor\'s policy as a plain setting (written by grader hub)."""\n'
        "from grader.nbgrader_adapter.formgrader_guard import content_security_policy\n\n"
        "c = get_config()  # noqa: F821\n"
        'c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": content_security_policy()}}\n')
    _staff_owned(root, instructor, graders)


def exchange_folders(paths: Paths, course=None) -> None:
    """The course's exchange folders, root's before any learner could make them (nbgrader's groupshared modes).
    ``course``, on a hub of several courses (``grader.hub.courses.Course``): its folder, closed to all but its graders'
    group and, by an ACL entry, its learners' group, so nobody else can submit into it, fetch from it or list it."""
    graders = grp.getgrnam(course.graders if course is not None else accounts.GRADERS).gr_gid
    closed = course is not None
    learners = course.learners if closed else accounts.LEARNERS
    course = paths.exchange / (course.id if closed else COURSE_ID)
    # feedback: search only for learners (nbgrader's release_feedback mode): each fetches their page by its hashed
    # name and none lists the others' pages, which carry the learner's name, score and outputs. inbound: learners
    # create their submission folders and none lists them; the sticky bit keeps a learner who learns another's
    # folder name from renaming or removing it (and putting a folder of their own under that name).
    for folder, mode in ((course, 0o2770 if closed else 0o2775), (course / "inbound", 0o3773),
                         (course / "feedback", 0o2771)):
        if folder.is_symlink() or (folder.exists() and (not folder.is_dir() or folder.lstat().st_uid != 0)):
            raise HubRefused(f"{folder} is not a folder of root's (someone else made it): remove it and start again")
        folder.mkdir(exist_ok=True)
        os.chown(folder, 0, graders)
        os.chmod(folder, mode)
    if closed:  # its learners' way in (nbgrader's modes below it do the rest); nobody else's
        ensure_setfacl()
        run("setfacl", "-m", f"g:{learners}:r-x", course)


def learner_config(paths: Paths, checkout: Path, courses_setting: str | None = None) -> None:
    """The learners' Jupyter configuration (readable by all, no secret): lab/learner on the hub's exchange."""
    from grader.course.labextension import prepare

    target = paths.learner_config
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(checkout / "lab" / "learner", target, ignore=shutil.ignore_patterns("labextensions", "nbgrader_*"))
    extensions = prepare(paths.srv / "learner-config-validate")  # Validate's dialog in the course's words
    with (target / "jupyter_lab_config.py").open("a", encoding="utf-8") as out:
        out.write(f"\n# written by `python -m grader hub`\nc.LabApp.extra_labextensions_path = [{str(extensions)!r}]\n")
    (target / "nbgrader_config.py").write_text(f'''"""nbgrader for a learner on the hub (written by `python -m grader hub`)."""
import zmq

c = get_config()  # noqa: F821
{courses_setting or f"c.CourseDirectory.course_id = {COURSE_ID!r}"}
c.Exchange.root = {str(paths.exchange)!r}
c.ExchangeSubmit.add_random_string = True  # a submission's folder name cannot be guessed by another learner
c.Execute.timeout = 180
c.ExecutePreprocessor.timeout = 180
if zmq.has("curve"):
    c.KernelManager.transport_encryption = "auto"
''', encoding="utf-8")
    for folder in (target, paths.srv / "learner-config-validate"):
        run("chmod", "-R", "a+rX", folder)


def protect_checkout(checkout: Path, learner: str, group: str = accounts.LEARNERS) -> str:
    """No learner enters the checkout: an ACL entry for the learners' group (each course's), checked as a learner."""
    ensure_setfacl()
    done = subprocess.run(["setfacl", "-m", f"g:{group}:---", str(checkout)], capture_output=True, text=True)
    probe = as_user(learner, "test", "-r", checkout / "source", check=False)
    if probe.returncode == 0:
        raise HubRefused(f"the learner {learner} can read {checkout / 'source'} (solutions, hidden tests), and "
                         f"setfacl said: {done.stderr.strip() or 'nothing'}. Move the checkout under a folder of "
                         f"mode 0700 (or run `chmod o-rwx {checkout}`) and start the hub again")
    return f"{checkout}: no access for the group {group} (ACL)"


def check_learner_side(paths: Paths, learner: str) -> None:
    done = as_user(learner, paths.venv / "bin" / "python", "-c", "import coursekit, grader.learner, jupyterhub",
                   check=False)
    if done.returncode:
        raise HubRefused(f"the learner {learner} cannot run {paths.venv}: {done.stderr.strip()[-1500:]}\n"
                         f"its Python must lie where every account may enter (set {PYTHON_VARIABLE})")


def register_assignments(paths: Paths, instructor: str, root: Path | None = None) -> None:
    """formgrader's gradebook knows the course's assignments (as ``make instructor`` does; ~10 s each, once) and the
    roster's learners; ``root``: a further course's root (default: the hub's course)."""
    root = root or paths.course
    as_user(instructor, paths.venv / "bin" / "python", "-c",
            "from grader.course.workspace import register_assignments; from grader.layout import Course; "
            "register_assignments(Course.default())",
            env={"COURSE_ROOT": root, "PATH": f"{paths.venv / 'bin'}:/usr/bin:/bin"}, cwd=root)
    # the roster (with each learner's LMS id) for formgrader and `python -m grader export --canvas`
    as_user(instructor, paths.venv / "bin" / "nbgrader", "db", "student", "import", "roster.csv", "--log-level=WARN",
            env={"COURSE_ROOT": root, "PATH": f"{paths.venv / 'bin'}:/usr/bin:/bin"}, cwd=root)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_settings(paths: Paths, checkout: Path, *, ip: str, port: int, service_port: int, workers: int | None,
                   instructor: str, spawner: str = "local", cull_idle: int = 3600, slurm: dict | None = None,
                   grading_jobs: int = 0, lms: Path | None = None, site_address: str = "127.0.0.1", lti: Path | None = None,
                   public_tls: tuple[Path, Path] | None = None, courses: list[dict] | None = None) -> None:
    proxy = checkout / "hub" / "node_modules" / ".bin" / "configurable-http-proxy"
    settings = {"ip": ip, "port": port, "hub_port": free_port(), "proxy_api_port": free_port(),
                "service_port": service_port, "workers": workers, "venv": str(paths.venv), "course": str(paths.course),
                "exchange": str(paths.exchange), "course_id": COURSE_ID, "state": str(paths.state),
                "learner_config": str(paths.learner_config), "proxy": str(proxy), "instructor": instructor,
                "spawner": spawner, "cull_idle": cull_idle, "slurm": slurm or {}, "grading_jobs": grading_jobs,
                "lms": str(lms.resolve()) if lms else None, "site_address": site_address,
                "public_tls": [str(path) for path in public_tls] if public_tls else None,
                "groups": {"learners": accounts.LEARNERS, "graders": accounts.GRADERS,
                           "instructors": accounts.INSTRUCTORS}}
    settings["lti"] = str(lti.resolve()) if lti else None  # hub --lti: LMS launches (grader.hub.lti)
    settings["courses"] = courses or []  # hub --course: every course of the hub, its own first (grader.hub.courses)
    fd = os.open(paths.settings, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(settings, out, indent=2)


def grading_certificates(paths: Paths) -> Path:
    """The grading cluster's CA and certificates (``python -m grader certs``), made once, in the hub's root-only
    state folder: the service's scheduler and its Slurm workers authenticate each other with them."""
    from grader.classroom.certs import make_certificates

    folder = paths.state / "grading-tls"
    if not (folder / "ca.pem").exists():
        make_certificates(folder)
    return folder


def site_certificates(paths: Paths, address: str) -> Path:
    """The TLS of what crosses the site's network to the head (``hub --site-address``): a CA of the course's and a
    certificate for ``address``, made once, in the hub's root-only state folder; the CA's certificate published
    world-readable (``site-ca.pem`` beside the course), which learners' servers verify the grading service with
    (``COURSE_GRADING_CA``). Made again when the address changes."""
    import socket

    from grader.classroom.certs import Deployment, make_certificates

    folder = paths.state / "site-tls"
    marker = folder / "address"
    if not (folder / "ca.pem").exists() or not marker.is_file() or marker.read_text() != address:
        make_certificates(folder, [address, socket.gethostname()], days=400, force=True)
        marker.write_text(address)
    published = paths.srv / "site-ca.pem"
    published.write_bytes(Deployment(folder).ca.read_bytes())
    os.chmod(published, 0o644)
    return folder


def proxy(checkout: Path) -> None:
    """configurable-http-proxy, pinned in hub/package.json and package-lock.json, installed into hub/node_modules."""
    folder = checkout / "hub"
    wanted = json.loads((folder / "package.json").read_text())["dependencies"]["configurable-http-proxy"]
    installed = folder / "node_modules" / "configurable-http-proxy" / "package.json"
    if installed.is_file() and json.loads(installed.read_text()).get("version") == wanted:
        return
    if shutil.which("npm") is None:
        raise HubRefused("npm is missing: JupyterHub's proxy (configurable-http-proxy) is installed with npm "
                         "(apt-get install nodejs npm)")
    run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", cwd=folder)
