"""CPU seconds of a command and of everything it starts, sealed kernels included.

    sudo .venv/bin/python benchmarks/cgroup_cpu.py -- COMMAND...

A sealed kernel dies with its PID namespace, so its CPU time never reaches ``RUSAGE_CHILDREN``. This
runs the command in a fresh cgroup (v1 ``cpuacct`` or v2) and reads the cgroup's total CPU time, which
counts every process that ever ran in it. Prints one JSON line: wall and CPU seconds (user, system).
Needs root (to create the cgroup); the cgroup is removed afterwards.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

V1 = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup/unified")


def main() -> int:
    command = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    name = f"grading-cpu-{uuid.uuid4().hex[:8]}"
    if (V1 / "cpuacct.usage").exists():
        group, v1 = V1 / name, True
    else:
        group, v1 = V2 / name, False
    group.mkdir()
    try:
        started = time.monotonic()
        process = subprocess.Popen(command, preexec_fn=lambda: (group / "cgroup.procs").write_text(str(os.getpid())))
        rc = process.wait()
        wall = time.monotonic() - started
        if v1:
            total = int((group / "cpuacct.usage").read_text()) / 1e9
            ticks = dict(line.split() for line in (group / "cpuacct.stat").read_text().splitlines())
            hz = os.sysconf("SC_CLK_TCK")
            user, system = int(ticks["user"]) / hz, int(ticks["system"]) / hz
        else:
            stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
            total, user, system = (int(stat[k]) / 1e6 for k in ("usage_usec", "user_usec", "system_usec"))
        print(json.dumps({"wall_s": round(wall, 2), "cpu_s": round(total, 2), "user_s": round(user, 2),
                          "system_s": round(system, 2), "rc": rc}), flush=True)
        return rc
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
