"""The instructor's Jupyter server (``python -m grader instructor`` puts this folder on JUPYTER_CONFIG_PATH).

- ``grader.nbgrader_adapter.formgrader_guard``: formgrader's pages escape every value they print and carry no inline script
  (the course's templates in ``templates/formgrader/``, the scripts they need in ``static/course_formgrader/``,
  served from this server's ``/static/``).
- A Content-Security-Policy on every page of the server: scripts from the server only, so markup that reaches a
  page anyway (an id stored by an older gradebook or a stock nbgrader command) cannot run.
"""
import os

from grader.nbgrader_adapter.formgrader_guard import content_security_policy

c = get_config()  # noqa: F821 - provided by traitlets when jupyter-server loads this file

c.ServerApp.jpserver_extensions.update({"grader.nbgrader_adapter.formgrader_guard": True})
c.ServerApp.tornado_settings.update({"headers": {"Content-Security-Policy": content_security_policy()}})
# A plain list, never `.append`: formgrader merges the server's configuration again on every API request, and a lazy
# append would extend the list each time (memory doubling until the server is killed).
c.ServerApp.extra_static_paths = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")]
