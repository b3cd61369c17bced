"""Make learner content inert before an instructor's browser renders it.

Two renderers show learner content to the instructor: the grader's feedback
page (``feedback.py``) and nbgrader's formgrader, which renders the autograded
notebook with nbconvert's ``HTMLExporter``: markdown through mistune with raw
HTML passed through, ``text/html`` outputs verbatim, and no sanitizer. Both get
only what passes the allowlists here, cleaned by ``nh3`` (the Ammonia HTML
sanitizer): ordinary formatting, tables, images (``data:`` png/jpeg/gif, the
cell's attachments, and for the notebook also http/https) and http/https/mailto
links. Scripts, event handlers, ``javascript:`` URLs, frames, objects, forms,
``<style>``/``<meta>``/``<base>``/``<link>`` and unknown tags do not survive.

Markdown without a ``<`` cannot carry raw HTML, so when its rendering is also
free of bad link or image URLs it is kept byte for byte (the instructor's
prose always is). Any other markdown is rendered, cleaned, and stored as one
HTML block that mistune passes through verbatim, so it renders the same and
nothing the learner wrote reaches the browser uncleaned.

Outputs keep ``text/plain``, ``text/latex``, base64 ``image/png``/``image/jpeg``
and the grader's record JSON (unchanged: records are data, never rendered);
``text/html`` and ``text/markdown`` are cleaned; every other type (SVG,
JavaScript, widget views, ...) is dropped. Output metadata keeps only numeric
width and height; widget state in the notebook's metadata is dropped.

Math on the feedback page is rendered on the server: each ``$...$``, ``$$...$$``
and ``\\begin{env}...\\end{env}`` that mistune finds in markdown (never inside
code) becomes MathML (``latex2mathml``), cleaned by nh3 with an allowlist of
presentation MathML elements and layout attributes only (no ``href``, ``style``,
events, ``annotation-xml``), and put back into the already cleaned page as
element content. The page needs no script (its CSP allows none); browsers with
MathML Core (Chromium 109+, Firefox, Safari) draw it. Learner raw HTML never gets
the MathML allowlist: only math the markdown parser found does.
"""
from __future__ import annotations

import copy
import functools
import html
import json
import re
from html.parser import HTMLParser

import latex2mathml.converter
import nbformat
import nh3
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from grader import cells

RECORD = "application/vnd.jax-course.record+json"
KEEP_TEXT = {"text/plain", "text/latex"}
IMAGES = {"image/png", "image/jpeg"}
ATTACHMENT_IMAGES = {"image/png", "image/jpeg", "image/gif"}
TAGS = set(nh3.ALLOWED_TAGS) - {"area", "map"}
ATTRIBUTES = {tag: set(names) - {"cite"} for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+")
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=]+")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")
# Presentation MathML as latex2mathml writes it; nothing that links, scripts, styles or embeds HTML
# (no maction, semantics/annotation-xml, mglyph; no href, style, class, id or event attributes).
MATHML_TAGS = {"math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "mfrac", "msqrt", "mroot", "msub",
               "msup", "msubsup", "munder", "mover", "munderover", "mtable", "mtr", "mtd", "mstyle", "mpadded",
               "mphantom", "menclose", "merror"}
MATHML_ATTRIBUTES = {"display", "mathvariant", "stretchy", "fence", "separator", "form", "accent", "accentunder",
                     "lspace", "rspace", "minsize", "maxsize", "symmetric", "largeop", "movablelimits", "width",
                     "height", "depth", "linethickness", "displaystyle", "scriptlevel", "columnalign",
                     "columnspacing", "rowspacing", "columnlines", "rowlines", "frame", "notation", "mathcolor",
                     "mathbackground", "mathsize"}
# Where math stood in the rendered markdown until the page is cleaned (private-use characters,
# removed from the learner's source first, so only the markdown parser makes these).
_MATH_MARK = ("\ue000", "\ue001")
_MATH_TOKEN = re.compile("\ue000([0-9]+)\ue001")
_MATH_TOKEN_ANYWHERE = re.compile("(\ue000|%EE%80%80)[0-9]+(\ue001|%EE%80%81)", re.I)  # also in a heading's URL


def _url(value: str) -> tuple[str, str]:
    """(scheme or '', value) with the whitespace and controls a browser ignores removed."""
    compact = re.sub(r"[\x00-\x20\x7f]", "", html.unescape(value))
    match = _SCHEME.match(compact.lower())
    return (match.group(1) if match else ""), compact


def safe_image(src: str, *, page: bool = False) -> bool:
    """data: png/jpeg/gif, attachments and http(s); on a ``page`` only data: png/jpeg."""
    scheme, url = _url(src)
    if scheme == "data":
        match = _DATA_IMAGE.fullmatch(url)
        return bool(match) and not (page and match.group(1) == "gif")
    return not page and scheme in ("attachment", "http", "https")


def safe_link(href: str) -> bool:
    scheme, url = _url(href)
    return scheme in ("http", "https", "mailto") or not scheme and url.startswith("#")


def clean_html(fragment: str, *, page: bool = False) -> str:
    """``fragment`` with only allowlisted tags, attributes and URLs left (nh3).

    ``page``: for the feedback page, whose images may only be data: png/jpeg.
    """

    def keep(tag: str, attribute: str, value: str) -> str | None:
        value = _MATH_TOKEN_ANYWHERE.sub("", value)  # math is put back as element content only, never in a value
        if attribute == "src":
            return value if safe_image(value, page=page) else None
        if attribute == "href":
            return value if safe_link(value) else None
        # No '<' or backtick in a value: markdown re-read around it cannot start new markup.
        return value.translate({ord("<"): None, ord(">"): None, ord("`"): None})

    return nh3.clean(str(fragment), tags=TAGS, attributes=ATTRIBUTES, attribute_filter=keep,
                     url_schemes={"http", "https", "mailto", "data", "attachment"})


class _Attachments(dict):
    """A cell's attachments; a missing one renders as an empty image (dropped) instead of raising.

    Each attachment renders once per rendering; later references to it are empty images (dropped). The
    renderer inlines an attachment's data at every reference, so 470 references to one 1 MB attachment made a
    470 MB feedback page (74 s, 2.8 GB of the grader's memory), and the notebook's 20 MiB allow 19 MB: a 9 GB
    page, beyond the grader's memory; formgrader's page of the autograded notebook grew the same way.
    """

    def __init__(self, attachments=()):
        super().__init__(attachments)
        self._shown: set = set()

    def __contains__(self, name):
        return True

    def __getitem__(self, name):
        if name in self._shown or not dict.__contains__(self, name):
            return {"image/png": ""}
        self._shown.add(name)
        return dict.__getitem__(self, name)


# Markdown parsing (mistune, nbconvert's math patterns) can take time quadratic in a cell's length, and the
# grader's other notebooks wait while it runs: longer learner markdown is shown as text, cut at the limit.
MAX_MARKDOWN_CHARS = 10_000


MAX_INLINE_IMAGE_CHARS = 3 * 2**20
# A data: image's base64 text: the sanitizer writes an answer's attachment into its cleaned HTML this way, and
# that text has nothing markdown or math parsing can be slow on, so it does not count towards the limit.
_INLINE_IMAGE = re.compile(r"data:image/(?:png|jpeg|gif);base64,[A-Za-z0-9+/=]+")


def markdown_length(source: str) -> int:
    """The length that counts towards the markdown limits: ``source`` without the base64 text of its data: images,
    up to ``MAX_INLINE_IMAGE_CHARS`` of it (more counts in full). So a cleaned answer that carries its attachment
    inline is measured like the answer that referenced it, and sanitizing a sanitized notebook changes nothing."""
    images = sum(len(m) for m in _INLINE_IMAGE.findall(source)) if "data:image/" in source else 0
    return len(source) - images if images <= MAX_INLINE_IMAGE_CHARS else len(source)


def _too_long(source: str) -> str | None:
    """``source`` cut to the limit with a note when it is longer, else None."""
    if markdown_length(source) <= MAX_MARKDOWN_CHARS:
        return None
    return (source[:MAX_MARKDOWN_CHARS] + f"\n[... {len(source) - MAX_MARKDOWN_CHARS} more characters: over the "
            f"{MAX_MARKDOWN_CHARS} the grader renders; the submitted notebook has them all]")


# nbconvert's templates draw ```mermaid fences with mermaid.js (from a CDN): learner-made SVG in the
# instructor's browser. Such a fence is kept as plain text.
_MERMAID = re.compile(r"^([ \t]{0,3})(`{3,}|~{3,})[ \t]*mermaid\b", re.M | re.I)


class MarkdownBudget:
    """How much markdown one notebook may have rendered (its cells and ``text/markdown`` outputs together):
    a notebook of many long cells would otherwise hold the grader for minutes. Past it, markdown is text."""

    TOTAL_CHARS = 60_000
    TOTAL_IMAGE_CHARS = 2 * MAX_INLINE_IMAGE_CHARS  # data: images, which markdown_length leaves out

    def __init__(self) -> None:
        self.left = self.TOTAL_CHARS
        self.images_left = self.TOTAL_IMAGE_CHARS

    def take(self, source: str) -> bool:
        counted = markdown_length(source)
        self.left -= min(counted, MAX_MARKDOWN_CHARS)
        self.images_left -= len(source) - counted
        return self.left >= 0 and self.images_left >= 0


def as_text(source: str, limit: int = 2_000) -> str:
    """Markdown shown literally (a fenced block), cut at ``limit``: nothing of it is parsed."""
    return _fenced(source if len(source) <= limit else source[:limit] + f"\n[... {len(source) - limit} more characters]")


def _render(source: str, attachments: dict | None) -> str:
    """Markdown to HTML exactly as nbconvert (formgrader) renders it: raw HTML passes."""
    renderer = IPythonRenderer(escape=False, attachments=_Attachments(attachments or {}))
    return MarkdownWithMath(renderer=renderer).render(source)


def _memo(function):
    """Cached on (source, cleaned attachments): the course's own prose is the same in every submission."""
    @functools.lru_cache(maxsize=4096)
    def cached(source: str, attachments: str) -> str:
        return function(source, json.loads(attachments))

    @functools.wraps(function)
    def call(source: str, attachments: dict | None = None) -> str:
        kept = clean_attachments(attachments)
        if kept:  # a learner's images (up to the notebook's 20 MiB): never kept after the page is written
            return function(str(source), kept)
        return cached(str(source), "{}")

    return call


def _math_value(tag: str, attribute: str, value: str) -> str | None:
    return value.translate({ord("<"): None, ord(">"): None, ord("`"): None, ord("&"): None})


def tex_to_mathml(tex: str, display: bool = False) -> str:
    """TeX as inert MathML; the TeX as escaped code when latex2mathml cannot convert it."""
    try:
        mathml = latex2mathml.converter.convert(tex, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - unsupported or malformed TeX: show what was written
        fence = "$$" if display else "$"
        return f"<code>{html.escape(fence + tex + fence)}</code>"
    # latex2mathml copies \text{...} and \href/\style arguments verbatim: nh3 keeps only MathML.
    return nh3.clean(mathml, tags=MATHML_TAGS, attributes={tag: MATHML_ATTRIBUTES for tag in MATHML_TAGS},
                     attribute_filter=_math_value, url_schemes=set(), strip_comments=True)


class _MathRenderer(IPythonRenderer):
    """nbconvert's renderer, with each math span replaced by a mark to put its MathML at later."""

    def __init__(self, **options):
        super().__init__(**options)
        self.math: list[tuple[str, bool]] = []

    def _mark(self, tex: str, display: bool) -> str:
        self.math.append((tex, display))
        return f"{_MATH_MARK[0]}{len(self.math) - 1}{_MATH_MARK[1]}"

    def inline_math(self, body: str) -> str:
        return self._mark(body, False)

    def block_math(self, body: str) -> str:
        return self._mark(body, True)

    def latex_environment(self, name: str, body: str) -> str:
        return self._mark(f"\\begin{{{name}}}{body}\\end{{{name}}}", True)


@_memo
def markdown_to_html(source: str, attachments: dict) -> str:
    """Rendered and cleaned markdown, with its math as MathML, for the feedback page."""
    cut = _too_long(source)
    if cut is not None:
        return f"<pre>{html.escape(cut)}</pre>"
    source = source.translate({ord(c): None for c in _MATH_MARK})
    # no "¶" link after each heading: the page is read, not linked into (a learner took the marks for text)
    renderer = _MathRenderer(escape=False, exclude_anchor_links=True, attachments=_Attachments(attachments or {}))
    try:
        rendered = MarkdownWithMath(renderer=renderer).render(source)
    except Exception:  # noqa: BLE001 - a markdown parser failure: show the text
        return f"<pre>{html.escape(source)}</pre>"
    cleaned = clean_html(rendered, page=True)  # math marks survive as text, and only as text
    return _MATH_TOKEN.sub(lambda m: tex_to_mathml(*renderer.math[int(m.group(1))]), cleaned)


class _Urls(HTMLParser):
    def __init__(self):
        super().__init__()
        self.bad: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "href" and not safe_link(value or ""):
                self.bad.append(f"{tag} href={value}")
            elif name == "src" and not safe_image(value or ""):
                self.bad.append(f"{tag} src={value}")


@_memo
def clean_markdown(source: str, attachments: dict) -> str:
    """Markdown source that renders without active content; unchanged when it already does."""
    cut = _too_long(source)
    if cut is not None:
        return _fenced(cut)
    source = _MERMAID.sub(r"\1\2text", source)
    try:
        rendered = _render(source, attachments)
    except Exception:  # noqa: BLE001 - a markdown parser failure: keep the text, as text
        return _fenced(source)
    if "<" not in source:  # no raw HTML possible: only the markdown links and images to check
        audit = _Urls()
        audit.feed(rendered)
        if not audit.bad:
            return source
    # One HTML block: it starts with a block tag and has no blank line, so mistune passes it verbatim.
    cleaned = clean_html(rendered).strip("\n")
    if not cleaned.startswith("<div"):
        cleaned = f"<div>\n{cleaned}\n</div>" if cleaned else "<div></div>"
    cleaned = re.sub(r"\n[ \t]*\n", "\n&#10;", cleaned)  # a character reference keeps <pre> lines
    return cleaned if cleaned in _render(cleaned, attachments) else _fenced(source)


def _fenced(text: str) -> str:
    """``text`` as a code block no line of it can close: shown literally."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def clean_attachments(attachments) -> dict:
    if not isinstance(attachments, dict):
        return {}
    kept = {}
    for name, bundle in attachments.items():
        images = {mime: data for mime, data in (bundle.items() if isinstance(bundle, dict) else ())
                  if mime in ATTACHMENT_IMAGES and isinstance(data, str) and _BASE64.fullmatch(data)}
        if images and isinstance(name, str):
            kept[name] = images
    return kept


def _text(value) -> str:
    return "".join(map(str, value)) if isinstance(value, list) else str(value)


def _metadata(metadata) -> dict:
    """Only numeric width/height, at the top level or per image type."""
    def sizes(entry):
        return {k: v for k, v in entry.items() if k in ("width", "height") and type(v) in (int, float)} \
            if isinstance(entry, dict) else {}

    kept = sizes(metadata)
    for mime in IMAGES:
        if sizes((metadata or {}).get(mime)):
            kept[mime] = sizes(metadata[mime])
    return kept


def clean_output(output, budget: MarkdownBudget | None = None) -> dict | None:
    """A safe copy of one code cell output, or None when nothing of it is safe."""
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        return {"output_type": "stream", "name": name, "text": _text(output.get("text", ""))}
    if kind == "error":
        return {"output_type": "error", "ename": _text(output.get("ename", "")),
                "evalue": _text(output.get("evalue", "")),
                "traceback": [_text(line) for line in output.get("traceback", [])
                              if isinstance(line, (str, list))]}
    if kind not in ("display_data", "execute_result"):
        return None
    data = {}
    for mime, value in (output.get("data") or {}).items():
        if mime == RECORD:
            data[mime] = copy.deepcopy(value)
        elif mime in KEEP_TEXT:
            data[mime] = _text(value)
        elif mime in IMAGES and isinstance(value, str) and _BASE64.fullmatch(value):
            data[mime] = value
        elif mime == "text/html":
            data[mime] = clean_html(_text(value))
        elif mime == "text/markdown":
            value = _text(value)
            data[mime] = clean_markdown(value) if budget is None or budget.take(value) else as_text(value)
    if not data:
        return None
    clean = {"output_type": kind, "data": data, "metadata": _metadata(output.get("metadata"))}
    if kind == "execute_result":
        count = output.get("execution_count")
        clean["execution_count"] = count if type(count) is int else None
    return clean


def sanitize_notebook(nb):
    """A copy of ``nb`` that renders without learner script anywhere (formgrader, JupyterLab).

    Code cell sources are left alone: every renderer shows them as escaped text.
    """
    nb = copy.deepcopy(nb)
    budget = MarkdownBudget()
    nb.metadata.pop("widgets", None)  # widget state makes HTMLExporter load a widget renderer
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags")
        if tags is not None:
            cell.metadata["tags"] = [t for t in tags if isinstance(t, str) and re.fullmatch(r"[\w-]+", t)]
        if "attachments" in cell:
            cell.attachments = clean_attachments(cell.attachments)
        if cell.cell_type == "markdown":
            source = str(cell.source)
            cell.source = clean_markdown(source, cell.get("attachments")) if budget.take(source) else as_text(source)
        elif cell.cell_type == "raw":
            cell.source = clean_html(cell.source)
        elif cell.cell_type == "code":
            visible, kept, shown = cells.visible_outputs(cell), [], 0
            for index, output in enumerate(cell.get("outputs", [])):
                cleaned = clean_output(output, budget)
                if cleaned is not None:
                    kept.append(nbformat.from_dict(cleaned))
                    shown += visible is not None and index < visible
            cell.outputs = kept
            if visible is not None:  # the count of a test's visible outputs follows what was kept
                cell.metadata[cells.GRADER]["visible_outputs"] = shown
    return nb
