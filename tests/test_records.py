"""The fast regex must agree with the pyparsing reference grammar on every line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support import FIXTURES, corpus_logs, generated_log, needs_genlog
from vlogscope.envelope import strip_escapes
from vlogscope.grammar import parse_line
from vlogscope.records import classify


def _lines_of(paths: list) -> list[str]:
    out = []
    for path in paths:
        for raw in path.read_bytes().split(b"\n"):
            out.append(strip_escapes(raw.rstrip(b"\r").decode("utf-8", "replace")))
    return out


def test_regex_agrees_with_grammar_on_every_fixture_and_corpus_line() -> None:
    lines = _lines_of(sorted(FIXTURES.glob("*.log")) + corpus_logs())
    assert len(lines) > 500
    disagreements = [t for t in lines if classify(t) != parse_line(t)]
    assert disagreements == []


@needs_genlog
@pytest.mark.parametrize("failure", ["none", "kv-fp8-mla", "oom"])
def test_regex_agrees_with_grammar_on_generated_lines(failure: str) -> None:
    out = generated_log(4000, 7, failure)
    lines = [
        strip_escapes(raw.rstrip(b"\r").decode("utf-8", "replace")) for raw in out.split(b"\n")
    ]
    assert [t for t in lines if classify(t) != parse_line(t)] == []


_pieces = st.sampled_from(
    [
        "(",
        ")",
        " ",
        "pid=",
        "12",
        "EngineCore_DP0",
        "VllmWorker rank=3",
        ", ip=10.0.0.1",
        "INFO",
        "ERROR",
        ":",
        "05-14 09:10:07",
        ".123",
        "[",
        "]",
        "core.py",
        "v1/engine/core.py",
        ":77",
        "\t",
        "é",
        "٣",
        "INFO:",
        "     ",
        "msg",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_pieces, max_size=14).map("".join))
def test_regex_agrees_with_grammar_on_hostile_lines(text: str) -> None:
    assert classify(text) == parse_line(text)


def test_innermost_prefix_names_the_emitting_process() -> None:
    fields = classify('(APIServer pid=4788) (EngineCore_0 pid=5042)   File "x", line 1, in f')
    assert (fields.process, fields.pid, fields.kind) == ("EngineCore_0", 5042, "raw")
    bare = classify("(EngineCore_DP0 pid=100) (pid=200) INFO 01-01 00:00:00 [a.py:1] m")
    assert (bare.process, bare.pid) == (None, 200)


def test_old_header_without_opening_bracket_is_a_vllm_record() -> None:
    fields = classify("INFO 05-14 09:10:07 llm_engine.py:98] Initializing an LLM engine (v0.4.3)")
    assert (fields.kind, fields.file, fields.file_line) == ("vllm", "llm_engine.py", 98)


def test_uvicorn_lines_keep_their_level_and_message() -> None:
    fields = classify('(APIServer pid=1) INFO:     127.0.0.1:5 - "GET /health HTTP/1.1" 200 OK')
    assert (fields.kind, fields.level, fields.process) == ("uvicorn", "INFO", "APIServer")
    assert fields.message.startswith("127.0.0.1")
