"""Resource limits of one kernel, set on itself before any learner code runs."""
from __future__ import annotations

import json
import resource
from dataclasses import asdict, dataclass


@dataclass
class Limits:
    """Per-submission limits; defaults suit the course notebooks on a 2-core, 24 GiB machine."""

    memory_mb: int = 4096
    max_processes: int = 256  # threads count too: JAX starts a few dozen
    max_file_mb: int = 64
    max_open_files: int = 512
    cell_timeout_s: float = 120.0
    notebook_timeout_s: float = 600.0
    max_output_bytes: int = 4 * 1024 * 1024
    home_mb: int = 256  # the kernel's home, /tmp and /dev/shm are size-capped tmpfs (RAM), never the host's disk

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def apply_limits(limits: Limits) -> None:
    mb = 1024 * 1024
    for which, value in [
        (resource.RLIMIT_AS, limits.memory_mb * mb),
        (resource.RLIMIT_NPROC, limits.max_processes),
        (resource.RLIMIT_FSIZE, limits.max_file_mb * mb),
        (resource.RLIMIT_NOFILE, limits.max_open_files),
        (resource.RLIMIT_CORE, 0),
    ]:
        resource.setrlimit(which, (value, value))


def from_arguments(args) -> Limits:
    """The limits a command's ``add_arguments`` options give."""
    return Limits(memory_mb=args.memory_mb, cell_timeout_s=args.cell_timeout, notebook_timeout_s=args.notebook_timeout,
                  max_output_bytes=args.max_output_bytes, max_processes=args.max_processes)


def add_arguments(parser, defaults: Limits) -> None:
    """A grading command's options for the limits (and the devices a kernel has)."""
    parser.add_argument("--num-devices", type=int, default=4)
    parser.add_argument("--platform", default="cpu")
    parser.add_argument("--cell-timeout", type=float, default=defaults.cell_timeout_s)
    parser.add_argument("--notebook-timeout", type=float, default=defaults.notebook_timeout_s)
    parser.add_argument("--memory-mb", type=int, default=defaults.memory_mb)
    parser.add_argument("--max-output-bytes", type=int, default=defaults.max_output_bytes)
    parser.add_argument("--max-processes", type=int, default=defaults.max_processes)
