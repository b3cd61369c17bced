"""JupyterLab's settings for the instructor's lab (``python -m grader instructor`` puts this folder on JUPYTER_CONFIG_PATH).

JupyterLab reads default overrides of its settings only from its application settings folder (``overrides.json``
there); pointing that folder at ``labconfig/`` makes the course's defaults the lab's: no "Would you like to get
notified about official Jupyter news?" prompt on the first start, no news fetched, no update check. They can still
be changed in Settings > Notifications. (The default folder, ``.venv/share/jupyter/lab/settings``, holds nothing.)
"""
import os

c = get_config()  # noqa: F821 - provided by traitlets when JupyterLab loads this file

c.LabApp.app_settings_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "labconfig")

# The notebooks' kernels talk to this server over loopback TCP; ipykernel 7 warns in the terminal that it "is
# running over TCP without encryption" unless the kernel manager gives it CurveZMQ keys. With this policy it does
# (pyzmq's wheels include CurveZMQ; the kernel spec declares it), so that traffic is encrypted, not the warning hidden.
import zmq  # noqa: E402

if zmq.has("curve"):
    c.KernelManager.transport_encryption = "auto"
