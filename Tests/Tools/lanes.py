#!/usr/bin/env python3
"""Prints a `swift test --filter` pattern for the suites of the lanes named (`.lane(.processes)` in Tests/):
`Module\\.Suite/` for each, joined by `|`. The Makefile builds `make test`'s groups from it, so a suite's lane is
written once, beside the suite."""
import pathlib
import re
import sys

LANE = re.compile(r"\.lane\(\.(\w+)\)")
DECLARATION = re.compile(r"\b(?:struct|class)\s+(\w+)")
CASE_NAMES = {"real-time": "realTime"}


def suites(root, lanes):
    wanted = {CASE_NAMES.get(lane, lane) for lane in lanes}
    found = []
    for path in sorted(pathlib.Path(root).glob("*/**/*.swift")):
        module = path.relative_to(root).parts[0]
        text = path.read_text()
        for mark in LANE.finditer(text):
            declaration = DECLARATION.search(text, mark.end())
            if declaration is None:
                sys.exit(f"{path}: .lane(.{mark.group(1)}) is not followed by a suite")
            if mark.group(1) in wanted:
                found.append(f"{module}\\.{declaration.group(1)}/")
    return found


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: lanes.py LANE...  (lanes: see Sources/ParleyTestLanes/TestLane.swift)")
    found = suites(pathlib.Path(__file__).resolve().parent.parent, sys.argv[1:])
    if not found:
        sys.exit(f"no suite is in lane {' or '.join(sys.argv[1:])}")
    print("|".join(found))


main()
