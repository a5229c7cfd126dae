"""The skim hot path must agree with the grammar and with the full parse."""

from __future__ import annotations

import pytest

from support import FIXTURES, corpus_logs, generated_log, needs_genlog
from vlogscope.envelope import strip_escapes
from vlogscope.grammar import parse_line
from vlogscope.pipeline import analyze
from vlogscope.skim import ROUTINE_LINE
from vlogscope.source import Source

LOGS = (
    sorted(FIXTURES.glob("*.log")) + sorted((FIXTURES / "variants").glob("*.log")) + corpus_logs()
)


def _routine_lines_agree(raw_lines: list[bytes]) -> int:
    checked = 0
    for raw in raw_lines:
        if ROUTINE_LINE.fullmatch(raw if raw.endswith(b"\n") else raw + b"\n"):
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
    assert ROUTINE_LINE.fullmatch(line)
    assert _routine_lines_agree([line]) == 1
