"""``python -m grader term ...``: mark a term's folder, check a folder before the demo touches it, clean the demo's
output, back a term up and restore it."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from grader.term import backup, guard, records


def _demo_learners(course_root: Path) -> set[str]:
    submitted = course_root / "samples" / "submitted"
    return {p.name for p in submitted.iterdir() if p.is_dir()} if submitted.is_dir() else set()


def cmd_term(args) -> int:
    from grader.layout import Course

    out = args.out
    try:
        if args.action == "init":
            content = guard.mark(out, args.name or out.resolve().name)
            print(f"{out.resolve()} is the folder of the term {content['term']!r}: make demo, make samples and make "
                  "clean-grading refuse it; back it up with python -m grader term backup")
        elif args.action == "status":
            term = guard.marked(out)
            held = records.present(out)
            print(f"{out.resolve()}: " + (f"the term {term.get('term')!r}, marked {term.get('marked')}" if term
                                          else "not marked as a term") + f"; records: {', '.join(held) or 'none'}")
        elif args.action == "guard":
            guard.check(out, args.for_, _demo_learners(Course.default().root))
        elif args.action == "clean":
            guard.check(out, "clean", _demo_learners(Course.default().root))
            for name in records.present(out, records.DEMO_OUTPUT):
                path = out / name.rstrip("/")
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
                print(f"removed {path}")
        elif args.action == "backup":
            if args.to is None:
                return print("term backup: --to FILE.tar.gz is required", file=sys.stderr) or 2
            manifest = backup.backup(out, args.to)
            print(f"wrote {args.to}: {len(manifest['files'])} files of {out.resolve()}, checked by SHA-256")
        elif args.action == "restore":
            if args.from_ is None:
                return print("term restore: --from FILE.tar.gz is required", file=sys.stderr) or 2
            manifest = backup.restore(args.from_, out)
            print(f"restored {len(manifest['files'])} files into {out.resolve()} (taken {manifest.get('taken')}), "
                  "each checked against the backup's SHA-256")
    except (guard.TermRefused, backup.BackupFailed) as error:
        print(f"term {args.action}: {error}", file=sys.stderr)
        return 2
    return 0


def add_commands(sub) -> None:
    term = sub.add_parser("term", help="a term's records: init (mark its folder), status, backup, restore, clean")
    term.add_argument("action", choices=["init", "status", "guard", "clean", "backup", "restore"])
    term.add_argument("--out", type=Path, default=Path("."), help="the term's grading output folder (default: .)")
    term.add_argument("--name", help="with init: the term's name (default: the folder's name)")
    term.add_argument("--for", dest="for_", choices=["demo", "samples", "clean"], default="demo",
                      help="with guard: the command about to run")
    term.add_argument("--to", type=Path, help="with backup: the archive to write (.tar.gz)")
    term.add_argument("--from", dest="from_", type=Path, help="with restore: the archive to restore")
    term.set_defaults(run=cmd_term)
