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

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from vlogscope.catalog import Problem, lint, run_tests
from vlogscope.pipeline import Diagnosis, Verdict, analyze
from vlogscope.report import render_json, render_text
from vlogscope.samples import SAMPLES, sample_path
from vlogscope.signatures import Signature, SignatureError, load_signatures
from vlogscope.signatures import pattern_dirs as all_pattern_dirs
from vlogscope.source import InputError, open_sources

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT = 0, 1, 2


def _fail(message: str) -> None:
    click.echo(f"vlogscope: error: {message}", err=True)
    sys.exit(EXIT_INPUT)


def _diagnose_all(paths: Sequence[str], patterns: Sequence[Path]) -> list[Diagnosis]:
    signatures = load_signatures(patterns)
    stdin = sys.stdin.buffer
    return [analyze(source, signatures) for source in open_sources(paths, stdin)]


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
    type=click.Choice(["text", "json"]),
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
@click.option("--debug", is_flag=True, help="Show Python tracebacks of internal errors.")
def diagnose(
    paths: tuple[str, ...],
    fmt: str,
    sample: str | None,
    pattern_dirs: tuple[Path, ...],
    debug: bool,
) -> None:
    """Diagnose vLLM logs: files, directories, compressed logs, or - for stdin.

    Exit status: 0 no error finding, 1 an error finding, 2 bad usage or input.
    """
    if sample is not None:
        if paths:
            raise click.UsageError("give either --sample or PATH, not both")
        paths = (str(sample_path(sample)),)
    try:
        diagnoses = _diagnose_all(paths, pattern_dirs)
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
    if fmt == "json":
        click.echo(render_json(diagnoses))
    if all(d.verdict is Verdict.NOT_VLLM for d in diagnoses):
        names = ", ".join(d.source for d in diagnoses)
        _fail(f"{names}: no vLLM log lines found ({sum(d.lines for d in diagnoses)} lines read)")
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
