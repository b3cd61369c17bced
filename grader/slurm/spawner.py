"""The hub's spawner on Slurm: batchspawner's ``SlurmSpawner``, each learner's server a job under their own account.

Two things differ from batchspawner's defaults, both about where the server is reached:

* the hub connects to the node's address as Slurm knows it (``NodeAddr``), not the node's name: a site's node names
  may not resolve on the hub's machine, and on the one-machine cluster (``grader.slurm.local``) the second node is
  127.0.0.2;
* the server listens on that same address (the job's prologue reads it from ``scontrol``), not on 127.0.0.1, which
  the hub on another machine could not reach.

The job's log goes to a hidden file in the learner's home (``.jupyterhub-slurm-JOBID.log``), not into the folder their
file browser opens on. JupyterHub loads this class by name (``grader.slurm.spawner.CourseSlurmSpawner``).

With JupyterHub's internal TLS (``hub --site-address``: hub, proxy and servers on other hosts), each server's
certificate names every node's address (``node_alt_names``: the hub reaches a server at its node's, not known before
Slurm places the job), and its key reaches the node through the learner's home (the shared filesystem), written
there by the learner's own account (``move_certs``): root never writes into a folder a learner controls.
"""
from __future__ import annotations

import asyncio
import base64
import json
import pwd
import re
import subprocess
import sys
from pathlib import Path

from batchspawner import SlurmSpawner
from traitlets import Unicode, default

# the job's own address, put into the URL the server binds (batchspawner-singleuser keeps its host, sets the port)
PROLOGUE = r"""addr=$(scontrol -o show node "$SLURMD_NODENAME" | sed -n 's/.* NodeAddr=\([^ ]*\).*/\1/p')
if [ -n "$addr" ]; then export JUPYTERHUB_SERVICE_URL="${JUPYTERHUB_SERVICE_URL/:\/\/127.0.0.1:/://$addr:}"; fi"""


def node_address(node: str) -> str:
    """``NodeAddr`` of a Slurm node (the node's name where Slurm says nothing else)."""
    done = subprocess.run(["scontrol", "-o", "show", "node", node], capture_output=True, text=True, timeout=30)
    found = re.search(r"\bNodeAddr=(\S+)", done.stdout)
    return found.group(1) if done.returncode == 0 and found else node


def node_alt_names(spawner=None) -> list[str]:
    """Every Slurm node's address and names, as certificate alternative names (``IP:...``, ``DNS:...``)."""
    done = subprocess.run(["scontrol", "-o", "show", "nodes"], capture_output=True, text=True, timeout=30)
    names = set()
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        for field in ("NodeName", "NodeAddr", "NodeHostName"):
            found = re.search(rf"\b{field}=(\S+)", line)
            if found:
                value = found.group(1)
                names.add(f"{'IP' if _is_address(value) else 'DNS'}:{value}")
    return sorted(names)


def _is_address(value: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


PYTHON = sys.executable  # the hub's: the learners' environment (/opt/jax-course/venv), which every account can run
# run as the learner: the certificate files, from stdin, into a folder of their home, refused through a link
WRITE_CERTS = r"""
import base64, json, os, stat, sys
folder = sys.argv[1]
os.makedirs(folder, 0o700, exist_ok=True)
if not stat.S_ISDIR(os.lstat(folder).st_mode):
    sys.exit(f"{folder} is not a folder")
os.chmod(folder, 0o700)
for name, data in json.load(sys.stdin).items():
    fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(base64.b64decode(data))
"""


class CourseSlurmSpawner(SlurmSpawner):
    batch_script = Unicode(SlurmSpawner.batch_script.default_value.replace(
        "{{homedir}}/jupyterhub_slurmspawner_%j.log", "{{homedir}}/.jupyterhub-slurm-%j.log")).tag(config=True)
    req_prologue = Unicode(PROLOGUE, help="run in the job before the server starts (its address)").tag(config=True)

    def state_gethost(self):
        node = super().state_gethost()
        return node_address(node) if node else node

    @default("ssl_alt_names")
    def _every_node(self):
        return node_alt_names

    async def move_certs(self, paths: dict) -> dict:
        """The server's key, certificate and CA into ``~/.jupyterhub-certs`` (0700), written by the learner's own
        account from the hub's copies, which are then removed (the key exists in the learner's home alone)."""
        account = pwd.getpwnam(self.user.name)
        folder = Path(account.pw_dir) / ".jupyterhub-certs"
        files = {Path(paths[k]).name: base64.b64encode(Path(paths[k]).read_bytes()).decode()
                 for k in ("keyfile", "certfile", "cafile")}
        argv = ["/usr/sbin/runuser", "-u", self.user.name, "--", PYTHON, "-c", WRITE_CERTS, str(folder)]
        done = await asyncio.get_running_loop().run_in_executor(None, lambda: subprocess.run(
            argv, input=json.dumps(files), capture_output=True, text=True, timeout=60))
        if done.returncode:
            raise RuntimeError(f"the server's certificates could not be written into {folder}: "
                               f"{(done.stderr or done.stdout).strip()[-300:]}")
        for key in ("keyfile", "certfile"):
            Path(paths[key]).unlink(missing_ok=True)
        return {key: str(folder / Path(paths[key]).name) for key in ("keyfile", "certfile", "cafile")}
