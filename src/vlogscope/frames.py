"""pandas views of a Diagnosis: events, metrics, timeline, facts, findings, runs.

Notebook users want to plot throughput and KV-cache usage over time, filter
events by rank, and join findings to lines.  These builders turn the
pipeline's dataclasses into DataFrames with stable column names; times are
real datetimes (the year inferred by `clock.py`).

Examples:
    >>> role_and_rank("Worker_DP1_TP3")
    ('worker', 3, 1)
    >>> role_and_rank("VllmWorker rank=5"), role_and_rank("EngineCore_DP0"), role_and_rank(None)
    (('worker', 5, None), ('engine_core', None, 0), (None, None, None))
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd

from vlogscope.assemble import EventKind
from vlogscope.clock import stamp_times
from vlogscope.metrics import COLUMNS as METRIC_COLUMNS
from vlogscope.metrics import STATS_LINE, read_stats
from vlogscope.phases import PHASES
from vlogscope.pipeline import Diagnosis
from vlogscope.report import finding_to_dict, to_jsonable
from vlogscope.routine_columns import COLUMNS, batch_of

EVENT_COLUMNS = (
    "line",
    "lines",
    "time",
    "run",
    "process",
    "pid",
    "role",
    "rank",
    "dp_rank",
    "level",
    "file",
    "kind",
    "message",
    "exception",
)

_ROLES = (
    (re.compile(r"APIServer|ApiServer"), "api_server"),
    (re.compile(r"EngineCore"), "engine_core"),
    (re.compile(r"RayWorker"), "ray_worker"),
    (re.compile(r"Worker"), "worker"),
    (re.compile(r"MainProcess"), "main"),
)
_RANK = re.compile(r"(?:TP|rank=)(\d+)")
_DP_RANK = re.compile(r"DP(\d+)")


def role_and_rank(process: str | None) -> tuple[str | None, int | None, int | None]:
    """(role, tensor-parallel or global rank, data-parallel rank) from a process name."""
    if process is None:
        return None, None, None
    role = next((name for pattern, name in _ROLES if pattern.search(process)), "other")
    rank, dp = _RANK.search(process), _DP_RANK.search(process)
    return role, int(rank[1]) if rank else None, int(dp[1]) if dp else None


def _run_of(d: Diagnosis) -> Any:
    starts = [r.first_line for r in d.runs]
    return lambda line: d.runs[max(0, bisect.bisect_right(starts, line) - 1)].index


def _run_numbers(d: Diagnosis, lines: Any) -> Any:
    """The run each line belongs to (a run starts at its first line)."""
    import numpy as np

    starts = np.array([r.first_line for r in d.runs], dtype="int64")
    indexes = np.array([r.index for r in d.runs], dtype="int64")
    return indexes[np.maximum(np.searchsorted(starts, lines, side="right") - 1, 0)]


def _event_table(d: Diagnosis) -> pd.DataFrame:
    """Every event as one Arrow table in input order: routine lines straight from
    their columns (routine_columns.py), other events from their objects.

    The objects become one batch, sliced (zero-copy) between the routine runs:
    thousands of warnings between runs must not cost a batch each.
    """
    import numpy as np
    import pyarrow as pa

    objects = [e for e in d.events if e.columns is None]
    rows = [(e.line, e.process, e.pid, e.level, e.time, e.file, str(e.kind), e.message)
            for e in objects]  # fmt: skip
    columns = zip(*rows, strict=True) if rows else ([] for _ in COLUMNS)
    object_batch = batch_of(dict(zip(COLUMNS, columns, strict=True)))
    batches: list[Any] = []
    at_row, at_object, first_object = 0, 0, 0  # rows so far; objects so far; this stretch's
    positions: list[int] = []  # the rows of the objects
    for e in d.events:
        if e.columns is None:
            positions.append(at_row)
            at_row, at_object = at_row + 1, at_object + 1
            continue
        if at_object > first_object:
            batches.append(object_batch.slice(first_object, at_object - first_object))
        first_object = at_object
        batches.append(e.columns)
        at_row += e.columns.num_rows
    if at_object > first_object or not batches:
        batches.append(object_batch.slice(first_object, at_object - first_object))
    frame: pd.DataFrame = pa.Table.from_batches(batches).to_pandas()
    lines = np.ones(len(frame), dtype="int64")  # a routine line is one line
    lines[positions] = [e.lines for e in objects]
    exceptions = np.full(len(frame), None, dtype=object)
    exceptions[positions] = [e.exception for e in objects]
    frame["lines"] = lines
    frame["exception"] = pd.Series(exceptions, index=frame.index, dtype="str")
    return frame


def events_frame(d: Diagnosis, last_year: int) -> pd.DataFrame:
    """One row per event; `lines` sums to the input's physical line count.

    Routine lines come as Arrow columns (routine_columns.py), the rest from
    event objects; times are read for the whole column at once.
    """
    frame = _event_table(d)
    frame["time"] = stamp_times(frame["time"], last_year)
    frame["run"] = _run_numbers(d, frame["line"].to_numpy())
    # Names are few, rows many: work out each distinct name once, then index.
    codes, names = pd.factorize(frame["process"])
    for i, column in enumerate(("role", "rank", "dp_rank")):
        values = pd.array([role_and_rank(n)[i] for n in names] + [None])
        frame[column] = values[codes]  # code -1 (no process) picks the trailing None
    frame["role"] = frame["role"].astype("str")
    for column in ("pid", "rank", "dp_rank"):
        frame[column] = frame[column].astype("Int64")
    return frame[list(EVENT_COLUMNS)]


def without_routine_messages(events: pd.DataFrame, d: Diagnosis) -> pd.DataFrame:
    """`events` with an empty message on every routine line (read without messages):
    the few kept for metrics and the timeline are not shown either, so that the
    column holds exactly the events that are not routine."""
    objects = [e.line for e in d.events if e.columns is None]
    routine = ~events["line"].isin(objects)
    return events.assign(message=events["message"].mask(routine))


def times_by_line(events: pd.DataFrame) -> pd.Series:
    """Each event's time, looked up by its first line (metrics, timeline)."""
    return events.set_index("line")["time"]


def metrics_frame(events: pd.DataFrame) -> pd.DataFrame:
    """One row per stats line, indexed by time; columns from `metrics.COLUMNS`."""
    # The mask first, then only the rows and columns needed: a copy of the whole
    # frame would double a big log's memory.
    is_stats = events["level"].isin(["INFO", "DEBUG"]) & events["message"].str.match(
        STATS_LINE, na=False
    )
    candidates = events.loc[is_stats, ["time", "line", "run", "message"]]
    rows = []
    for time, line, run, message in zip(
        candidates["time"],
        candidates["line"],
        candidates["run"],
        candidates["message"],
        strict=True,
    ):
        stats = read_stats(message)
        if stats is not None:
            rows.append({"time": time, "line": line, "run": run, **stats})
    frame = pd.DataFrame(rows, columns=["time", "line", "run", *METRIC_COLUMNS])
    frame["time"] = pd.to_datetime(frame["time"])
    return frame.set_index("time")


def _when(times: pd.Series, line: int) -> dt.datetime | None:
    moment = times.get(line)
    return None if moment is None or pd.isna(moment) else moment.to_pydatetime()


def _column_rows(batch: Any) -> Iterator[tuple[int, bool, str]]:
    lines, kinds, messages = (batch.column(c).to_pylist() for c in ("line", "kind", "message"))
    for line, kind, message in zip(lines, kinds, messages, strict=True):
        yield line, kind == "record", message


_TOOK = re.compile(r"took ([\d.]+) ?(?:s\b|sec|seconds)|in ([\d.]+) secs?")


def timeline_frame(d: Diagnosis, times: pd.Series) -> pd.DataFrame:
    """Start-up phases of every run: first line, start, end (next phase), duration."""
    run_of = _run_of(d)
    seen: dict[tuple[int, str], tuple[int, dt.datetime | None, str]] = {}

    def dated(key: tuple[int, str]) -> bool:
        return key in seen and seen[key][1] is not None

    for e in d.events:
        if e.columns is None:
            lines: Iterable[tuple[int, bool, str]] = [
                (e.line, e.kind is EventKind.RECORD, e.message)
            ]
        elif dated((run_of(e.line), "serving")):
            continue  # routine lines mark no phase but "serving" (skim.py)
        else:
            lines = _column_rows(e.columns)
        for line, is_record, message in lines:
            for phase in PHASES:
                if (is_record or not phase.records_only) and phase.marker.search(message):
                    key, when = (run_of(line), phase.name), _when(times, line)
                    # uvicorn lines carry no time: a later timed line of the phase dates it.
                    if key not in seen or (seen[key][1] is None and when is not None):
                        seen[key] = (line, when, message)
                    break
            if e.columns is not None and dated((run_of(line), "serving")):
                break
    order = {p.name: i for i, p in enumerate(PHASES)}
    rows = sorted(
        ((run, name, line, start, message) for (run, name), (line, start, message) in seen.items()),
        key=lambda r: (r[0], order[r[1]], r[2]),
    )
    records = []
    for i, (run, name, line, start, message) in enumerate(rows):
        following = rows[i + 1] if i + 1 < len(rows) and rows[i + 1][0] == run else None
        end = following[3] if following else None
        stated = _TOOK.search(message)
        records.append(
            {"run": run, "phase": name, "line": line, "start": start, "end": end,
             "stated_seconds": float(stated[1] or stated[2]) if stated else None,
             "detail": message[:200]}
        )  # fmt: skip
    frame = pd.DataFrame(
        records, columns=["run", "phase", "line", "start", "end", "stated_seconds", "detail"]
    )
    frame["start"], frame["end"] = pd.to_datetime(frame["start"]), pd.to_datetime(frame["end"])
    frame["duration"] = frame["end"] - frame["start"]
    return frame


def facts_frame(d: Diagnosis) -> pd.DataFrame:
    rows = [
        (r.index, f.name, to_jsonable(f.value), f.line, f.source)
        for r in d.runs
        for f in r.facts.by_name.values()
    ]
    return pd.DataFrame(rows, columns=["run", "name", "value", "line", "source"])


def findings_frame(d: Diagnosis) -> pd.DataFrame:
    columns = ["run", "id", "category", "severity", "root_cause", "confidence", "title",
               "line", "symptom_of", "ranks", "explanation", "fix"]  # fmt: skip
    rows = []
    for r in d.runs:
        for f in r.findings:
            data = finding_to_dict(f)
            rows.append({**data, "run": r.index, "line": f.line, "fix": " | ".join(f.fix)})
    return pd.DataFrame(rows, columns=columns)


def runs_frame(d: Diagnosis) -> pd.DataFrame:
    rows = [
        {"run": r.index, "first_line": r.first_line, "last_line": r.last_line, "lines": r.lines,
         "verdict": str(r.verdict),
         "root_cause": r.root_cause.category if r.root_cause else None,
         "title": r.root_cause.title if r.root_cause else None,
         "vllm_version": to_jsonable(r.facts.value("vllm_version")),
         "model": to_jsonable(r.facts.value("model")),
         "last_phase": to_jsonable(r.facts.value("last_phase"))}
        for r in d.runs
    ]  # fmt: skip
    return pd.DataFrame(rows)
