"""nbgrader preprocessors the course adds to ``generate_assignment``."""
from __future__ import annotations

import re

from nbgrader.preprocessors import ClearSolutions


class ScaffoldSolutions(ClearSolutions):
    """Replace solution regions with a stub that says what to do.

    The instructor writes the instruction in the cell's metadata
    (``metadata.course.todo``): one string for every region of the cell, or a
    list with one string per region. The student sees
    ``raise NotImplementedError("<instruction>")`` in place of each solution,
    indented where the solution was, below the signature and docstring.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        todo = cell.get("metadata", {}).get("course", {}).get("todo")
        if not todo or cell.cell_type != "code" or self.begin_solution_delimeter not in cell.source:
            return super().preprocess_cell(cell, resources, cell_index)
        messages = [todo] if isinstance(todo, str) else list(todo)
        cell.source = self._scaffold(cell.source, messages)
        return cell, resources

    def _scaffold(self, source: str, messages: list[str]) -> str:
        lines, inside, region = [], False, 0
        for line in source.split("\n"):
            if self.begin_solution_delimeter in line:
                if inside:
                    raise RuntimeError("encountered nested begin solution statements")
                indent = re.match(r"\s*", line).group(0)
                message = messages[min(region, len(messages) - 1)]
                lines += [f"{indent}# YOUR CODE HERE", f"{indent}raise NotImplementedError({message!r})"]
                inside, region = True, region + 1
            elif self.end_solution_delimeter in line:
                inside = False
            elif not inside:
                lines.append(line)
        if inside:
            raise RuntimeError("no end solution statement found")
        return "\n".join(lines)


# --- formgrader and stock commands on the project's grader -----------------------------------
#
# formgrader's Autograde button and `nbgrader autograde` build nbgrader's Autograde converter,
# its Generate Feedback button and `nbgrader generate_feedback` the GenerateFeedback converter,
# both from nbgrader_config.py. The course replaces their steps there: Autograde grades with
# this project's grader (sealed kernel, judged outside it, scores written to the gradebook by
# the grader itself) and GenerateFeedback writes the project's feedback page. No stock step that
# executes learner code, scores cells or renders hidden tests is left in either.

import getpass  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import nbformat  # noqa: E402
from nbconvert.exporters import Exporter, NotebookExporter  # noqa: E402
from nbconvert.preprocessors import Preprocessor  # noqa: E402
from traitlets import Bool, Unicode, default  # noqa: E402


class NotGradedByProject(RuntimeError):
    pass


def _course_root(configured: str) -> Path:
    from grader.layout import Course

    return Path(configured).resolve() if configured else Course.default().root


def _project_grade(root: Path, submissions: str, assignment: str, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "grader", "grade", "--submissions", submissions, "--out", str(root),
               "--workers", "1", "--assignment", assignment, "--force", *extra]
    return subprocess.run(command, cwd=root, env={**os.environ, "COURSE_ROOT": str(root)},
                          capture_output=True, text=True)


class IntakeGuard(NotebookExporter):
    """nbgrader's Autograde exporter, which first refuses submissions whose ids break the course's rule.

    ``nbgrader_config.py`` makes it ``Autograde.exporter_class``: nbgrader builds it after finding the submitted
    notebooks and before it writes anything for them, since the converter's ``init_assignment`` creates the student
    and submission rows in gradebook.db before any preprocessor runs. Each submission whose student id or
    assignment id breaks ``grader.identifiers``' rule is taken out of the converter's work list here, so
    nbgrader stores nothing for it (a notebook whose name breaks it is left out, as nbgrader leaves out notebooks
    the assignment does not have); the course's grader records it as ``invalid_folder`` (in grades.csv, with the
    rule), as the local path does, and nbgrader's log names it. When every submission of the run is refused
    (formgrader's Autograde button grades one), nbgrader's run fails with that message, which formgrader shows.
    """

    course_root = Unicode("", help="the course root (nbgrader_config.py sets it)").tag(config=True)

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        converter = kw.get("parent")
        work = getattr(converter, "assignments", None)
        if not isinstance(work, dict) or not hasattr(converter, "_format_source"):
            return
        from grader import identifiers
        from grader.submission.intake import shown_name

        if sealed_only(self.config) and os.geteuid() != 0:
            # Refused here, before nbgrader touches anything: past this point a failed run removes the course's
            # autograded/{student}/{assignment} (the grading service's published copy) and --force removes it first.
            work.clear()
            raise NotGradedByProject(
                f"not graded, nothing stored or removed: this would run learners' code unsealed as "
                f"{getpass.getuser()}. On this course the grading service grades every submission at Submit, as "
                "root; a learner's new Submit is graded again the same way (docs/how-to/run-a-class-on-jupyterhub.md)")
        pattern = converter._format_source("(?P<assignment_id>.*)", "(?P<student_id>.*)", escape=True)
        refused = []
        for folder in list(work):
            found = re.match(pattern, folder)
            if found is None:
                continue  # nbgrader itself stops on a folder its pattern does not match
            ids = [("student id", found.group("student_id")), ("assignment id", found.group("assignment_id"))]
            problems = [identifiers.refusal(kind, shown_name(name), name) for kind, name in ids
                        if not identifiers.valid(name)]
            # A stray notebook with another name (``Untitled (1).ipynb``) is left out, as nbgrader leaves out every
            # notebook the assignment does not have; the course's notebook names always follow the rule.
            for path in [p for p in work[folder] if not identifiers.valid(Path(p).stem)]:
                self.log.warning("left out %s: %s", shown_name(Path(path).name),
                                 identifiers.refusal("notebook name", shown_name(Path(path).stem), Path(path).stem))
                work[folder].remove(path)
            if not work[folder] and not problems:
                problems = ["no notebook with a usable name was submitted"]
            if problems:
                del work[folder]
                refused.append((found.group("student_id"), found.group("assignment_id"), problems))
        if not refused:
            return
        root = _course_root(self.course_root)
        for student, assignment, problems in refused:
            message = f"refused {shown_name(student)!r}/{shown_name(assignment)!r}, nothing stored: {'; '.join(problems)}"
            self.log.error(message)
            if identifiers.valid(assignment) and "/" not in student and student not in (".", ".."):
                with tempfile.TemporaryDirectory() as tmp:  # only the names: no learner file is read
                    (Path(tmp) / student / assignment).mkdir(parents=True)
                    _project_grade(root, tmp, assignment)  # records invalid_folder, with the rule, in grades.csv
        if not work:
            raise NotGradedByProject("; ".join("; ".join(p) for _, _, p in refused))


def sealed_only(config) -> bool:
    """``c.ProjectAutograde.sealed_only`` (the hub's nbgrader_config.py): grading refused where kernels cannot be sealed."""
    return bool(config.ProjectAutograde.get("sealed_only", False)) if "ProjectAutograde" in config else False


class ProjectAutograde(Preprocessor):
    """Grade the submission with ``python -m grader grade`` and hand nbgrader the project's autograded notebook.

    Used as nbgrader's only sanitize step (autograde steps: none), so what formgrader and
    ``nbgrader autograde`` store is exactly what the project's grader wrote, scores included.
    """

    course_root = Unicode("", help="the course root (nbgrader_config.py sets it)").tag(config=True)
    sealed_only = Bool(False, help="refuse to grade where kernels cannot be sealed (not root): on a hub, formgrader "
                                   "runs as the instructor and the grading service grades as root").tag(config=True)

    @default("enabled")
    def _enabled(self):  # nbconvert preprocessors run only when enabled; nbgrader's own are on by default
        return True

    def preprocess(self, nb, resources):
        from grader.submission import intake

        ids = resources["nbgrader"]
        student, assignment, notebook = ids["student"], ids["assignment"], ids["notebook"]
        from grader import identifiers

        for kind, name in (("student id", student), ("assignment id", assignment), ("notebook name", notebook)):
            if not identifiers.valid(name):  # IntakeGuard refuses these first; this step never grades one either
                raise NotGradedByProject(identifiers.refusal(kind, intake.shown_name(name), name))
        if self.sealed_only and os.geteuid() != 0:
            # Unsealed, the learner's code would run as the instructor, next to the gradebook and the rubrics.
            raise NotGradedByProject(
                f"not graded, nothing stored: {intake.shown_name(student)}/{assignment} would run unsealed as "
                f"{getpass.getuser()}. On this course the grading service grades every submission at Submit, as root; "
                "a learner's new Submit is graded again the same way (docs/how-to/run-a-class-on-jupyterhub.md)")
        root = _course_root(self.course_root)
        submitted = Path(resources["metadata"]["path"])
        with tempfile.TemporaryDirectory() as tmp:
            # Only the notebook (and nbgrader's timestamp), never through a link or past the size limit: the
            # submission folder is the learner's, and this runs with the instructor's rights.
            staged = Path(tmp) / student / assignment
            staged.mkdir(parents=True)
            intake.stage_notebook(submitted / f"{notebook}.ipynb", staged / f"{notebook}.ipynb")
            stamp = intake.read_small_text(submitted / "timestamp.txt")
            if stamp is not None:
                (staged / "timestamp.txt").write_text(stamp)
            done = _project_grade(root, tmp, assignment, "--gradebook", ids["db_url"])
        if done.returncode != 0:
            raise NotGradedByProject(f"the course's grader failed on {student}/{assignment}:\n{done.stderr[-3000:]}")
        self.log.info("graded %s/%s with the course's grader", student, assignment)
        from grader.term.gradebook import Gradebook

        graded = Gradebook(root).autograded_path(student, assignment, f"{notebook}.ipynb")
        if graded.exists():
            return nbformat.read(graded, as_version=4), resources
        result = Gradebook(root).result_path(student, assignment, f"{notebook}.ipynb")
        data = json.loads(result.read_text(encoding="utf-8"))
        stub = nbformat.v4.new_notebook()
        stub.cells.append(nbformat.v4.new_markdown_cell(
            f"Not executed by the course's grader: **{data.get('status')}**."))  # message: see grades.csv
        return stub, resources


class ProjectFeedback(Exporter):
    """nbgrader's feedback exporter replaced by the project's feedback page (hidden tests withheld)."""

    course_root = Unicode("", help="the course root (nbgrader_config.py sets it)").tag(config=True)
    output_mimetype = "text/html"

    @default("file_extension")
    def _html(self):
        return ".html"

    def from_notebook_node(self, nb, resources=None, **kw):
        nb_copy, resources = super().from_notebook_node(nb, resources, **kw)
        ids = resources["nbgrader"]
        from grader.nbgrader_adapter.manual_grades import feedback_page

        page = feedback_page(_course_root(self.course_root), ids["student"], ids["assignment"],
                             f"{ids['notebook']}.ipynb", ids.get("db_url"))
        if page is None:
            raise NotGradedByProject(
                f"{ids['student']}/{ids['assignment']} has no result from the course's grader: press Autograde "
                "(or run `python -m grader grade`) first")
        return page, resources


from nbgrader.exchange.abc.exchange import ExchangeError  # noqa: E402
from nbgrader.exchange.default.collect import ExchangeCollect  # noqa: E402


class ServiceCollect(ExchangeCollect):
    """nbgrader's collect (formgrader's Collect button, ``nbgrader collect``) on the hub, where the grading service
    collects: it refuses, copying nothing, and says why.

    The service takes every submission from the exchange as it arrives, grades it as root and publishes the attempt
    that counts (its notebook as graded, its time) into the gradebook, where formgrader lists it. A collect would copy
    the learner's latest upload, with the learner's own timestamp, beside it: formgrader would then mark the
    submission "needs autograding" (the collected time is not the graded one), and its Autograde cannot grade here
    (``IntakeGuard``). ``grader hub`` makes it ``ExchangeFactory.collect`` in the course's configuration."""

    def init_src(self):
        said = ("nothing collected: on this course the grading service collects and grades every submission at "
                "Submit; formgrader already lists the attempt that counts for each learner, and each learner's every "
                "attempt is in `python -m grader history STUDENT` (docs/how-to/run-a-class-on-jupyterhub.md)")
        self.log.error(said)
        raise ExchangeError(said)
