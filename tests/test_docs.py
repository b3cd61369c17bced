"""The documentation site (``make docs``): it builds in strict mode with no network, every internal link and
anchor resolves, nothing is loaded from outside the site, each lesson page shows its figures, and the README
stays a short start that links only to docs pages that exist.

The site is built once, in a temporary folder, exactly as ``make docs`` builds it (``mkdocs.yml``). As root the
build runs in a network namespace of its own (``unshare --net``: only a loopback that is down), so a build step
that fetches anything fails here.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
LESSONS = ["sharded_step", "local_mean_diagnosis", "collectives"]
README_MAX_LINES = 150


class _Page(HTMLParser):
    """The ids of one HTML page and every URL it refers to, with the tag and attribute that holds it."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, url)
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for attribute in ("href", "src"):
            if attrs.get(attribute) is not None:
                self.refs.append((tag, attribute, attrs[attribute]))
        if tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme) or url.startswith("//")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site: (folder, seconds the build took, its output)."""
    out = tmp_path_factory.mktemp("site") / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
               "--site-dir", str(out)]
    if os.geteuid() == 0 and shutil.which("unshare"):
        command = ["unshare", "--net", *command]  # no network at all during the build
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    seconds = time.monotonic() - started
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out, seconds, done.stdout + done.stderr


@pytest.fixture(scope="module")
def pages(site):
    out, _, _ = site
    return {path: _parse(path) for path in sorted(out.rglob("*.html"))}


def test_site_builds_strict_without_network(site):
    out, seconds, log = site
    assert (out / "index.html").is_file()
    assert "WARNING" not in log, log
    print(f"site built in {seconds:.1f} s")


def test_every_docs_page_and_lesson_is_built(site):
    out, _, _ = site
    for page in DOCS.rglob("*.md"):
        built = out / page.relative_to(DOCS).with_suffix(".html")
        assert built.is_file(), f"{page.relative_to(ROOT)} has no page in the site"
    for lesson in LESSONS:
        assert (out / "course" / f"{lesson}.html").is_file(), lesson


def test_every_internal_link_and_anchor_resolves(site, pages):
    out, _, _ = site
    out = out.resolve()
    broken = []
    for path, page in pages.items():
        for tag, attribute, url in page.refs:
            if not url or _external(url):
                continue
            parts = urlsplit(url)
            if not parts.path:
                target = path
            elif parts.path.startswith("/"):  # 404.html: from the site's root, as it is served at any depth
                target = (out / unquote(parts.path).lstrip("/")).resolve()
            else:
                target = (path.parent / unquote(parts.path)).resolve()
            where = f"{path.relative_to(out)}: <{tag} {attribute}={url!r}>"
            if out not in target.parents and target != out:
                broken.append(f"{where} leaves the site")
            elif target.is_dir():
                if not (target / "index.html").is_file():
                    broken.append(f"{where}: a folder without index.html")
            elif not target.is_file():
                broken.append(f"{where}: no such file")
            elif parts.fragment and target.suffix == ".html":
                ids = _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where}: no element with id {parts.fragment!r}")
    assert not broken, "\n".join(broken)


def test_nothing_is_loaded_from_outside_the_site(pages, site):
    """No CDN font, script, style sheet, image or frame: links (<a>) may point outside, nothing else may."""
    out, _, _ = site
    loaded = [f"{path.relative_to(out)}: <{tag} {attribute}={url!r}>"
              for path, page in pages.items() for tag, attribute, url in page.refs
              if tag != "a" and _external(url) and not url.startswith("data:")]
    assert not loaded, "\n".join(loaded)
    for css in out.rglob("*.css"):
        imports = re.findall(r"@import\s+(?:url\()?['\"]?((?:https?:)?//[^'\")\s]+)", css.read_text(errors="replace"))
        assert not imports, f"{css.relative_to(out)} imports {imports}"
    # the lessons' math is typeset by the site's own MathJax copy
    for lesson in LESSONS:
        page = pages[out / "course" / f"{lesson}.html"]
        mathjax = [url for tag, _, url in page.refs if tag == "script" and "MathJax.js" in url]
        assert mathjax, f"{lesson}: no MathJax script"
        assert (out / "course" / urlsplit(mathjax[0]).path).resolve().is_file()


def _figures_drawn(lesson: str) -> list[str]:
    notebook = json.loads((ROOT / "notebooks" / lesson / f"{lesson}.ipynb").read_text())
    call = re.compile(r"""figures\.show\(\s*\w+\s*,\s*figures_dir\s*,\s*["']([\w.-]+\.svg)["']\s*\)""")
    return [name for cell in notebook["cells"] if cell["cell_type"] == "code"
            for name in call.findall("".join(cell["source"]))]


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_lesson_page_shows_its_figures(site, pages, lesson):
    out, _, _ = site
    path = out / "course" / f"{lesson}.html"
    drawn = _figures_drawn(lesson)
    assert drawn, f"{lesson} draws no figure: the figure-cell pattern no longer matches the notebook"
    shown = []
    for src in pages[path].images:
        image = (path.parent / unquote(urlsplit(src).path)).resolve()
        assert image.is_file() and image.stat().st_size > 1000, f"{lesson}: <img src={src!r}> is not in the build"
        shown.append(image.name)
    assert shown == drawn, f"{lesson}: the page shows {shown}, the notebook draws {drawn}"
    for name in drawn:  # the very figure the course generated, byte for byte
        assert (out / "course" / "figures" / name).read_bytes() == (ROOT / "figures" / name).read_bytes()
    # the released student notebook (its scaffolds), not the instructor's solutions
    assert "NotImplementedError" in path.read_text(encoding="utf-8")


def test_every_course_figure_is_on_a_lesson_page():
    drawn = {name for lesson in LESSONS for name in _figures_drawn(lesson)}
    assert drawn == {path.name for path in (ROOT / "figures").glob("*.svg")}


def _markdown_links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_readme_is_short_and_links_only_to_docs_pages_that_exist(site):
    out, _, _ = site
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; keep it a two-minute start " \
                                           f"(at most {README_MAX_LINES}) and move the rest to docs/"
    for command in ("make demo", "make test", "make docs"):
        assert command in readme
    links = [link for link in _markdown_links(readme) if not _external(link)]
    assert links, "README.md links to no docs page"
    for link in links:
        target = urlsplit(link).path
        if target.startswith("docs/images/") and target.endswith(".png"):  # a screenshot, shown by the site too
            assert (ROOT / target).is_file() and (out / Path(target).relative_to("docs")).is_file(), link
            continue
        assert target.startswith("docs/") and target.endswith(".md"), f"README.md links to {link}, not a docs page"
        assert (ROOT / target).is_file(), f"README.md links to {link}, which does not exist"
        assert (out / Path(target).relative_to("docs").with_suffix(".html")).is_file(), f"{link} is not in the site"
    for section in ("tutorial", "how-to", "reference", "explanation"):
        assert any(link.startswith(f"docs/{section}/") for link in links), f"README.md links to no {section} page"


# Each section the README held before the docs existed, by a phrase of its text, and the page it moved to.
MOVED = {
    "how-to/generate-the-course.md": ["`source/{assignment}/{assignment}.ipynb` is the single truth",
                                      "rebuilds the sample class in `samples/submitted/`",
                                      "The demo class (`samples/`) has a roster"],
    "tutorial/index.md": ["The **Validate** button in the notebook toolbar", "KernelRestartRequired",
                          "`make lab` works in `workspace/` (git-ignored)"],
    "how-to/accelerators-and-headless.md": ["Install the JAX build for the accelerator",
                                            "name the failing cell by its grade id"],
    "how-to/run-a-class.md": ["The course has its own exchange, `exchange/`"],
    "how-to/hand-grading.md": ["`make instructor` opens formgrader on the course", "Math without a network",
                               "`nbgrader export` writes `nbgrader_grades.csv`"],
    "how-to/grade-submissions.md": ["A run that is killed can be started again", "`--gradebook sqlite:///gradebook.db`"],
    "how-to/grade-on-a-cluster.md": ["sends each notebook's execution to a dask.distributed cluster",
                                     "The cluster is authenticated with mutual TLS", "*Kubernetes* (dask-kubernetes",
                                     "*Slurm* (dask-jobqueue", "Throughput to expect"],
    "how-to/test-and-ci.md": ["`tests/test_browser.py` checks all of this in a real browser",
                              "`.github/workflows/ci.yml` (GitHub Actions) runs `make test`"],
    "reference/grading-output.md": ["`score`/`max_score` count autograded points only", "`invalid_folder`"],
    "reference/commands.md": ["Papermill parameters of every notebook"],
    "explanation/architecture.md": ["Test cells do not decide anything inside the learner's kernel",
                                    "filled only for assignments with at least 16 submissions", "grader/sandbox/"],
    "explanation/security-model.md": ["The learner controls arbitrary Python in the kernel", "What does not hold",
                                      "*No network.*", "Faked checks", "Hard-coded answers", "Suspicious code",
                                      "Records come only from the test cell's own execution"],
    "explanation/benchmarks.md": ["`benchmarks/grading_throughput.py` grades a class of 30 submissions",
                                  "`benchmarks/evidence_cost.py`"],
}


@pytest.mark.parametrize("page", sorted(MOVED))
def test_moved_readme_sections_are_in_the_docs(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    missing = [phrase for phrase in MOVED[page] if phrase not in text]
    assert not missing, f"docs/{page} lost {missing}"


def test_command_reference_names_every_option():
    """docs/reference/commands.md documents every subcommand and option of ``python -m grader``."""
    import argparse

    from grader.cli import build_parser

    reference = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, sub in subparsers.choices.items():
        if f"### {name}" not in reference:
            missing.append(f"the subcommand {name}")
        for action in sub._actions:
            longest = max(action.option_strings, key=len, default=None)
            if longest and longest != "--help" and f"`{longest}" not in reference:
                missing.append(f"{name} {longest}")
    assert not missing, "docs/reference/commands.md lacks " + ", ".join(missing)


def test_ci_builds_the_site_and_keeps_it_as_an_artifact():
    import yaml

    jobs = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())["jobs"]
    steps = jobs["docs"]["steps"]
    assert any(".ci/run docs" in step.get("run", "") for step in steps)
    uploads = [step["with"]["path"] for step in steps if "upload-artifact" in step.get("uses", "")]
    assert uploads == ["site/"]
    assert "make docs" in (ROOT / ".ci" / "run").read_text()


MEASURED_ROW = re.compile(r"^\| (?P<when>[^|]+?) \| (?P<commit>[0-9a-f]{7,}) \| (?P<tests>\d+) passed \| "
                          r"(?P<pytest>\d+ min \d+ s) \| (?P<all>\d+ min \d+ s) \|", re.MULTILINE)
QUOTED_RUN = re.compile(r"(\d+) tests(?: passed)? in (\d+ min \d+ s) of pytest, (\d+ min \d+ s) in all")
QUOTED_ABOUT = re.compile(r"`make test` takes about (\d+)\s+minutes")


# A throughput, a ratio to the floor or the instructor's CPU per submission, as the pages quote them
QUOTED_THROUGHPUT = re.compile(r"(\d[\d,]*(?:\.\d+)?)(?: submissions| notebooks)? (?:per|a) minute|(\d+\.\d\d?)x\b|"
                               r"(\d[\d,]*(?:\.\d+)?) ms of CPU per submission|"
                               # a latency: feedback after Submit, a burst's pages
                               r"(\d+\.\d) s \(median|95th\s+percentile\s+(\d+\.\d) s|released\s+within\s+(\d+\.\d) s")


def test_every_quoted_throughput_and_ratio_is_a_measured_one():
    """Each throughput ("N per minute"), ratio ("0.63x"), latency and instructor cost the README and the docs quote is a
    figure of benchmarks/RESULTS.md, where the benchmark scripts' runs are kept, rounded as the page rounds it: a
    figure typed by hand, or left behind by a newer run, fails here."""
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    measured = {float(t.replace(",", "")) for t in re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?", results)}
    quoted = 0
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for found in QUOTED_THROUGHPUT.finditer(text):
            figure = next(group for group in found.groups() if group).replace(",", "")
            places = len(figure.split(".")[1]) if "." in figure else 0
            quoted += 1
            assert any(round(value, places) == float(figure) for value in measured), \
                f"{page.relative_to(ROOT)} quotes {found.group(0)!r}, which no run in benchmarks/RESULTS.md measured"
    assert quoted >= 20, quoted


# The one page that keeps the measured runs of the course's own commands (make test, make demo) and the durations
# table: the README and the other pages quote its newest rows, and a quote that is not the newest row fails here.
RUNS = DOCS / "explanation" / "benchmarks.md"
DEMO_ROW = re.compile(r"^\| (\d{4}-\d\d-\d\d) (\d\d:\d\d) \| [^|]+ \| ((?:\d+ min )?\d+ s) \|", re.M)
QUOTED_DEMO = re.compile(r"`make demo` takes about [\d.]+\s+minutes?\s+after the install\s+\(((?:\d+ min )?\d+ s) "
                         r"(?:on (\d{4}-\d\d-\d\d)(?: at (\d\d:\d\d) UTC)?|in the newest measured run)")


def _section(text: str, heading: str) -> str:
    """The part of a page under ``heading``, up to the next heading of any level."""
    return text.split(heading + "\n", 1)[1].split("\n#", 1)[0]


def test_every_quoted_demo_time_is_the_newest_measured_demo_run():
    """The time `make demo` takes, wherever the README and the docs quote it, is the newest row of the measured runs
    of `make demo` in docs/explanation/benchmarks.md (its date, and its time of day, where the page gives them)."""
    rows = DEMO_ROW.findall(_section(RUNS.read_text(encoding="utf-8"), "### Measured runs of `make demo`"))
    assert rows, f"{RUNS.relative_to(ROOT)} has no measured run of make demo"
    day, clock, took = rows[-1]
    quoting = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for found in QUOTED_DEMO.finditer(page.read_text(encoding="utf-8")):
            quoting.append(page.name)
            assert found.group(1) == took and found.group(2) in (None, day) and found.group(3) in (None, clock), \
                f"{page.relative_to(ROOT)} quotes {found.group(0)!r}; the newest measured run in " \
                f"{RUNS.relative_to(ROOT)} is {took} on {day} {clock}"
    assert "README.md" in quoting, "the README quotes the newest measured run of make demo"


def test_every_quoted_suite_figure_is_the_newest_clean_measured_run():
    """The suite's size and time are quoted on several pages; their one source is the newest measured run without a
    failure in docs/explanation/benchmarks.md's table, and every quote must be that run (a page cannot keep an old
    one)."""
    table = _section(RUNS.read_text(), "### Measured runs of `make test`")
    rows = list(MEASURED_ROW.finditer(table))
    assert rows, f"no measured run in {RUNS.relative_to(ROOT)}"
    newest = rows[-1]
    expected = (newest["tests"], newest["pytest"], newest["all"])
    minutes, seconds = (int(n) for n in re.findall(r"\d+", newest["all"]))
    quoting = []
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = page.read_text()
        for found in QUOTED_RUN.finditer(text):
            quoting.append(page.name)
            assert found.groups() == expected, f"{page.relative_to(ROOT)} quotes {found.group(0)!r}; the newest " \
                                               f"measured run is {expected} ({newest['when'].strip()}, {newest['commit']})"
        for found in QUOTED_ABOUT.finditer(text):
            assert abs(int(found.group(1)) - (minutes + seconds / 60)) <= 1, \
                f"{page.relative_to(ROOT)}: {found.group(0)!r}, but the newest measured run took {newest['all']} in all"
    assert "README.md" in quoting, "the README quotes the suite's newest measured run"


def test_the_dated_run_logs_are_kept_on_one_page():
    """The measured runs and the durations table are on docs/explanation/benchmarks.md alone (issue 59): the README
    and the how-to quote the newest row, never a table of runs of their own."""
    assert "<!-- durations table" in RUNS.read_text() and "durations_table.py --write" in RUNS.read_text()
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        if page == RUNS:
            continue
        text = page.read_text()
        assert not MEASURED_ROW.search(text) and not DEMO_ROW.search(text) and "<!-- durations table" not in text, \
            f"{page.relative_to(ROOT)} keeps measured runs of its own: they belong on {RUNS.relative_to(ROOT)}"


# The pages axe-core reads besides the first lesson: the other lessons, and one page of each kind of docs page (the
# pages of a kind share the theme's template and the course's stylesheet; the violations found before were those)
AXE_PAGES = ["course/collectives.html", "course/local_mean_diagnosis.html", "index.html", "tutorial/index.html",
             "how-to/run-a-class.html", "reference/commands.html", "explanation/evidence.html"]


@pytest.fixture(scope="module")
def in_chromium(site):
    """What Chromium showed of the built site (tests/browser/site.mjs): the math of a lesson, axe-core's findings."""
    from test_browser import _setup_browser  # shared installer (skips where impossible)
    _setup_browser()
    out, _, _ = site
    environment = {**os.environ, "LESSON_PAGE": str(out / "course" / "sharded_step.html"),
                   "AXE_PAGES": json.dumps([str(out / page) for page in AXE_PAGES])}
    done = subprocess.run(["node", str(ROOT / "tests" / "browser" / "site.mjs")], cwd=ROOT, capture_output=True,
                          text=True, timeout=180, env=environment)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_lesson_pages_math_typesets_offline_in_the_bundled_font(in_chromium):
    """In Chromium, from file://: MathJax typesets the lesson's matrix X^T in the STIX-Web font the site bundles and
    asks for no font it lacks (before the site's local/course configuration it asked for its TeX fonts, got a 404,
    and fell back to upright letters and unstretched brackets). The spans' boxes MathJax 2 reports are line boxes,
    not glyph heights, so the bracket's size is not measured here."""
    measured = in_chromium["math"]
    assert not measured.get("error") and measured["errors"] == 0, measured
    assert not [url for url in measured["failed"] if "mathjax" in url], measured["failed"]
    assert measured["font"] == "STIX-Web", measured


def test_the_lessons_and_each_kind_of_docs_page_pass_axe(in_chromium):
    """axe-core (WCAG 2.1 A and AA) finds no critical or serious violation on the three lessons, the first typeset,
    nor on a page of each kind of the docs. Before docs/stylesheets/course.css and the hook's tabindex, the lessons
    failed color-contrast (comments 4.47:1, operators 4.39:1, numbers 4.25:1), link-in-text-block and
    scrollable-region-focusable (their code cells), and every docs page color-contrast (the footer) and
    link-in-text-block."""
    assert len(in_chromium["axe"]) == 1 + len(AXE_PAGES)
    found = {Path(page).relative_to(Path(page).parents[1]).as_posix() if "/course/" in page else Path(page).name:
             violations for page, violations in in_chromium["axe"].items() if violations}
    assert found == {}, found
