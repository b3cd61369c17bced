"""``python -m grader``: the course's command line (a stable interface).

    grade     --submissions DIR --out DIR [--workers N | --scheduler tls://HOST:PORT --tls-dir DIR]
    certs     DIR [--hosts NAME...]                       TLS certificates for a Dask cluster
    generate  [NAME...] [--check]                         student notebooks from source/
    new-assignment NAME                                   a new graded assignment to start from (source/NAME/)
    lint      NAME [--static] [--strict]                  an assignment checked, its solution graded, before release
    execute   NOTEBOOK... [-p NAME VALUE]                 run notebooks headless (papermill)
    figures   [--check]                                   rebuild figures/ from source/
    samples   [--check]                                   rebuild samples/submitted/
    report    --out DIR [--gradebook URL]                 gradebook table; hand grades into grades.csv, feedback
    export    [--out DIR] --canvas FILE [--moodle FILE]   the totals as an LMS's grade-import CSV
    history   STUDENT [ASSIGNMENT] [--out DIR]            every event behind a learner's grades, and the totals
    extend    STUDENT ASSIGNMENT --until DATE|--hours N [--attempts N]   a learner's accommodations
    term      init|status|backup|restore|clean [--out DIR] a term's records: marked, backed up, never cleaned
    roster    FILE                                        the class's roster applied to the hub's accounts (root)
    lms       status|sync|keys --config FILE              grades passed back to the LMS (LTI 1.3 AGS)
    appeal    ASSIGNMENT TEST --reason TEXT | --list      (learner) ask for a test to be looked at again
    appeals   [--all] | answer ID kept|changed|fixed      (instructor) the regrade requests, and their answers
    workspace                                             copy new assignments into workspace/ (never replaces)
    lab       [JUPYTER ARGS]                              the learner's JupyterLab on workspace/
    instructor [JUPYTER ARGS]                             the instructor's JupyterLab with formgrader
    serve     [--attempts N --window-hours H --counts best|last]   grade submissions as they arrive
    hub       [--spawner local|slurm --cull-idle SECONDS]  a JupyterHub for the class (root)
    slurm     up|down|status                              a one-machine Slurm with two nodes (root)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from grader.layout import Course
from grader.sandbox import Limits
from grader.sandbox.limits import add_arguments, from_arguments

DEFAULT_SERVICE_PORT = 47080  # grader.service.app.DEFAULT_PORT; the learner's Validate asks there (grader.learner)


def cmd_grade(args) -> int:
    from grader.sandbox.zygote import started_early  # first: the fork server's imports (about 3 s) overlap ours

    with started_early(not args.scheduler and not args.no_fork_server) as zygote:
        from grader.classroom.batch import check_students, grade_all
        from grader.submission.pipeline import Settings
        from grader.classroom.report import summary, table

        settings = Settings(out=args.out.resolve(), limits=from_arguments(args), num_devices=args.num_devices,
                            platform=args.platform, confine=not args.no_confine, prewarm=not args.no_prewarm,
                            fork_server=not args.no_fork_server, compile_cache=not args.no_compile_cache)
        if settings.confine and os.geteuid() != 0 and not args.scheduler:
            print("warning: not running as root, so kernels are not sealed (no namespaces, private root, uid switch, "
                  "seccomp); only the time, memory, output and file limits apply. Grade untrusted work as root "
                  "(docs/explanation/security-model.md).", file=sys.stderr)
        security = None
        if args.scheduler:
            try:
                from grader.classroom.cluster import cluster_security

                security = cluster_security(args)
            except (ValueError, OSError) as error:
                print(f"grade: {error}", file=sys.stderr)
                return 2
        elif any((args.tls_dir, args.tls_ca, args.tls_cert, args.tls_key, args.insecure_cluster,
                  args.max_result_bytes is not None)):
            print("grade: --tls-*, --insecure-cluster and --max-result-bytes apply only with --scheduler", file=sys.stderr)
            return 2
        if args.test:
            from grader.service.retest import command

            return command(args, settings, Course.default(), zygote)
        if args.submissions is None:
            return print("grade: --submissions is required (unless --test ID)", file=sys.stderr) or 2
        if args.student:  # every id checked before anything runs
            try:
                check_students(args.submissions.resolve(), args.student)
            except (ValueError, OSError) as error:
                print(f"grade: --student: {error}", file=sys.stderr)
                return 2
        started = time.monotonic()
        if args.scheduler:
            from grader.classroom.cluster import grade_all_on_cluster

            results = grade_all_on_cluster(args.submissions.resolve(), Course.default(), settings, args.scheduler,
                                           security=security, insecure=args.insecure_cluster, only=args.assignment,
                                           force=args.force, max_result_bytes=args.max_result_bytes, students=args.student)
        else:
            results = grade_all(args.submissions.resolve(), Course.default(), settings, workers=args.workers,
                                only=args.assignment, force=args.force, students=args.student, zygote=zygote)
        if args.gradebook:
            from grader.nbgrader_adapter.db import export_grades

            chosen = [r for r in results if not args.student or r.student_id in args.student]  # the others' rows stay
            written = export_grades(args.gradebook, Course.default(), chosen, args.submissions.resolve())
            print(f"nbgrader gradebook: {written} notebooks written to {args.gradebook}")
        from grader.nbgrader_adapter.manual_grades import refreshed

        try:  # grades already entered by hand stay in the tables; late penalties where a due date is set
            results, manual, late = refreshed(settings.out, args.gradebook)
        except ValueError as error:
            print(f"grade: {error}", file=sys.stderr)
            return 2
        print(table(results, manual, late))
        print(summary(results, time.monotonic() - started))
        print(f"grades: {settings.out / 'grades.csv'}; per-test results: {settings.out / 'results.json'}; "
              f"feedback: {settings.out / 'feedback'}/STUDENT/ASSIGNMENT/*.html")
        return 0


def cmd_certs(args) -> int:
    from grader.classroom.certs import make_certificates, usage

    try:
        d = make_certificates(args.dir, args.hosts, days=args.days, force=args.force)
    except (FileExistsError, ValueError) as error:
        print(f"certs: {error}", file=sys.stderr)
        return 1
    print(usage(d))
    return 0


def _build_or_check(args, build, stale, folder: str, command: str) -> int:
    """Rebuild a generated folder, or with --check list what is stale in it."""
    course = Course.default()
    if args.check:
        outdated = stale(course)
        for name in outdated:
            print(f"stale: {folder}/{name} differs from what source/ produces; run `python -m grader {command}`")
        return 1 if outdated else 0
    for path in build(course):
        print(f"wrote {path.relative_to(course.root)}")
    return 0


def cmd_generate(args) -> int:
    from grader.course.generate import generate, stale

    if args.assignments:  # only these (an author's new lesson): the others' notebooks stay as they are
        unknown = sorted(set(args.assignments) - set(Course.default().assignments()))
        if unknown or args.check:
            return print(f"generate: {'--check takes no names' if args.check else 'no assignment ' + ', '.join(unknown)}",
                         file=sys.stderr) or 2
        return _build_or_check(args, lambda course: generate(course, args.assignments), stale, "notebooks", "generate")
    return _build_or_check(args, generate, stale, "notebooks", "generate")


def cmd_figures(args) -> int:
    from grader.course.figures import build_figures, stale_figures

    return _build_or_check(args, lambda course: build_figures(course, progress=not args.quiet), stale_figures,
                           "figures", "figures")


def cmd_samples(args) -> int:
    from grader.course.samples import build_samples, stale_samples

    return _build_or_check(args, build_samples, stale_samples, "samples/submitted", "samples")


def cmd_execute(args) -> int:
    from grader.course.execute import command

    return command(Course.default(), args.notebooks, args.parameter, args.out, quiet=args.quiet)


def cmd_report(args) -> int:
    from grader.nbgrader_adapter.manual_grades import default_db, refreshed
    from grader.classroom.report import table

    db_url = args.gradebook or default_db(args.out)
    try:  # hand grades from formgrader and late penalties into grades.csv and feedback
        results, manual, late = refreshed(args.out, db_url)
    except ValueError as error:
        print(f"report: {error}", file=sys.stderr)
        return 2
    print(table(results, manual, late))
    if args.html:
        from grader.classroom import class_data, class_page

        from grader.classroom import similarity

        summary = class_data.summarize(results, manual, late)  # results/, read once: grading times included
        similar = similarity.find(args.out, Course.default())  # the learners' own code, from autograded/
        print(f"class report: {class_page.write(summary, args.out, similar=similar)}")
    return 0


def cmd_export(args) -> int:
    from grader.nbgrader_adapter.lms import export_command

    return export_command(args.out, args.gradebook, args.roster, args.canvas, args.moodle, args.canvas_id)


def cmd_workspace(args) -> int:
    from grader.course.workspace import seed, workspace_dir

    course = Course.default()
    for folder in seed(course):
        print(f"copied {folder.relative_to(course.root)} from {course.release.relative_to(course.root)}")
    print(f"your work is in {workspace_dir(course)}: generate, demo and the tests never touch it")
    return 0


def _exec_lab(argv, env, cwd) -> int:
    os.chdir(cwd)
    os.execve(argv[0], argv, env)
    return 1  # not reached


def cmd_lab(args) -> int:
    from grader.course.workspace import learner_lab, one_machine

    course = Course.default()
    one_machine(course)
    return _exec_lab(*learner_lab(course, extra=args.jupyter_args))


def cmd_instructor(args) -> int:
    from grader.classroom.class_page import placeholder
    from grader.course.workspace import instructor_lab

    placeholder(Course.default().root)  # formgrader's Class report link finds a page before the first report
    return _exec_lab(*instructor_lab(Course.default(), extra=args.jupyter_args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    defaults = Limits()

    grade = sub.add_parser("grade", help="grade submitted/{student}/{assignment}/*.ipynb")
    grade.add_argument("--submissions", type=Path, help="the submissions to grade: {student}/{assignment}/*.ipynb")
    grade.add_argument("--out", type=Path, required=True)
    grade.add_argument("--test", metavar="ID", help="grade this test again on every notebook that counts in --out")
    grade.add_argument("--why", default="", help="with --test: the reason, kept in the history of each grade")
    grade.add_argument("--workers", type=int, default=None,
                       help="notebooks graded at once (default: the number of cores plus one)")
    grade.add_argument("--scheduler", metavar="tls://HOST:PORT",
                       help="run the notebooks on the workers of this Dask scheduler instead of locally (mutual TLS)")
    grade.add_argument("--tls-dir", type=Path, metavar="DIR",
                       help="certificates from `python -m grader certs DIR` (ca.pem, client.pem, client-key.pem)")
    grade.add_argument("--tls-ca", type=Path, metavar="FILE", help="CA certificate of the cluster (PEM)")
    grade.add_argument("--tls-cert", type=Path, metavar="FILE", help="the instructor's client certificate (PEM)")
    grade.add_argument("--tls-key", type=Path, metavar="FILE", help="its private key (PEM, mode 0600)")
    grade.add_argument("--insecure-cluster", action="store_true",
                       help="accept a plain tcp:// scheduler: no encryption, no authentication (trusted networks only)")
    grade.add_argument("--max-result-bytes", type=int, metavar="N",
                       help="largest executed notebook accepted from a worker (JSON characters); beyond it the "
                            "result is too_much_output (default: sent size + 16 x --max-output-bytes + 1 MiB)")
    grade.add_argument("--assignment", action="append", help="grade only this assignment (repeatable)")
    grade.add_argument("--student", action="append", metavar="ID",
                       help="grade only this learner (repeatable); every other learner's results stay as they are")
    add_arguments(grade, defaults)
    grade.add_argument("--force", action="store_true", help="regrade notebooks that already have a result")
    grade.add_argument("--gradebook", metavar="DB_URL",
                       help="also write the scores into this nbgrader database (sqlite:///... or postgresql://...)")
    grade.add_argument("--no-prewarm", action="store_true",
                       help="start each kernel only when its notebook is due (slower; for comparisons)")
    grade.add_argument("--no-fork-server", action="store_true",
                       help="start every kernel as a new process instead of forking it (slower; for comparisons)")
    grade.add_argument("--no-compile-cache", action="store_true",
                       help="program runners compile every learner program instead of reading the instructor's "
                            "programs compiled before the run (for comparisons; kernels never read a cache)")
    grade.add_argument("--no-confine", action="store_true",
                       help="skip the uid switch and mount hiding (development only)")
    grade.set_defaults(run=cmd_grade)


    certs = sub.add_parser("certs", help="create a private CA and TLS certificates for a Dask grading cluster")
    certs.add_argument("dir", type=Path, metavar="DIR")
    certs.add_argument("--hosts", nargs="+", default=["localhost", "127.0.0.1"], metavar="NAME",
                       help="host names and IP addresses of the scheduler and workers (subject alternative names)")
    certs.add_argument("--days", type=int, default=365, help="validity of the certificates")
    certs.add_argument("--force", action="store_true", help="replace the certificates already in DIR")
    certs.set_defaults(run=cmd_certs)

    generate = sub.add_parser("generate", help="write notebooks/ from source/ with nbgrader")
    generate.add_argument("assignments", nargs="*", metavar="NAME", help="only these assignments (default: all)")
    generate.add_argument("--check", action="store_true", help="fail if notebooks/ is stale")
    generate.set_defaults(run=cmd_generate)

    from grader.authoring.commands import add_parsers

    add_parsers(sub)  # new-assignment, lint

    execute = sub.add_parser("execute", help="execute notebooks headless with papermill")
    execute.add_argument("notebooks", nargs="*", type=Path)
    execute.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    execute.add_argument("--out", type=Path)
    execute.add_argument("--quiet", action="store_true")
    execute.set_defaults(run=cmd_execute)

    figures = sub.add_parser("figures", help="rebuild figures/ by executing source/")
    figures.add_argument("--check", action="store_true")
    figures.add_argument("--quiet", action="store_true")
    figures.set_defaults(run=cmd_figures)

    samples = sub.add_parser("samples", help="rebuild the bundled sample submissions")
    samples.add_argument("--check", action="store_true")
    samples.set_defaults(run=cmd_samples)

    report = sub.add_parser("report", help="print the gradebook of a grading output folder")
    report.add_argument("--out", type=Path, required=True)
    report.add_argument("--html", action="store_true",
                        help="also write the class report, OUT/class-report/index.html, and its tables as CSV")
    report.add_argument("--gradebook", metavar="DB_URL",
                        help="nbgrader database with the grades entered by hand (default: OUT/gradebook.db if present)")
    report.set_defaults(run=cmd_report)

    export = sub.add_parser("export", help="the totals (after hand grades and late penalties) as an LMS's grade-import CSV")
    export.add_argument("--out", type=Path, default=Path("."),
                        help="the grading output folder (default: ., the course root, where the service writes)")
    export.add_argument("--canvas", type=Path, metavar="FILE", help="write Canvas's gradebook-import CSV here")
    export.add_argument("--moodle", type=Path, metavar="FILE", help="write Moodle's grade-import CSV here")
    export.add_argument("--gradebook", metavar="DB_URL", help="nbgrader database (default: OUT/gradebook.db if present)")
    export.add_argument("--roster", type=Path, metavar="CSV", help="roster CSV (default: the gradebook's students)")
    export.add_argument("--canvas-id", action="append", default=[], metavar="ASSIGNMENT=ID", help="(repeatable)")
    export.set_defaults(run=cmd_export)

    _module_commands(sub)

    workspace = sub.add_parser("workspace", help="copy released assignments the learner lacks into workspace/")
    workspace.set_defaults(run=cmd_workspace)
    lab = sub.add_parser("lab", help="the learner's JupyterLab, rooted at workspace/ (no formgrader, no source/)")
    lab.add_argument("jupyter_args", nargs=argparse.REMAINDER)
    lab.set_defaults(run=cmd_lab)
    instructor = sub.add_parser("instructor", help="the instructor's JupyterLab at the course root, with formgrader")
    instructor.add_argument("jupyter_args", nargs=argparse.REMAINDER)
    instructor.set_defaults(run=cmd_instructor)
    return parser


# Subcommands whose code and parser live in their own module, in the order --help lists them: appeal and appeals
# history, appeal and appeals (the learner's and the instructor's), extend (accommodations), term (a term's records),
# lms (grades passed back over LTI 1.3), hub, roster and slurm.
MODULE_COMMANDS = (("grader.term.history", False), ("grader.service.commands", True),
                   ("grader.service.appeals", True), ("grader.service.accommodations", False),
                   ("grader.term.commands", False), ("grader.lms.commands", False), ("grader.hub.start", True))


def _module_commands(sub) -> None:
    import importlib

    for name, takes_port in MODULE_COMMANDS:
        module = importlib.import_module(name)
        module.add_commands(sub, DEFAULT_SERVICE_PORT) if takes_port else module.add_commands(sub)


_LABS = ("lab", "instructor")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if argv[:1] and argv[0] in _LABS and not {"-h", "--help"} & set(argv[1:2]):
        # Everything after `lab`/`instructor` is JupyterLab's, in order (`lab --port=8899 --no-browser`):
        # argparse's REMAINDER refuses a first argument that looks like an option.
        args = parser.parse_args(argv[:1])
        args.jupyter_args = argv[1:]
    else:
        args = parser.parse_args(argv)
    sys.exit(args.run(args))
