"""nbgrader configuration: stock ``nbgrader`` commands work on this course."""
import os

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "jax-distributed-training"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.submitted_directory = os.path.join("samples", "submitted")
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
# The rubric holds the grader's references; it never reaches students.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "rubric.py"]

from nbgrader.converters import GenerateAssignment  # noqa: E402
from grader.nbgrader_plugins import ScaffoldSolutions  # noqa: E402

c.GenerateAssignment.preprocessors = [
    ScaffoldSolutions if p.__name__ == "ClearSolutions" else p
    for p in GenerateAssignment.preprocessors.default_value
]
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
# JAX compiles on first call; the default 30 s per cell is tight on 2 cores.
c.Execute.timeout = 180
c.ExecutePreprocessor.timeout = 180
