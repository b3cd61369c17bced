"""Where the suite's time goes: the table in docs/explanation/benchmarks.md, made from a run's own timing.

    .venv/bin/python tests/durations_table.py            # print the table of test-artifacts/durations.json
    .venv/bin/python tests/durations_table.py --write    # put it in the page, and the units' order in
                                                         # tests/longest-first.txt (from a whole-suite run only)

``test-artifacts/durations.json`` is written by every ``make test`` (``tests/timing.py``). The table has the run's
wall time, each test file's share (setup, call and teardown of its tests, so a module fixture counts where it is
paid) and CPU seconds (its worker's and every process it started: the suite runs on two cores, so CPU is what a
file costs the others), the module- and session-scoped fixtures that took longest to set up, and the tests that
took the most CPU.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DURATIONS = ROOT / "test-artifacts" / "durations.json"
PAGE = ROOT / "docs" / "explanation" / "benchmarks.md"  # beside the measured runs it comes from
LONGEST_FIRST = ROOT / "tests" / "longest-first.txt"
BEGIN, END = "<!-- durations table: tests/durations_table.py --write -->", "<!-- end of durations table -->"


def _spent(entry: dict) -> float:
    return entry.get("setup", 0) + entry.get("call", 0) + entry.get("teardown", 0)


def _cpu(entry: dict) -> float:
    """CPU seconds of the test's phases: its worker's and every process it started (tests/timing.py)."""
    return entry.get("cpu_setup", 0) + entry.get("cpu_call", 0) + entry.get("cpu_teardown", 0)


def table(record: dict, files: int = 20, fixtures: int = 12, tests: int = 12) -> str:
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0, 0.0])
    for entry in record["tests"].values():
        by_file[entry["file"]][0] += _spent(entry)
        by_file[entry["file"]][1] += 1
        by_file[entry["file"]][2] += _cpu(entry)
    total = sum(spent for spent, _, _ in by_file.values())
    cpu_total = sum(cpu for _, _, cpu in by_file.values()) or 1.0
    lines = [f"Run of {record['when']}: {record['collected']} tests, {record['wall_s'] / 60:.1f} min of pytest "
             f"({'passed' if record['passed'] else 'FAILED'}). {record['budget']}.", "",
             "| test file | tests | seconds | share of the tests' time | CPU seconds | share of the CPU |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, (spent, count, cpu) in sorted(by_file.items(), key=lambda kv: -kv[1][2])[:files]:
        lines.append(f"| `{name}` | {count} | {spent:.0f} | {spent / total:.0%} | {cpu:.0f} | {cpu / cpu_total:.0%} |")
    rest = sorted(by_file.items(), key=lambda kv: -kv[1][2])[files:]
    if rest:
        spent, cpu = sum(s for _, (s, _, _) in rest), sum(c for _, (_, _, c) in rest)
        lines.append(f"| {len(rest)} other files | {sum(c for _, (_, c, _) in rest)} | {spent:.0f} | "
                     f"{spent / total:.0%} | {cpu:.0f} | {cpu / cpu_total:.0%} |")
    lines += ["", "| long-lived fixture | scope | set-up seconds | paid by |", "|---|---|---:|---|"]
    for fixture in sorted(record["fixtures"], key=lambda f: -f["setup"])[:fixtures]:
        lines.append(f"| `{fixture['fixture']}` ({fixture['module']}) | {fixture['scope']} | {fixture['setup']:.0f} | "
                     f"`{(fixture['paid_by'] or '').split('::', 1)[-1][:70]}` |")
    lines += ["", "| most CPU (setup + call + teardown) | seconds | CPU seconds |", "|---|---:|---:|"]
    for name, entry in sorted(record["tests"].items(), key=lambda kv: -_cpu(kv[1]))[:tests]:
        lines.append(f"| `{name[:110]}` | {_spent(entry):.0f} | {_cpu(entry):.0f} |")
    return "\n".join(lines)


def longest_first(record: dict) -> list[str]:
    """The units of work (tests/conftest.py's unit_of), longest first: the order the workers get them in."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import unit_of  # the suite's own grouping, one definition

    spent: dict[str, float] = defaultdict(float)
    for nodeid, entry in record["tests"].items():
        spent[unit_of(nodeid)] += _spent(entry)
    return [unit for unit, seconds in sorted(spent.items(), key=lambda kv: -kv[1]) if seconds >= 10]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--durations", type=Path, default=DURATIONS)
    parser.add_argument("--write", action="store_true", help=f"replace the table in {PAGE.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if not args.durations.exists():
        print(f"{args.durations} is missing: run `make test` first (tests/timing.py writes it)", file=sys.stderr)
        return 2
    record = json.loads(args.durations.read_text())
    text = table(record)
    print(text)
    if args.write:
        if not record.get("whole_suite"):
            print("this record is of a partial run (-k, -m, a file, GRADER_SCENARIOS): run make test", file=sys.stderr)
            return 2
        LONGEST_FIRST.write_text("\n".join(longest_first(record)) + "\n")
        page = PAGE.read_text()
        if BEGIN not in page or END not in page:
            print(f"{PAGE} has no markers {BEGIN!r} ... {END!r}", file=sys.stderr)
            return 2
        head, rest = page.split(BEGIN, 1)
        PAGE.write_text(head + BEGIN + "\n" + text + "\n" + END + rest.split(END, 1)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
