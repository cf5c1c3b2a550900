"""tau beside Strands: the same user turn of N tool calls through both, side by side.

Each run is a whole process, timed from launch to exit, with its peak resident memory
(GNU time's maximum resident set size). tau runs as a person would run it: the real
`tau chat` binary, a `replay:` model, its gate, audit log and SQLite session store, in a
fresh home. Strands runs `strands_run.py` (a scripted model, the same tool, a gate-like
before-tool-call hook and an audit line per call). The two alternate, run by run, so load
from elsewhere falls on both. Every run is checked: N tool calls in the audit file.

Usage: python compare.py --tau BIN --python PY [--sizes 10,100,1000,3000] [--strands-3000]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Runs per size: tau is cheap to repeat; Strands at N=1000 takes minutes per run.
TAU_RUNS = {10: 21, 100: 21, 1000: 7, 3000: 7}
STRANDS_RUNS = {10: 5, 100: 5, 1000: 1, 3000: 1}


def run_measured(command, stdin_path, cwd):
    """Wall seconds and peak RSS (KiB) of one child process; fails on a non-zero exit.

    The peak comes from GNU time, not from this process's rusage of the child: a child
    forked from Python counts Python's own pages until it execs."""
    rss_file = Path(cwd) / "rss.txt"
    # What the last run left for the disk is written out first, outside the clock, so no
    # run pays for another's writeback in its own fsyncs.
    os.sync()
    with open(stdin_path, "rb") as stdin:
        start = time.perf_counter()
        child = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", str(rss_file), *command],
            stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd,
        )
        elapsed = time.perf_counter() - start
    if child.returncode != 0:
        sys.exit(f"{command[0]} exited with {child.returncode}:\n{child.stderr.decode(errors='replace')}")
    return elapsed, int(rss_file.read_text().split()[-1])


def tool_call_lines(audit):
    with open(audit, encoding="utf-8") as lines:
        return sum(1 for line in lines if json.loads(line).get("type") == "tool_call")


class Tau:
    name = "tau"

    def __init__(self, binary, work):
        self.binary = binary
        self.work = work

    def prepare(self, n):
        folder = self.work / f"tau-{n}"
        folder.mkdir(exist_ok=True)
        script = [
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": f"t{i}", "name": "clock", "input": {}}}]}
            for i in range(n)
        ]
        script.append({"role": "assistant", "content": [{"text": f"Read the clock {n} times."}]})
        (folder / "replay.json").write_text(json.dumps(script))
        (folder / "prompt.txt").write_text(f"read the clock {n} times\n")
        # One user turn holds all N calls: the loop guard must allow N + 1 model calls.
        (folder / "tau.toml").write_text(f"[agent]\nmax_turns = {n + 1}\n")
        return folder

    def run(self, n, folder):
        home = folder / "home"
        shutil.rmtree(home, ignore_errors=True)
        command = [
            str(self.binary),
            "--home", str(home),
            "--config", str(folder / "tau.toml"),
            "--model", f"replay:{folder / 'replay.json'}",
            "chat", "--session", "bench",
        ]
        elapsed, rss = run_measured(command, folder / "prompt.txt", folder)
        calls = tool_call_lines(home / "audit.jsonl")
        if calls != n:
            sys.exit(f"tau made {calls} tool calls, expected {n}")
        return elapsed, rss


class Strands:
    name = "Strands"

    def __init__(self, python, work):
        self.python = python
        self.work = work

    def prepare(self, n):
        folder = self.work / f"strands-{n}"
        folder.mkdir(exist_ok=True)
        (folder / "empty.txt").write_text("")
        return folder

    def run(self, n, folder):
        audit = folder / "audit.jsonl"
        audit.unlink(missing_ok=True)
        command = [str(self.python), str(HERE / "strands_run.py"), str(n), str(audit)]
        elapsed, rss = run_measured(command, folder / "empty.txt", folder)
        calls = tool_call_lines(audit)
        if calls != n:
            sys.exit(f"Strands made {calls} tool calls, expected {n}")
        return elapsed, rss


def measure(sizes, runs, tools):
    """{(tool, n): [(seconds, rss_kib), ...]}. Round by round over every size, the tools
    alternating, so a burst of load from elsewhere falls on all of them alike."""
    results = {}
    folders = {(tool.name, n): tool.prepare(n) for tool in tools for n in sizes}
    rounds = max(per.get(n, 0) for per in runs.values() for n in sizes)
    for r in range(rounds):
        for n in sizes:
            for tool in tools if r % 2 == 0 else list(reversed(tools)):
                if r >= runs[tool.name].get(n, 0):
                    continue
                sample = tool.run(n, folders[(tool.name, n)])
                results.setdefault((tool.name, n), []).append(sample)
                print(f"  {tool.name:7} N={n:<5} run {r + 1}: {sample[0]:8.3f} s {sample[1] / 1024:7.1f} MiB",
                      file=sys.stderr, flush=True)
    return results


def median(samples, index):
    return statistics.median(s[index] for s in samples)


def table(sizes, results):
    rows = [
        "| N | tau (s) | Strands (s) | tau / Strands | tau peak RSS | Strands peak RSS "
        "| tau per call (ms) | Strands per call (ms) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    previous = None
    for n in sizes:
        tau = results.get(("tau", n))
        strands = results.get(("Strands", n))
        cells = [str(n)]
        cells.append(f"{median(tau, 0):.3f}" if tau else "—")
        cells.append(f"{median(strands, 0):.2f}" if strands else "skipped")
        cells.append(f"{median(tau, 0) / median(strands, 0):.3f}" if tau and strands else "—")
        cells.append(f"{median(tau, 1) / 1024:.0f} MiB" if tau else "—")
        cells.append(f"{median(strands, 1) / 1024:.0f} MiB" if strands else "—")
        for name in ("tau", "Strands"):
            now = results.get((name, n))
            before = results.get((name, previous)) if previous else None
            if now and before:
                cells.append(f"{(median(now, 0) - median(before, 0)) * 1000 / (n - previous):.3f}")
            else:
                cells.append("—")
        rows.append("| " + " | ".join(cells) + " |")
        previous = n
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tau", required=True, type=Path, help="the tau binary")
    parser.add_argument("--python", required=True, type=Path, help="a Python with strands-agents")
    parser.add_argument("--sizes", default="10,100,1000,3000", help="tool calls per turn")
    parser.add_argument("--strands-3000", action="store_true",
                        help="run Strands at N=3000 too (tens of minutes)")
    parser.add_argument("--runs", type=int, help="runs per size for both (default: per size)")
    parser.add_argument("--tau-only", action="store_true", help="leave Strands out")
    args = parser.parse_args()
    # The runs start in their own folders: relative paths would not reach the programs.
    args.tau, args.python = args.tau.absolute(), args.python.absolute()
    sizes = [int(s) for s in args.sizes.split(",")]
    strands_runs = dict(STRANDS_RUNS)
    if not args.strands_3000:
        strands_runs[3000] = 0
    runs = {"tau": dict(TAU_RUNS), "Strands": strands_runs}
    if args.runs:
        runs = {name: {n: args.runs if per.get(n, 1) else 0 for n in sizes} for name, per in runs.items()}
    for per in runs.values():
        for n in sizes:
            per.setdefault(n, 3)
    with tempfile.TemporaryDirectory(prefix="tau-bench-") as work:
        work = Path(work)
        tools = [Tau(args.tau, work)]
        if not args.tau_only:
            tools.append(Strands(args.python, work))
        results = measure(sizes, runs, tools)
    print(table(sizes, results))
    print()
    counts = ", ".join(
        f"N={n}: tau {len(results.get(('tau', n), []))}, Strands {len(results.get(('Strands', n), []))}"
        for n in sizes
    )
    print(f"Medians of whole-process runs ({counts}).")
    print("Per call: the median's growth from the size above, divided by the calls added.")
    if not args.strands_3000 and 3000 in sizes and not args.tau_only:
        print("Strands at N=3000 skipped (it takes tens of minutes); --strands-3000 includes it.")


if __name__ == "__main__":
    main()
