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

# The kernels nbgrader starts (`nbgrader validate`, the Validate button) talk to it over loopback TCP; ipykernel 7
# warns "Kernel is running over TCP without encryption" unless the kernel manager gives it CurveZMQ keys. It
# does with this policy (pyzmq's wheels include CurveZMQ; the kernel spec declares it), and that traffic is then
# encrypted instead of the warning hidden.
import zmq  # noqa: E402

if zmq.has("curve"):
    c.KernelManager.transport_encryption = "auto"

# The course-local exchange, the same folder as the instructor's nbgrader_config.py names.
c.Exchange.root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "exchange")
