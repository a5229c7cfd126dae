"""The `vlogscope` command.

`vlogscope diagnose [PATH ...|-]` is the main command.  Exit codes are a
contract: 0 no error finding, 1 at least one error finding, 2 a usage or
input error, reported as one line on stderr and never as a traceback
(`--debug` shows the traceback, for bug reports).

Examples:
    >>> from click.testing import CliRunner
    >>> result = CliRunner().invoke(cli, ["diagnose", "/no/such/file"])
    >>> result.exit_code, result.output.strip()
    (2, 'vlogscope: error: /no/such/file: no such file or directory')
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.progress import Progress, TransferSpeedColumn
from rich.table import Table
from rich.text import Text

from vlogscope.catalog import Problem, lint, run_tests
from vlogscope.compare import diff_launches
from vlogscope.findings import Finding
from vlogscope.pipeline import Diagnosis, Verdict, analyze
from vlogscope.plot import PlotUnavailable
from vlogscope.redact import Redactor
from vlogscope.report import render_json, render_text, run_summary, safe, to_jsonable
from vlogscope.report_html import html_body, page_of, render_html
from vlogscope.report_markdown import render_markdown
from vlogscope.samples import SAMPLES, sample_path
from vlogscope.scan import COLUMNS as SCAN_COLUMNS
from vlogscope.scan import default_jobs, scan_dask, scan_local
from vlogscope.signatures import Signature, SignatureError, load_signatures
from vlogscope.signatures import pattern_dirs as all_pattern_dirs
from vlogscope.source import STDIN_NAME, InputError, Source, open_sources
from vlogscope.watch import follow_file, follow_stream, watch

if TYPE_CHECKING:
    import pandas as pd

    from vlogscope.log import Log

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT = 0, 1, 2


def _console() -> Console:
    """Rich output; off a terminal, wide enough that tables are not folded."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def _fail(message: str) -> None:
    click.echo(f"vlogscope: error: {message}", err=True)
    sys.exit(EXIT_INPUT)


PROGRESS_MIN_BYTES = int(os.environ.get("VLOGSCOPE_PROGRESS_MIN_BYTES", 50 * 2**20))


def _with_progress(source: Source, progress: Progress) -> Source:
    """A big file read behind a progress bar (bytes/s); anything else unchanged."""
    path = Path(source.name)
    try:
        size = path.stat().st_size if source.name != STDIN_NAME else 0
    except OSError:
        return source
    if size < PROGRESS_MIN_BYTES:
        return source
    label = path.name
    return Source(source.name, lambda: progress.wrap_file(path.open("rb"), total=size,
                                                          description=label))  # fmt: skip


def _diagnose_all(
    paths: Sequence[str], patterns: Sequence[Path], redact: bool, full_parse: bool
) -> list[Diagnosis]:
    signatures = load_signatures(patterns)
    redactor = Redactor() if redact else None  # one for all inputs: placeholders agree
    sources = open_sources(paths, sys.stdin.buffer)
    skim_routine = not full_parse

    def run(source: Source) -> Diagnosis:
        return analyze(source, signatures, redactor, skim_routine=skim_routine, keep_events=False)

    if not sys.stderr.isatty():  # progress is for people; pipes and CI get nothing on stderr
        return [run(s) for s in sources]
    columns = (*Progress.get_default_columns(), TransferSpeedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        return [run(_with_progress(s, progress)) for s in sources]


_PATTERNS_OPTION = click.option(
    "--patterns",
    "pattern_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Extra folder of signature files (*.toml); overrides built-ins by id. Repeatable.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vlogscope")
def cli() -> None:
    """Log forensics for vLLM: name the root cause of a failed launch."""


@cli.command()
@click.argument("paths", nargs=-1, metavar="[PATH ...|-]")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown", "html"]),
    default="text",
    show_default=True,
    help="Report format.",
)
@click.option(
    "--sample",
    type=click.Choice(sorted(SAMPLES)),
    help="Diagnose a sample log shipped with vlogscope instead of PATH.",
)
@_PATTERNS_OPTION
@click.option(
    "--redact",
    is_flag=True,
    help="Replace API keys, tokens, IPs, host and user names, prompts with placeholders.",
)
@click.option(
    "--full-parse",
    is_flag=True,
    help="Parse every line (slower); by default routine INFO lines are only counted.",
)
@click.option("--debug", is_flag=True, help="Show Python tracebacks of internal errors.")
def diagnose(
    paths: tuple[str, ...],
    fmt: str,
    sample: str | None,
    pattern_dirs: tuple[Path, ...],
    redact: bool,
    full_parse: bool,
    debug: bool,
) -> None:
    """Diagnose vLLM logs: files, directories, compressed logs, or - for stdin.

    Exit status: 0 no error finding, 1 an error finding, 2 bad usage or input.
    """
    if sample is not None:
        if paths:
            raise click.UsageError("give either --sample or PATH, not both")
        paths = (str(sample_path(sample)),)
    if not paths and sys.stdin.isatty():
        raise click.UsageError("give a PATH, or pipe a log in: cat vllm.log | vlogscope diagnose -")
    try:
        diagnoses = _diagnose_all(paths, pattern_dirs, redact, full_parse)
    except (InputError, SignatureError) as exc:
        if debug:
            raise
        _fail(str(exc))
        return
    except Exception as exc:  # an internal error must still be one line without --debug
        if debug:
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)")
        return
    for warning in dict.fromkeys(w for d in diagnoses for w in d.warnings):
        click.echo(f"vlogscope: warning: {warning}", err=True)
    if fmt == "json":
        click.echo(render_json(diagnoses))
    elif fmt == "markdown":
        click.echo("\n\n---\n\n".join(render_markdown(d) for d in diagnoses))
    elif fmt == "html":
        click.echo(render_html(diagnoses[0]) if len(diagnoses) == 1 else
                   page_of("".join(html_body(d) for d in diagnoses), "vlogscope"))  # fmt: skip
    if all(d.verdict is Verdict.NOT_VLLM for d in diagnoses):
        names = ", ".join(d.source for d in diagnoses)
        _fail(
            f"{names}: no vLLM log lines found ({sum(d.lines for d in diagnoses)} lines read); "
            "give the stdout/stderr of `vllm serve` or of the Python process that ran vLLM"
        )
    if fmt == "text":
        console = Console(highlight=False, soft_wrap=False)
        for d in diagnoses:
            render_text(d, console)
    failed = any(d.verdict is Verdict.FAILED for d in diagnoses)
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


def _load(extra: Sequence[Path]) -> dict[str, Signature]:
    try:
        return load_signatures(extra)
    except SignatureError as exc:
        _fail(str(exc))
        raise  # unreachable: _fail exits


@cli.group()
def patterns() -> None:
    """List, show, test and lint failure signatures."""


@patterns.command("list")
@_PATTERNS_OPTION
def patterns_list(pattern_dirs: tuple[Path, ...]) -> None:
    """One line per signature: id, category, severity, priority, file."""
    for sig in sorted(_load(pattern_dirs).values(), key=lambda s: s.id):
        click.echo(
            f"{sig.id:<58} {sig.category:<28} {sig.severity:<8} {sig.priority:>3}  "
            f"{sig.origin.name}"
        )


@patterns.command("show")
@click.argument("signature_id")
@_PATTERNS_OPTION
def patterns_show(signature_id: str, pattern_dirs: tuple[Path, ...]) -> None:
    """Everything about one signature."""
    sig = _load(pattern_dirs).get(signature_id)
    if sig is None:
        _fail(f"no signature with id {signature_id!r} (see `vlogscope patterns list`)")
        return
    rows = [
        ("id", sig.id),
        ("category", sig.category),
        ("severity", str(sig.severity)),
        ("role", str(sig.role)),
        ("priority", str(sig.priority)),
        ("title", sig.title),
        ("explain", sig.explain),
        *(("fix", f) for f in sig.fix),
        ("versions", sig.versions or "any"),
        *(("match." + n, p.pattern) for n, p in _patterns_of(sig) if p is not None),
        ("levels", ", ".join(sorted(sig.levels)) or "WARNING, ERROR, CRITICAL, unlevelled"),
        *(("reference", r) for r in sig.references),
        ("file", str(sig.origin)),
    ]
    for key, value in rows:
        click.echo(f"{key + ':':<16}{value}")


def _patterns_of(sig: Signature) -> list[tuple[str, Any]]:
    return [("message", sig.message), ("exception", sig.exception), ("frame", sig.frame),
            ("path", sig.path)]  # fmt: skip


def _report_problems(problems: Sequence[Problem], what: str, count: int) -> None:
    for problem in problems:
        click.echo(str(problem))
    if problems:
        click.echo(f"{len(problems)} problem(s) in {what} of {count} signatures", err=True)
        sys.exit(EXIT_FINDINGS)
    click.echo(f"{what}: {count} signatures, no problems")


@patterns.command("test")
@_PATTERNS_OPTION
def patterns_test(pattern_dirs: tuple[Path, ...]) -> None:
    """Run every signature's test blocks and fixtures; say which did not fire."""
    sigs = _load(pattern_dirs)
    _report_problems(run_tests(sigs, all_pattern_dirs(pattern_dirs)), "tests", len(sigs))


@patterns.command("lint")
@_PATTERNS_OPTION
def patterns_lint(pattern_dirs: tuple[Path, ...]) -> None:
    """Check ids, required fields, tests present and regexes that can backtrack."""
    sigs = _load(pattern_dirs)
    _report_problems(lint(sigs, all_pattern_dirs(pattern_dirs)), "lint", len(sigs))


def main() -> None:
    cli(prog_name="vlogscope")


_FRAME_FORMATS = ["table", "csv", "jsonl", "parquet"]


def _read_one(path: str, year: int | None, patterns: Sequence[Path]) -> Log:
    from vlogscope.log import read as read_log  # pandas: only for commands that need it

    try:
        source = Source.from_stream(STDIN_NAME, sys.stdin.buffer) if path == "-" else path
        return read_log(source, year=year, patterns=patterns)
    except (InputError, SignatureError) as exc:
        _fail(str(exc))
        raise  # unreachable


def _emit_frame(frame: pd.DataFrame, fmt: str, output: Path | None) -> None:
    """Write a DataFrame in the chosen format; parquet needs the optional pyarrow extra."""
    import pandas as pd

    if fmt == "parquet":
        if output is None:
            _fail("--format parquet needs --output FILE")
        try:
            frame.to_parquet(output)
        except ImportError:
            _fail("--format parquet needs pyarrow: pip install 'vlogscope[parquet]'")
        return
    if fmt == "csv":
        text = frame.to_csv(index=True)
    elif fmt == "jsonl":
        text = frame.reset_index().to_json(orient="records", lines=True, date_format="iso")
    else:
        with pd.option_context("display.max_rows", None, "display.max_colwidth", 120,
                               "display.width", 200):  # fmt: skip
            text = frame.to_string()
    if output is not None:
        output.write_text(text)
    else:
        click.echo(text.rstrip("\n"))


def _frame_command(name: str, build: Callable[[Log], pd.DataFrame], doc: str) -> None:
    @cli.command(name, help=doc)
    @click.argument("path", default="-", metavar="[PATH|-]")
    @click.option("--format", "fmt", type=click.Choice(_FRAME_FORMATS), default="table",
                  show_default=True)  # fmt: skip
    @click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path))
    @click.option("--year", type=int, help="Year of the log's last line (default: file mtime).")
    @_PATTERNS_OPTION
    def command(
        path: str, fmt: str, output: Path | None, year: int | None, pattern_dirs: tuple[Path, ...]
    ) -> None:
        _emit_frame(build(_read_one(path, year, pattern_dirs)), fmt, output)


_frame_command("events", lambda log: log.events, "One row per event (record, traceback, ...).")


@cli.command("metrics")
@click.argument("path", default="-", metavar="[PATH|-]")
@click.option("--format", "fmt", type=click.Choice(_FRAME_FORMATS), default="table",
              show_default=True)  # fmt: skip
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--year", type=int, help="Year of the log's last line (default: file mtime).")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw throughput, queues and KV usage to this PNG (needs matplotlib).",
)
@_PATTERNS_OPTION
def metrics_command(
    path: str,
    fmt: str,
    output: Path | None,
    year: int | None,
    plot_path: Path | None,
    pattern_dirs: tuple[Path, ...],
) -> None:
    """Stats lines over time: throughput, queues, KV-cache usage."""
    log = _read_one(path, year, pattern_dirs)
    if plot_path is not None:
        if log.metrics.empty:
            _fail(f"{log.diagnosis.source}: no stats lines to plot")
        try:
            log.plot(plot_path)
        except PlotUnavailable as exc:
            _fail(str(exc))
    _emit_frame(log.metrics, fmt, output)


_frame_command("timeline", lambda log: log.timeline, "Start-up phases with start, end, duration.")
_frame_command("runs", lambda log: log.runs, "One row per launch found in the log.")


@cli.command("config")
@click.argument("path", default="-", metavar="[PATH|-]")
@_PATTERNS_OPTION
def config_command(path: str, pattern_dirs: tuple[Path, ...]) -> None:
    """Requested settings (non-default args) beside effective ones (engine config)."""
    log = _read_one(path, None, pattern_dirs)
    facts = log.diagnosis.facts
    requested = facts.value("requested_args") or {}
    effective = facts.value("engine_config") or {}
    assert isinstance(requested, dict) and isinstance(effective, dict)
    table = Table(title=f"{log.diagnosis.source}: requested vs effective", box=None)
    for column in ("setting", "requested", "effective"):
        table.add_column(column)
    aliases = {"max_model_len": "max_seq_len"}
    keys = sorted({*requested, *(aliases.get(k, k) for k in requested)} & set(effective))
    keys += sorted(k for k in requested if aliases.get(k, k) not in effective)
    keys += [
        k for k in ("kv_cache_dtype", "quantization", "dtype") if k in effective and k not in keys
    ]
    for key in dict.fromkeys(keys):
        want = requested.get(key, "(default)")
        have = effective.get(aliases.get(key, key), "")
        differs = key in requested and str(want) != str(have) and have != ""
        table.add_row(
            Text(key), Text(str(to_jsonable(want))),
            Text(str(to_jsonable(have)), style="bold yellow" if differs else ""),
        )  # fmt: skip
    selector = facts.get("selector_kv_cache_dtype")
    if selector is not None:  # what the attention layer really used (overrides included)
        table.add_row(
            Text("kv_cache_dtype (attention layer)"),
            Text(str(requested.get("kv_cache_dtype", "(default: auto)"))),
            Text(f"{selector.value} (line {selector.line})", style="bold yellow"),
        )
    _console().print(table)


@cli.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)  # fmt: skip
@_PATTERNS_OPTION
def diff_command(a: str, b: str, fmt: str, pattern_dirs: tuple[Path, ...]) -> None:
    """Two launches side by side: settings, phase reached, findings gained and lost."""
    if a == "-" and b == "-":
        raise click.UsageError("only one of A and B can be - (stdin)")
    result = diff_launches(*(_read_one(p, None, pattern_dirs).diagnosis for p in (a, b)))
    if fmt == "json":
        click.echo(json.dumps(to_jsonable(dataclasses.asdict(result)), indent=2))
        return
    console = _console()
    table = Table(title=f"A = {result.a}\nB = {result.b}", box=None, title_justify="left")
    for column in ("", "A", "B"):
        table.add_column(column)
    table.add_row(Text("verdict", style="bold"), Text(result.verdict[0]), Text(result.verdict[1]))
    table.add_row(Text("root cause", style="bold"), Text(str(result.root_cause[0])),
                  Text(str(result.root_cause[1])))  # fmt: skip
    table.add_row(Text("phase reached", style="bold"), Text(str(result.phase[0])),
                  Text(str(result.phase[1])))  # fmt: skip
    for title, rows in (("requested", result.requested), ("effective", result.effective)):
        for key, left, right in rows:
            table.add_row(Text(f"{title}: {key}"), Text(str(to_jsonable(left))[:80]),
                          Text(str(to_jsonable(right))[:80], style="yellow"))  # fmt: skip
    console.print(table)
    if not result.requested:
        console.print(Text("Requested settings (non-default args): identical."))
    for label, ids in (
        ("gained in B", result.findings_gained),
        ("lost in B", result.findings_lost),
    ):
        if ids:
            console.print(Text(f"Findings {label}: {', '.join(ids)}"))
    for note in result.notes:
        console.print(Text(f"• {note}", style="bold"))


@cli.command("watch")
@click.argument("path", default="-", metavar="[PATH|-]")
@_PATTERNS_OPTION
def watch_command(path: str, pattern_dirs: tuple[Path, ...]) -> None:
    """Follow a growing log (like tail -F) or a pipe; print findings as they appear.

    Ctrl-C, or the end of a pipe, prints the diagnosis of the latest launch.
    """
    signatures = _load(pattern_dirs)
    console = _console()

    def show(finding: Finding) -> None:
        line = Text(f"[line {finding.line}] ", style="cyan")
        line.append(f"{finding.severity.upper()} {finding.category}: ", style="bold")
        line.append(safe(finding.title))
        console.print(line)
        sys.stdout.flush()

    if path == "-":
        lines = follow_stream(sys.stdin.buffer)
    elif not Path(path).exists():
        _fail(f"{path}: no such file or directory")
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
@_PATTERNS_OPTION
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
        _fail(str(exc))
        return
    patterns = [str(p) for p in pattern_dirs]
    _load(pattern_dirs)  # a malformed user pattern is one error here, not one per file
    try:
        if scheduler:
            rows = list(scan_dask(files, scheduler, patterns))
        else:
            rows = list(scan_local(files, jobs or default_jobs(), patterns))
    except (RuntimeError, OSError) as exc:
        _fail(str(exc))
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
        _console().print(table)
    latest = {row.file: row for row in rows}  # rows come in run order per file
    sys.exit(EXIT_FINDINGS if any(r.verdict == "failed" for r in latest.values()) else EXIT_OK)
