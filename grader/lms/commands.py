"""``python -m grader lms status|sync|keys --config FILE --out DIR``: the grades passed back to the LMS.

* ``status``: every grade the LMS does not hold yet, and why (no LMS user id, the LMS unreachable since when and
  the next try, refused with its message); exit 1 when some are pending, 0 when the LMS holds every grade;
* ``sync``: post them now (the back-off is for the service's loop: an instructor who asks is answered now);
  ``--retry`` also posts again the grades the LMS refused; exit 1 when some are left pending;
* ``keys``: the tool's public key set (JWKS; ``--pem``: the PEM Moodle's "RSA key" takes), made on first use, for
  the LMS's administrator.

Exit 2, with a message, on an LMS file or users file that cannot be used.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from grader.identifiers import escape_controls
from grader.lms import keys, outbox
from grader.lms.config import ConfigError, lms_users, load


def _config(args):
    if args.config is None:
        raise ConfigError("--config FILE is required (the LMS file: docs/how-to/connect-your-lms.md)")
    return load(args.config)


def cmd_status(args) -> int:
    config = _config(args)
    users = lms_users(config, args.gradebook)
    state, now = outbox.load_state(args.out), time.time()
    grades = outbox.grades(args.out)
    waiting = [(g, outbox.why_pending(g, users, state, now)) for g in grades]
    waiting = [(g, why) for g, why in waiting if why is not None]
    for grade, why in waiting:
        given = "-" if grade.given is None else f"{grade.given:g}"
        print(escape_controls(f"{grade.student}  {grade.assignment}  {given}/{grade.maximum:g} {grade.progress}  "
                              f"pending: {why}"))
    platform = state.get("platform")
    if platform:
        print(escape_controls(f"the LMS: {platform.get('attempts')} failed attempt(s) since {platform.get('since')}, "
                              f"last: {platform.get('last_error')}; next try at {outbox.when(platform['next_try'])}"))
    print(f"{len(grades) - len(waiting)} of {len(grades)} grade(s) in the LMS; {len(waiting)} pending")
    return 1 if waiting else 0


def cmd_sync(args) -> int:
    from grader.lms.sync import sync_once

    config = _config(args)
    done = sync_once(args.out, config, args.gradebook, force=True, retry=args.retry)
    for line in done.posted:
        print(escape_controls(f"posted {line}"))
    for line in done.refused:
        print(escape_controls(f"refused {line}"), file=sys.stderr)
    for line in done.deferred:
        print(escape_controls(f"pending {line}"), file=sys.stderr)
    print(f"{len(done.posted)} posted, {len(done.refused)} refused, {len(done.deferred)} pending")
    return 1 if done.refused or done.deferred else 0


def cmd_keys(args) -> int:
    folder = _config(args).keys if args.config else args.keys
    if folder is None:
        raise ConfigError("lms keys: give --config FILE (its key_folder) or --keys FOLDER")
    print(keys.public_key(keys.private_key(folder)).strip() if args.pem else keys.jwks_text(folder))
    print(f"the private key stays in {folder}; give the LMS the public key set above (pasted, or served as the "
          "tool's JWKS URL)", file=sys.stderr)
    return 0


def cmd_lms(args) -> int:
    try:
        return {"status": cmd_status, "sync": cmd_sync, "keys": cmd_keys}[args.action](args)
    except (ConfigError, keys.KeyProblem) as error:
        print(f"lms {args.action}: {error}", file=sys.stderr)
        return 2


def add_commands(sub) -> None:
    lms = sub.add_parser("lms", help="grades passed back to the LMS (LTI 1.3 AGS): status, sync, keys")
    lms.add_argument("action", choices=["status", "sync", "keys"])
    lms.add_argument("--config", type=Path, help="the LMS file (TOML: issuer, client_id, auth_token_url, ...)")
    lms.add_argument("--out", type=Path, default=Path("."), help="the grading output folder (default: .)")
    lms.add_argument("--gradebook", help="nbgrader's database URL: its students' lms_user_id")
    lms.add_argument("--keys", type=Path, help="with keys and no --config: the key folder")
    lms.add_argument("--pem", action="store_true", help="with keys: the public key as PEM (Moodle's RSA key)")
    lms.add_argument("--retry", action="store_true", help="with sync: post again the grades the LMS refused")
    lms.set_defaults(run=cmd_lms)
