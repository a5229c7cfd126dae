#!/usr/bin/env python3
"""Benchmark vlogscope against grep on the same generated logs, in the same run.

Usage: python bench/run.py [--lines 1000000] [--repeat 3] [--rss-lines 3000000] [--jobs 2]
                          [--out DIR]

Generates logs with ../shared/bench/genlog.py (--failure kv-fp8-mla), then times
whole processes, paired and interleaved so that machine noise hits both:
  grep -c -E 'ValueError|kv_cache_dtype|attention backend|No valid' FILE
  vlogscope diagnose FILE --format json   (default: --jobs auto; and with --jobs 1)
and reports the median ratio grep/vlogscope (1.0 = as fast as grep), the
full-parse speed of `vlogscope.read(FILE).events` in lines/s (also with
messages=False, routine lines' text left in the file), and the peak RSS of
diagnose on the small and the large file (flat memory means a ratio near 1).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENLOG = ROOT.parent / "shared" / "bench" / "genlog.py"
GREP = ["grep", "-c", "-E", "ValueError|kv_cache_dtype|attention backend|No valid"]


def generate(lines: int, out: Path) -> Path:
    path = out / f"genlog-{lines}.log"
    if not path.exists():
        subprocess.run(
            [sys.executable, str(GENLOG), "--lines", str(lines), "--seed", "1",
             "--failure", "kv-fp8-mla", "-o", str(path)],
            check=True, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    return path


def timed(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    # Output goes to a pipe, not /dev/null: GNU grep stops at the first match
    # when it sees its output is /dev/null.
    subprocess.run(command, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before)


def rss_of(command: list[str]) -> int:
    """Peak RSS in KiB of one run, measured by a fresh `time -v`-free wrapper process."""
    code = (
        "import resource,subprocess,sys;"
        "subprocess.run(sys.argv[1:],capture_output=True);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code, *command], capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rss-lines", type=int, default=3_000_000)
    parser.add_argument("--jobs", type=int, default=2, help="for the `read(jobs=N)` timing")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    if not GENLOG.exists():
        print(f"missing {GENLOG}", file=sys.stderr)
        return 2
    # The command installed beside this interpreter (a venv need not be activated).
    beside = Path(sys.executable).with_name("vlogscope")
    vlogscope = str(beside) if beside.exists() else shutil.which("vlogscope")
    if vlogscope is None:
        print("vlogscope is not installed for this Python (pip install -e .)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    small = generate(args.lines, args.out)
    size_mb = small.stat().st_size / 2**20
    print(f"input: {small.name}, {args.lines:,} lines, {size_mb:.0f} MiB")

    diagnose = [vlogscope, "diagnose", str(small), "--format", "json"]
    grep_times, diag_times, jobs_times = [], [], []
    for _ in range(args.repeat):
        grep_times.append(timed([*GREP, str(small)])[0])
        diag_times.append(timed(diagnose)[0])
        jobs_times.append(timed([*diagnose, "--jobs", "1"])[0])
    g, d = statistics.median(grep_times), statistics.median(diag_times)
    j = statistics.median(jobs_times)
    print(f"grep -c -E          median {g:8.3f} s  ({args.lines / g / 1e6:6.2f} M lines/s)")
    print(f"vlogscope diagnose  median {d:8.3f} s  ({args.lines / d / 1e6:6.2f} M lines/s)")
    print(f"ratio grep/diagnose        {g / d:8.3f}   (target >= 0.5)")
    rate = args.lines / j / 1e6
    print(f"diagnose --jobs 1   median {j:8.3f} s  ({rate:6.2f} M lines/s)  one process")
    print(f"ratio grep/diagnose -j 1   {g / j:8.3f}")

    code = (
        "import resource,sys,time,vlogscope;t=time.perf_counter();"
        "log=vlogscope.read(sys.argv[1],jobs=int(sys.argv[2]),messages=sys.argv[3]=='1');"
        "n=int(log.events['lines'].sum());"
        "print(n/(time.perf_counter()-t),resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    for jobs, messages in ((1, True), (args.jobs, True), (1, False)):
        command = [sys.executable, "-c", code, str(small), str(jobs), "1" if messages else "0"]
        out = subprocess.run(command, capture_output=True, text=True)
        rate, peak = (float(v) for v in (out.stdout.split() or ["0", "0"]))
        label = "full parse to Log.events" + (f", jobs={jobs}" if jobs > 1 else "")
        label += "" if messages else ", messages=False"
        print(f"{label:<42}{rate / 1e6:8.3f} M lines/s (target >= 1.5)")
        times_file = peak / 1024 / size_mb
        mib = peak / 1024
        print(f"  peak RSS (this process)  {mib:6.0f} MiB = {times_file:.2f}x the file (<= 1.5x)")

    if args.rss_lines:
        large = generate(args.rss_lines, args.out)
        rss_small = rss_of([vlogscope, "diagnose", str(small), "--format", "json"])
        rss_large = rss_of([vlogscope, "diagnose", str(large), "--format", "json"])
        print(f"peak RSS diagnose {args.lines:,} lines: {rss_small / 1024:7.0f} MiB")
        print(f"peak RSS diagnose {args.rss_lines:,} lines: {rss_large / 1024:7.0f} MiB")
        print(f"RSS ratio large/small       {rss_large / max(rss_small, 1):8.2f}   (target <= 1.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
