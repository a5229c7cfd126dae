"""Commands for logs that keep coming or come in numbers: watch and scan."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from vlogscope.cli import (
    EXIT_FINDINGS,
    EXIT_OK,
    PATTERNS_OPTION,
    cli,
    fail,
    load_patterns,
    make_console,
)
from vlogscope.findings import Finding
from vlogscope.pipeline import Verdict
from vlogscope.report import run_summary, safe
from vlogscope.scan import COLUMNS as SCAN_COLUMNS
from vlogscope.scan import default_jobs, scan_dask, scan_local
from vlogscope.source import InputError, open_sources
from vlogscope.watch import follow_file, follow_stream, watch


@cli.command("watch")
@click.argument("path", default="-", metavar="[PATH|-]")
@PATTERNS_OPTION
def watch_command(path: str, pattern_dirs: tuple[Path, ...]) -> None:
    """Follow a growing log (like tail -F) or a pipe; print findings as they appear.

    Ctrl-C, or the end of a pipe, prints the diagnosis of the latest launch.
    """
    signatures = load_patterns(pattern_dirs)
    console = make_console()

    def show(finding: Finding) -> None:
        line = Text(f"[line {finding.line}] ", style="cyan")
        line.append(f"{finding.severity.upper()} {finding.category}: ", style="bold")
        line.append(safe(finding.title))
        console.print(line)
        sys.stdout.flush()

    if path == "-":
        lines = follow_stream(sys.stdin.buffer)
    elif not Path(path).exists():
        fail(f"{path}: no such file or directory")
        return
    else:
        lines = follow_file(Path(path))
    diagnosis = watch(lines, signatures, show)
    failed = diagnosis.verdict is Verdict.FAILED
    console.print(Text("Summary", style="bold"))
    console.print(Text(f"  {diagnosis.lines} lines read; {run_summary(diagnosis)}"))
    root = diagnosis.root_cause
    if root is not None:
        console.print(Text(f"  root cause: {root.category}: {safe(root.title)}"))
        for fix in root.fix:
            console.print(Text(f"  fix: {safe(fix)}"))
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


@cli.command("scan")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "jsonl"]), default="table",
              show_default=True)  # fmt: skip
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Local worker processes (default: one per CPU).")  # fmt: skip
@click.option("--scheduler", metavar="tcp://HOST:PORT",
              help="Run on an existing Dask cluster instead (needs the `dask` extra).")  # fmt: skip
@PATTERNS_OPTION
def scan_command(
    paths: tuple[str, ...],
    fmt: str,
    jobs: int | None,
    scheduler: str | None,
    pattern_dirs: tuple[Path, ...],
) -> None:
    """Diagnose many logs (directories of pod logs, .gz included) into one table.

    One row per launch: file, run, verdict, root cause, vLLM version, model.
    Exit status 1 when the latest launch of any file failed.
    """
    if "-" in paths:
        raise click.UsageError("scan reads files and directories, not stdin; use diagnose -")
    try:
        files = [s.name for s in open_sources(paths)]
    except InputError as exc:
        fail(str(exc))
        return
    patterns = [str(p) for p in pattern_dirs]
    load_patterns(pattern_dirs)  # a malformed user pattern is one error here, not one per file
    try:
        if scheduler:
            rows = list(scan_dask(files, scheduler, patterns))
        else:
            rows = list(scan_local(files, jobs or default_jobs(), patterns))
    except (RuntimeError, OSError) as exc:
        fail(str(exc))
        return
    if fmt == "jsonl":
        for row in rows:
            click.echo(json.dumps(row.as_dict(), ensure_ascii=False))
    elif fmt == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=list(SCAN_COLUMNS))
        writer.writeheader()
        writer.writerows(row.as_dict() for row in rows)
    else:
        table = Table(box=None)
        for column in ("file", "run", "verdict", "root_cause", "vllm_version", "model"):
            table.add_column(column)
        for row in rows:
            style = "red" if row.verdict == "failed" else ""
            table.add_row(
                Text(safe(row.file)), str(row.run), Text(row.verdict, style=style),
                Text(safe(row.root_cause or "")), Text(safe(row.vllm_version or "")),
                Text(safe(row.model or "")),
            )  # fmt: skip
        make_console().print(table)
    latest = {row.file: row for row in rows}  # rows come in run order per file
    sys.exit(EXIT_FINDINGS if any(r.verdict == "failed" for r in latest.values()) else EXIT_OK)
