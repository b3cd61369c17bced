"""JupyterHub's configuration for ``python -m grader hub`` (``jupyterhub -f`` this file, as root).

Everything machine-specific comes from the settings file ``python -m grader hub`` writes (``COURSE_HUB_SETTINGS``,
root only): paths, ports, groups. JupyterHub's own pieces do the work:

* ``PAMAuthenticator``: the class logs in with its Unix passwords; members of the course's groups are allowed, the
  instructors' group are the hub's admins (for an LMS login, see docs/how-to/run-a-class-on-jupyterhub.md);
* ``LocalProcessSpawner`` (``--spawner local``) or batchspawner's ``SlurmSpawner`` (``--spawner slurm``,
  ``grader.slurm.spawner``: each server a Slurm job): each server, and so each kernel, runs as its user's own
  account. Learners get ``lab/learner``'s configuration on the hub's exchange, rooted at their home; staff
  (``jdt-graders``) get the course root with formgrader;
* ``jupyterhub-idle-culler`` (unless ``--cull-idle 0``): a server idle that long is stopped, and each server stops its
  own kernels idle half that long;
* a managed service, ``grading``: the course's ``python -m grader serve`` as root (it seals kernels) on the shared
  exchange, with the course root as its output and gradebook; with ``hub --course``, one per course (``grading-ID``,
  its own root, gradebook and port), each answering its course's groups only (``grader.hub.courses``). Each server
  gets ``COURSE_GRADING_TOKEN``, a token of its user with no power but naming them, which it sends with its
  requests; the service asks the hub whose it is (``grader.service.identity``), so it tells who asks from the request
  itself, on this host or another.
"""
import grp
import json
import os
import pwd

from grader.learner.report import is_loopback_host

c = get_config()  # noqa: F821 - provided by traitlets when JupyterHub loads this file

with open(os.environ["COURSE_HUB_SETTINGS"], encoding="utf-8") as handle:
    s = json.load(handle)

state, venv, course = s["state"], s["venv"], s["course"]
bin_path = f"{venv}/bin:/usr/bin:/bin"

if s.get("public_tls"):  # hub --ssl-cert/--ssl-key: learners open https:// (the proxy serves the site's certificate)
    c.JupyterHub.ssl_cert, c.JupyterHub.ssl_key = s["public_tls"]
c.JupyterHub.bind_url = f"{'https' if s.get('public_tls') else 'http'}://{s['ip']}:{s['port']}"
site = s.get("site_address") or "127.0.0.1"  # where servers on other hosts reach this one (hub --site-address)
remote = not is_loopback_host(site)
internal_certs = os.path.join(state, "internal-ssl")  # JupyterHub's own CAs and certificates (internal_ssl)
c.JupyterHub.hub_bind_url = f"{'https' if remote else 'http'}://{site}:{s['hub_port']}"  # the API every server calls
if remote:  # JupyterHub's internal TLS: hub, proxy, servers and services verify each other (its own CAs, one per part)
    c.JupyterHub.internal_ssl = True
    c.JupyterHub.internal_certs_location = internal_certs
    c.JupyterHub.trusted_alt_names = [f"IP:{site}"]  # the hub's certificate, as servers on other hosts reach it
c.ConfigurableHTTPProxy.api_url = f"{'https' if remote else 'http'}://127.0.0.1:{s['proxy_api_port']}"
c.ConfigurableHTTPProxy.command = [s["proxy"]]
c.ConfigurableHTTPProxy.pid_file = os.path.join(state, "jupyterhub-proxy.pid")
c.JupyterHub.cookie_secret_file = os.path.join(state, "jupyterhub_cookie_secret")
c.JupyterHub.db_url = f"sqlite:///{os.path.join(state, 'jupyterhub.sqlite')}"
c.JupyterHub.cleanup_servers = True  # Ctrl-C stops every server too
# the course's login page: JupyterHub's, with colours that pass WCAG 2.1 AA (grader/hub/templates/login.html)
c.JupyterHub.template_paths = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")]

groups = s["groups"]
# every course of the hub, its own first (hub --course adds more: grader.hub.courses); each its root, groups, service
courses = s.get("courses") or [{"id": s["course_id"], "root": course, "learners": groups["learners"],
                                "graders": groups["graders"], "instructor": s["instructor"], "service": "grading",
                                "port": s["service_port"]}]
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {groups["instructors"], *(c_[g] for c_ in courses for g in ("learners", "graders"))}
# the hub's admins may open every server on it: with more than one course, no course's staff is one
c.PAMAuthenticator.admin_groups = {groups["instructors"]} if len(courses) == 1 else set()
if s.get("lti"):  # hub --lti FILE: LMS launches; the password form for staff only (grader/hub/lti.py)
    from grader.hub.lti import configure

    configure(c, s)

c.Spawner.cmd = [f"{venv}/bin/jupyterhub-singleuser"]
job = s.get("slurm") or {}  # python -m grader hub --slurm-partition/-memory/-cpus/-runtime, --grading-scheduler-host
if s.get("spawner") == "slurm":  # each server a Slurm job, submitted as its user (runuser: no sudo needed as root)
    c.JupyterHub.spawner_class = "grader.slurm.spawner.CourseSlurmSpawner"
    c.SlurmSpawner.exec_prefix = "/usr/sbin/runuser -m -u {username} --"
    c.SlurmSpawner.batchspawner_singleuser_cmd = f"{venv}/bin/batchspawner-singleuser"
    c.SlurmSpawner.req_partition = job.get("partition", "course")
    c.SlurmSpawner.req_memory = job.get("memory", "3G")  # JupyterLab, a JAX kernel on 4 CPU devices, Validate
    c.SlurmSpawner.req_nprocs = str(job.get("cpus", "1"))
    c.SlurmSpawner.req_runtime = job.get("runtime", "8:00:00")
else:
    c.JupyterHub.spawner_class = "localprocess"
c.Spawner.start_timeout = 180  # JupyterLab and nbgrader's extensions on a busy 2-core machine
c.Spawner.http_timeout = 180
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
# Learners: no course root, no checkout; Validate asks the grading service: on this machine over loopback, from
# another host over HTTPS verified with the course's CA (grader.hub.install.site_certificates).
def _service_url(port: int) -> str:
    return f"https://{site}:{port}/" if remote else f"http://127.0.0.1:{port}/"


grading = {"COURSE_GRADING_URL": _service_url(courses[0]["port"]),
           **({"COURSE_GRADING_CA": os.path.join(os.path.dirname(state), "site-ca.pem")} if remote else {})}
if len(courses) > 1:  # Validate asks the service of the course a notebook lies under (~/COURSE/...: grader.learner)
    grading["COURSE_GRADING_URLS"] = json.dumps({c_["id"]: _service_url(c_["port"]) for c_ in courses})
c.Spawner.environment = {"JUPYTER_CONFIG_PATH": s["learner_config"], **grading, "PATH": bin_path}


def _course_of(name: str, role: str = "graders") -> dict | None:
    """The first course whose ``role`` group (graders: its formgrader opens on it; learners: its service answers the
    Assignment List's due dates and regrade requests) ``name`` is in, or None."""
    try:
        account = pwd.getpwnam(name)
        mine = set(os.getgrouplist(name, account.pw_gid))
    except KeyError:
        return None
    for graded in courses:
        try:
            if grp.getgrnam(graded[role]).gr_gid in mine:
                return graded
        except KeyError:
            continue
    return None


GRADING_TOKEN_S = 30 * 24 * 3600  # a server's token for the grading service lasts this long (a new one each start)


def _grading_token(spawner) -> dict:
    """``COURSE_GRADING_TOKEN``: a token of the server's user for the grading service alone, which asks the hub whose
    it is (grader.service.identity) to tell who asks, on this host or another. Its only scope is the user's name, so
    whoever might catch it can open nothing of the learner's; without it the service goes by the connecting account."""
    try:
        token = spawner.user.new_api_token(note="grading service: whose a request is",
                                           scopes=["read:users:name!user"], expires_in=GRADING_TOKEN_S)
    except Exception as error:  # noqa: BLE001 - no token: the service tells the account from the connection
        spawner.log.warning("no grading-service token for %s: %s", spawner.user.name, error)
        return {}
    return {"COURSE_GRADING_TOKEN": token}


def _pre_spawn(spawner) -> None:
    spawner.environment = {**spawner.environment, **_grading_token(spawner)}
    graded = _course_of(spawner.user.name)
    learned = _course_of(spawner.user.name, "learners") if graded is None and len(courses) > 1 else None
    if learned is not None:  # a learner of a further course only: their course's service by default
        spawner.environment = {**spawner.environment, "COURSE_GRADING_URL": _service_url(learned["port"])}
    if graded is not None:  # its course root, opened on formgrader (as `python -m grader instructor`)
        root = graded["root"]
        spawner.notebook_dir = root
        spawner.default_url = "/formgrader"
        spawner.environment = {
            **spawner.environment,
            "JUPYTER_CONFIG_PATH": f"{root}/lab/hub:{root}/lab/instructor",
            "COURSE_ROOT": root,
            **grading,
            "COURSE_GRADING_URL": _service_url(graded["port"]),
            "PATH": bin_path,
        }


c.Spawner.pre_spawn_hook = _pre_spawn



def _serve(served: dict) -> list[str]:
    """A course's grading service: its exchange folder, root and gradebook, its port, its members only."""
    root = served["root"]
    return [f"{venv}/bin/python", "-m", "grader", "serve", "--exchange", s["exchange"], "--course-id", served["id"],
            "--out", root, "--gradebook", f"sqlite:///{root}/gradebook.db", "--port", str(served["port"]),
            "--members", f"{served['learners']},{served['graders']}"]


serve = []  # what every course's service adds to its command
if remote:  # the learner-facing port on the site's address, over HTTPS
    tls = os.path.join(state, "site-tls")
    serve += ["--host", site, "--tls-cert", f"{tls}/cluster.pem", "--tls-key", f"{tls}/cluster-key.pem"]
if s.get("workers"):
    serve += ["--workers", str(s["workers"])]
if s.get("grading_jobs"):  # the kernels on Dask workers in Slurm jobs (grader.classroom.cluster.slurm_client)
    serve += ["--slurm-workers", str(s["grading_jobs"]), "--tls-dir", os.path.join(state, "grading-tls"),
              "--slurm-partition", job.get("partition", "course"),
              "--scheduler-host", job.get("scheduler_host") or site]
c.JupyterHub.services = [{
    "name": served["service"],
    # totals passed back to the LMS as they change, the hub's own course's (grader.lms; docs/how-to/connect-your-lms.md)
    "command": _serve(served) + serve + (["--lms", s["lms"]] if s.get("lms") and served is courses[0] else []),
    "cwd": served["root"],
    "environment": {"COURSE_ROOT": served["root"], "PATH": bin_path},
} for served in courses]

cull = int(s.get("cull_idle") or 0)
if cull:  # a server idle `cull` seconds is stopped; activity is reported often enough for that to be true
    every = max(5, min(300, cull // 6))
    c.JupyterHub.last_activity_interval = every
    c.Spawner.environment["JUPYTERHUB_ACTIVITY_INTERVAL"] = str(every)
    c.Spawner.args = [f"--MappingKernelManager.cull_idle_timeout={max(1, cull // 2)}",
                      f"--MappingKernelManager.cull_interval={every}"]
    c.JupyterHub.services.append({"name": "idle-culler", "command": [
        f"{venv}/bin/python", "-m", "jupyterhub_idle_culler", f"--timeout={cull}", f"--cull-every={every}",
        *(["--ssl-enabled=True", f"--internal-certs-location={internal_certs}"] if remote else [])]})
    c.JupyterHub.load_roles = [{"name": "idle-culler", "services": ["idle-culler"],
                                "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]}]
