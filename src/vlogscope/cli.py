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

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import Progress, TransferSpeedColumn

from vlogscope.catalog import Problem, lint, run_tests
from vlogscope.pipeline import Diagnosis, Verdict, analyze
from vlogscope.redact import Redactor
from vlogscope.report import render_json, render_text
from vlogscope.report_html import html_body, page_of, render_html
from vlogscope.report_markdown import render_markdown
from vlogscope.samples import SAMPLES, sample_path
from vlogscope.signatures import Signature, SignatureError, load_signatures
from vlogscope.signatures import pattern_dirs as all_pattern_dirs
from vlogscope.skim_parallel import auto_jobs
from vlogscope.source import STDIN_NAME, InputError, Source, open_sources

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT = 0, 1, 2


def make_console() -> Console:
    """Rich output; off a terminal, wide enough that tables are not folded."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def fail(message: str) -> None:
    click.echo(f"vlogscope: error: {message}", err=True)
    sys.exit(EXIT_INPUT)


PROGRESS_MIN_BYTES = int(os.environ.get("VLOGSCOPE_PROGRESS_MIN_BYTES", 50 * 2**20))


def _with_progress(source: Source, progress: Progress, jobs: int) -> Source:
    """A big file read behind a progress bar (bytes/s); anything else unchanged.

    Not when worker processes will read the file (`--jobs`, or its automatic
    choice for a big file): this process never sees the bytes go by.
    """
    path = Path(source.name)
    try:
        size = path.stat().st_size if source.name != STDIN_NAME else 0
    except OSError:
        return source
    if size < PROGRESS_MIN_BYTES or (jobs or auto_jobs(size)) > 1:
        return source
    label = path.name
    return Source(source.name, lambda: progress.wrap_file(path.open("rb"), total=size,
                                                          description=label))  # fmt: skip


def _diagnose_all(
    paths: Sequence[str], patterns: Sequence[Path], redact: bool, full_parse: bool, jobs: int
) -> list[Diagnosis]:
    signatures = load_signatures(patterns)
    redactor = Redactor() if redact else None  # one for all inputs: placeholders agree
    sources = open_sources(paths, sys.stdin.buffer)
    skim_routine = not full_parse

    def run(source: Source) -> Diagnosis:
        return analyze(
            source, signatures, redactor, skim_routine=skim_routine, keep_events=False, jobs=jobs
        )

    if not sys.stderr.isatty():  # progress is for people; pipes and CI get nothing on stderr
        return [run(s) for s in sources]
    columns = (*Progress.get_default_columns(), TransferSpeedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        return [run(_with_progress(s, progress, jobs)) for s in sources]


PATTERNS_OPTION = click.option(
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
@PATTERNS_OPTION
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
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Skim each plain file with N processes (default: one below 64 MiB, else one per CPU, "
    "up to 4; compressed input, stdin and --full-parse use one).",
)
@click.option("--debug", is_flag=True, help="Show Python tracebacks of internal errors.")
def diagnose(
    paths: tuple[str, ...],
    fmt: str,
    sample: str | None,
    pattern_dirs: tuple[Path, ...],
    redact: bool,
    full_parse: bool,
    jobs: int | None,
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
        diagnoses = _diagnose_all(paths, pattern_dirs, redact, full_parse, jobs or 0)
    except (InputError, SignatureError) as exc:
        if debug:
            raise
        fail(str(exc))
        return
    except Exception as exc:  # an internal error must still be one line without --debug
        if debug:
            raise
        fail(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)")
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
        fail(
            f"{names}: no vLLM log lines found ({sum(d.lines for d in diagnoses)} lines read); "
            "give the stdout/stderr of `vllm serve` or of the Python process that ran vLLM"
        )
    if fmt == "text":
        console = Console(highlight=False, soft_wrap=False)
        for d in diagnoses:
            render_text(d, console)
    failed = any(d.verdict is Verdict.FAILED for d in diagnoses)
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


def load_patterns(extra: Sequence[Path]) -> dict[str, Signature]:
    try:
        return load_signatures(extra)
    except SignatureError as exc:
        fail(str(exc))
        raise  # unreachable: fail exits


@cli.group()
def patterns() -> None:
    """List, show, test and lint failure signatures."""


@patterns.command("list")
@PATTERNS_OPTION
def patterns_list(pattern_dirs: tuple[Path, ...]) -> None:
    """One line per signature: id, category, severity, priority, file."""
    for sig in sorted(load_patterns(pattern_dirs).values(), key=lambda s: s.id):
        click.echo(
            f"{sig.id:<58} {sig.category:<28} {sig.severity:<8} {sig.priority:>3}  "
            f"{sig.origin.name}"
        )


@patterns.command("show")
@click.argument("signature_id")
@PATTERNS_OPTION
def patterns_show(signature_id: str, pattern_dirs: tuple[Path, ...]) -> None:
    """Everything about one signature."""
    sig = load_patterns(pattern_dirs).get(signature_id)
    if sig is None:
        fail(f"no signature with id {signature_id!r} (see `vlogscope patterns list`)")
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
@PATTERNS_OPTION
def patterns_test(pattern_dirs: tuple[Path, ...]) -> None:
    """Run every signature's test blocks and fixtures; say which did not fire."""
    sigs = load_patterns(pattern_dirs)
    _report_problems(run_tests(sigs, all_pattern_dirs(pattern_dirs)), "tests", len(sigs))


@patterns.command("lint")
@PATTERNS_OPTION
def patterns_lint(pattern_dirs: tuple[Path, ...]) -> None:
    """Check ids, required fields, tests present and regexes that can backtrack."""
    sigs = load_patterns(pattern_dirs)
    _report_problems(lint(sigs, all_pattern_dirs(pattern_dirs)), "lint", len(sigs))


def main() -> None:
    cli(prog_name="vlogscope")


# The other commands live in their own modules; importing them registers them.
from vlogscope import cli_fleet, cli_tables  # noqa: E402, F401
