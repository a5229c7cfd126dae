"""Stage 3 — records: read the vLLM line structure of every line, fast.

`grammar.py` defines the line format in pyparsing; running it over millions
of lines would take minutes, so this module carries one compiled regular
expression that says the same thing.  `tests/test_records.py` proves the two
agree on every fixture and corpus line and on generated hostile lines, which
is what makes it safe to use the regex on the hot path.

Examples:
    >>> rec = read_record(UnwrappedLine(3, "(EngineCore_DP0 pid=975) ERROR 11-14 08:06:26 "
    ...                                    "[core.py:708] EngineCore failed to start."))
    >>> rec.number, rec.fields.process, rec.fields.level, rec.fields.message
    (3, 'EngineCore_DP0', 'ERROR', 'EngineCore failed to start.')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vlogscope.envelope import UnwrappedLine
from vlogscope.grammar import LEVELS, UVICORN_LEVELS, LineFields

# Character classes are spelled in ASCII because pyparsing's `alphanums`,
# `nums` and `printables` are ASCII-only, while `\w`/`\d`/`\S` are Unicode.
_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*(?: (?!pid=)[A-Za-z_][A-Za-z0-9_.=\-]*)*"
_PREFIX = r"\((?:{name},? )?pid={pid}(?:, ip={ip})?\) ?"
_ANY_PREFIX = _PREFIX.format(name=_NAME, pid="[0-9]+", ip="[A-Za-z0-9.:\\-_]+")
_LAST_PREFIX = _PREFIX.format(
    name=f"(?P<name>{_NAME})", pid="(?P<pid>[0-9]+)", ip="(?P<ip>[A-Za-z0-9.:\\-_]+)"
)
_PRINTABLE_FILE = r"[\x21-\x39\x3b-\x5a\x5c\x5e-\x7e]+"  # printables minus : [ ]
_HEADER = (
    rf"(?P<level>{'|'.join(LEVELS)}) "
    r"(?P<time>[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?) "
    rf"\[?(?P<file>{_PRINTABLE_FILE}):(?P<file_line>[0-9]+)\] ?(?P<message>.*)"
)
_UVICORN = rf"(?P<uvicorn_level>{'|'.join(UVICORN_LEVELS)}): +(?P<uvicorn_message>.*)"
# A greedy run of prefixes, then one more captured: backtracking leaves the
# innermost (emitting) process in the named groups.
LINE_PATTERN = re.compile(
    rf"(?:(?:{_ANY_PREFIX})*{_LAST_PREFIX})?(?:{_HEADER}|{_UVICORN}|(?P<raw>.*))"
)


@dataclass(frozen=True, slots=True)
class Record:
    """One physical line with its vLLM structure read; `wrapper` is the envelope."""

    number: int
    fields: LineFields
    wrapper: str = ""


def classify(text: str) -> LineFields:
    """The fast twin of `grammar.parse_line`: same input, same LineFields."""
    m = LINE_PATTERN.fullmatch(text)
    if m is None:  # `.*` cannot fail short of a line separator inside `text`
        return LineFields("raw", None, None, None, None, None, None, None, text)
    pid = int(m["pid"]) if m["pid"] is not None else None
    name, ip = m["name"], m["ip"]
    if m["level"] is not None:
        return LineFields(
            "vllm", name, pid, ip, m["level"], m["time"], m["file"], int(m["file_line"]),
            m["message"],
        )  # fmt: skip
    if m["uvicorn_level"] is not None:
        return LineFields(
            "uvicorn", name, pid, ip, m["uvicorn_level"], None, None, None, m["uvicorn_message"]
        )
    return LineFields("raw", name, pid, ip, None, None, None, None, m["raw"])


def read_record(line: UnwrappedLine) -> Record:
    return Record(line.number, classify(line.text), line.wrapper)
