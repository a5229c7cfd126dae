"""`vlogscope scan`: diagnose a fleet of logs into one summary table.

A platform team has a directory tree of pod logs, thousands of them, some
gzipped, and wants one row per launch: file, run, verdict, root cause, vLLM
version, model.  Each file is diagnosed on its own (skimmed, without keeping
events), so the work spreads over local processes — or over an existing Dask
cluster with `--scheduler tcp://HOST:PORT` — and only the small result rows
travel back, never per-line objects.

Examples:
    >>> rows = scan_file("tests/fixtures/logs/v0.16-llama31-8b-healthy-startup.log")
    >>> [(r.run, r.verdict, r.vllm_version) for r in rows]
    [(1, 'healthy', '0.16.0')]
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vlogscope.pipeline import analyze
from vlogscope.signatures import Signature, load_signatures
from vlogscope.source import InputError, Source

COLUMNS = ("file", "run", "first_line", "last_line", "verdict", "root_cause", "title",
           "vllm_version", "model", "lines", "error")  # fmt: skip


@dataclass(frozen=True, slots=True)
class ScanRow:
    """One launch of one file; `error` is set instead when the file could not be read."""

    file: str
    run: int
    first_line: int
    last_line: int
    verdict: str
    root_cause: str | None
    title: str | None
    vllm_version: str | None
    model: str | None
    lines: int
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_SIGNATURES: dict[str, Signature] | None = None


def _signatures(pattern_dirs: Sequence[str]) -> dict[str, Signature]:
    """Loaded once per worker process (a worker handles many files)."""
    global _SIGNATURES
    if _SIGNATURES is None:
        _SIGNATURES = load_signatures([Path(p) for p in pattern_dirs])
    return _SIGNATURES


def scan_file(path: str, pattern_dirs: Sequence[str] = ()) -> list[ScanRow]:
    """Rows for every launch in one file; never raises for a bad file."""
    try:
        d = analyze(
            Source.from_path(Path(path)),
            _signatures(pattern_dirs),
            skim_routine=True,
            keep_events=False,
        )
    except (InputError, OSError) as exc:
        return [ScanRow(path, 0, 0, 0, "unreadable", None, None, None, None, 0, str(exc))]
    rows = []
    for r in d.runs:
        root = r.root_cause
        version, model = r.facts.value("vllm_version"), r.facts.value("model")
        rows.append(
            ScanRow(
                file=path,
                run=r.index,
                first_line=r.first_line,
                last_line=r.last_line,
                verdict=str(r.verdict),
                root_cause=root.category if root else None,
                title=root.title if root else None,
                vllm_version=str(version) if version is not None else None,
                model=str(model) if model is not None else None,
                lines=r.lines,
            )
        )
    return rows


def scan_local(
    paths: Iterable[str], jobs: int, pattern_dirs: Sequence[str] = ()
) -> Iterator[ScanRow]:
    """Diagnose files with `jobs` local processes (1: in this process)."""
    files = list(paths)
    if jobs <= 1 or len(files) <= 1:
        for path in files:
            yield from scan_file(path, pattern_dirs)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for rows in pool.map(scan_file, files, [pattern_dirs] * len(files), chunksize=4):
            yield from rows


def scan_dask(
    paths: Iterable[str], scheduler: str, pattern_dirs: Sequence[str] = ()
) -> Iterator[ScanRow]:
    """Diagnose files on an existing Dask cluster (the `dask` extra)."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise RuntimeError("--scheduler needs dask: pip install 'vlogscope[dask]'") from exc
    with Client(scheduler) as client:  # type: ignore[no-untyped-call]
        futures = client.map(scan_file, list(paths), pattern_dirs=list(pattern_dirs), pure=False)
        for rows in client.gather(futures):
            yield from rows


def default_jobs() -> int:
    return max(1, (os.cpu_count() or 1))
