"""``python -m grader hub``'s steps in order, then JupyterHub's command line (the caller execs it)."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from grader.hub import accounts, install
from grader.hub.install import HubRefused, Paths

CONFIG = Path(__file__).with_name("jupyterhub_config.py")
SETTINGS_VARIABLE = "COURSE_HUB_SETTINGS"


def checkout_root() -> Path:
    return Path(__file__).resolve().parents[2]


def prepare(*, ip: str, port: int, service_port: int, workers: int | None, paths: Paths | None = None,
            say=print) -> tuple[list[str], dict[str, str], Path]:
    """Set everything up (idempotent) and return JupyterHub's argv, environment and working folder."""
    if os.geteuid() != 0:
        raise HubRefused("the hub must run as root (sudo make hub): it makes the class's Unix accounts, starts each "
                         "learner's server as that learner, and the grading service seals kernels")
    paths = paths or Paths()
    checkout = checkout_root()
    started = time.monotonic()
    learners = accounts.roster(checkout / "samples" / "roster.csv")
    instructor = accounts.INSTRUCTOR
    install.folders(paths, None)
    accounts.ensure(accounts.accounts(learners), paths.passwords)
    install.folders(paths, instructor)
    say(f"hub: accounts {instructor} ({accounts.INSTRUCTORS}, {accounts.GRADERS}) and {', '.join(learners)} "
        f"({accounts.LEARNERS}); homes 0700")
    say(f"hub: {install.protect_checkout(checkout, learners[0])}")
    say(f"hub: {install.environment(paths, checkout)}")
    install.check_learner_side(paths, learners[0])
    install.proxy(checkout)
    install.course_root(paths, checkout, instructor)
    install.exchange_folders(paths)
    install.learner_config(paths, checkout)
    install.register_assignments(paths, instructor)
    install.write_settings(paths, checkout, ip=ip, port=port, service_port=service_port, workers=workers,
                           instructor=instructor)
    say(f"hub: course root {paths.course} (2770 {instructor}:{accounts.GRADERS}); exchange {paths.exchange}; "
        f"state {paths.state} (0700 root); ready in {time.monotonic() - started:.0f} s")
    say(f"hub: demo passwords (account:password) in {paths.passwords} (root only, 0600)")
    say(f"hub: open http://{ip}:{port}/ and log in; Ctrl-C stops the hub, its proxy, the grading service and "
        "every learner's server")
    venv_bin = paths.venv / "bin"
    env = {"PATH": f"{venv_bin}:{checkout / 'hub' / 'node_modules' / '.bin'}:/usr/sbin:/usr/bin:/sbin:/bin",
           "LANG": os.environ.get("LANG", "C.UTF-8"), "HOME": "/root", SETTINGS_VARIABLE: str(paths.settings),
           "PYTHONUNBUFFERED": "1"}
    config = paths.venv / "lib" / "python3.11" / "site-packages" / "grader" / "hub" / "jupyterhub_config.py"
    argv = [str(venv_bin / "jupyterhub"), "-f", str(config if config.is_file() else CONFIG)]
    return argv, env, paths.state


def main(ip: str, port: int, service_port: int, workers: int | None) -> int:
    try:
        argv, env, cwd = prepare(ip=ip, port=port, service_port=service_port, workers=workers)
    except HubRefused as error:
        print(f"hub: {error}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    os.chdir(cwd)
    os.execve(argv[0], argv, env)
    return 1  # not reached
