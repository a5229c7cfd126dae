"""The reference grammar of one vLLM log line, in pyparsing.

This module is the definition of what a vLLM line looks like in every era
from 0.4 to 0.34; `records.py` holds a compiled regular expression that must
agree with it on every line (a test checks both on every fixture and corpus
line).  It is slow — about 15k lines/s — and is therefore never run over a
whole file; it exists to be read, tested and trusted.

The shapes (after the envelope stage removed colours and wrappers):

* any number of process prefixes, outermost first, the innermost being the
  emitting process: `(EngineCore_DP0 pid=207868) `, `(VllmWorker rank=3 pid=406) `,
  `(VllmWorker TP3 pid=8812) `, `(Worker_PP1_TP0 pid=9) `,
  `(RayWorkerWrapper pid=421, ip=10.233.73.21) `, Ray's bare `(pid=5) ` and its
  named-task form `(vllm-test, pid=2150) `;
* then either the vLLM header `LEVEL MM-DD HH:MM:SS [file.py:NNN] message`
  (0.8+) or `LEVEL MM-DD HH:MM:SS file.py:NNN] message` (0.4–0.7), where the
  file may be a shortened relative path at DEBUG level;
* or a uvicorn line `INFO:     Started server process [1]`;
* or anything else, which the pipeline keeps as raw text.

Examples:
    >>> parse_line("(Worker_TP3 pid=99) ERROR 04-09 20:31:10 [multiproc_executor.py:949] boom")
    LineFields(kind='vllm', process='Worker_TP3', pid=99, ip=None, level='ERROR', \
time='04-09 20:31:10', file='multiproc_executor.py', file_line=949, message='boom')
    >>> parse_line("INFO 05-14 09:10:07 llm_engine.py:98] Initializing an LLM engine").file
    'llm_engine.py'
    >>> parse_line("(APIServer pid=1) INFO:     Application startup complete.").kind
    'uvicorn'
    >>> parse_line("  File \\"/x.py\\", line 3, in f").kind
    'raw'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pyparsing as pp

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
UVICORN_LEVELS = (*LEVELS, "TRACE")

LineKind = Literal["vllm", "uvicorn", "raw"]


@dataclass(frozen=True, slots=True)
class LineFields:
    """What the grammar read from one line; `message` is the rest of the line."""

    kind: LineKind
    process: str | None
    pid: int | None
    ip: str | None
    level: str | None
    time: str | None
    file: str | None
    file_line: int | None
    message: str


def _build() -> pp.ParserElement:
    digits = pp.Word(pp.nums)
    word_start = pp.alphas + "_"
    name_head = pp.Word(word_start, pp.alphanums + "_.-")
    # `VllmWorker rank=3`, `VllmWorker PP0_TP1`: extra words until ` pid=`.
    name_tail = pp.Literal(" ") + ~pp.Literal("pid=") + pp.Word(word_start, pp.alphanums + "_.=-")
    process_name = pp.Combine(name_head + pp.ZeroOrMore(name_tail))
    ip = pp.Word(pp.alphanums + ".:-_")
    prefix = pp.Group(
        pp.Suppress("(")
        + pp.Opt(process_name("name") + pp.Suppress(pp.Opt(",") + " "))
        + pp.Suppress("pid=")
        + digits("pid")
        + pp.Opt(pp.Suppress(", ip=") + ip("ip"))
        + pp.Suppress(")")
        + pp.Opt(pp.Suppress(" "))
    )
    two = pp.Word(pp.nums, exact=2)
    timestamp = pp.Combine(
        two + "-" + two + " " + two + ":" + two + ":" + two + pp.Opt("." + digits)
    )
    level = pp.one_of(LEVELS)
    source_file = pp.Word(pp.printables, exclude_chars="[]:")
    vllm_header = (
        level("level")
        + pp.Suppress(" ")
        + timestamp("time")
        + pp.Suppress(" ")
        + pp.Opt(pp.Suppress("["))
        + source_file("file")
        + pp.Suppress(":")
        + digits("file_line")
        + pp.Suppress("]")
        + pp.Opt(pp.Suppress(" "))
        + pp.rest_of_line("message")
    )
    uvicorn = (
        pp.one_of(UVICORN_LEVELS)("level")
        + pp.Suppress(":")
        + pp.Suppress(pp.Word(" "))
        + pp.rest_of_line("message")
    )
    # An And, so that naming the branch "raw" keeps the inner "message" name.
    raw = pp.Empty() + pp.rest_of_line("message")
    line = (
        pp.ZeroOrMore(prefix)("prefixes")
        + (vllm_header("vllm") | uvicorn("uvicorn") | raw("raw"))
        + pp.string_end
    )
    # Tabs are part of the message; pyparsing would expand them by default.
    return line.leave_whitespace(recursive=True).parse_with_tabs()


LINE = _build()


def parse_line(text: str) -> LineFields:
    """Parse one unwrapped line; every string parses (the raw branch takes anything)."""
    result = LINE.parse_string(text, parse_all=True)
    prefixes = _get(result, "prefixes")
    inner = prefixes[-1] if prefixes else None
    kind: LineKind = "vllm" if "vllm" in result else "uvicorn" if "uvicorn" in result else "raw"
    is_vllm = kind == "vllm"
    return LineFields(
        kind=kind,
        process=_get(inner, "name"),
        pid=int(inner["pid"]) if inner is not None else None,
        ip=_get(inner, "ip"),
        level=_get(result, "level") if kind != "raw" else None,
        time=_get(result, "time") if is_vllm else None,
        file=_get(result, "file") if is_vllm else None,
        file_line=int(result["file_line"]) if is_vllm else None,
        message=_get(result, "message") or "",
    )


def _get(results: pp.ParseResults | None, name: str) -> Any:
    """A named result or None (ParseResults.get is untyped)."""
    return results[name] if results is not None and name in results else None
