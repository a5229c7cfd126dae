"""The skim hot path must agree with the grammar and with the full parse."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support import FIXTURES, corpus_logs, generated_log, needs_genlog
from vlogscope.envelope import strip_escapes
from vlogscope.grammar import parse_line
from vlogscope.pipeline import analyze
from vlogscope.skim import is_routine, is_routine_record
from vlogscope.source import Source

LOGS = (
    sorted(FIXTURES.glob("*.log")) + sorted((FIXTURES / "variants").glob("*.log")) + corpus_logs()
)


def _routine_lines_agree(raw_lines: list[bytes]) -> int:
    checked = 0
    for raw in raw_lines:
        if is_routine(raw if raw.endswith(b"\n") else raw + b"\n"):
            fields = parse_line(strip_escapes(raw.rstrip(b"\r\n").decode("utf-8", "replace")))
            allowed = {("vllm", "INFO"), ("vllm", "DEBUG"), ("uvicorn", "INFO")}
            assert (fields.kind, fields.level) in allowed, raw
            checked += 1
    return checked


def test_every_line_called_routine_is_an_info_or_debug_record_for_the_grammar() -> None:
    lines = [raw for path in LOGS for raw in path.read_bytes().splitlines(keepends=True)]
    assert _routine_lines_agree(lines) > 100


@needs_genlog
def test_routine_lines_of_generated_logs_agree_with_the_grammar() -> None:
    data = generated_log(30000, 5, "oom")
    assert _routine_lines_agree(data.splitlines(keepends=True)) > 20000


def _key(path_or_bytes: object, skim: bool) -> object:
    import io

    source = (
        Source.from_path(path_or_bytes)  # type: ignore[arg-type]
        if not isinstance(path_or_bytes, bytes)
        else Source.from_stream("<g>", io.BytesIO(path_or_bytes))
    )
    d = analyze(source, skim_routine=skim)
    return (
        d.lines,
        [(f.id, f.category, f.root_cause, f.line, f.title, f.ranks) for f in d.findings],
        {k: v for k, v in d.facts.as_dict().items() if k != "worker_processes"},
        [(r.first_line, r.last_line, str(r.verdict)) for r in d.runs],
    )


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_skimmed_and_full_diagnoses_are_the_same(path) -> None:  # type: ignore[no-untyped-def]
    assert _key(path, True) == _key(path, False)


@needs_genlog
@pytest.mark.parametrize("failure", ["none", "kv-fp8-mla", "oom"])
def test_skimmed_and_full_agree_on_generated_logs(failure: str) -> None:
    data = generated_log(20000, 3, failure)
    assert _key(data, True) == _key(data, False)


def test_the_record_level_routine_test_agrees_with_the_line_pattern() -> None:
    """Run splitting asks `is_routine_record` of parsed records; the skim decides on raw
    lines. Over every fixture and corpus line they must say the same."""
    checked = 0
    for path in LOGS:
        for raw in path.read_bytes().splitlines(keepends=True):
            text = raw.rstrip(b"\r\n")
            if b"\r" in text:
                continue  # several physical lines for the skim
            fields = parse_line(strip_escapes(text.decode("utf-8", "replace")))
            if fields.kind != "vllm" or fields.level not in ("INFO", "DEBUG"):
                continue
            checked += 1
            assert is_routine_record(fields.level, fields.message) == is_routine(text + b"\n"), raw
    assert checked > 300


def test_routine_lines_joined_by_caret_carriage_returns_are_counted_alike() -> None:
    """A `^M` splits a line for the full parse, so the skim must not count it as one."""
    stats = b"INFO 05-14 09:10:07 [loggers.py:1] Engine 000: Running: 3 reqs"
    data = (stats + b"\n") * 3 + stats + b"^M" + stats + b"\n" + (stats + b"\n") * 2
    assert _key(data, True) == _key(data, False)
    assert _key(data, False)[0] == 7


def test_a_second_api_servers_routine_line_is_not_a_restart_in_either_mode() -> None:
    """Two servers writing to one file: the other server's stats line, which the skim
    counts without reading, must not start a new launch in a full parse either."""
    stats = (
        b"INFO 10-07 10:45:22 [loggers.py:127] Engine 00%d: Avg prompt throughput: 760.3 "
        b"tokens/s, Avg generation throughput: 41.9 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
        b"GPU KV cache usage: 2.9%%, Prefix cache hit rate: 0.0%%\n"
    )
    data = (
        b"(APIServer pid=61318) ERROR 10-07 10:45:15 [serving_chat.py:263] ValueError: This "
        b"model's maximum context length is 40960 tokens. However, your request has 91714 "
        b"input tokens. Please reduce the length of the input messages.\n"
        + b"(APIServer pid=61318) "
        + stats % 2
        + b"(APIServer pid=65691) "
        + stats % 0
    )
    full = _key(data, False)
    assert full == _key(data, True)
    assert len(full[3]) == 1  # one run
    assert [f[0] for f in full[1]] == ["context-length-exceeded/request-too-long"]


@pytest.mark.parametrize(
    "line",
    [
        # vLLM's colour formatter: the reset code sits before each space.
        b"\x1b[1;36m(APIServer pid=34086)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m02-20 21:33:47"
        b"\x1b[0m \x1b[90m[logger.py:43]\x1b[0m Received request chatcmpl-e38d: params: x\n",
        b"(APIServer pid=34086) INFO 02-20 21:33:47 [logger.py:43] Received request chatcmpl-1\n",
        b'INFO:     10.0.0.1:5512 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n',
    ],
)
def test_coloured_and_plain_routine_lines_are_skimmed(line: bytes) -> None:
    assert is_routine(line)
    assert _routine_lines_agree([line]) == 1


def test_a_routine_looking_line_with_a_carriage_return_is_not_counted_in_bulk() -> None:
    """A `\\r` may make several physical lines of one; the run stops before it."""
    import io

    from vlogscope.skim import RoutineRun, skim

    ok = b"(APIServer pid=1) INFO 02-20 21:33:47 [logger.py:43] Received request r1\n"
    redraw = b"(APIServer pid=1) INFO 02-20 21:33:48 [loader.py:9] Reading 10%\rdone\n"
    items = list(skim(io.BytesIO(ok * 3 + redraw + ok * 2)))
    shapes = [
        ("run", i.first, i.count) if isinstance(i, RoutineRun) else ("line", i.number, i.text)
        for i in items
    ]
    assert shapes[0] == ("run", 1, 3)
    assert [s for s in shapes if s[0] == "line"] == [
        ("line", 4, "(APIServer pid=1) INFO 02-20 21:33:48 [loader.py:9] Reading 10%"),
        ("line", 5, "done"),
    ]
    assert shapes[-1] == ("run", 6, 2)
    assert not is_routine(redraw) and is_routine(ok)


@pytest.mark.parametrize(
    ("stats", "routine"),
    [
        (b"Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 41.0%, Preemptions: 0", True),
        (b"Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 41.0%, Preemptions: 12", False),
        (b"Running: 3 reqs, Waiting: 9 reqs, GPU KV cache usage: 97.5%, Prefix cache hit", False),
        (b"Running: 3 reqs, Waiting: 9 reqs, GPU KV cache usage: 100.0%", False),
    ],
)
def test_stats_lines_under_pressure_are_not_counted_in_bulk(stats: bytes, routine: bool) -> None:
    """Preemptions and a nearly full KV cache are evidence; other stats lines are routine."""
    import io

    from vlogscope.skim import RoutineRun, skim

    head = b"(APIServer pid=1) INFO 02-20 21:33:4"
    line = head + b"7 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, " + stats
    ok = head + b"6 [logger.py:43] Received request r1\n"
    assert is_routine(line + b"\n") is routine
    items = list(skim(io.BytesIO(ok + line + b"\n" + ok)))
    counted = sum(i.count for i in items if isinstance(i, RoutineRun))
    assert counted == (3 if routine else 2)


_STATS_PIECES = [
    "Preemptions: ",
    "KV cache usage: ",
    "0",
    "1",
    "9",
    "93",
    "100",
    ".5",
    "%",
    ", ",
    "x",
]


@given(st.lists(st.sampled_from(_STATS_PIECES), max_size=12).map("".join))
def test_the_pressure_shortcut_agrees_with_the_pattern(message: str) -> None:
    from vlogscope.skim import _HOT_STATS, _under_pressure

    assert _under_pressure(message) is (_HOT_STATS.search(message) is not None)
