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
from typing import Any

from vlogscope.envelope import ESCAPES_BYTES
from vlogscope.skim import PROCESS, PROCESS_NAME, SOURCE_FILE, STAMP

# The same line shapes as skim.ROUTINE_LINE (escapes already removed), with the
# innermost process prefix, the header fields and the message captured.
_CAPTURE = re.compile(
    rb"(?:" + PROCESS + rb" ?)*?"
    rb"(?:\((?P<name>" + PROCESS_NAME + rb"?) ?pid=(?P<pid>[0-9]+)"
    rb"(?:, ip=[A-Za-z0-9.:_-]+)?\) ?)?"
    rb"(?:(?P<level>INFO|DEBUG) (?P<time>" + STAMP + rb") "
    rb"\[?(?P<file>" + SOURCE_FILE + rb"):[0-9]+\] ?(?P<message>[^\r\n]*)"
    rb"|(?P<uvicorn>INFO): +(?P<uvicorn_message>[^\r\n]*))\n"
)

COLUMNS = ("line", "process", "pid", "level", "time", "file", "kind", "message")


def routine_batch(data: bytes, start: int, stop: int, first_line: int) -> Any:
    """The routine lines in data[start:stop] (whole lines) as a pyarrow RecordBatch."""
    span = data[start:stop]
    if b"\x1b" in span:
        span = ESCAPES_BYTES.sub(b"", span)
    rows = _CAPTURE.findall(span)
    if not rows:
        return batch_of({c: [] for c in COLUMNS})
    name, pid, level, time, file, message, uvicorn, uvicorn_message = zip(*rows, strict=True)
    if any(uvicorn):
        kind = ["uvicorn" if u else "record" for u in uvicorn]
        level = tuple(v or b"INFO" for v in level)
        message = tuple(m or u for m, u in zip(message, uvicorn_message, strict=True))
    else:
        kind = ["record"] * len(rows)
    # One conversion for all six text columns (per-call overhead dominates
    # small runs), then zero-copy slices; empty captures are absent groups.
    n = len(rows)
    columns = (name, level, time, file, message, pid)
    texts = _text(tuple(v or None for column in columns for v in column))
    process, level_column, time_column, file_column, message_column, pids = (
        texts.slice(i * n, n) for i in range(len(columns))
    )
    return batch_of(
        {
            "line": range(first_line, first_line + n),
            "process": process,
            "pid": pids.cast("int64"),
            "level": level_column,
            "time": time_column,
            "file": file_column,
            "kind": kind,
            "message": message_column.fill_null(""),
        }
    )


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


def _text(values: tuple[bytes | None, ...]) -> Any:
    """bytes -> an Arrow string column (invalid UTF-8 replaced, as source.py does)."""
    import pyarrow as pa

    try:
        return pa.array(values, pa.large_binary()).cast(pa.large_string())
    except pa.ArrowInvalid:
        decoded = [v.decode("utf-8", "replace") if v is not None else None for v in values]
        return pa.array(decoded, pa.large_string())
