"""Prints the slowest test files and tests of a suite run, from JUnit XML reports.

Usage: python3 tests/slowest.py [--most N] [--durations TIER] REPORT.xml...

bats (--report-formatter junit) writes one <testsuite> per file, pytest (--junitxml) one for the
run: a file's time is the sum of its tests' times, as the reports give them (seconds). The tables
end each run of tests/run.sh, so that the suite's growth shows in every CI log. With --durations
TIER (unit or integration, whose site lane counts as integration), it prints instead the lines
of tests/TIER/durations for that run: each file's seconds, rounded, and its name, longest first.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def read(paths: list[Path]) -> tuple[dict[str, float], list[tuple[float, str, str]]]:
    """Per-file totals and (time, file, test) rows of every report in PATHS."""
    files: dict[str, float] = defaultdict(float)
    tests: list[tuple[float, str, str]] = []
    for path in paths:
        root = ET.parse(path).getroot()
        for case in root.iter("testcase"):
            seconds = float(case.get("time") or 0)
            # bats names the file in classname (its base name alone: the report's folder says
            # which tier it is), pytest the module's dotted path.
            where = case.get("classname") or path.name
            if path.stem == "report":
                where = f"{path.parent.name}/{where}"
            files[where] += seconds
            tests.append((seconds, where, case.get("name") or "?"))
    return files, tests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--most", type=int, default=15)
    parser.add_argument("--durations", choices=["unit", "integration"])
    parser.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args()
    files, tests = read([p for p in args.reports if p.is_file() and p.stat().st_size])
    if args.durations:
        for name, seconds in sorted(files.items(), key=lambda kv: (-kv[1], kv[0])):
            tier, _, base = name.partition("/")
            if tier.split("-")[0] == args.durations and base:
                print(f"{round(seconds)} {base}")
        return
    print(f"slowest files ({len(files)} in all, {sum(files.values()):.0f} s of tests):")
    for name, seconds in sorted(files.items(), key=lambda kv: -kv[1])[: args.most]:
        print(f"  {seconds:8.1f} s  {name}")
    print(f"slowest tests ({len(tests)} in all):")
    for seconds, where, name in sorted(tests, reverse=True)[: args.most]:
        print(f"  {seconds:8.1f} s  {where}: {name}")


if __name__ == "__main__":
    main()
