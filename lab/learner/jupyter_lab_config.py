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

# The kernels talk to this server over Unix sockets in the learner's own runtime folder (mode 0700), not over loopback
# TCP ports. Over TCP the server picks a kernel's five ports (bind to port 0, close) seconds before the kernel binds
# them, and in a start-up burst another process can take one in between; when it is the IOPub port, ipykernel 7.4
# raises but its process stays alive without ever answering, so no restart comes and every websocket the learner opens
# is closed after twice MappingKernelManager.kernel_info_timeout (tests/test_kernel_start_burst.py, and
# docs/explanation/capacity.md). A socket's path is the kernel's connection file's name with "-ipc-N": it cannot be
# taken by another kernel or another account. Unix socket paths are limited to 107 bytes; with a runtime folder too
# long for that (a deep home), the kernels stay on TCP.
from jupyter_core.paths import jupyter_runtime_dir  # noqa: E402

if len(os.path.join(jupyter_runtime_dir(), "kernel-00000000-0000-0000-0000-000000000000-ipc-99")) <= 107:
    c.KernelManager.transport = "ipc"
