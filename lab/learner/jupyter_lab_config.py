"""JupyterLab's settings for the learner's lab (``python -m grader lab`` puts this folder on JUPYTER_CONFIG_PATH).

JupyterLab reads default overrides of its settings only from its application settings folder
(``overrides.json`` there). Pointing that folder at ``labconfig/`` makes the course's defaults the lab's:
no "Would you like to get notified about official Jupyter news?" prompt on the first start, no news fetched
and no update check (a learner's lab has no business on the internet). A learner may still change them in
Settings > Notifications. (The default folder, ``.venv/share/jupyter/lab/settings``, holds nothing.)
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

# No kernel debugger: JupyterLab's debugger makes the kernel start debugpy, whose adapter listens on a loopback TCP
# port (named in its command line, which every account can read) and takes any client that connects, with no
# credential. On a shared machine (the hub), once the learner has switched the debugger on and off again, any other
# account could attach and run Python as that learner (tests/test_hub_on_slurm.py). So the server passes on only the
# messages JupyterLab's notebooks, consoles and widgets send, never `debug_request`, and the debugger's panel is
# turned off (labconfig/page_config.json).
c.MappingKernelManager.allowed_message_types = [
    "kernel_info_request", "execute_request", "inspect_request", "complete_request", "history_request",
    "is_complete_request", "comm_info_request", "comm_open", "comm_msg", "comm_close", "input_reply",
    "interrupt_request", "shutdown_request", "create_subshell_request", "delete_subshell_request",
    "list_subshell_request",
]
