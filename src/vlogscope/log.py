"""`vlogscope.read(...)`: a parsed log as an object for notebooks and scripts.

A `Log` wraps the pipeline's Diagnosis and offers its parts as pandas
DataFrames, built on first use: `events`, `metrics` (indexed by time),
`timeline`, `facts`, `findings` and `runs`; `root_cause` and `verdict` are
the latest launch's.

Examples:
    >>> import vlogscope
    >>> log = vlogscope.read([
    ...     "INFO 07-07 20:12:40 api_server.py:1] vLLM API server version 0.5.0",
    ...     "INFO 07-07 20:12:44 metrics.py:295] Avg prompt throughput: 0.0 tokens/s, Avg "
    ...     "generation throughput: 12.5 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 "
    ...     "reqs, GPU KV cache usage: 3.1%, CPU KV cache usage: 0.0%.",
    ... ], year=2024)
    >>> log.events["lines"].sum(), len(log.metrics)
    (np.int64(2), 1)
    >>> log.metrics["gpu_kv_cache_usage"].iloc[0], str(log.metrics.index[0])
    (np.float64(3.1), '2024-07-07 20:12:44')
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from vlogscope import frames
from vlogscope.clock import year_of
from vlogscope.findings import Finding
from vlogscope.pipeline import Diagnosis, Verdict, analyze
from vlogscope.plot import plot_metrics
from vlogscope.report_html import html_body
from vlogscope.signatures import load_signatures
from vlogscope.source import Source, open_sources


class Log:
    """One analysed input; DataFrames are built lazily and cached."""

    def __init__(
        self,
        diagnosis: Diagnosis,
        year: int,
        *,
        messages: bool = True,
        source: Source | None = None,
    ) -> None:
        self.diagnosis = diagnosis
        self.year = year  # the year of the log's last line
        self.messages = messages  # False: routine lines' text stays in the file
        self._source = source  # a file to read lines back from, if there is one

    @property
    def root_cause(self) -> Finding | None:
        return self.diagnosis.root_cause

    @property
    def verdict(self) -> Verdict:
        return self.diagnosis.verdict

    @cached_property
    def _times(self) -> pd.Series:
        return frames.times_by_line(self.events)

    @cached_property
    def _frame(self) -> pd.DataFrame:
        """The events with every message the frames read (without `messages`: those
        of stats lines, milestones and the first serving line, see routine_columns)."""
        return frames.events_frame(self.diagnosis, self.year)

    @cached_property
    def events(self) -> pd.DataFrame:
        if self.messages:
            return self._frame
        return frames.without_routine_messages(self._frame, self.diagnosis)

    @cached_property
    def metrics(self) -> pd.DataFrame:
        return frames.metrics_frame(self._frame)

    def text(self, lines: Iterable[int]) -> pd.Series:
        """The text of these physical lines (1-based), as written, read back from the file.

        For a log read with `messages=False`, whose frames leave routine lines'
        text in the file: `log.text(log.events.line[mask])`.  One pass over the
        file, stopping after the last line asked for.
        """
        if self._source is None:
            raise ValueError(
                "text() reads the lines back from a file; this log was not read from one"
            )
        wanted = sorted(set(int(n) for n in lines))
        found: dict[int, str] = {}
        if wanted:
            last, asked = wanted[-1], set(wanted)
            for line in self._source.lines():
                if line.number in asked:
                    found[line.number] = line.text
                if line.number >= last:
                    break
        return pd.Series(found, index=pd.Index(wanted, name="line"), dtype="str", name="text")

    @cached_property
    def timeline(self) -> pd.DataFrame:
        return frames.timeline_frame(self.diagnosis, self._times)

    @cached_property
    def facts(self) -> pd.DataFrame:
        return frames.facts_frame(self.diagnosis)

    @cached_property
    def findings(self) -> pd.DataFrame:
        return frames.findings_frame(self.diagnosis)

    @cached_property
    def runs(self) -> pd.DataFrame:
        return frames.runs_frame(self.diagnosis)

    def finding_marks(self) -> pd.DataFrame:
        """Time and title of every warning/error finding, to mark on plots."""
        times = self.events.set_index("line")["time"]
        rows = [
            {"time": times.get(f["line"]), "label": f["category"]}
            for _, f in self.findings.iterrows()
            if f["severity"] in ("error", "warning") and not f["symptom_of"]
        ]
        return pd.DataFrame(rows, columns=["time", "label"])

    def plot(self, path: str | Path | None = None) -> Any:
        """Throughput, queues and KV-cache usage over time, findings marked (matplotlib)."""
        return plot_metrics(self.metrics, self.finding_marks(), Path(path) if path else None)

    def _repr_html_(self) -> str:
        return html_body(self.diagnosis)

    def __repr__(self) -> str:
        root = self.root_cause
        what = f"root cause {root.category}: {root.title}" if root else str(self.verdict)
        return f"<Log {self.diagnosis.source}: {self.diagnosis.lines} lines, {what}>"


def _source_of(path_or_lines: str | Path | Source | Iterable[str]) -> tuple[Source, str | None]:
    if isinstance(path_or_lines, Source):
        return path_or_lines, None
    if isinstance(path_or_lines, str | Path):
        [source] = open_sources([str(path_or_lines)])
        return source, str(path_or_lines)
    data = "\n".join(line.rstrip("\n") for line in path_or_lines).encode()
    return Source.from_stream("<lines>", io.BytesIO(data)), None


def read(
    path_or_lines: str | Path | Source | Iterable[str],
    *,
    year: int | None = None,
    patterns: Sequence[Path] = (),
    jobs: int = 1,
    messages: bool = True,
) -> Log:
    """Parse and diagnose a log: a path (file, `.gz`, ...), a Source, or lines as strings.

    `year` is the year of the log's last line; by default the file's
    modification year, or this year for lines given directly.  `jobs` > 1
    reads a big plain file with that many processes (as `diagnose --jobs`).
    With `messages=False` (a file only), routine lines (stats, request logging,
    access lines) keep their text in the file, not in memory: their `message`
    in `events` is empty, and `Log.text(lines)` reads lines back.  Metrics,
    timeline and findings are the same.
    """
    source, path = _source_of(path_or_lines)
    rereadable = source if source.path is not None or path is not None else None
    if not messages and rereadable is None:
        raise ValueError("messages=False needs a file: routine lines' text is read back from it")
    diagnosis = analyze(
        source,
        load_signatures(patterns),
        skim_routine=True,
        routine_columns=True,
        jobs=jobs,
        routine_messages=messages,
    )
    return Log(diagnosis, year_of(path, year), messages=messages, source=rereadable)
