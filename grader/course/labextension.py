"""The Validate dialog's wording, and a regrade link in the Assignment List: a checked copy of nbgrader's JupyterLab
extension, prepared at ``make lab``.

nbgrader's labextension renders Validate's answer in one function (``k`` in its ``161.<hash>.js`` chunk): it
hard-codes "Success! Your notebook passes all the tests." and "The following cell failed:" above each failure's
whole test source, and writes each error with ``innerHTML``. The learner's Validate route (``grader.learner``)
answers with a ``summary`` (the count of failing tests first, then what was not checked) and a ``title`` per
failure; this module writes a copy of the extension where ``k`` shows them:

* the success text becomes the answer's ``summary``;
* a failed answer starts with a paragraph holding its ``summary``;
* each failure's heading becomes its ``title``, and its text (the grader's message) wraps;
* each failure's error is written with ``innerText`` (text, never markup), and an empty one is not shown;
* the answer's box, which scrolls when the answer is long, takes the keyboard's focus (a named region);
* in the Assignment List (the same chunk), a submission with feedback gets "(ask for a regrade)" beside "(view
  feedback)": a link that opens the learner's regrade page (``grader.learner.regrade``) in a new tab.
* in the Assignment List, each assignment's name gets a line below it with the learner's own due date ("Due ...",
  "Extended for you until ... (the class's due date: ...)", "No due date"), as text, from the learner's server's
  ``course/duedates`` (``grader.learner.duedates``, which asks the grading service: whose dates from the connection),
  asked once for the rows of one refresh through the chunk's own request helper ``T`` (the server's token and XSRF).

Each substitution must match exactly once, or preparing the copy fails loudly naming the text that moved (a new
nbgrader). The patched chunk and the remote entry that loads it get new content-hashed names, so a browser never
mixes a cached original with the copy. ``python -m grader lab`` passes the copy's folder as
``--LabApp.extra_labextensions_path``: JupyterLab searches it before the installed extensions, and keeps the first
package of a name (``jupyterlab_server.config.get_federated_extensions``). Nothing in nbgrader's install changes.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

PACKAGE = "@jupyter/nbgrader"
FOLDER = Path("lab") / "learner" / "labextensions"  # git-ignored, rebuilt at each start
SUMMARY_VARIABLE = "graderSummary"
REGRADE_VARIABLE = "graderRegrade"
DUE_VARIABLE = "graderDue"

#: (nbgrader's text in ``k``, the course's), each expected exactly once in the chunk
SUBSTITUTIONS = [
    # the answer's box scrolls when it is long: it takes the keyboard's focus, as a named region (WCAG 2.1.1)
    ('t.id="validation-message";',
     't.id="validation-message",t.tabIndex=0,t.setAttribute("role","region"),'
     't.setAttribute("aria-label","What Validate found");'),
    ('i.innerText="Success! Your notebook passes all the tests."',
     'i.innerText=void 0!==e.summary?e.summary:"The visible checks pass; the hidden cases are graded after you '
     'submit."'),
    ("else if(void 0!==e.failed){s=!0;",
     f"else if(void 0!==e.failed){{s=!0;if(void 0!==e.summary){{var {SUMMARY_VARIABLE}=document.createElement(\"p\");"
     f"{SUMMARY_VARIABLE}.classList.add(\"grader-validate-summary\"),{SUMMARY_VARIABLE}.innerText=e.summary,"
     f"t.append({SUMMARY_VARIABLE})}}"),
    ('i.innerText="The following cell failed:"',
     'i.innerText=void 0!==e.failed[d].title?e.failed[d].title:"The following cell failed:"'),
    ("r.innerText=e.failed[d].source", 'r.innerText=e.failed[d].source,r.style.whiteSpace="pre-wrap"'),
    ("c.innerHTML=e.failed[d].error",
     'c.innerText=e.failed[d].error,c.style.whiteSpace="pre-wrap",e.failed[d].error||(n.hidden=!0)'),
    # the Assignment List: beside a submission's "(view feedback)", the learner's regrade page (grader.learner.regrade)
    ('i.innerText=" (view feedback)",t.append(i)}',
     f'i.innerText=" (view feedback)",t.append(i);var {REGRADE_VARIABLE}=document.createElement("a");'
     f'{REGRADE_VARIABLE}.href=this.base_url.replace(/\\/?$/,"/")+"course/regrade?assignment="+'
     f'encodeURIComponent(this.data.assignment_id||""),{REGRADE_VARIABLE}.target="_blank",'
     f'{REGRADE_VARIABLE}.rel="noopener",{REGRADE_VARIABLE}.classList.add("grader-regrade-link"),'
     f'{REGRADE_VARIABLE}.innerText=" (ask for a regrade)",t.append({REGRADE_VARIABLE})}}'),
    # the Assignment List: under each assignment's name, the learner's own due date (grader.learner.duedates), asked
    # once per refresh (the rows of one listing share the answer for 3 s) with the chunk's request helper T
    ('async function T(e="",t={}){', 'async function T(e="",t={}){'),  # the helper the next one calls: still T
    ('else e=document.createElement("span");return e.innerText=this.data.assignment_id,t.append(e),t}',
     f'else e=document.createElement("span");var {DUE_VARIABLE}=document.createElement("span"),'
     f'{DUE_VARIABLE}Id=this.data.assignment_id,{DUE_VARIABLE}Asked=window.{DUE_VARIABLE}Dates;'
     f'{DUE_VARIABLE}.classList.add("grader-due-date"),{DUE_VARIABLE}.style.display="block",'
     f'{DUE_VARIABLE}.style.fontSize="var(--jp-ui-font-size0)",'
     f'{DUE_VARIABLE}Asked&&Date.now()-{DUE_VARIABLE}Asked.at<3e3||({DUE_VARIABLE}Asked=window.{DUE_VARIABLE}Dates='
     f'{{at:Date.now(),answer:T("course/duedates",{{method:"GET"}})}}),'
     f'{DUE_VARIABLE}Asked.answer.then(function(a){{var x=a&&a.assignments&&a.assignments[{DUE_VARIABLE}Id];'
     f'{DUE_VARIABLE}.innerText=x&&"string"==typeof x.said?x.said:a&&a.error?a.error:""}},'
     f'function(){{{DUE_VARIABLE}.innerText="Due dates cannot be shown now"}});'
     f'return e.innerText=this.data.assignment_id,t.append(e),t.append({DUE_VARIABLE}),t}}'),
]


class LabextensionChanged(RuntimeError):
    """nbgrader's labextension no longer holds a text the course replaces."""


def installed() -> Path:
    """nbgrader's federated labextension as JupyterLab finds it (Jupyter's data path, then nbgrader's package)."""
    from jupyter_core.paths import jupyter_path

    import nbgrader

    candidates = [Path(p) / PACKAGE for p in jupyter_path("labextensions")]
    candidates.append(Path(nbgrader.__file__).resolve().parent / "labextension")
    for folder in candidates:
        if (folder / "package.json").is_file():
            return folder
    raise LabextensionChanged(f"nbgrader's labextension is in none of {', '.join(map(str, candidates))}")


def validate_chunk(static: Path) -> Path:
    """The chunk that holds the Validate dialog's ``k``: the one file that says "passes all the tests"."""
    found = [p for p in sorted(static.glob("*.js")) if "Your notebook passes all the tests." in p.read_text()]
    if len(found) != 1:
        raise LabextensionChanged(f"expected one chunk of nbgrader's labextension with the Validate dialog's "
                                  f"success text, found {len(found)} in {static}")
    return found[0]


def patched(text: str) -> str:
    """The chunk's text with every substitution made; ``LabextensionChanged`` if one does not match exactly once."""
    for old, new in SUBSTITUTIONS:
        count = text.count(old)
        if count != 1:
            raise LabextensionChanged(f"nbgrader's Validate dialog or Assignment List changed: {old!r} appears {count} "
                                      "times in its labextension (grader/course/labextension.py must be updated)")
        text = text.replace(old, new)
    return text


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def prepare(course_root: Path, source: Path | None = None) -> Path:
    """Write the patched copy under ``course_root / FOLDER`` and return that folder (the labextensions path)."""
    source = source or installed()
    package = json.loads((source / "package.json").read_text())
    if package.get("name") != PACKAGE:
        raise LabextensionChanged(f"{source} holds {package.get('name')!r}, not {PACKAGE}")
    chunk = validate_chunk(source / "static")
    match = re.fullmatch(r"(\d+)\.([0-9a-f]+)\.js", chunk.name)
    load = package.get("jupyterlab", {}).get("_build", {}).get("load", "")
    if match is None or not re.fullmatch(r"static/remoteEntry\.[0-9a-f]+\.js", load):
        raise LabextensionChanged(f"nbgrader's labextension names its files differently ({chunk.name}, {load!r})")
    chunk_id, old_hash = match.groups()
    text = patched(chunk.read_text())
    new_hash = _digest(text)
    entry = (source / load).read_text()
    reference = f'{chunk_id}:"{old_hash}"'
    if reference not in entry:
        raise LabextensionChanged(f"nbgrader's remote entry {load} does not name chunk {chunk.name} as {reference}")
    entry = entry.replace(reference, f'{chunk_id}:"{new_hash}"')
    entry_name = f"static/remoteEntry.{_digest(entry)}.js"

    folder = course_root / FOLDER
    target = folder / PACKAGE
    chunk_path = target / "static" / f"{chunk_id}.{new_hash}.js"
    if (target / entry_name).is_file() and chunk_path.is_file() and chunk_path.read_text() == text:
        return folder  # already this copy (names are content hashes): a running lab keeps serving it
    staging = folder / f".staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns(chunk.name, Path(load).name))
    (staging / "static" / f"{chunk_id}.{new_hash}.js").write_text(text)
    (staging / entry_name).write_text(entry)
    package["jupyterlab"]["_build"]["load"] = entry_name
    (staging / "package.json").write_text(json.dumps(package, indent=2) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(target)
    return folder
