"""MkDocs hook: the course's lessons and their figures become pages of the site.

The three student notebooks (``notebooks/{assignment}/{assignment}.ipynb``, generated from ``source/``) are
added to the site as ``course/{assignment}.ipynb``, which mkdocs-jupyter renders without executing them. The
student notebooks carry no outputs, so each figure cell (one that calls ``figures.show(fig, figures_dir,
"NAME.svg")``) is followed on the page by the figure that cell draws once solved: ``figures/NAME.svg``, as
``python -m grader figures`` drew it from the instructor notebooks, copied to ``course/figures/``. Nothing is
written into the repository; the files exist only in the build.

The lessons' TeX is typeset by MathJax 2.7 from the pinned ``jupyter-server-mathjax`` package (the copy
formgrader also uses), copied into ``assets/mathjax/``: the pages load nothing from outside the site.
"""
from __future__ import annotations

import logging
import re
import shutil
import tempfile
from pathlib import Path

import nbformat
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.course")  # a warning here fails the strict build
ROOT = Path(__file__).resolve().parents[2]
LESSONS = ["sharded_step", "local_mean_diagnosis", "collectives"]  # the course's order
FIGURE_CALL = re.compile(r"""figures\.show\(\s*\w+\s*,\s*figures_dir\s*,\s*["']([\w.-]+\.svg)["']\s*\)""")


def figure_names(cell_source: str) -> list[str]:
    return FIGURE_CALL.findall(cell_source)


def lesson_with_figures(path: Path) -> str:
    """The student notebook with a markdown cell showing each figure after the cell that draws it."""
    notebook = nbformat.read(path, as_version=4)
    cells = []
    for cell in notebook.cells:
        cells.append(cell)
        if cell.cell_type != "code":
            continue
        for name in figure_names(cell.source):
            if not (ROOT / "figures" / name).is_file():
                raise FileNotFoundError(f"{path.relative_to(ROOT)} draws figures/{name}, which does not exist; "
                                        "run `python -m grader figures`")
            cells.append(nbformat.v4.new_markdown_cell(
                f"![{name}: the figure this cell draws once the notebook is solved](figures/{name})\n\n"
                f"*The figure this cell draws once the notebook is solved (`figures/{name}`, drawn by "
                "`python -m grader figures` from the instructor's notebook).*"))
    notebook.cells = cells
    return nbformat.writes(notebook)


_scratch: Path | None = None


@event_priority(100)  # before mkdocs-jupyter's own on_files, which picks up the notebooks it renders
def on_files(files, config):
    # mkdocs-jupyter reads a notebook from its file on disk, so the lessons are written to a scratch folder
    # outside the repository (removed after the build), never into docs/.
    global _scratch
    _scratch = Path(tempfile.mkdtemp(prefix="course-lessons-"))
    (_scratch / "course").mkdir()
    for lesson in LESSONS:
        source = ROOT / "notebooks" / lesson / f"{lesson}.ipynb"
        (_scratch / "course" / f"{lesson}.ipynb").write_text(lesson_with_figures(source), encoding="utf-8")
        files.append(File(f"course/{lesson}.ipynb", src_dir=str(_scratch), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    for svg in sorted((ROOT / "figures").glob("*.svg")):
        files.append(File.generated(config, f"course/figures/{svg.name}", abs_src_path=str(svg)))
    return files


HEADING_ID = re.compile(r"<h[1-6][^>]*\bid=\"([^\"]+)\"")


def _flat(items):
    for item in items:
        yield item
        yield from _flat(item.children)


def on_page_content(html, page, config, files):
    """Point a lesson's table of contents at its headings' real ids.

    mkdocs-jupyter takes the contents from the markdown, whose slugs leave out inline code, while nbconvert's
    headings keep it (``#5-todo-the-per-device-program-with`` for the heading
    ``5-todo-the-per-device-program-with-jaxshard_map``), so such entries led nowhere. Both list the same headings
    in the same order, so each entry takes the id of its heading.
    """
    if not page.file.src_uri.startswith("course/"):
        return html
    ids = HEADING_ID.findall(html)
    items = list(_flat(page.toc))
    if len(ids) != len(items):
        log.warning("%s: %d headings but %d table of contents entries; its links were left as they are",
                    page.file.src_uri, len(ids), len(items))
        return html
    for item, heading in zip(items, ids):
        item.id = heading
    return html


# The package's MathJax (its TeX-AMS-MML_HTMLorMML-full configuration, HTML-CSS output with the STIX-Web
# fonts, the Safe extension) less its localizations: about 10 MB of its 12 MB.
MATHJAX_PARTS = ["MathJax.js", "config", "extensions", "jax", "fonts", "LICENSE"]


# The package bundles the STIX-Web fonts only, while MathJax 2.7's HTML-CSS output asks for its TeX fonts first (a
# 404 for fonts/TeX/fontdata.js, then upright variables and brackets that do not stretch): mkdocs.yml's MathJax URL
# loads this configuration too ("local/course"), which makes STIX-Web the only font it asks for.
LOCAL_CONFIG = """MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web",
                                   imageFont: null}});
MathJax.Ajax.loadComplete("[MathJax]/config/local/course.js");
"""


def copy_mathjax(site_dir: Path) -> None:
    import jupyter_server_mathjax

    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = site_dir / "assets" / "mathjax"
    for part in MATHJAX_PARTS:
        source, dest = static / part, target / part
        if source.is_dir():
            shutil.copytree(source, dest, dirs_exist_ok=True)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest)
    (target / "config" / "local").mkdir(parents=True, exist_ok=True)
    (target / "config" / "local" / "course.js").write_text(LOCAL_CONFIG)


def _remove_scratch() -> None:
    global _scratch
    if _scratch is not None:
        shutil.rmtree(_scratch, ignore_errors=True)
        _scratch = None


SCROLLER = re.compile(r"<(pre|div class=\"highlight-ipynb[^\"]*\")(?![^>]*\btabindex=)")


def on_post_page(output, page, config):
    """Every code block that may scroll sideways can be reached with the keyboard (WCAG 2.1.1; axe-core's
    scrollable-region-focusable): a lesson's cells and the docs' code blocks take the focus, so the arrow keys
    scroll them."""
    return SCROLLER.sub(lambda m: f'<{m.group(1)} tabindex="0"', output)


def on_post_build(config):
    copy_mathjax(Path(config.site_dir))
    _remove_scratch()


def on_build_error(error):  # a failed build leaves no scratch folder either
    _remove_scratch()
