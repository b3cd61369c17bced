"""nbgrader configuration of the learner's JupyterLab (``make lab``): Validate, Assignment List.

Loaded through JUPYTER_CONFIG_PATH by ``python -m grader lab``; the instructor's
``nbgrader_config.py`` at the course root is not read by the learner's server.
"""
c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "jax-distributed-training"
# JAX compiles on first call; the default 30 s per cell is tight on 2 cores.
c.Execute.timeout = 180
c.ExecutePreprocessor.timeout = 180
