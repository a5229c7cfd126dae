"""The hot path of `diagnose`: routine lines are counted in bulk, never parsed.

A server that ran for a week logs millions of lines, and almost all of them
are routine: uvicorn access lines and INFO records (stats, request logging)
that no diagnosis reads.  Parsing each in Python costs ~30 µs; this module
reads the input in large blocks and lets one compiled regular expression
walk over runs of routine lines at C speed, handing on only the lines that
matter: anything not at INFO/DEBUG level, anything that is not a vLLM or
uvicorn line (tracebacks, third-party output), and INFO/DEBUG lines whose
message starts like a start-up milestone, a fact or an INFO-level signature
(`_MATTERS`).  A run of routine lines becomes one `RoutineRun`.

`tests/test_skim.py` proves the routine pattern agrees with the pyparsing
grammar (every line it calls routine is a vLLM INFO/DEBUG record or a uvicorn
INFO line) and that diagnoses with and without skimming are the same.

Examples:
    >>> import io
    >>> data = (b"INFO 05-14 09:10:07 [loggers.py:1] Engine 000: Running: 3 reqs\\n" * 3
    ...         + b"ERROR 05-14 09:10:08 [core.py:1] boom\\n")
    >>> [type(item).__name__ for item in skim(io.BytesIO(data))]
    ['RoutineRun', 'PhysicalLine']
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, BinaryIO

from vlogscope.source import MAX_LINE_BYTES, PhysicalLine, split_line

BLOCK_BYTES = 4 * 1024 * 1024

_ANSI = rb"(?:\x1b\[[0-9;]*m)*"
# Pieces of a routine line, shared with routine_columns.py's capturing twin.
PROCESS_NAME = rb"[A-Za-z_][A-Za-z0-9_.= -]{0,60}"
PROCESS = rb"\(" + PROCESS_NAME + rb" ?pid=[0-9]+(?:, ip=[A-Za-z0-9.:_-]+)?\)"
STAMP = rb"[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
SOURCE_FILE = rb"[\x21-\x39\x3b-\x5a\x5c\x5e-\x7e]+"  # printables minus : [ ]
_PREFIX = rb"(?:" + _ANSI + PROCESS + _ANSI + rb" ?)*"
# Messages that matter although INFO/DEBUG: start-up milestones and facts (phases.py,
# facts.py) and what INFO-level signatures look for (patterns/).  They are told
# apart at the start of the message, so the check costs nothing per routine line.
_MATTERS = (
    rb"(?:non-default args|args: |Initializing|Dumping|vLLM|Resolved|Using|Available"
    rb"|[A-Z][A-Za-z +]{0,12} KV"
    rb"|# |Model loading|Loading|Starting|Capturing|Graph|Dynamo|Compiling|Directly load"
    rb"|torch\.compile|Memory profiling|Maximum concurrency|init engine|Automatically"
    rb"|Chunked|No available|No platform|Platform plugin|Request \S+ failed|rank |Shutting"
    rb"|\[shutdown\]|Found nccl"
    rb"|world|Some attention|Valid backends|Multiplying|Forcing|Cannot use|Free memory"
    rb"|Auto-fit|Sequence group|Application|Uvicorn|Started|Waiting|Finished|Process|Engine core"
    rb"|Worker proc|model weights|Supported tasks|[\t\x0b\x0c\x1c-\x20\xc2\xe1-\xe3]|\n|$)"
)
# Stats lines that matter (preemptions, a nearly full KV cache) are told apart
# after the match, on the stats messages that are decoded anyway.
_HOT_STATS = re.compile(r"Preemptions: [1-9]|KV cache usage: (?:9\d|100)")
# One routine line: a vLLM INFO/DEBUG record or a uvicorn INFO line.  The rest of
# the line is `[^\n]*`, which re runs at memchr speed (a set such as `[^\r\n]*` is
# four times slower); a `\r` (a progress bar's redraws: several physical lines) is
# looked for afterwards with bytes.find, see `is_routine` and `_routine_part`.
ROUTINE_LINE = re.compile(
    _PREFIX + _ANSI + rb"(?:(?:INFO|DEBUG)" + _ANSI + rb" " + _ANSI
    + STAMP + _ANSI + rb" " + _ANSI + rb"\[?" + SOURCE_FILE + rb":[0-9]+\]" + _ANSI
    + rb" (?!" + _MATTERS + rb")[^\n]*|INFO: +(?!" + _MATTERS + rb")[^\n]*)\n"
)  # fmt: skip
RUN = re.compile(rb"(?:" + ROUTINE_LINE.pattern + rb")+")
_STATS_MARK = b"Avg prompt throughput"
_STATS_PREFIX = re.compile(rb"Engine \d+: |\d+ Engines Aggregated: ")
# Routine lines that prove the server was up; phases.py's "serving" marker
# is made of the same words (the status alternative is anchored at line end).
SERVING_MARKERS = (
    r"Avg prompt throughput|Received request|Added request|Processed prompts"
    r'|" [0-9]{3}(?: [A-Za-z ]+)?'
)
_SERVING = re.compile((SERVING_MARKERS + r"\n").encode())


@dataclass(frozen=True, slots=True)
class RoutineRun:
    """`count` consecutive routine lines starting at line `first`: counted, not parsed."""

    first: int
    count: int
    serving: bool = False  # holds stats, request or access lines: the server was serving
    stats: tuple[str, ...] = ()  # the stats lines' messages, for the metrics summary
    # With skim(columns=True): the lines themselves as a pyarrow RecordBatch
    # (routine_columns.py), for DataFrames that need every line.
    columns: Any = None


Item = PhysicalLine | RoutineRun


def is_routine(raw: bytes) -> bool:
    """Is this `\n`-terminated line routine: counted in bulk, never parsed?"""
    return ROUTINE_LINE.fullmatch(raw) is not None and _routine_part(raw, 0, len(raw))[0] > 0


_MATTERS_AT_START = re.compile(_MATTERS)


def is_routine_record(level: str | None, message: str) -> bool:
    """Would the skim count a vLLM record with this level and message as routine?

    Stages after the skim that look at single records (run splitting) ask this
    so that a full parse and a skimmed one reach the same conclusions.
    """
    return (
        level in ("INFO", "DEBUG")
        and _MATTERS_AT_START.match(message.encode()) is None
        and not _under_pressure(message)
    )


Stats = list[tuple[int, str]]  # (where the line starts, its message) per stats line


def _routine_part(data: bytes, start: int, stop: int) -> tuple[int, Stats]:
    """Where the routine lines RUN matched in data[start:stop] really end, and
    their stats lines: the run stops before the first line holding a `\r` or its
    caret notation `^M` (split_line may cut it into several lines) or a stats line
    that matters."""
    for cr in (data.find(b"\r", start, stop), data.find(b"^M", start, stop)):
        if cr >= 0:
            stop = min(stop, data.rfind(b"\n", start, cr) + 1 or start)
    stats = _stats_lines(data, start, stop)
    for i, (line_start, message) in enumerate(stats):
        if _under_pressure(message):
            return line_start, stats[:i]
    return stop, stats


def _under_pressure(message: str) -> bool:
    """`_HOT_STATS.search(message)`, with substring tests first: every V1 stats
    line names its preemptions and KV-cache usage, few are under pressure."""
    at = message.find("Preemptions: ")
    if at >= 0:
        if message[at + 13 : at + 14] in "123456789" and at + 13 < len(message):
            return True
        if message.find("Preemptions: ", at + 1) >= 0:  # not a stats line's shape
            return _HOT_STATS.search(message) is not None
    nearly_full = "KV cache usage: 9" in message or "KV cache usage: 100" in message
    return nearly_full and _HOT_STATS.search(message) is not None


def _stats_lines(data: bytes, start: int, stop: int) -> Stats:
    """The stats lines in data[start:stop], found by a literal search (C speed)."""
    found: Stats = []
    at = data.find(_STATS_MARK, start, stop)
    while at >= 0:
        line_start = data.rfind(b"\n", start, at) + 1 or start
        begin = at
        if data[at - 2 : at] == b": ":  # V1 names the engine(s) first
            engine = data.rfind(b"Engine", line_start, at)
            if engine > line_start and data.startswith(b"Engines", engine):  # `2 Engines ...`
                engine = data.rfind(b" ", line_start, engine - 1) + 1 or line_start
            if engine >= 0 and _STATS_PREFIX.fullmatch(data, engine, at):
                begin = engine
        end = data.find(b"\n", at, stop)
        found.append((line_start, data[begin:end].decode("utf-8", "replace")))
        at = data.find(_STATS_MARK, end, stop)
    return found


def _first_serving_line(data: bytes, start: int, stop: int) -> int:
    """Where the first line holding a serving marker starts in data[start:stop], or -1."""
    hit = _SERVING.search(data, start, stop)
    return data.rfind(b"\n", start, hit.start()) + 1 or start if hit else -1


def _routine_run(
    data: bytes, start: int, stop: int, first: int, serving: bool, stats: Stats
) -> RoutineRun:
    count = data.count(b"\n", start, stop)
    messages = tuple(message for at, message in stats if start <= at < stop)
    return RoutineRun(first, count, serving, messages)


def _with_columns(
    data: bytes, items: list[Item], spans: list[tuple[int, int]], messages: bool = True
) -> list[Item]:
    """The block's items, each routine run carrying its lines as Arrow columns
    (`spans` are the runs' byte ranges, in order; `messages`: see routine_batch)."""
    # Imported here: routine_columns builds on this module's line shapes.
    from vlogscope.routine_columns import routine_batches

    runs = [item for item in items if isinstance(item, RoutineRun)]
    batches = iter(
        routine_batches(
            data,
            [(s, e, run.first, run.count) for (s, e), run in zip(spans, runs, strict=True)],
            messages,
        )
    )
    return [replace(i, columns=next(batches)) if isinstance(i, RoutineRun) else i for i in items]


def _lines_of(raw: bytes, number: int) -> Iterator[PhysicalLine]:
    for text in split_line(raw):
        number += 1
        yield PhysicalLine(number, text)


def skim(
    stream: BinaryIO, columns: bool = False, messages: bool = True
) -> Iterator[PhysicalLine | RoutineRun]:
    """Physical lines that matter, and runs of routine lines in between.

    With `columns`, each run also carries its lines as Arrow columns (without
    `messages`, only the messages the frames read; see routine_columns.py).
    """
    number = 0
    carry = b""
    giant: bytes | None = None  # the kept head of a line longer than MAX_LINE_BYTES
    look_for_serving = True
    while True:
        block = stream.read(BLOCK_BYTES)
        if giant is not None:  # drop the rest of a giant line up to its newline
            newline = block.find(b"\n")
            if newline < 0 and block:
                continue
            for line in _lines_of(giant + b" [... cut by vlogscope]\n", number):
                number = line.number
                yield line
            giant, block = None, block[newline + 1 :] if newline >= 0 else b""
        data = carry + block
        if not block and not data:
            return
        if not block:  # a last line without a newline is never routine
            for line in _lines_of(data, number):
                number = line.number
                yield line
            return
        cut = data.rfind(b"\n") + 1
        data, carry = data[:cut], data[cut:]
        if len(carry) > MAX_LINE_BYTES:
            giant, carry = carry[:MAX_LINE_BYTES], b""
        position, end = 0, len(data)
        found: list[Item] = []
        spans: list[tuple[int, int]] = []  # the byte ranges of the block's routine runs
        while position < end:
            run = RUN.match(data, position)
            stop, stats = (
                _routine_part(data, position, run.end()) if run is not None else (position, [])
            )
            if stop > position:
                # Only the first serving run after something that mattered can start
                # the "serving" phase (a launch's markers always come first); the
                # run is cut there so that the phase starts on the serving line.
                begin = _first_serving_line(data, position, stop) if look_for_serving else -1
                look_for_serving = look_for_serving and begin < 0
                pieces = (
                    [(position, begin, False), (begin, stop, True)]
                    if begin >= 0
                    else [(position, stop, False)]
                )
                for start, finish, serving in pieces:
                    if finish > start:
                        item = _routine_run(data, start, finish, number + 1, serving, stats)
                        found.append(item)
                        spans.append((start, finish))
                        number += item.count
                position = stop
                continue
            line_end = data.find(b"\n", position) + 1 or end
            raw = data[position:line_end]
            if len(raw) > MAX_LINE_BYTES:
                raw = raw[:MAX_LINE_BYTES] + b" [... cut by vlogscope]\n"
            for line in _lines_of(raw, number):
                number = line.number
                found.append(line)
            position = line_end
            look_for_serving = True
        # Columns for all of a block's runs at once: per-run Arrow calls would
        # cost more than the rows of the short runs between warnings.
        yield from _with_columns(data, found, spans, messages) if columns and spans else found
