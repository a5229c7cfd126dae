"""Routine lines as columns: the notebook's bulk path, never one object per line.

A million-line log is almost all routine INFO lines (stats, request logging,
access lines; `skim.py` finds them).  `vlogscope.read` still owes the user one
row per line for them, but an `Event` per line would cost ~30 µs and a few
hundred bytes of Python objects each.  Here a run of routine lines goes
through one capturing regular expression (`findall`, in C) and lands in Arrow
arrays: one buffer per column, no per-line text objects kept.

The capture agrees with `records.classify` on every line `skim` calls routine
(`tests/test_routine_columns.py` proves it on fixture, corpus and generated
lines), so rows built here equal the rows the object path would build.

Examples:
    >>> data = (b"(APIServer pid=7) INFO 02-20 21:33:47 [logger.py:43] Received request a\\n"
    ...         b"INFO:     10.0.0.1:5 - \\"POST /v1/completions HTTP/1.1\\" 200 OK\\n")
    >>> batch = routine_batch(data, 0, len(data), first_line=10)
    >>> batch.column("line").to_pylist(), batch.column("process").to_pylist()
    ([10, 11], ['APIServer', None])
    >>> batch.column("kind").to_pylist(), batch.column("message").to_pylist()[1]
    (['record', 'uvicorn'], '10.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OK')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from vlogscope.envelope import ESCAPES_BYTES
from vlogscope.metrics import STATS_LINE
from vlogscope.phases import PHASES, SERVING_PHASE
from vlogscope.skim import PROCESS, PROCESS_NAME, SOURCE_FILE, STAMP

# The same line shapes as skim.ROUTINE_LINE (escapes already removed), with the
# innermost process prefix, the header fields and the message captured.  Like
# there, a line's rest is `[^\n]*` (memchr speed): the skim never hands on a
# routine run holding a `\r`.
_CAPTURE = re.compile(
    rb"(?:" + PROCESS + rb" ?)*?"
    rb"(?:\((?P<name>" + PROCESS_NAME + rb"?) ?pid=(?P<pid>[0-9]+)"
    rb"(?:, ip=[A-Za-z0-9.:_-]+)?\) ?)?"
    rb"(?:(?P<level>INFO|DEBUG) (?P<time>" + STAMP + rb") "
    rb"\[?(?P<file>" + SOURCE_FILE + rb"):[0-9]+\] ?(?P<message>[^\n]*)"
    rb"|(?P<uvicorn>INFO): +(?P<uvicorn_message>[^\n]*))\n"
)

COLUMNS = ("line", "process", "pid", "level", "time", "file", "kind", "message")


def routine_batch(
    data: bytes,
    start: int,
    stop: int,
    first_line: int,
    messages: bool = True,
    runs: Sequence[int] | None = None,
) -> Any:
    """The routine lines in data[start:stop] (whole lines) as a pyarrow RecordBatch.

    Without `messages`, a row keeps its message only where `kept_rows` says
    the frames need it; `runs` are the row counts of the routine runs the
    span holds (one run by default).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    span = data[start:stop]
    if b"\x1b" in span:
        span = ESCAPES_BYTES.sub(b"", span)
    rows = _CAPTURE.findall(span)
    if not rows:
        return batch_of({c: [] for c in COLUMNS})
    # One Arrow conversion per capture group, each its own buffer, so that no
    # column keeps another's text alive; empty captures are absent groups (nulls).
    n = len(rows)
    name, pid, level, time, file, message, uvicorn, uvicorn_message = (
        _text(group) for group in zip(*rows, strict=True)
    )
    text = pa.large_string()
    message = pc.coalesce(message, uvicorn_message, pa.scalar("", text))
    if not messages:
        message = pc.if_else(kept_rows(message, pc.is_valid(time), runs), message, "")
    return batch_of(
        {
            "line": np.arange(first_line, first_line + n, dtype=np.int64),
            "process": name,
            "pid": pid.cast("int64"),
            "level": pc.coalesce(level, pa.scalar("INFO", text)),  # uvicorn lines: INFO
            "time": time,
            "file": file,
            "kind": pc.if_else(pc.is_valid(uvicorn), pa.scalar("uvicorn", text), "record"),
            "message": message,
        }
    )


def routine_batches(
    data: bytes, spans: Sequence[tuple[int, int, int, int]], messages: bool = True
) -> list[Any]:
    """One RecordBatch per span (start, stop, first line, line count) of data,
    built as one batch and sliced (zero-copy): Arrow's per-call cost is paid
    once per block of the input, not once per run."""
    import numpy as np
    import pyarrow as pa

    joined = b"".join(data[start:stop] for start, stop, _, _ in spans)
    counts = [count for _, _, _, count in spans]
    whole = routine_batch(joined, 0, len(joined), 1, messages, counts)
    if whole.num_rows != sum(counts):  # the capture missed a line: stay right, run by run
        return [
            routine_batch(data, start, stop, first, messages) for start, stop, first, _ in spans
        ]
    lines = np.concatenate([np.arange(f, f + n, dtype=np.int64) for _, _, f, n in spans])
    whole = whole.set_column(0, "line", pa.array(lines))
    offsets = np.cumsum([0, *counts])
    return [whole.slice(int(offset), n) for offset, n in zip(offsets, counts, strict=False)]


# What the frames read in routine messages when the rest are not kept: stats
# lines (metrics), start-up milestones and the first lines that prove serving
# (timeline).  The patterns are the ones metrics.py and phases.py use; Arrow's
# RE2 runs them over a block's column at once.
_STATS = "^(?:" + STATS_LINE + ")"
_MILESTONE = "|".join(p.marker.pattern for p in PHASES if p.name != SERVING_PHASE)
_SERVING = next(p for p in PHASES if p.name == SERVING_PHASE).marker.pattern


def kept_rows(messages: Any, timed: Any, runs: Sequence[int] | None = None) -> Any:
    """Which routine messages a read without messages keeps (a boolean array):
    every stats line and milestone, and each run's serving lines up to the first
    with a time stamp (the timeline dates "serving" by it; uvicorn lines carry
    none).  `timed`: whether each row has a time; `runs`: the row counts of the
    routine runs in the block, in order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(messages)
    serving = pc.match_substring_regex(messages, _SERVING).to_numpy(zero_copy_only=False)
    if runs is None or sum(runs) != n:  # (a capture that missed a line is redone run by run)
        runs = [n]
    run_of = np.repeat(np.arange(len(runs)), runs)
    # The first timed serving row of each run; rows after it need no serving text.
    dating = np.flatnonzero(serving & timed.to_numpy(zero_copy_only=False))
    limit = np.full(len(runs), n)
    first_runs, first = np.unique(run_of[dating], return_index=True)
    limit[first_runs] = dating[first]
    serving &= np.arange(n) <= limit[run_of]
    kept = pc.or_(
        pc.match_substring_regex(messages, _STATS), pc.match_substring_regex(messages, _MILESTONE)
    )
    return pc.or_(kept, pa.array(serving))


def batch_of(columns: dict[str, Any]) -> Any:
    """A RecordBatch with the events-frame types (shared with frames.py)."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [pa.array(columns[c], type=t) if not isinstance(columns[c], pa.Array) else columns[c]
         for c, t in zip(COLUMNS, _types(), strict=True)],
        names=list(COLUMNS),
    )  # fmt: skip


def _types() -> tuple[Any, ...]:
    import pyarrow as pa

    text = pa.large_string()
    return pa.int64(), text, pa.int64(), text, text, text, text, text


def _text(values: tuple[bytes, ...]) -> Any:
    """bytes -> an Arrow string column, b"" as null (invalid UTF-8 replaced, as source.py does)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    raw = pa.array(values, pa.large_binary())
    raw = pc.if_else(pc.equal(pc.binary_length(raw), 0), pa.scalar(None, raw.type), raw)
    try:
        return raw.cast(pa.large_string())
    except pa.ArrowInvalid:
        decoded = [v.decode("utf-8", "replace") if v is not None else None for v in raw.to_pylist()]
        return pa.array(decoded, pa.large_string())
