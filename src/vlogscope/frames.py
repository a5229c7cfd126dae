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
from collections.abc import Sequence
from typing import Any

import pandas as pd

from vlogscope.assemble import Event, EventKind
from vlogscope.clock import Clock, rollovers
from vlogscope.metrics import COLUMNS as METRIC_COLUMNS
from vlogscope.metrics import read_stats
from vlogscope.phases import PHASES
from vlogscope.pipeline import Diagnosis
from vlogscope.report import finding_to_dict, to_jsonable

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


class EventTimes:
    """Event times for one input, in input order, with the year inferred once.

    Built once per Log and shared by the events, metrics and timeline frames.
    """

    def __init__(self, events: Sequence[Event], last_year: int) -> None:
        clock = Clock(last_year - rollovers([e.time for e in events]))
        self.by_line: dict[int, dt.datetime | None] = {e.line: clock.read(e.time) for e in events}

    def __call__(self, event: Event) -> dt.datetime | None:
        return self.by_line.get(event.line)


def _run_of(d: Diagnosis) -> Any:
    starts = [r.first_line for r in d.runs]
    return lambda line: d.runs[max(0, bisect.bisect_right(starts, line) - 1)].index


def events_frame(d: Diagnosis, times: EventTimes) -> pd.DataFrame:
    """One row per event; `lines` sums to the input's physical line count."""
    run_of = _run_of(d)
    rows = []
    for e in d.events:
        role, rank, dp = role_and_rank(e.process)
        rows.append(
            (e.line, e.lines, times(e), run_of(e.line), e.process, e.pid, role, rank, dp,
             e.level, e.file, str(e.kind), e.message, e.exception)
        )  # fmt: skip
    frame = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
    frame["time"] = pd.to_datetime(frame["time"])
    for column in ("pid", "rank", "dp_rank"):
        frame[column] = frame[column].astype("Int64")
    return frame


def metrics_frame(d: Diagnosis, times: EventTimes) -> pd.DataFrame:
    """One row per stats line, indexed by time; columns from `metrics.COLUMNS`."""
    run_of = _run_of(d)
    rows = []
    for e in d.events:
        stats = read_stats(e.message) if e.level in ("INFO", "DEBUG") else None
        if stats is not None:
            rows.append({"time": times(e), "line": e.line, "run": run_of(e.line), **stats})
    frame = pd.DataFrame(rows, columns=["time", "line", "run", *METRIC_COLUMNS])
    frame["time"] = pd.to_datetime(frame["time"])
    return frame.set_index("time")


_TOOK = re.compile(r"took ([\d.]+) ?(?:s\b|sec|seconds)|in ([\d.]+) secs?")


def timeline_frame(d: Diagnosis, times: EventTimes) -> pd.DataFrame:
    """Start-up phases of every run: first line, start, end (next phase), duration."""
    run_of = _run_of(d)
    seen: dict[tuple[int, str], tuple[int, dt.datetime | None, str]] = {}
    for e in d.events:
        for phase in PHASES:
            if (e.kind is EventKind.RECORD or not phase.records_only) and phase.marker.search(
                e.message
            ):
                key, when = (run_of(e.line), phase.name), times(e)
                # uvicorn lines carry no time: a later timed line of the phase dates it.
                if key not in seen or (seen[key][1] is None and when is not None):
                    seen[key] = (e.line, when, e.message)
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
