"""The hub's spawner on Slurm: batchspawner's ``SlurmSpawner``, each learner's server a job under their own account.

Two things differ from batchspawner's defaults, both about where the server is reached:

* the hub connects to the node's address as Slurm knows it (``NodeAddr``), not the node's name: a site's node names
  may not resolve on the hub's machine, and on the one-machine cluster (``grader.slurm.local``) the second node is
  127.0.0.2;
* the server listens on that same address (the job's prologue reads it from ``scontrol``), not on 127.0.0.1, which
  the hub on another machine could not reach.

The job's log goes to a hidden file in the learner's home (``.jupyterhub-slurm-JOBID.log``), not into the folder their
file browser opens on. JupyterHub loads this class by name (``grader.slurm.spawner.CourseSlurmSpawner``).
"""
from __future__ import annotations

import re
import subprocess

from batchspawner import SlurmSpawner
from traitlets import Unicode

# the job's own address, put into the URL the server binds (batchspawner-singleuser keeps its host, sets the port)
PROLOGUE = r"""addr=$(scontrol -o show node "$SLURMD_NODENAME" | sed -n 's/.* NodeAddr=\([^ ]*\).*/\1/p')
if [ -n "$addr" ]; then export JUPYTERHUB_SERVICE_URL="${JUPYTERHUB_SERVICE_URL/:\/\/127.0.0.1:/://$addr:}"; fi"""


def node_address(node: str) -> str:
    """``NodeAddr`` of a Slurm node (the node's name where Slurm says nothing else)."""
    done = subprocess.run(["scontrol", "-o", "show", "node", node], capture_output=True, text=True, timeout=30)
    found = re.search(r"\bNodeAddr=(\S+)", done.stdout)
    return found.group(1) if done.returncode == 0 and found else node


class CourseSlurmSpawner(SlurmSpawner):
    batch_script = Unicode(SlurmSpawner.batch_script.default_value.replace(
        "{{homedir}}/jupyterhub_slurmspawner_%j.log", "{{homedir}}/.jupyterhub-slurm-%j.log")).tag(config=True)
    req_prologue = Unicode(PROLOGUE, help="run in the job before the server starts (its address)").tag(config=True)

    def state_gethost(self):
        node = super().state_gethost()
        return node_address(node) if node else node
