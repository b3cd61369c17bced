"""No learner script runs for the instructor, and feedback never shows hidden tests.

A hostile autograded notebook (markdown answer and outputs full of XSS payloads) goes through
``grader.submission.sanitize`` and ``grader.submission.feedback``; the results are audited here in Python and then loaded
in Debian's Chromium (tests/browser/xss.mjs, set up like tests/test_browser.py): the feedback page and
nbconvert's HTMLExporter rendering (what formgrader shows, lab and classic templates) run none of the
payloads and keep no active markup, while the unsanitized renderings of the same notebook and answer do
run several, so the check has teeth.
"""
from __future__ import annotations

import base64
import copy
import json
import os
import re
import signal
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter

from grader.submission import feedback, sanitize
from grader.results import NotebookResult, Status
from grader.results import TestResult as Outcome  # not collected as a test class

ROOT = Path(__file__).resolve().parent.parent
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000" "1f15c4890000000d49444154789c6360000002000100"
    "05fe02fe0000000049454e44ae426082")).decode()


def js(n: int) -> str:
    """A payload body: marks the page, retitles it and requests a loopback URL (no spaces, no double quotes)."""
    return (f"top.__pwned=(top.__pwned||'')+'/{n}';top.document.title='pwned';"
            f"new(Image)().src='http://127.0.0.1:9/pwned-{n}'")


MARKDOWN_PAYLOADS = {
    "script": f"<script>{js(1)}</script>",
    "img-onerror": f'<img src=x onerror="{js(2)}">',
    "svg-script": f"<svg><script>{js(3)}</script></svg>",
    "svg-onload": f'<svg onload="{js(4)}"></svg>',
    "javascript-href": f'<a href="javascript:{js(5)}">click me</a>',
    "iframe-javascript": f'<iframe src="javascript:{js(6)}"></iframe>',
    "iframe-srcdoc": f'<iframe srcdoc="&lt;script&gt;{js(7)}&lt;/script&gt;"></iframe>',
    "object-data": f'<object data="javascript:{js(8)}"></object><embed src="data:text/html,<script>{js(8)}</script>">',
    "meta-refresh": '<meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/pwned-9">',
    "style-import": "<style>@import url(http://127.0.0.1:9/pwned-10);</style>",
    "link-stylesheet": '<link rel="stylesheet" href="http://127.0.0.1:9/pwned-11">',
    "details-ontoggle": f'<details open ontoggle="{js(12)}"><summary>x</summary></details>',
    "autofocus-onfocus": f'<input autofocus onfocus="{js(13)}">',
    "mxss-mglyph": f'<math><mtext><table><mglyph><style><img src=x onerror="{js(14)}">',
    "video-source": f'<video><source onerror="{js(15)}"></video>',
    "markdown-link": "[click](javascript:top.__pwned=16)",
    "autolink": "<javascript:top.__pwned=17>",
    "reference-link": "[ref]: javascript:top.__pwned=18\n\n[click][ref]",
    "form-action": f'<form action="javascript:{js(19)}"><button>go</button></form>',
    "entity-scheme": f'<a href="jav&#x09;ascript:{js(20)}">tab</a>',
    "data-html-link": f'<a href="data:text/html,<script>{js(21)}</script>">data</a>',
    "base-href": '<base href="http://127.0.0.1:9/pwned-22/">',
}
# Math the feedback page renders to MathML on the server (grader.submission.sanitize.tex_to_mathml): latex2mathml copies
# \text{...}, \href and \style arguments into its output verbatim, so these would be markup without nh3.
MATH_PAYLOADS = {
    "tex-text-script": f"$\\text{{<script>{js(70)}</script>}}$",
    "tex-text-img": f'$\\text{{<img src=x onerror="{js(71)}">}}$',
    "tex-then-img": f'$x$<img src=x onerror="{js(72)}">',
    "tex-href": "$\\href{javascript:top.__pwned=73}{click}$",
    "tex-style": "$\\style{background:url(http://127.0.0.1:9/pwned-74)}{y}$",
    "tex-in-alt": f"![$\\text{{ x onerror={js(75)} }}$](data:image/png;base64,{PNG})",
    "tex-mglyph": f'$\\text{{<mglyph><style><img src=x onerror="{js(76)}">}}$',
    "tex-forged-mark": "\ue0000\ue001 <math><mtext><img src=x onerror=top.__pwned=77></mtext></math>",
}
BENIGN_MARKDOWN = (
    "Unequal shards: *emphasis*, **strong**, `code`, and math $Xw$ stay.\n\n"
    "- one\n- two\n\n| shard | rows |\n|---|---|\n| 0 | 2 |\n\n"
    f"[lesson](https://example.org/lesson) ![dot](data:image/png;base64,{PNG})\n"
)


def _display(data: dict, metadata: dict | None = None) -> dict:
    return nbformat.v4.new_output("display_data", data=data, metadata=metadata or {})


OUTPUT_PAYLOADS = {
    "html-script": _display({"text/html": f"<script>{js(31)}</script>", "text/plain": "<HTML>"}),
    "html-img": _display({"text/html": f'<b>bold</b><img src=x onerror="{js(32)}">'}),
    "svg": _display({"image/svg+xml": f'<svg xmlns="http://www.w3.org/2000/svg" onload="{js(33)}">'
                                      f'<script>{js(33)}</script></svg>'}),
    "javascript": _display({"application/javascript": js(34)}),
    "text-javascript": _display({"text/javascript": js(35)}),
    "markdown-output": _display({"text/markdown": f'Table *ok* <img src=x onerror="{js(36)}">'}),
    "widget-view": _display({"application/vnd.jupyter.widget-view+json": {"model_id": "m", "version_major": 2,
                                                                          "version_minor": 0}}),
    "png-width": _display({"image/png": PNG}, {"image/png": {"width": f"1 onload={js(38)}"}}),
    "html-iframe": _display({"text/html": f'<iframe srcdoc="&lt;script&gt;{js(39)}&lt;/script&gt;"></iframe>'}),
    "html-isolated": _display({"text/html": f"<script>{js(40)}</script>"}, {"text/html": {"isolated": True}}),
    "execute-result": nbformat.v4.new_output("execute_result", data={"text/html": f"<svg onload=\"{js(41)}\">"},
                                             execution_count=7),
}
RECORD_OUTPUT = _display({sanitize.RECORD: {"key": "quiz.answer", "value": {"kind": "scalar", "type": "int",
                                                                            "value": 2, "finite": True}}})


def hostile_notebook() -> nbformat.NotebookNode:
    """An autograded notebook as a hostile learner could leave it."""
    answer = nbformat.v4.new_markdown_cell(BENIGN_MARKDOWN + "\n\n" + "\n\n".join(MARKDOWN_PAYLOADS.values())
                                           + "\n\n" + "\n\n".join(MATH_PAYLOADS.values()))
    answer.metadata["nbgrader"] = {"grade_id": "answer", "grade": True, "solution": True, "points": 2}
    answer.attachments = {"evil.svg": {"image/svg+xml": base64.b64encode(f'<svg onload="{js(50)}"/>'.encode()).decode()},
                          "dot.png": {"image/png": PNG}}
    answer.source += "\n\n![att](attachment:dot.png) ![svg](attachment:evil.svg)"
    code = nbformat.v4.new_code_cell("show_everything()", execution_count=7)
    code.outputs = [copy.deepcopy(o) for o in OUTPUT_PAYLOADS.values()]
    test = nbformat.v4.new_code_cell("record('quiz.answer', answer)", execution_count=8)
    test.metadata["nbgrader"] = {"grade_id": "test-quiz", "grade": True, "solution": False, "points": 1}
    test.outputs = [copy.deepcopy(RECORD_OUTPUT), _display({"text/html": f"<script>{js(51)}</script>"})]
    raw = nbformat.v4.new_raw_cell(f"<script>{js(52)}</script>", metadata={"format": "text/html"})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Lesson\n\nPlain prose."), answer, code,
                                         test, raw])
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "version_major": 2, "version_minor": 0,
        "state": {"m": {"model_name": "HTMLModel", "state": {"value": f"</script><script>{js(53)}</script>"}}}}}
    return nb


def hostile_result() -> NotebookResult:
    result = NotebookResult("<svg onload=x>", "sharded_step", "sharded_step.ipynb", Status.SUSPICIOUS,
                            f"flagged: <script>{js(60)}</script>")
    result.tests = [Outcome("test-quiz", 0.0, 1.0, False, f"wrong <img src=x onerror=\"{js(61)}\">")]
    result.tampering = [f"an added cell claims nbgrader metadata (<iframe src=javascript:{js(62)}>)"]
    return result


# ---------------------------------------------------------------- audits (also used by test_scenarios.py)

ACTIVE_TAGS = {"script", "iframe", "frame", "frameset", "object", "embed", "applet", "svg", "math", "style",
               "link", "meta", "base", "form", "input", "button", "textarea", "select", "video", "audio", "source"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "data", "xlink:href", "srcdoc", "poster", "background"}


class _Audit(HTMLParser):
    def __init__(self, allowed: set[str]):
        super().__init__()
        self.allowed, self.found = allowed, []

    def handle_starttag(self, tag, attrs):
        if tag in ACTIVE_TAGS and tag not in self.allowed:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            url = re.sub(r"[\x00-\x20]", "", value or "").lower()
            if name.startswith("on") or name == "srcdoc":
                self.found.append(f"<{tag} {name}>")
            elif name in URL_ATTRIBUTES and re.match(r"(javascript|vbscript|data:text|data:image/svg)", url):
                self.found.append(f"<{tag} {name}={url[:30]}>")


def active_content(page: str, allowed: set[str] = frozenset()) -> list[str]:
    """Script, handlers, frames, forms and script URLs in an HTML text (tags in ``allowed`` excepted)."""
    audit = _Audit(set(allowed))
    audit.feed(page)
    audit.close()
    return audit.found


def notebook_active_content(nb) -> list[str]:
    """What in a notebook could run script when formgrader or JupyterLab renders it."""
    found = []
    if "widgets" in nb.metadata:
        found.append("notebook metadata holds widget state")
    for index, cell in enumerate(nb.cells):
        where = f"cell {index}"
        if cell.cell_type == "markdown":
            rendered = sanitize._render(cell.source, cell.get("attachments"))
            found += [f"{where} markdown: {x}" for x in active_content(rendered)]
        for name, bundle in cell.get("attachments", {}).items():
            found += [f"{where} attachment {name}: {mime}" for mime in bundle if mime not in sanitize.ATTACHMENT_IMAGES]
        for output in cell.get("outputs", []):
            for mime, value in output.get("data", {}).items():
                if mime not in sanitize.KEEP_TEXT | sanitize.IMAGES | {sanitize.RECORD, "text/html", "text/markdown"}:
                    found.append(f"{where} output {mime}")
                elif mime == "text/html":
                    found += [f"{where} text/html: {x}" for x in active_content(value)]
                elif mime == "text/markdown":
                    found += [f"{where} text/markdown: {x}" for x in active_content(sanitize._render(value, {}))]
            for key, value in output.get("metadata", {}).items():
                sizes = value if isinstance(value, dict) else {key: value}
                if not all(k in ("width", "height") and type(v) in (int, float) for k, v in sizes.items()):
                    found.append(f"{where} output metadata {key}={value!r}")
    if sanitize.sanitize_notebook(nb) != nb:
        found.append("the sanitizer would still change it")
    return found


def export(nb, template: str) -> str:
    """What nbconvert (and so formgrader, which uses the classic template) renders."""
    return HTMLExporter(template_name=template).from_notebook_node(nb)[0]


# ---------------------------------------------------------------- unit tests


def test_battery_is_active_before_sanitizing():
    """The audit sees every vector in the raw notebook, so its silence afterwards means something."""
    nb = hostile_notebook()
    assert len(MARKDOWN_PAYLOADS) + len(OUTPUT_PAYLOADS) >= 12
    for name, payload in MARKDOWN_PAYLOADS.items():
        assert active_content(sanitize._render(payload, {})), name
    assert len(notebook_active_content(nb)) >= 15


def test_sanitized_notebook_has_no_active_content():
    nb = hostile_notebook()
    original = copy.deepcopy(nb)
    clean = sanitize.sanitize_notebook(nb)
    assert notebook_active_content(clean) == []
    for template in ("lab", "classic"):
        page = export(clean, template)
        assert "pwned" not in "".join(re.findall(r"<script[^>]*>.*?</script>", page, re.S))
        body = page[page.index("<body"):]
        assert active_content(body, allowed={"script", "style"}) == [], template  # only the template's own
    assert nb == original, "sanitize_notebook changed its argument"


@pytest.mark.parametrize("name", sorted(MARKDOWN_PAYLOADS))
def test_each_markdown_vector_is_neutralized(name):
    cleaned = sanitize.clean_markdown(MARKDOWN_PAYLOADS[name])
    rendered = sanitize._render(cleaned, {})
    assert active_content(rendered) == [], name
    assert "<script" not in rendered and 'href="javascript' not in rendered, rendered
    assert sanitize.clean_markdown(cleaned) == cleaned, "not idempotent"


@pytest.mark.parametrize("name", sorted(OUTPUT_PAYLOADS))
def test_each_output_vector_is_neutralized(name):
    output = sanitize.clean_output(OUTPUT_PAYLOADS[name])
    assert output is None or "pwned" not in json.dumps(output), output


@pytest.mark.parametrize("fence", ["```mermaid", "~~~ Mermaid", "   ````mermaid {init}"])
def test_a_mermaid_fence_is_plain_text(fence):
    """nbconvert's templates hand ```mermaid blocks to mermaid.js, which draws learner-made SVG in the page."""
    closing = re.match(r"\s*([`~]+)", fence)[1]
    cleaned = sanitize.clean_markdown(f"answer\n\n{fence}\ngraph TD; A-->B\n{closing}\n")
    rendered = sanitize._render(cleaned, {})
    assert "mermaid" not in rendered.lower() and "graph TD" in cleaned, rendered


def test_ordinary_markdown_survives():
    rendered = sanitize._render(sanitize.clean_markdown(BENIGN_MARKDOWN), {})
    for piece in ("<em>emphasis</em>", "<strong>strong</strong>", "<code>code</code>", "$Xw$", "<li>two</li>",
                  "<td>2</td>", 'href="https://example.org/lesson"', f'src="data:image/png;base64,{PNG}"'):
        assert piece in rendered, piece
    assert sanitize.clean_markdown(BENIGN_MARKDOWN) == BENIGN_MARKDOWN  # nothing to do: kept byte for byte
    mixed = BENIGN_MARKDOWN + "\n\nloss < 1 and <b>bold</b> <script>x()</script>\n\n```\nif a < b:\n\n    pass\n```"
    rendered = sanitize._render(sanitize.clean_markdown(mixed), {})
    for piece in ("<em>emphasis</em>", "$Xw$", "<td>2</td>", 'href="https://example.org/lesson"', "loss &lt; 1",
                  "<b>bold</b>", f'src="data:image/png;base64,{PNG}"', "if a &lt; b:\n&#10;    pass"):
        assert piece in rendered, piece
    assert "<script" not in rendered and "x()" not in rendered


def test_instructor_markdown_and_code_are_untouched(course):
    for assignment in course.assignments():
        for path in (course.source_notebook(assignment), course.release_notebook(assignment)):
            nb = nbformat.read(path, as_version=4)
            assert sanitize.sanitize_notebook(nb).cells == nb.cells, path


def test_records_images_and_plain_text_are_kept():
    clean = sanitize.sanitize_notebook(hostile_notebook())
    code, test = clean.cells[2], clean.cells[3]
    assert test.outputs[0] == RECORD_OUTPUT
    assert code.outputs[0].data == {"text/html": "", "text/plain": "<HTML>"}
    png = next(o for o in code.outputs if "image/png" in o["data"])
    assert png["data"]["image/png"] == PNG and png["metadata"] == {}
    assert sorted(clean.cells[1].attachments) == ["dot.png"]
    assert code.source == "show_everything()"


def test_feedback_page_has_no_active_content_and_a_csp():
    page = feedback.render(hostile_result(), hostile_notebook())
    head = page[page.index("<head>") + len("<head>"):]
    assert head.startswith(f"<meta http-equiv='Content-Security-Policy' content=\"{feedback.CSP}\">")
    # <math> only where the markdown parser found TeX; the learner's own <math> and <mglyph> are gone
    assert active_content(page, allowed={"meta", "style", "math"}) == []
    assert "<mglyph" not in page and "<annotation" not in page and "<maction" not in page
    assert "<script" not in page.lower()  # javascript: and handlers survive only as escaped text
    assert page.count("<meta") == 2 and page.count("<style>") == 1
    assert not re.search(r"<img[^>]+src=['\"](?!data:image/(png|jpeg);base64,)", page)
    assert "<em>emphasis</em>" in page and f"data:image/png;base64,{PNG}" in page


def test_feedback_renders_math_as_mathml_without_script():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "The predictions $Xw$ and the loss $$L(w) = \\frac{1}{2n}\\lVert Xw - y\\rVert^2$$, not in `$code$`.")])
    page = feedback.render(NotebookResult("ada", "sharded_step", "sharded_step.ipynb", Status.GRADED, ""), nb)
    assert "$Xw$" not in page and "$$" not in page and "<code>$code$</code>" in page
    assert '<math display="inline"><mrow><mi>X</mi><mi>w</mi></mrow></math>' in page
    assert '<math display="block">' in page and "<mfrac>" in page
    assert "<script" not in page.lower() and feedback.CSP in page


def test_course_prose_math_all_converts():
    """Every TeX span of the instructor's prose becomes MathML (none falls back to the escaped TeX)."""
    spans = 0
    for path in sorted((ROOT / "source").glob("*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                rendered = sanitize.markdown_to_html(cell.source)
                spans += rendered.count("<math")
                assert "$" not in re.sub(r"<code>.*?</code>", "", rendered), (path.name, rendered[:300])
    assert spans > 50


@pytest.mark.parametrize("name", sorted(MATH_PAYLOADS))
def test_each_math_vector_is_inert(name):
    import latex2mathml.converter

    rendered = sanitize.markdown_to_html(MATH_PAYLOADS[name])
    assert active_content(rendered, allowed={"math"}) == [], rendered
    assert "<script" not in rendered and "href" not in rendered and "style" not in rendered, rendered
    assert not re.search(r"<(?!/?(p|math|mrow|mi|mtext|img|code)\b)", rendered), rendered
    if name == "tex-text-script":  # the teeth: latex2mathml alone would emit the script element
        assert "<script>" in latex2mathml.converter.convert("\\text{<script>x</script>}")


# ---------------------------------------------------------------- hidden tests in feedback

HIDDEN_LINE = "hx, hy, hw = data.random_regression(seed=90204, rows=8, cols=2)"


def leaky_notebook() -> nbformat.NotebookNode:
    """Learner cells before and after a test cell with hidden tests, echoing the hidden source."""
    before = nbformat.v4.new_code_cell("print(secret)")
    before.outputs = [nbformat.v4.new_output("stream", text=f"early: {HIDDEN_LINE}\n"),
                      _display({"text/plain": "shown before hidden tests"})]
    test = nbformat.v4.new_code_cell(f"record('x', f(1))\n### BEGIN HIDDEN TESTS\n{HIDDEN_LINE}\n"
                                     "record('y', f(hx))\n### END HIDDEN TESTS")
    test.metadata["nbgrader"] = {"grade_id": "test-x", "grade": True, "solution": False, "points": 1}
    test.outputs = [nbformat.v4.new_output("stream", text=HIDDEN_LINE)]
    after = nbformat.v4.new_code_cell("print(In)")
    after.outputs = [nbformat.v4.new_output("stream", text="late: " + HIDDEN_LINE[::-1]),
                     nbformat.v4.new_output("error", ename="X", evalue=HIDDEN_LINE, traceback=[])]
    nb = nbformat.v4.new_notebook(cells=[before, test, after])
    before.outputs.append({**_display({"text/plain": "updatable"}), "transient": {"display_id": "d"}})
    return nb


def test_feedback_withholds_outputs_after_hidden_tests_and_redacts():
    result = NotebookResult("ada", "sharded_step", "sharded_step.ipynb", Status.GRADED, "")
    result.tests = [Outcome("test-x", 0.0, 1.0, False, f"wrong; the test cell raised seed_90204_{HIDDEN_LINE}")]
    page = feedback.render(result, leaky_notebook())
    assert "90204" not in page and HIDDEN_LINE[::-1] not in page and "BEGIN HIDDEN" not in page
    assert feedback.WITHHELD in page
    assert "shown before hidden tests" in page and feedback.REDACTED in page  # the early line, redacted
    assert "updatable" not in page  # an output with a display id is dropped
    assert "the test cell raised an exception" in page
    ok = Outcome("test-x", 0.0, 1.0, False, "wrong; the test cell raised NameError")
    assert "raised NameError" in feedback.render(NotebookResult("a", "b", "c", Status.GRADED, "", tests=[ok]),
                                                 leaky_notebook())


# ---------------------------------------------------------------- in Chromium


def _run_xss(manifest: Path, timeout: float = 180) -> dict:
    process = subprocess.Popen(["node", str(ROOT / "tests" / "browser" / "xss.mjs"), str(manifest)], cwd=ROOT,
                               text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail("xss.mjs timed out")
    assert process.returncode == 0, f"xss.mjs failed:\n{out}\n{err}"
    return json.loads(out.strip().splitlines()[-1])


def _template_urls(template: str) -> list[str]:
    """Assets an exporter page loads whatever the notebook holds (require.js, MathJax, mermaid)."""
    return re.findall(r"""https://[^\s"'<>]+""", export(nbformat.v4.new_notebook(), template))


@pytest.mark.slow
def test_payloads_do_not_run_in_chromium(tmp_path):
    from test_browser import _setup_browser  # shared installer (skips where impossible)

    _setup_browser()
    nb = hostile_notebook()
    clean = sanitize.sanitize_notebook(nb)
    pages = {"feedback.html": (feedback.render(hostile_result(), nb), []),
             "formgrader-lab.html": (export(clean, "lab"), _template_urls("lab")),
             "formgrader-classic.html": (export(clean, "classic"), _template_urls("classic")),
             # controls: the same content without the defense (the old feedback rendered markdown like this)
             "unsanitized-lab.html": (export(nb, "lab"), _template_urls("lab")),
             "unsanitized-markdown.html": ("<!doctype html>" + sanitize._render(nb.cells[1].source, {}), [])}
    manifest = []
    for name, (text, allow) in pages.items():
        (tmp_path / name).write_text(text)
        manifest.append({"file": str(tmp_path / name), "allow": allow})
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    report = {Path(k).name: v for k, v in _run_xss(tmp_path / "manifest.json").items()}
    print(json.dumps(report, indent=1))
    math = {name: found.pop("math") for name, found in report.items()}
    # the feedback page's math is MathML that Chromium lays out natively (no script: the CSP allows none)
    assert math["feedback.html"] and set(math["feedback.html"]) <= {"math", "block math"}, math["feedback.html"]
    for control in ("unsanitized-lab.html", "unsanitized-markdown.html"):
        found = report.pop(control)
        assert len(found["ran"]) >= 3 and found["present"], f"{control} should run payloads in Chromium: {found}"
    for name, found in report.items():
        assert found == {"ran": [], "present": []}, f"{name}: {found}"
