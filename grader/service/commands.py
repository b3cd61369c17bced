"""``python -m grader serve``: its options, and the process they start (``serve``: the routes on their thread and
the loop of ``grader.service.app.Service``, until Ctrl-C)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from grader.layout import Course
from grader.sandbox import Limits
from grader.sandbox.limits import add_arguments, from_arguments

if TYPE_CHECKING:  # the types serve's signature names; imported where the options are built
    from grader.service.app import Options
    from grader.submission.pipeline import Settings


def add_commands(sub, port: int) -> None:
    """``serve`` in ``python -m grader``'s parser."""
    serve = sub.add_parser("serve", help="grade each submission in nbgrader's exchange as it arrives and release "
                                         "its feedback; answer Validate's requests for named diagnoses")
    serve.add_argument("--out", type=Path, default=Path("."),
                       help="the course's grading output (grades.csv, results/, autograded/, feedback/; default: .)")
    serve.add_argument("--exchange", type=Path, help="nbgrader's exchange root (default: the course's exchange/)")
    serve.add_argument("--course-id", default="jax-distributed-training")
    serve.add_argument("--attempts", type=int, default=3,
                       help="graded attempts per learner and assignment in any window (0: no limit; default 3)")
    serve.add_argument("--window-hours", type=float, default=24.0, help="the window of --attempts (default 24)")
    serve.add_argument("--counts", choices=["best", "last"], default="best",
                       help="which graded attempt counts: best (default: the most points after its own late penalty) "
                            "or last (nbgrader's; an attempt identical to an earlier one counts as that one)")
    serve.add_argument("--workers", type=int, default=None,
                       help="warm kernels grading at once (default: the number of cores plus one)")
    serve.add_argument("--port", type=int, default=port,
                       help="the port of /validate, /appeal, /appeals, /duedates and /status")
    serve.add_argument("--host", default="127.0.0.1", metavar="ADDR",
                       help="the address that port listens on (default 127.0.0.1); any other needs --tls-cert")
    serve.add_argument("--tls-cert", type=Path, metavar="FILE",
                       help="serve that port over HTTPS with this certificate (PEM, its chain after it)")
    serve.add_argument("--tls-key", type=Path, metavar="FILE", help="the private key of --tls-cert (PEM)")
    serve.add_argument("--members", default="", metavar="GROUP,...",
                       help="answer only accounts in these Unix groups (a course's learners and graders; anyone "
                            "else gets 403): what a hub of several courses gives each course's service")
    serve.add_argument("--gradebook", metavar="DB_URL",
                       help="nbgrader's database the counting attempts go into, and due dates and extensions come "
                            "from (default: OUT/gradebook.db, the one formgrader reads when OUT is the course root)")
    serve.add_argument("--no-gradebook", action="store_true",
                       help="write grades.csv and results/ only (formgrader then shows nothing of the service's)")
    serve.add_argument("--no-check-owner", action="store_true",
                       help="grade a submission under the student id its folder names even when another Unix "
                            "account owns it (one account for every learner, as in a demo or a benchmark)")
    serve.add_argument("--once", action="store_true", help="grade what is in the exchange now, then stop")
    serve.add_argument("--slurm-workers", type=int, default=0, metavar="N",
                       help="grade on N Dask workers in Slurm jobs (dask-jobqueue; needs --tls-dir) instead of here")
    serve.add_argument("--tls-dir", type=Path, metavar="DIR", help="the course's certificates (python -m grader certs)")
    serve.add_argument("--scheduler-host", default="127.0.0.1", help="an address of this machine every node reaches")
    serve.add_argument("--slurm-partition", default=None, help="the Slurm partition of the grading jobs")
    serve.add_argument("--lms", type=Path, metavar="FILE", help="the LMS file: totals passed back over LTI 1.3 AGS")
    serve.add_argument("--no-confine", action="store_true", help="skip the uid switch and mount hiding (development only)")
    add_arguments(serve, Limits())
    serve.set_defaults(run=run)


def run(args) -> int:
    from grader.service.app import Options
    from grader.classroom.batch import default_workers
    from grader.programs.judged import Judged
    from grader.term.attempts import Policy
    from grader.submission.pipeline import Settings

    course = Course.default()
    try:
        policy = Policy(None if args.attempts == 0 else args.attempts, args.window_hours, args.counts)
    except ValueError as error:
        print(f"serve: {error}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("serve: warning: not running as root, so kernels are not sealed (docs/explanation/security-model.md)",
              file=sys.stderr)
    settings = Settings(out=args.out.resolve(), limits=from_arguments(args), num_devices=args.num_devices,
                        platform=args.platform, confine=not args.no_confine, compile_cache=False,
                        judged=Judged())  # the service's run is its lifetime: identical programs judged once
    cluster = None
    if args.slurm_workers:  # kernels on Dask workers in Slurm jobs, over the course's mutual TLS
        if args.tls_dir is None:
            print("serve: --slurm-workers needs --tls-dir (python -m grader certs DIR makes one)", file=sys.stderr)
            return 2
        import functools

        from grader.classroom.cluster import slurm_client

        cluster = functools.partial(slurm_client, args.slurm_workers, args.tls_dir.resolve(), host=args.scheduler_host,
                                    queue=args.slurm_partition)
    try:
        tls = listening_tls(args.host, args.tls_cert, args.tls_key)
    except ValueError as error:
        print(f"serve: {error}", file=sys.stderr)
        return 2
    options = Options(exchange=(args.exchange or course.root / "exchange").resolve(), course_id=args.course_id,
                      out=args.out.resolve(), policy=policy,
                      workers=args.workers or (3 * args.slurm_workers if cluster else default_workers()),
                      gradebook=None if args.no_gradebook else
                      (args.gradebook or f"sqlite:///{args.out.resolve() / 'gradebook.db'}"),
                      port=args.port, host=args.host, tls=tls, check_owner=not args.no_check_owner, cluster=cluster,
                      lms=args.lms, members=tuple(g.strip() for g in args.members.split(",") if g.strip()))
    return serve(course, options, settings, once=args.once)


def listening_tls(host: str, cert: Path | None, key: Path | None):
    """The service's TLS (an ``ssl.SSLContext``), or None for plain http, which only a loopback address may serve:
    what crosses a network (learners' answers, the verdicts their Validate shows) crosses it encrypted."""
    import ssl

    from grader.learner.report import is_loopback_host

    if (cert is None) != (key is None):
        raise ValueError("--tls-cert and --tls-key go together")
    if cert is None:
        if not is_loopback_host(host):
            raise ValueError(f"--host {host} is reached from other hosts: serve it over HTTPS with --tls-cert and "
                             "--tls-key (learners' servers refuse plain http off their own machine)")
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        raise ValueError(f"--tls-cert {cert} / --tls-key {key} could not be loaded: {error}") from None
    return context


def serve(course: Course, options: Options, settings: Settings, *, once: bool = False) -> int:
    """Run until interrupted (``once``: grade what is in the exchange now, then stop): the routes on their own
    thread, then the loop that scans the exchange and delivers regrade answers; Ctrl-C or SIGTERM stops both."""
    import signal
    import threading
    import time

    from grader.lms.config import ConfigError
    from grader.service import exchange
    from grader.service.app import Service
    from grader.service.routes import Server, handler

    try:
        service = Service(course, options, settings)
    except (exchange.UnsafeExchange, ConfigError) as error:
        print(f"serve: {error}", file=sys.stderr, flush=True)
        return 2
    server = None
    if options.port is not None and not once:
        server = Server((options.host, options.port), handler(service), tls=options.tls)
        threading.Thread(target=server.serve_forever, daemon=True, name="http").start()
    print(f"serve: watching {exchange.course_dir(options.exchange, options.course_id) / 'inbound'}; "
          f"{options.policy.describe()}; {options.workers} warm kernel(s)" + (f"; Validate's diagnoses on "
          f"{'https' if options.tls else 'http'}://{options.host}:{options.port}/validate" if server else ""),
          file=sys.stderr, flush=True)
    delivered_at = 0.0
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # a hub's or kill's stop, as Ctrl-C does
    try:
        while True:
            if time.monotonic() - delivered_at > 2.0:
                service.deliver_answers()
                delivered_at = time.monotonic()
            found = service.scan()
            if once and not found and service.idle() and not service.still_arriving():
                return 0
            time.sleep(options.poll_s)
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
        if server is not None:
            server.shutdown()
        service.close()
        signal.signal(signal.SIGTERM, previous)
