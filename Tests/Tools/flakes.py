#!/usr/bin/env python3
"""The flake finder: runs `make test`'s groups N times and counts, per test, the runs it failed in.

Usage (from the repository's top, after `make build`; `make flakes` does both):
    python3 Tests/Tools/flakes.py --runs 10
    python3 Tests/Tools/flakes.py --runs 5 --beside 'make -C ../other clean build'
    python3 Tests/Tools/flakes.py --runs 5 --cpu

Each run runs every group `make test-groups` lists, in order, each as its own `swift test` process (as `make test`
does), but goes on past a failing group so one run shows every failure. `--beside` runs a command over and over
(started again when it ends) for the whole of every run, in its own process group, killed when the run ends; `--cpu`
keeps one core busy instead. Logs go to .build/flakes/STAMP/; the table goes to standard output and to
.build/flakes/STAMP/table.md.

A failure is read from Swift Testing's console lines: "✘ Test NAME recorded an issue at FILE:LINE:COL: ..." (the
first such line of a test is its first failure line) and "✘ Test NAME failed". A group that exits non-zero with no
failed test (a crash, a hang killed by a timeout) is listed under the group's name with its last line.
"""

import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone

ISSUE = re.compile(r"✘ Test (?P<name>.+?) recorded an issue(?: with \d+ arguments?.*?)? at (?P<where>[^:\s]+:\d+)(?::\d+)?: (?P<what>.*)")
FAILED = re.compile(r"✘ Test (?P<name>.+?) failed after")
SUITE_FAILED = re.compile(r"✘ Suite (?P<name>.+?) failed after")
PASSED_RUN = re.compile(r"✔ Test run with (?P<count>\d+) tests? (?:in \d+ suites? )?passed")
FAILED_RUN = re.compile(r"✘ Test run with (?P<count>\d+) tests? (?:in \d+ suites? )?failed")


def groups():
    """`make test-groups`: (name, arguments) in the order make test runs them."""
    out = subprocess.run(["make", "-s", "test-groups"], check=True, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        if not line.strip():
            continue
        name, _, rest = line.partition(" ")
        found.append((name, shlex.split(rest)))
    return found


def parse(log):
    """Failed tests in one group's log: {test: first failure line}, and the count of tests the run reported."""
    failures = {}
    total = None
    for line in log.splitlines():
        line = line.strip()
        match = ISSUE.search(line)
        if match:
            key = match["name"]
            if key not in failures:
                failures[key] = f"{match['where']}: {match['what']}"[:300]
            continue
        match = FAILED.search(line)
        # "✘ Test run with N tests … failed after" is the run's own summary, not a test.
        if match and not match["name"].startswith("run with ") and match["name"] not in failures:
            failures[match["name"]] = line[:300]
        for pattern in (PASSED_RUN, FAILED_RUN):
            match = pattern.search(line)
            if match:
                total = int(match["count"])
    return failures, total


class Beside:
    """A command run over and over beside a run, or one core kept busy."""

    def __init__(self, command, cpu):
        self.command = command
        self.cpu = cpu
        self.process = None

    def start(self, log):
        if self.command:
            loop = f"while true; do {self.command}; sleep 1; done"
            self.process = subprocess.Popen(
                ["sh", "-c", loop], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        elif self.cpu:
            self.process = subprocess.Popen(
                ["sh", "-c", "while :; do :; done"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self):
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process = None


def main():
    parser = argparse.ArgumentParser(description="Runs make test's groups N times and counts each test's failures.")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--beside", help="a shell command run over and over beside every run")
    parser.add_argument("--cpu", action="store_true", help="keep one core busy beside every run")
    parser.add_argument("--groups", help="only these groups, comma-separated (default: all of make test's)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds one group may take before it is killed")
    arguments = parser.parse_args()
    if arguments.runs < 1:
        parser.error("--runs must be at least 1")

    all_groups = groups()
    if arguments.groups:
        wanted = arguments.groups.split(",")
        unknown = [name for name in wanted if name not in dict(all_groups)]
        if unknown:
            parser.error(f"no such group: {', '.join(unknown)} (make test's groups: "
                         f"{', '.join(name for name, _ in all_groups)})")
        all_groups = [(name, args) for name, args in all_groups if name in wanted]

    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder = os.path.join(".build", "flakes", stamp)
    os.makedirs(folder, exist_ok=True)
    environment = dict(os.environ, PARLEY_BIN=os.path.abspath(".build/release/parley"))
    command = ["swift", "test", "-c", "release", "-Xswiftc", "-enable-testing", "--skip-build"]
    beside = Beside(arguments.beside, arguments.cpu)

    failed_runs = {}       # test -> number of runs it failed in
    first_line = {}        # test -> its first failure line over all runs
    group_of = {}          # test -> group
    run_lines = []
    for run in range(1, arguments.runs + 1):
        started = time.monotonic()
        beside_log = open(os.path.join(folder, f"run-{run}-beside.log"), "w")
        beside.start(beside_log)
        failed_here = set()
        counts = []
        try:
            for name, group_arguments in all_groups:
                path = os.path.join(folder, f"run-{run}-{name}.log")
                with open(path, "w") as log:
                    try:
                        status = subprocess.run(
                            command + group_arguments, env=environment, stdout=log, stderr=subprocess.STDOUT,
                            timeout=arguments.timeout).returncode
                    except subprocess.TimeoutExpired:
                        status = "timeout"
                text = open(path, errors="replace").read()
                failures, total = parse(text)
                counts.append(f"{name} {total if total is not None else '?'}")
                if status != 0 and not failures:
                    last = next((line for line in reversed(text.splitlines()) if line.strip()), "(no output)")
                    failures = {f"[group {name}]": f"exit {status}: {last.strip()[:300]}"}
                for test, line in failures.items():
                    failed_here.add(test)
                    first_line.setdefault(test, f"run {run}: {line}")
                    group_of.setdefault(test, name)
        finally:
            beside.stop()
            beside_log.close()
        for test in failed_here:
            failed_runs[test] = failed_runs.get(test, 0) + 1
        seconds = int(time.monotonic() - started)
        verdict = "passed" if not failed_here else f"FAILED ({len(failed_here)} tests)"
        line = f"run {run}: {verdict} in {seconds} s ({', '.join(counts)} tests)"
        run_lines.append(line)
        print(line, flush=True)

    what = "idle" if not (arguments.beside or arguments.cpu) else (
        f"beside `{arguments.beside}`" if arguments.beside else "beside one busy core")
    table = [f"# Flake finder, {stamp} UTC: {arguments.runs} runs of make test's groups, {what}", ""]
    table += [f"- {line}" for line in run_lines]
    table += ["", "| Test | Group | Runs failed | First failure |", "|---|---|---|---|"]
    if not failed_runs:
        table.append(f"| (none) | | 0 of {arguments.runs} | |")
    for test in sorted(failed_runs, key=lambda t: (-failed_runs[t], t)):
        cell = first_line[test].replace("|", "\\|")
        table.append(f"| {test} | {group_of[test]} | {failed_runs[test]} of {arguments.runs} | {cell} |")
    text = "\n".join(table) + "\n"
    with open(os.path.join(folder, "table.md"), "w") as out:
        out.write(text)
    print()
    print(text)
    print(f"logs and table: {folder}")
    return 1 if failed_runs else 0


if __name__ == "__main__":
    sys.exit(main())
