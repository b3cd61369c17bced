"""The author's two commands, ``python -m grader new-assignment NAME`` and ``python -m grader lint NAME``: their
arguments (``add_parsers``, called by ``grader.cli``) and what they print. Nothing heavy is imported until one runs."""
from __future__ import annotations

import sys

from grader.layout import Course


def new_assignment(course: Course, name: str) -> int:
    from grader.authoring.scaffold import ScaffoldError, new_assignment as scaffold

    try:
        written = scaffold(course, name)
    except ScaffoldError as error:
        print(f"new-assignment: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(course.root)}")
    print(f"next: python -m grader lint {name}; then docs/how-to/author-a-lesson.md")
    return 0


def lint(course: Course, name: str, *, num_devices: int = 4, static: bool = False, strict: bool = False) -> int:
    from grader.authoring.lint import lint as check

    report = check(course, name, num_devices=num_devices, execute=not static)
    failures = report.failures(strict)
    for problem in report.problems:
        print(problem if problem in failures else f"unproven: {problem}")
    ran = "the static checks" if static else f"the static checks and the solution's run on {num_devices} devices"
    unproven = len(report.problems) - len(failures)
    also = f"; {unproven} named mistake(s) no scenario proves yet (--strict fails on them)" if unproven else ""
    if failures:
        print(f"lint {name}: {len(failures)} problem(s) in {ran}{also}", file=sys.stderr)
        return 1
    print(f"lint {name}: {report.tests} test(s), {report.mistakes} named mistake(s): no problems in {ran}{also}")
    return 0


def add_parsers(sub) -> None:
    """The two subcommands, on ``python -m grader``'s subparsers."""
    new = sub.add_parser("new-assignment", help="write a new graded assignment to start from: source/NAME/ (notebook "
                                                "and rubric) and two sample scenarios (docs/how-to/author-a-lesson.md)")
    new.add_argument("name", help="the assignment's name: lower-case letters, digits and underscores")
    new.set_defaults(run=lambda args: new_assignment(Course.default(), args.name))

    checks = sub.add_parser("lint", help="check an assignment's notebook, rubric and scenarios before learners see "
                                         "them")
    checks.add_argument("name", help="the assignment (a folder of source/)")
    checks.add_argument("--num-devices", type=int, default=4, help="the device count the solution runs on (default 4)")
    checks.add_argument("--static", action="store_true", help="only the checks that read files (no kernel runs)")
    checks.add_argument("--strict", action="store_true", help="also fail on named mistakes no scenario proves")
    checks.set_defaults(run=lambda args: lint(Course.default(), args.name, num_devices=args.num_devices,
                                              static=args.static, strict=args.strict))


