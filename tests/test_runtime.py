"""The setup cell's helper: right device count, or a clear stop."""
from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_start_jax_gives_the_requested_cpu_devices_and_is_quiet_when_repeated():
    done = _run("from coursekit.runtime import start_jax\n"
                "a = start_jax(4, 'cpu'); b = start_jax(4, 'cpu')\n"
                "print(len(a), len(b), [d.id for d in a] == [d.id for d in b])")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "4 4 True"
    assert done.stdout.count("4 cpu devices") == 2


def test_start_jax_stops_with_restart_instruction_after_jax_started_elsewhere():
    done = _run("import jax; jax.numpy.zeros(1)\n"
                "from coursekit.runtime import start_jax, KernelRestartRequired\n"
                "try:\n    start_jax(4, 'cpu')\nexcept KernelRestartRequired as e:\n    print('STOP', e)\n")
    assert done.returncode == 0, done.stderr
    assert "STOP JAX already started in this kernel with 1 cpu device(s); this notebook needs 4" in done.stdout
    assert "Restart the kernel" in done.stdout


def test_start_jax_refuses_more_accelerators_than_exist():
    done = _run("from coursekit.runtime import start_jax\n"
                "try:\n    start_jax(4, 'gpu')\nexcept Exception as e:\n    print('ERR', type(e).__name__)\n")
    assert "ERR" in done.stdout
