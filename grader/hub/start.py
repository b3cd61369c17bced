"""``python -m grader hub``'s steps in order, then JupyterHub's command line (the caller execs it)."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from grader.hub import accounts, courses as hub_courses, install
from grader.hub.install import HubRefused, Paths

CONFIG = Path(__file__).with_name("jupyterhub_config.py")
SETTINGS_VARIABLE = "COURSE_HUB_SETTINGS"


def checkout_root() -> Path:
    return Path(__file__).resolve().parents[2]


def prepare(*, ip: str, port: int, service_port: int, workers: int | None, paths: Paths | None = None,
            spawner: str = "local", cull_idle: int = 3600, slurm: dict | None = None, grading_jobs: int = 0,
            roster: Path | None = None, lms: Path | None = None, site_address: str = "127.0.0.1",
            lti: Path | None = None, public_tls: tuple[Path, Path] | None = None, courses: list[str] | None = None,
            say=print) -> tuple[list[str], dict[str, str], Path]:
    """Set everything up (idempotent) and return JupyterHub's argv, environment and working folder."""
    if os.geteuid() != 0:
        raise HubRefused("the hub must run as root (sudo make hub): it makes the class's Unix accounts, starts each "
                         "learner's server as that learner, and the grading service seals kernels")
    paths = paths or Paths()
    public = _public_url(ip, port, public_tls)
    if spawner == "slurm" or grading_jobs:
        say(f"hub: {slurm_ready()}")
    checkout = checkout_root()
    started = time.monotonic()
    if lms is not None:  # read now: a hub that cannot pass grades back says so before it starts anything
        from grader.lms.config import ConfigError, load

        try:
            say(f"hub: grades passed back to the LMS at {load(lms).issuer} (LTI 1.3 AGS; python -m grader lms status)")
        except ConfigError as error:
            raise HubRefused(f"--lms: {error}") from None
    if lti is not None and courses:  # an LTI launch enrols into the hub's own course, its instructors the hub's admins
        raise HubRefused("--course with --lti: a launch from the LMS enrols into the hub's own course only, and its "
                         "instructors are the hub's admins (who may open every server): run each course's LTI "
                         "launches on a hub of its own")
    if lti is not None:  # read now: a hub the LMS cannot launch into says so before it starts anything
        from grader.hub.lti import LtiError, announce
        from grader.lms.keys import KeyProblem

        try:
            for line in announce(lti, public):
                say(f"hub: {line}")
        except (LtiError, KeyProblem) as error:
            raise HubRefused(f"--lti: {error}") from None
    instructor = accounts.INSTRUCTOR
    hub_course = hub_courses.first(install.COURSE_ID, paths.course, service_port)
    install.folders(paths, None)
    try:  # hub --course: further courses, each its own (grader.hub.courses); read before any account is touched
        extra = hub_courses.others(courses or [], hub_course, paths.srv)
        enrolled = {c.id: hub_courses.learners(c, roster is None, paths.state / f"roster-{c.id}.csv") for c in extra}
    except hub_courses.CourseRefused as error:
        raise HubRefused(str(error)) from None
    staff = hub_courses.staff_accounts(extra) + [a for names, made, _ in enrolled.values() for a in made]
    if roster is None:  # the demo class: demo passwords for every account
        learners = accounts.roster(checkout / "samples" / "roster.csv")
        accounts.ensure(accounts.accounts(learners) + staff, paths.passwords)
    else:  # a real class: the site's logins (or the LMS's); a demo password for the instructor only
        learners, course_csv = enrol(roster, paths, say)
        accounts.ensure(accounts.accounts([]) + staff, paths.passwords)
    for course in extra:
        names, _, refused = enrolled[course.id]
        hub_courses.join(course, names)
        for line in refused:
            say(f"hub: --course {course.id}: roster {line}")
    install.folders(paths, instructor)
    say(f"hub: accounts {instructor} ({accounts.INSTRUCTORS}, {accounts.GRADERS}) and {len(learners)} learner(s) "
        f"({accounts.LEARNERS}: {', '.join(learners[:8])}{', ...' if len(learners) > 8 else ''}); homes 0700")
    say(f"hub: {install.protect_checkout(checkout, learners[0])}")
    for course in extra:
        say(f"hub: {install.protect_checkout(checkout, enrolled[course.id][0][0], course.learners)}")
    say(f"hub: {install.environment(paths, checkout)}")
    install.check_learner_side(paths, learners[0])
    install.proxy(checkout)
    install.course_root(paths, checkout, instructor, None if roster is None else course_csv)
    install.exchange_folders(paths, hub_course if extra else None)
    for course in extra:
        install.course_root(paths, checkout, course.instructor, paths.state / f"roster-{course.id}.csv", course)
        install.exchange_folders(paths, course)
    install.learner_config(paths, checkout, hub_courses.learner_exchange_config([hub_course, *extra]))
    install.register_assignments(paths, instructor)
    for course in extra:
        install.register_assignments(paths, course.instructor, course.root)
    install.write_settings(paths, checkout, ip=ip, port=port, service_port=service_port, workers=workers,
                           instructor=instructor, spawner=spawner, cull_idle=cull_idle, slurm=slurm,
                           grading_jobs=grading_jobs, lms=lms, lti=lti, site_address=site_address,
                           public_tls=public_tls, courses=[c.settings() for c in [hub_course, *extra]])
    for course in extra:
        say(f"hub: course {course.id}: root {course.root} (2770 {course.instructor}:{course.graders}); "
            f"{len(enrolled[course.id][0])} learner(s) ({course.learners}); graders {', '.join(course.staff)}; "
            f"its grading service on port {course.port}")
    if not _loopback(site_address):
        say(f"hub: learners' servers on other hosts reach the hub's API at https://{site_address} (JupyterHub's "
            "internal TLS) and the grading "
            f"service at https://{site_address}:{service_port} (the course's CA: "
            f"{install.site_certificates(paths, site_address).name}, published as {paths.srv / 'site-ca.pem'})")
    if grading_jobs:
        say(f"hub: the grading service grades on {grading_jobs} Dask worker(s) in Slurm jobs, mutual TLS with "
            f"{install.grading_certificates(paths)}")
    say(f"hub: course root {paths.course} (2770 {instructor}:{accounts.GRADERS}); exchange {paths.exchange}; "
        f"state {paths.state} (0700 root); ready in {time.monotonic() - started:.0f} s")
    say(f"hub: demo passwords (account:password) in {paths.passwords} (root only, 0600)" if roster is None else
        f"hub: the instructor's password in {paths.passwords} (root only, 0600); learners log in with the site's own "
        "logins (this machine's PAM) or from the LMS: the course gives them no password")
    say(f"hub: learners' servers {'as Slurm jobs (batchspawner)' if spawner == 'slurm' else 'as local processes'}; "
        + (f"idle servers stopped after {cull_idle} s (jupyterhub-idle-culler)" if cull_idle else "no idle culler"))
    say(f"hub: open {public}/ and log in; Ctrl-C stops the hub, its proxy, the grading service and "
        "every learner's server")
    venv_bin = paths.venv / "bin"
    env = {"PATH": f"{venv_bin}:{checkout / 'hub' / 'node_modules' / '.bin'}:/usr/sbin:/usr/bin:/sbin:/bin",
           "LANG": os.environ.get("LANG", "C.UTF-8"), "HOME": "/root", SETTINGS_VARIABLE: str(paths.settings),
           "PYTHONUNBUFFERED": "1"}
    config = paths.venv / "lib" / "python3.11" / "site-packages" / "grader" / "hub" / "jupyterhub_config.py"
    argv = [str(venv_bin / "jupyterhub"), "-f", str(config if config.is_file() else CONFIG)]
    return argv, env, paths.state


def _public_url(ip: str, port: int, tls: tuple[Path, Path] | None) -> str:
    """The URL learners open: HTTPS with the site's certificate, or plain http on this machine's loopback only (a
    password or a notebook never crosses a network in clear; behind a site's TLS front, the hub stays on loopback)."""
    if tls is None:
        if not _loopback(ip, "--ip"):
            raise HubRefused(f"--ip {ip} is reached over the network: give the site's certificate (--ssl-cert FILE "
                             "--ssl-key FILE), or keep the hub on 127.0.0.1 behind the site's HTTPS front")
        return f"http://{ip}:{port}"
    for path in tls:
        if not path.is_file():
            raise HubRefused(f"--ssl-cert/--ssl-key: {path} is not a file")
    return f"https://{ip}:{port}"


def _loopback(address: str, option: str = "--site-address") -> bool:
    import ipaddress

    from grader.learner.report import is_loopback_host

    if address != "localhost":
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise HubRefused(f"{option} {address!r} is not an IP address of this machine") from None
    return is_loopback_host(address)


def enrol(roster_file: Path, paths: Paths, say=print) -> tuple[list[str], Path]:
    """Apply the roster to the machine's accounts (``grader.hub.roster``); the active learners and the course's CSV
    of them, for nbgrader's gradebook. Raises HubRefused when the file cannot be read or enrols nobody."""
    from grader.hub import roster as rosters

    state = paths.state / "roster.json"
    try:
        read = rosters.read(roster_file, set(rosters.load_state(state)))
    except rosters.RosterRefused as error:
        raise HubRefused(f"--roster: {error}") from None
    for line, why in read.refused:
        say(f"hub: roster line {line}: {why}")
    if not read.enrolled:
        raise HubRefused(f"--roster: {roster_file} ({read.format}'s export) enrols no learner this machine can make")
    say(f"hub: {rosters.apply(read, state).summary()}")
    course_csv = paths.state / "roster-course.csv"
    rosters.write_course_csv(read, course_csv)
    return [e.account for e in read.enrolled], course_csv


def slurm_ready() -> str:
    """The Slurm the learners' servers will be jobs of answers (a site's, or ``python -m grader slurm up``'s)."""
    import subprocess

    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%P %a %D %t"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        done = subprocess.CompletedProcess([], 1, "", str(error))
    if done.returncode or not done.stdout.strip():
        raise HubRefused("--spawner slurm and --grading-jobs need Slurm, and none answers `sinfo` here "
                         f"({(done.stderr or 'no partition').strip()[:300]}). On a site, run the hub on a login node "
                         "of the cluster; on this machine, start a one-machine cluster first: python -m grader slurm up")
    return "Slurm partitions (name, availability, nodes, state): " + "; ".join(done.stdout.splitlines())


def main(ip: str, port: int, service_port: int, workers: int | None, spawner: str = "local",
         cull_idle: int = 3600, slurm: dict | None = None, grading_jobs: int = 0, roster: Path | None = None,
         lms: Path | None = None, site_address: str = "127.0.0.1", lti: Path | None = None,
         public_tls: tuple[Path, Path] | None = None, courses: list[str] | None = None) -> int:
    try:
        argv, env, cwd = prepare(ip=ip, port=port, service_port=service_port, workers=workers, spawner=spawner,
                                 cull_idle=cull_idle, slurm=slurm, grading_jobs=grading_jobs, roster=roster, lms=lms, lti=lti,
                                 site_address=site_address, public_tls=public_tls, courses=courses)
    except HubRefused as error:
        print(f"hub: {error}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    os.chdir(cwd)
    os.execve(argv[0], argv, env)
    return 1  # not reached


def add_commands(sub, service_port: int) -> None:
    """``hub`` and ``slurm`` in ``python -m grader``'s parser."""
    hub = sub.add_parser("hub", help="a JupyterHub for the class: accounts, learners' servers, the grading service "
                                     "(as root; docs/how-to/run-a-class-on-jupyterhub.md)")
    hub.add_argument("--ip", default="127.0.0.1", help="the address the hub listens on (default 127.0.0.1)")
    hub.add_argument("--port", type=int, default=int(os.environ.get("HUB_PORT", "8000")),
                     help="the hub's port (default: $HUB_PORT or 8000)")
    hub.add_argument("--service-port", type=int, default=service_port,
                     help=f"the grading service's port for Validate and regrade requests (default {service_port})")
    hub.add_argument("--ssl-cert", type=Path, metavar="FILE",
                     help="the site's certificate for the hub's public address (PEM, its chain after it): learners "
                          "open https://; with --ssl-key")
    hub.add_argument("--ssl-key", type=Path, metavar="FILE", help="the private key of --ssl-cert (PEM)")
    hub.add_argument("--site-address", default="127.0.0.1", metavar="ADDR",
                     help="this machine's address on the site's network, which learners' servers on other hosts "
                          "reach: the hub's API, the grading service (over HTTPS, the course's CA) and the grading "
                          "jobs' scheduler (default 127.0.0.1: every server on this machine)")
    hub.add_argument("--workers", type=int, default=None, help="the grading service's warm kernels (default: cores + 1)")
    hub.add_argument("--spawner", choices=["local", "slurm"], default="local",
                     help="learners' servers as processes on this machine, or as Slurm jobs under their accounts "
                          "(batchspawner; docs/how-to/run-a-class-on-a-cluster.md)")
    hub.add_argument("--cull-idle", type=int, default=3600, metavar="SECONDS",
                     help="stop a server idle this long, and kernels idle half as long (jupyterhub-idle-culler; 0: never; "
                          "default 3600)")
    for name, default, what in (("partition", "course", "partition"), ("memory", "3G", "memory (--mem)"),
                                ("cpus", "1", "CPUs (--cpus-per-task)"), ("runtime", "8:00:00", "time limit (--time)")):
        hub.add_argument(f"--slurm-{name}", default=default, help=f"each server's Slurm {what} (default {default})")
    hub.add_argument("--grading-jobs", type=int, default=0, metavar="N",
                     help="the grading service grades on N Dask workers in Slurm jobs (dask-jobqueue, the course's "
                          "mutual TLS) instead of its own warm kernels (default 0: here)")
    hub.add_argument("--grading-scheduler-host", default=None, metavar="ADDR",
                     help="with --grading-jobs: this machine's address the compute nodes reach (default: "
                          "--site-address)")
    hub.add_argument("--roster", type=Path, metavar="FILE",
                     help="the class from the LMS's export (Canvas's Gradebook or Moodle's participants CSV, or the "
                          "course's CSV): accounts made, dropped learners deactivated; default: the demo roster")
    hub.add_argument("--lms", type=Path, metavar="FILE", help="the LMS file: the grading service passes totals back "
                                                             "over LTI 1.3 AGS (docs/how-to/connect-your-lms.md)")
    hub.add_argument("--lti", type=Path, metavar="FILE",
                     help="the LTI file: learners launched from the LMS over LTI 1.3 (issuer, client id, key set and "
                          "login URLs, deployment ids); the password form then admits staff only "
                          "(docs/how-to/connect-your-lms.md)")
    hub.add_argument("--course", action="append", default=[], metavar="ID:ROSTER:GRADERS",
                     help="one more course on this hub (repeatable): its course id, its roster (as --roster reads "
                          "one) and its graders' accounts, comma-separated, the first its instructor; its own root "
                          "(SRV/courses/ID), groups, exchange folder and grading service (--service-port + 1, + 2, "
                          "...); docs/how-to/run-the-course-at-your-site.md")
    hub.set_defaults(run=lambda args: main(args.ip, args.port, args.service_port, args.workers, args.spawner,
                                           args.cull_idle, _slurm_settings(args), args.grading_jobs, args.roster,
                                           args.lms, args.site_address, lti=args.lti, public_tls=_public_tls(args),
                                           courses=args.course))
    enrolled = sub.add_parser("roster", help="apply the class's roster again to a hub's accounts (root): new learners "
                                             "added, dropped ones deactivated, nobody's work touched")
    enrolled.add_argument("file", type=Path)
    enrolled.set_defaults(run=lambda args: _roster(args.file))
    slurm = sub.add_parser("slurm", help="a one-machine Slurm cluster with two nodes, for a demo and the tests (root)")
    slurm.add_argument("action", choices=["up", "down", "status"])
    slurm.add_argument("--separate-hosts", action="store_true",
                       help="each node a host of its own: a network namespace, host name and /tmp (grader/slurm/hosts.py)")
    slurm.set_defaults(run=lambda args: _slurm(args.action, args.separate_hosts))


def _public_tls(args) -> tuple[Path, Path] | None:
    if (args.ssl_cert is None) != (args.ssl_key is None):
        raise SystemExit("hub: --ssl-cert and --ssl-key go together")
    return (args.ssl_cert.resolve(), args.ssl_key.resolve()) if args.ssl_cert else None


def _slurm_settings(args) -> dict:
    """The hub's Slurm settings (jupyterhub_config.py reads them): each server's job, and where the grading jobs reach
    the service's scheduler."""
    job = {name: getattr(args, f"slurm_{name}") for name in ("partition", "memory", "cpus", "runtime")}
    return {**job, "scheduler_host": args.grading_scheduler_host or args.site_address}


def _roster(file: Path) -> int:
    """``python -m grader roster FILE``: the accounts follow the roster; nbgrader's gradebook gets its learners."""
    if os.geteuid() != 0:
        print("roster: must run as root (it makes and deactivates Unix accounts)", file=sys.stderr)
        return 2
    paths = Paths()
    try:
        _, course_csv = enrol(file, paths)
        if paths.course.is_dir():
            import shutil

            shutil.copy2(course_csv, paths.course / "roster.csv")
            install.as_user(accounts.INSTRUCTOR, paths.venv / "bin" / "nbgrader", "db", "student", "import",
                            "roster.csv", "--log-level=WARN", cwd=paths.course,
                            env={"COURSE_ROOT": paths.course, "PATH": f"{paths.venv / 'bin'}:/usr/bin:/bin"})
    except HubRefused as error:
        print(f"roster: {error}", file=sys.stderr)
        return 2
    return 0


def _slurm(action: str, separate_hosts: bool = False) -> int:
    from grader.slurm.local import main as slurm_main

    return slurm_main(action, separate_hosts=separate_hosts)
