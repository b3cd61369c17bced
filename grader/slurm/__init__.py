"""Slurm for the class: a one-machine cluster for a demo and the tests, and the hub's spawner on any Slurm.

    local.py     ``python -m grader slurm up|down|status``: Debian's ``slurm-wlm`` and ``munge`` on this machine,
                 one controller and two compute nodes (127.0.0.1 and 127.0.0.2), the daemons started directly
                 (no systemd), memory limits enforced by Slurm's cgroups; on a real site, the site's Slurm is used
                 instead and nothing here runs (docs/how-to/run-a-class-on-a-cluster.md)
    spawner.py   the hub's ``SlurmSpawner`` (batchspawner's, with the node's address as Slurm reports it): each
                 learner's server a Slurm job under the learner's own account

Nothing here grades: the grading service and ``python -m grader grade`` use Slurm through dask-jobqueue.
"""
