"""nbgrader configuration of the learner's JupyterLab (``make lab``): Validate, Assignment List.

Loaded through JUPYTER_CONFIG_PATH by ``python -m grader lab``; the instructor's
``nbgrader_config.py`` at the course root is not read by the learner's server.
"""
import os

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "jax-distributed-training"
# JAX compiles on first call; the default 30 s per cell is tight on 2 cores.
c.Execute.timeout = 180
c.ExecutePreprocessor.timeout = 180
# The course-local exchange, the same folder as the instructor's nbgrader_config.py names.
c.Exchange.root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "exchange")
