"""Routine lines as Arrow columns must say what the object path says of them."""

from __future__ import annotations

import pytest

from support import FIXTURES, corpus_logs, generated_log, needs_genlog
from vlogscope.envelope import unwrap
from vlogscope.records import classify
from vlogscope.routine_columns import routine_batch
from vlogscope.skim import is_routine
from vlogscope.source import PhysicalLine, split_line

LOGS = (
    sorted(FIXTURES.glob("*.log")) + sorted((FIXTURES / "variants").glob("*.log")) + corpus_logs()
)


def _object_row(raw: bytes) -> tuple[object, ...]:
    [text] = split_line(raw)
    f = classify(unwrap(PhysicalLine(1, text)).text)
    kind = {"vllm": "record"}.get(f.kind, f.kind)  # the event kind of a one-line record
    return f.process, f.pid, f.level, f.time, f.file, kind, f.message


def _columns_agree(raw_lines: list[bytes]) -> int:
    routine = [raw for raw in raw_lines if raw.endswith(b"\n") and is_routine(raw)]
    data = b"".join(routine)
    batch = routine_batch(data, 0, len(data), first_line=1)
    assert batch.num_rows == len(routine)
    columns = [batch.column(c).to_pylist() for c in
               ("process", "pid", "level", "time", "file", "kind", "message")]  # fmt: skip
    for i, raw in enumerate(routine):
        assert tuple(column[i] for column in columns) == _object_row(raw), raw
    return len(routine)


def test_columns_of_every_routine_fixture_and_corpus_line_match_the_object_path() -> None:
    lines = [raw for path in LOGS for raw in path.read_bytes().splitlines(keepends=True)]
    assert _columns_agree(lines) > 100


@needs_genlog
@pytest.mark.parametrize("failure", ["kv-fp8-mla", "oom", "none"])
def test_columns_of_generated_routine_lines_match_the_object_path(failure: str) -> None:
    data = generated_log(20000, 3, failure)
    assert _columns_agree(data.splitlines(keepends=True)) > 10000


def test_invalid_utf8_and_escapes_are_handled_like_the_object_path() -> None:
    lines = [
        b"(APIServer pid=1) INFO 01-02 03:04:05 [logger.py:1] prompt: 'caf\xe9 \xff'\n",
        b"\x1b[1;36m(APIServer pid=1)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m01-02 03:04:05"
        b"\x1b[0m \x1b[90m[logger.py:1]\x1b[0m Received request \x1b[1mx\x1b[0m\n",
        b"INFO 01-02 03:04:05.123 [loggers.py:2] Running: 0 reqs\n",
    ]
    assert _columns_agree(lines) == 3


def test_batches_built_as_one_equal_batches_built_run_by_run() -> None:
    """routine_batches slices one batch per block; each slice is the run's own batch."""
    from vlogscope.routine_columns import routine_batches

    lines = [
        b"(APIServer pid=7) INFO 01-02 03:04:05 [logger.py:1] Received request r%d\n" % i
        for i in range(10)
    ] + [b'INFO:     10.0.0.1:5512 - "POST /v1/completions HTTP/1.1" 200 OK\n']
    data = b"".join(lines)
    bounds = [0, *(len(b"".join(lines[:k])) for k in (3, 4, 11))]
    spans = [
        (bounds[0], bounds[1], 1, 3),
        (bounds[1], bounds[2], 10, 1),
        (bounds[2], bounds[3], 20, 7),
    ]
    expected = [routine_batch(data, s, e, first).to_pylist() for s, e, first, _ in spans]
    assert [b.to_pylist() for b in routine_batches(data, spans)] == expected
    assert [row["line"] for row in routine_batches(data, spans)[2].to_pylist()] == list(
        range(20, 27)
    )
    # A count that disagrees with the capture: the batches are built run by run instead.
    wrong = [(s, e, first, n + 1) for s, e, first, n in spans]
    assert [b.to_pylist() for b in routine_batches(data, wrong)] == expected


def test_without_messages_a_batch_keeps_only_what_the_frames_read() -> None:
    """Stats lines (metrics); serving lines up to the first with a time (timeline)."""
    data = (
        b'INFO:     10.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OK\n'
        b"INFO 02-20 21:33:47 [logger.py:43] Received request a: prompt: 'hi'\n"
        b"INFO 02-20 21:33:48 [logger.py:43] Received request b: prompt: 'ho'\n"
        b"INFO 02-20 21:33:49 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s\n"
        b"INFO 02-20 21:33:50 [logger.py:43] Received request c: prompt: 'hu'\n"
    )
    full = routine_batch(data, 0, len(data), first_line=1).column("message").to_pylist()
    lean = routine_batch(data, 0, len(data), 1, messages=False).column("message").to_pylist()
    assert lean == [full[0], full[1], "", full[3], ""]
    # Two runs in one block: each run's first serving lines are kept.
    lean = routine_batch(data, 0, len(data), 1, messages=False, runs=[2, 3])
    assert lean.column("message").to_pylist() == [full[0], full[1], full[2], full[3], ""]
