"""``make bench``: every benchmark section, one after another in one process; writes results/bench.md.

A section is a module of this folder with ``run() -> list[str]``: markdown lines, a ``## ``
heading, one sentence on what is measured, and a table of seconds and of the ratios measured
in that one run.  The report starts with what the numbers depend on (date, commit, machine,
Python and numpy versions); each section is printed as soon as it is done, and the file is
written once all are.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy

import bench_args
import bench_backends
import bench_knn
import bench_paths

SECTIONS = (bench_paths, bench_knn, bench_backends)
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "bench.md"


def _git(*args) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    except OSError:  # no git here
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def header() -> list[str]:
    commit = _git("rev-parse", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    return ["# Benchmarks",
            "",
            f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
            f"- commit: {commit}",
            f"- machine: {os.cpu_count()} CPUs ({_cpu_model()}), {platform.system()} {platform.machine()}",
            f"- Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}",
            "",
            "Every time below is a median of repeated runs in this one process (or, where a "
            "section says so, a child process of it); compare the ratios, which are measured "
            "side by side, rather than the seconds across machines."]


def main(argv=None) -> None:
    """Run every section and write results/bench.md; ``--help`` and bad arguments start nothing."""
    bench_args.parse(__doc__, "benchmarks/bench.py", argv)
    lines = header()
    print("\n".join(lines), flush=True)
    for section in SECTIONS:
        start = time.perf_counter()
        block = ["", *section.run(), "", f"_{section.__name__}: {time.perf_counter() - start:.0f} s._"]
        print("\n".join(block), flush=True)
        lines += block
    OUT.parent.mkdir(parents=True, exist_ok=True)
    partial = OUT.with_name(f".{OUT.name}.tmp{os.getpid()}")
    partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(partial, OUT)
    print(f"\nreport: {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
