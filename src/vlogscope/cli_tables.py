"""Commands that show a log as tables: events, metrics, timeline, runs, config, diff.

They build the pandas views of `vlogscope.read` (see log.py) and print them
as a table, CSV, JSON Lines or Parquet.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table
from rich.text import Text

from vlogscope.cli import (
    PATTERNS_OPTION,
    cli,
    fail,
    make_console,
)
from vlogscope.compare import diff_launches
from vlogscope.plot import PlotUnavailable
from vlogscope.report import to_jsonable
from vlogscope.signatures import SignatureError
from vlogscope.source import STDIN_NAME, InputError, Source

if TYPE_CHECKING:
    import pandas as pd

    from vlogscope.log import Log


_FRAME_FORMATS = ["table", "csv", "jsonl", "parquet"]


def _read_one(path: str, year: int | None, patterns: Sequence[Path], messages: bool = True) -> Log:
    from vlogscope.log import read as read_log  # pandas: only for commands that need it

    if not messages and path == "-":
        fail("--no-messages reads lines back from a file; it cannot with standard input")
    try:
        source = Source.from_stream(STDIN_NAME, sys.stdin.buffer) if path == "-" else path
        return read_log(source, year=year, patterns=patterns, messages=messages)
    except (InputError, SignatureError) as exc:
        fail(str(exc))
        raise  # unreachable


def _emit_frame(frame: pd.DataFrame, fmt: str, output: Path | None) -> None:
    """Write a DataFrame in the chosen format (parquet through pyarrow)."""
    import pandas as pd

    if fmt == "parquet":
        if output is None:
            fail("--format parquet needs --output FILE")
        try:
            frame.to_parquet(output)
        except ImportError:
            fail("--format parquet needs pyarrow: pip install pyarrow")
        return
    # A time index (metrics) is data; a row counter (events, timeline) is not.
    keep_index = not isinstance(frame.index, pd.RangeIndex)
    if fmt == "csv":
        text = frame.to_csv(index=keep_index)
    elif fmt == "jsonl":
        rows = frame.reset_index() if keep_index else frame
        text = rows.to_json(orient="records", lines=True, date_format="iso")
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
    @click.option(
        "--messages/--no-messages",
        default=True,
        show_default=True,
        help="Routine lines' messages (stats, requests, access lines); leave them out of a "
        "big log's rows to keep memory down.",
    )
    @PATTERNS_OPTION
    def command(
        path: str,
        fmt: str,
        output: Path | None,
        year: int | None,
        messages: bool,
        pattern_dirs: tuple[Path, ...],
    ) -> None:
        _emit_frame(build(_read_one(path, year, pattern_dirs, messages)), fmt, output)


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
@PATTERNS_OPTION
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
            fail(f"{log.diagnosis.source}: no stats lines to plot")
        try:
            log.plot(plot_path)
        except PlotUnavailable as exc:
            fail(str(exc))
    _emit_frame(log.metrics, fmt, output)


_frame_command("timeline", lambda log: log.timeline, "Start-up phases with start, end, duration.")
_frame_command("runs", lambda log: log.runs, "One row per launch found in the log.")


@cli.command("config")
@click.argument("path", default="-", metavar="[PATH|-]")
@PATTERNS_OPTION
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
    make_console().print(table)


@cli.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)  # fmt: skip
@PATTERNS_OPTION
def diff_command(a: str, b: str, fmt: str, pattern_dirs: tuple[Path, ...]) -> None:
    """Two launches side by side: settings, phase reached, findings gained and lost."""
    if a == "-" and b == "-":
        raise click.UsageError("only one of A and B can be - (stdin)")
    result = diff_launches(*(_read_one(p, None, pattern_dirs).diagnosis for p in (a, b)))
    if fmt == "json":
        click.echo(json.dumps(to_jsonable(dataclasses.asdict(result)), indent=2))
        return
    console = make_console()
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
