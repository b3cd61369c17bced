"""The class's Unix accounts: learners from the roster, an instructor, and the groups the hub reads.

Each learner's server and kernels run as that learner's own account (JupyterHub's LocalProcessSpawner), so the
accounts are real: made with ``useradd``, passwords set with ``chpasswd``, homes of mode 0700. Made again, nothing
changes: an account that exists is reused (its groups and home mode are put right), a password already written to
the machine's password file (``/etc/jax-course/passwords.txt``, shared by every hub of the machine) is kept.
"""
from __future__ import annotations

import csv
import grp
import os
import pwd
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

LEARNERS = "jdt-learners"
GRADERS = "jdt-graders"  # instructors and teaching assistants: the course root, formgrader
INSTRUCTORS = "jdt-instructors"  # the hub's admins
INSTRUCTOR = "instructor"


@dataclass(frozen=True)
class Account:
    name: str
    groups: tuple[str, ...]


def roster(path: Path) -> list[str]:
    """The student ids of nbgrader's roster CSV (its ``id`` column), which are the learners' account names."""
    with path.open(newline="", encoding="utf-8") as handle:
        return [row["id"].strip() for row in csv.DictReader(handle) if row.get("id", "").strip()]


def accounts(learners: list[str], instructor: str = INSTRUCTOR) -> list[Account]:
    return [Account(instructor, (INSTRUCTORS, GRADERS)), *(Account(name, (LEARNERS,)) for name in learners)]


def _run(*argv: str, stdin: str | None = None) -> None:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv[:2])} failed: {done.stderr.strip() or done.stdout.strip()}")


def _group(name: str) -> None:
    try:
        grp.getgrnam(name)
    except KeyError:
        _run("groupadd", name)


def ensure_groups(names: list[str]) -> None:
    for name in names:
        _group(name)


def members(group: str) -> set[str]:
    """Accounts in ``group``, as a supplementary or as their primary group."""
    try:
        entry = grp.getgrnam(group)
    except KeyError:
        return set()
    return set(entry.gr_mem) | {p.pw_name for p in pwd.getpwall() if p.pw_gid == entry.gr_gid}


# The accounts are the machine's, whichever class folder a hub uses (``COURSE_HUB_SRV``): so are their passwords. A
# second hub on the same machine (the tests', say) reuses them instead of changing every learner's password.
MACHINE_PASSWORDS = Path("/etc/jax-course/passwords.txt")


def ensure(wanted: list[Account], password_file: Path, machine_file: Path = MACHINE_PASSWORDS) -> dict[str, str]:
    """Make (or reuse) every account; return each one's demo password, kept in ``machine_file`` for every hub of
    this machine and copied to ``password_file`` (both root, 0600)."""
    for group in {g for account in wanted for g in account.groups}:
        _group(group)
    machine_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(machine_file.parent, 0o700)
    known = {**read_passwords(password_file), **read_passwords(machine_file)}
    passwords: dict[str, str] = {}
    for account in wanted:
        try:
            pwd.getpwnam(account.name)
        except KeyError:
            _run("useradd", "--create-home", "--shell", "/bin/bash", "--groups", ",".join(account.groups),
                 account.name)
        else:
            _run("usermod", "--append", "--groups", ",".join(account.groups), account.name)
        home = Path(pwd.getpwnam(account.name).pw_dir)
        os.chmod(home, 0o700)  # no learner reads another's work (useradd's mode follows login.defs)
        passwords[account.name] = known.get(account.name) or secrets.token_urlsafe(12)
    changed = {name: word for name, word in passwords.items() if known.get(name) != word}
    if changed:
        _run("chpasswd", stdin="".join(f"{name}:{word}\n" for name, word in changed.items()))
    write_passwords(machine_file, {**read_passwords(machine_file), **passwords})
    write_passwords(password_file, passwords)
    return passwords


def read_passwords(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    pairs = (line.split(":", 1) for line in path.read_text(encoding="utf-8").splitlines()
             if ":" in line and not line.startswith("#"))
    return {name.strip(): word.strip() for name, word in pairs}


def write_passwords(path: Path, passwords: dict[str, str]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write("# demo passwords of `make hub` (account:password); change them with passwd\n")
        out.writelines(f"{name}:{word}\n" for name, word in passwords.items())
