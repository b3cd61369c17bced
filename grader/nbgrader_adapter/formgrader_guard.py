"""The instructor's server: formgrader's pages escape what they print, and a Content-Security-Policy.

nbgrader 0.9's formgrader renders its pages with a Jinja environment made without autoescaping and prints ids
into HTML and into inline ``<script>`` blocks (``var student_id = "{{ student_id }}";``), so a student id, an
assignment or notebook name, or a URL path part (``/formgrader/manage_students/<id>``) that holds markup runs
as script in the instructor's session. This server extension (enabled by ``lab/instructor/jupyter_server_config.py``,
which ``python -m grader instructor`` puts on ``JUPYTER_CONFIG_PATH``) replaces that environment with one that

- escapes every value it prints (``autoescape=True``), and
- looks first in the course's ``lab/instructor/templates/formgrader/``, whose templates carry no inline script:
  the values nbgrader's page scripts read come in a JSON data block (``| tojson``: never markup, never code),
  which ``lab/instructor/static/course_formgrader/page_data.js`` turns into those scripts' globals; every
  other template is nbgrader's own, reachable there as ``nbgrader/NAME``. (nbgrader's ``formgrade_404.tpl`` imports a
  macro file nbgrader does not ship; the course's copy imports the grading page's macros and renders.)

formgrader's grading page is an nbconvert template; the course's copy (``lab/instructor/templates/formgrade/``,
named in ``nbgrader_config.py``) escapes ids explicitly and has no inline script or event attribute either.

:func:`content_security_policy` is the server's policy (``tornado_settings``): scripts only from the server
itself (and the few constant inline scripts of JupyterLab's and jupyter-server's own pages, by hash), so an
injected ``<script>`` or ``onerror=`` never runs even where escaping failed. ``'unsafe-eval'`` stays: MathJax 2
(formgrader's math) and JupyterLab's settings validation compile code at run time; no id reaches such code.
"""
from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

TEMPLATES = Path("lab") / "instructor" / "templates" / "formgrader"  # under the server's root (the course)

_INLINE_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S | re.I)


def _constant_inline_scripts(page: str) -> list[str]:
    """The inline scripts of a template that the template engine leaves as written (no tag inside)."""
    found = []
    for match in _INLINE_SCRIPT.finditer(page):
        attrs, body = match.group("attrs"), match.group("body")
        if "src=" in attrs or not body.strip() or "{{" in body or "{%" in body:
            continue
        kind = re.search(r"""type\s*=\s*["']?([^"'\s>]+)""", attrs)
        if kind and kind.group(1).lower() not in ("text/javascript", "module", "application/javascript"):
            continue  # a data block (application/json), never executed
        found.append(body)
    return found


def _script_hashes() -> list[str]:
    """CSP hashes of the constant inline scripts JupyterLab and jupyter-server ship (removing the token from the
    address bar, the login page): computed from the installed files, so they match whatever version is installed."""
    pages = []
    try:
        import jupyterlab

        pages.append(Path(jupyterlab.__file__).parent / "static" / "index.html")
    except ImportError:
        pass
    import jupyter_server

    pages += sorted((Path(jupyter_server.__file__).parent / "templates").glob("*.html"))
    hashes = set()
    for page in pages:
        try:
            text = page.read_text(encoding="utf-8")
        except OSError:
            continue
        for body in _constant_inline_scripts(text):
            digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii")
            hashes.add(f"'sha256-{digest}'")
    return sorted(hashes)


def content_security_policy() -> str:
    """The instructor's server's policy: nothing but its own scripts, styles, images, fonts and connections."""
    return "; ".join([
        "default-src 'self'",
        "script-src " + " ".join(["'self'", "'unsafe-eval'", *_script_hashes()]),
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "frame-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'self'",
    ])


def escaping_environment(root: Path):
    """formgrader's Jinja environment with autoescaping, the course's templates first, nbgrader's as ``nbgrader/``."""
    from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PrefixLoader
    from nbgrader.server_extensions.formgrader import handlers

    stock = FileSystemLoader([handlers.template_path])
    # TEMPLATES.parent: the grading page's macros (formgrade/formgrade_macros.html.j2), which the 404 page imports
    return Environment(loader=ChoiceLoader([FileSystemLoader([str(root / TEMPLATES), str(root / TEMPLATES.parent)]),
                                            PrefixLoader({"nbgrader": stock}), stock]),
                       autoescape=True)


def _install(settings: dict, root: Path) -> None:
    if "nbgrader_jinja2_env" in settings:
        settings["nbgrader_jinja2_env"] = escaping_environment(root)


def _jupyter_server_extension_points():
    return [{"module": "grader.nbgrader_adapter.formgrader_guard"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

    root = Path(serverapp.root_dir)
    settings = serverapp.web_app.settings
    original = FormgradeExtension.init_tornado_settings
    if not getattr(original, "_course_escaping", False):
        def init_tornado_settings(self, webapp):  # formgrader loaded after this extension: swap when it sets up
            original(self, webapp)
            _install(webapp.settings, root)

        init_tornado_settings._course_escaping = True
        FormgradeExtension.init_tornado_settings = init_tornado_settings
    _install(settings, root)  # formgrader loaded before this extension
    from grader.nbgrader_adapter import formgrader_totals

    formgrader_totals.register(serverapp)  # Manage Submissions' late penalty and total columns
    serverapp.log.info("formgrader pages escape what they print (grader.nbgrader_adapter.formgrader_guard)")
