"""Stage 4 — assemble: join physical lines into events, per process stream.

One vLLM failure prints the same story many times and in pieces: every line
of a logged traceback repeats the header (NewLineFormatter), eight tensor-
parallel ranks write to one stdout so their tracebacks interleave line by
line, and Python prints a raw copy after `Process EngineCore_DP0:`.  This
stage untangles that by keeping one open event per *stream* (the innermost
process prefix, or the unprefixed stream) and deciding, line by line, whether
the line continues the stream's open event:

* a vLLM record continues while the header key (level, time, file:line) is
  unchanged and the line is part of a traceback, indented, or blank (a blank
  line without a header continues a logged traceback too: pastes insert them);
* a raw traceback continues through frames, the exception line, indented
  exception details and chained-exception markers.

Every physical line lands in exactly one event; events come out in order of
their first line.

Examples:
    >>> from vlogscope.records import classify, Record
    >>> h = "ERROR 01-01 00:00:00 [m.py:9]"
    >>> texts = [f"(Worker_TP0 pid=1) {h} WorkerProc failed to start.",
    ...          f"(Worker_TP1 pid=2) {h} WorkerProc failed to start.",
    ...          f"(Worker_TP0 pid=1) {h} Traceback (most recent call last):",
    ...          f'(Worker_TP0 pid=1) {h}   File "a.py", line 1, in f',
    ...          f"(Worker_TP0 pid=1) {h} ValueError: bad"]
    >>> events = list(assemble(Record(i, classify(t)) for i, t in enumerate(texts, 1)))
    >>> [(e.process, e.line_numbers, e.exception) for e in events]
    [('Worker_TP0', (1, 3, 4, 5), 'ValueError: bad'), ('Worker_TP1', (2,), None)]
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from vlogscope.records import Record
from vlogscope.skim import RoutineRun

# An open event that has seen no line for this many input lines is closed:
# continuations follow within a few lines even when eight ranks interleave.
STALE_AFTER = 2000

_TRACEBACK_START = "Traceback (most recent call last):"
_CHAIN_MARKERS = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
_PROCESS_BANNER = re.compile(r"Process [\w\-]+:$")
# IPython/Jupyter print tracebacks their own way: the type heads them, frames read
# `File ~/x.py:123, in f(args)` (or `Cell In[13], line 43`, `Cell In[1], line 21, in f(x)` for a
# function defined in a cell; IPython 7:
# `~/x.py in f(args)`), and code lines carry their line numbers, `-->` at the one running.
_IPYTHON_HEADER = re.compile(r"(?P<type>[A-Za-z_][\w.]*) +Traceback \(most recent call last\)")
_IPYTHON_FRAME = re.compile(
    r"File (?P<file>.+?):(?P<line>[0-9]+), in (?P<func>[\w.<>]+)(?:\(.*)?"
    r"|Cell In ?\[[0-9]*\], line (?P<cell_line>[0-9]+)(?:, in (?P<cell_func>[\w.<>]+)(?:\(.*)?)?"
    r"|(?P<file7>\S+\.py|<ipython-input-[\w-]+>) in (?P<func7>[\w.<>]+)(?:\(.*)?"
)
# A code line is its number, the code (none for a blank line), or `(...)` for lines left out;
# `-->` marks the line running, and IPython 8.x puts `(...)` before the first line shown
# after a run of skipped ones.
_IPYTHON_CODE = re.compile(r"(?:(?P<arrow>-*>)|\(\.\.\.\))? *[0-9]+(?: (?P<code>.*))?|\(\.\.\.\)")
# rich's pretty tracebacks (`rich.traceback.install()`, typer apps) draw a box:
# frames read `path/file.py:123 in func`, wrapped over several box lines when the
# console is narrow; the code line running carries `❱`; the exception follows the
# box, word-wrapped to the box's width.
_RICH_HEADER = re.compile(r"╭─+ Traceback \(most recent call last\) ─+╮")
_RICH_FOOTER = re.compile(r"╰─+╯")
_RICH_FRAME = re.compile(r"(?P<file>\S.*?):(?P<line>[0-9]+) ?in ?(?P<func>[\w.<>]+)")
_RICH_CODE = re.compile(r"❱ *[0-9]+ │(?P<code>.*)")
# faulthandler's dump when native code crashes: `Fatal Python error: Segmentation
# fault`, then each thread's stack, most recent call FIRST (frames as _FRAME).
_FAULT = re.compile(r"Fatal Python error: (?P<what>.+)")
_FAULT_STACK = re.compile(
    r"(?:Stack|Current thread 0x[0-9a-f]+|Thread 0x[0-9a-f]+)(?: \[[^\]]*\])?"
    r" \(most recent call first\):"
)
_FAULT_NOISE = re.compile(
    r"Python runtime state: .*|Extension modules: .*|<no Python frame>|\.\.\."
)
# The first name applied to arguments in a source line: `a = b.c(` -> `c`.
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
# A traceback frame; faulthandler leaves out the comma before `in`.
_FRAME = re.compile(r'\s*File "(?P<file>[^"]*)", line (?P<line>[0-9]+)(?:,? in (?P<func>.*))?')
# A quote that opens or closes a quoted string: not an apostrophe between two
# letters or digits (`doesn't`, `model's`).
_QUOTE = re.compile(r"'(?<![A-Za-z0-9]')|'(?![A-Za-z0-9])")
# An exception message whose quote is still open continues on the lines below it
# (V1 wraps a worker's error as `Worker failed with error '<str(e)>', please check
# ...`, and Triton's compile errors span lines); this many lines at most.
MAX_QUOTED_LINES = 40
# An exception line with no traceback above it (a paste, or a record, that kept only
# that line) counts when its type reads as one: a dotted name ending in Error or Exception.
_ERROR_TYPE = re.compile(r"(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)")
# A traceback cut off right after its last frame still shows the statement that
# raised: `raise TimeoutError("Timed out waiting for engines to send"` names the
# type and how its message starts (an f-string's fields stay as written).
_RAISE = re.compile(
    r"raise (?P<type>[A-Za-z_][\w.]*)\(\s*(?:[rR]?[fF]?|[fF][rR])(?P<q>[\"'])(?P<message>[^\"']+)"
)
# `ray.exceptions.RayTaskError(TypeError): ...` wraps the real type in parentheses.
_EXCEPTION = re.compile(
    r"(?P<type>[A-Za-z_][\w.]*)(?:\((?P<inner>[A-Za-z_][\w.]*)\))?(?::(?: (?P<message>.*))?)?$"
)


class EventKind(StrEnum):
    RECORD = "record"  # a vLLM log record, possibly carrying a logged traceback
    TRACEBACK = "traceback"  # a raw Python traceback (or a fragment of one)
    UVICORN = "uvicorn"  # uvicorn's own lines, including access lines
    UNPARSED = "unparsed"  # anything else: third-party output, prints, progress bars
    ROUTINE = "routine"  # a run of routine INFO/DEBUG lines, counted but not parsed (skim.py)


@dataclass(frozen=True, slots=True)
class Frame:
    file: str
    line: int
    function: str
    # The function its source line calls (`capture_model` in `x = self.r.capture_model()`):
    # when a paste stops right after a frame, this names the frame that is missing.
    calls: str = ""


@dataclass(frozen=True, slots=True)
class RaisedException:
    """One exception of a traceback: `torch.OutOfMemoryError: CUDA out of memory...`.

    A bare `AssertionError` says nothing by itself; Python prints the failing
    `assert ...` source line just above it, so that line becomes its message
    (`assert self.total_num_kv_heads % tp_size == 0` names the cause).
    """

    type: str
    message: str
    line: int  # physical line of the exception line

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True, slots=True)
class Event:
    """A unit of meaning: one log record, one traceback, or one foreign line."""

    kind: EventKind
    line_numbers: tuple[int, ...] | range
    texts: tuple[str, ...]  # message part of each physical line
    process: str | None = None
    pid: int | None = None
    level: str | None = None
    time: str | None = None
    file: str | None = None
    frames: tuple[Frame, ...] = ()
    exceptions: tuple[RaisedException, ...] = ()  # chain order; the last one was raised
    samples: tuple[str, ...] = ()  # ROUTINE only: stats-line messages kept for metrics
    columns: Any = None  # ROUTINE only, when asked: every line as Arrow columns (skim.py)

    @property
    def line(self) -> int:
        return self.line_numbers[0]

    @property
    def lines(self) -> int:
        return len(self.line_numbers)

    @property
    def message(self) -> str:
        return self.texts[0]

    @property
    def cut_off(self) -> bool:
        """A traceback that stops before its exception line (a truncated paste)."""
        return bool(self.frames) and not self.exceptions

    @property
    def exception(self) -> str | None:
        """The finally raised exception as `Type: message`, if any."""
        return str(self.exceptions[-1]) if self.exceptions else None


class _TracebackState(StrEnum):
    NONE = "none"  # not (yet) inside a traceback
    HEADER = "header"  # saw `Process X:` or a chain marker, waiting for `Traceback`
    FRAMES = "frames"
    RAISED = "raised"  # saw the exception line


@dataclass
class _Builder:
    first: Record
    numbers: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    exceptions: list[RaisedException] = field(default_factory=list)
    state: _TracebackState = _TracebackState.NONE
    # The exception line being extended by indented detail lines (pydantic).
    open_exception: RaisedException | None = None
    code_expected: bool = False
    last_code: str = ""  # the source line shown under the latest frame
    last_code_line: int = 0  # and its physical line
    ipython: RaisedException | None = None  # the type an IPython traceback's header names
    rich_width: int = 0  # inside a rich traceback: the width of its box
    rich_boxed: bool = False  # between the box's top and bottom lines
    rich_path: str = ""  # a frame location wrapped over box lines, so far
    fault: RaisedException | None = None  # a faulthandler dump's `Fatal Python error`
    fault_thread: bool = False  # in the crashed thread's stack (not another thread's)
    # The indentation of a raw traceback printed inside other output (pip shows a build
    # subprocess's output indented by six spaces): taken off each line of the event.
    indent: str = ""

    @property
    def key(self) -> tuple[str | None, str | None, str | None, int | None]:
        f = self.first.fields
        return f.level, f.time, f.file, f.file_line

    def add(self, number: int, text: str) -> None:
        if not self.numbers and self.first.fields.kind == "raw":
            body = text.lstrip()
            if body.startswith(_TRACEBACK_START) and body != text:
                self.indent = text[: len(text) - len(body)]
        self.numbers.append(number)
        self.texts.append(text)
        self._advance(number, self._own(text))

    def _own(self, text: str) -> str:
        """`text` without the indentation the whole traceback was printed with."""
        return text[len(self.indent) :] if self.indent and text.startswith(self.indent) else text

    def _advance(self, number: int, text: str) -> None:
        stripped = text.strip()
        if self.fault is not None:
            self._fault_line(stripped)
        elif len(self.numbers) == 1 and (fault := _FAULT.fullmatch(stripped)):
            self.fault = RaisedException("Fatal Python error", fault["what"], number)
            self.state = _TracebackState.HEADER
        elif (
            len(self.numbers) == 1
            and (lone := _EXCEPTION.match(stripped))
            and lone["message"]
            and _ERROR_TYPE.fullmatch(lone["type"])
        ):  # an excerpt that keeps only a traceback's last line still names the exception
            self.open_exception = RaisedException(
                lone["inner"] or lone["type"], lone["message"], number
            )
            self.state = _TracebackState.RAISED
        elif text.endswith(_TRACEBACK_START):
            self._close_exception()
            self.state = _TracebackState.FRAMES
        elif stripped in _CHAIN_MARKERS or _PROCESS_BANNER.fullmatch(stripped):
            self._close_exception()
            self.state = _TracebackState.HEADER
        elif self.state is not _TracebackState.FRAMES and (
            header := _IPYTHON_HEADER.fullmatch(stripped)
        ):
            self._close_exception()
            self.state = _TracebackState.FRAMES
            self.ipython = RaisedException(header["type"], "", number)
        elif self.state is not _TracebackState.FRAMES and _RICH_HEADER.fullmatch(stripped):
            self._close_exception()
            self.state, self.rich_width, self.rich_boxed = (
                _TracebackState.FRAMES,
                len(stripped),
                True,
            )
        elif self.rich_boxed:
            self._rich_line(stripped)
        elif self.ipython is not None and self.state is _TracebackState.FRAMES:
            self._ipython_line(number, stripped)
        elif self.state is not _TracebackState.HEADER and (frame := _FRAME.fullmatch(text)):
            # In state NONE this is an excerpt that starts inside a traceback; in state
            # RAISED, a wrapper's remote traceback (Ray prints `RayTaskError(X): ray::...`,
            # then the frames of the task, then the real `X: ...`).
            self._close_exception()
            self.state = _TracebackState.FRAMES
            self.frames.append(Frame(frame["file"], int(frame["line"]), frame["func"] or ""))
            self.last_code = ""
            # Wrappers like torchrun's `[rank0]: ` strip indentation; then the
            # unindented line after a frame is its source line, not the exception.
            self.code_expected = not text[:1].isspace()
        elif self.state is _TracebackState.FRAMES and (
            text[:1].isspace() or self.code_expected or not stripped.strip("^~")
        ):  # a source line, or the caret line under it (unindented once a prefix ate it)
            self.code_expected = False
            if stripped.strip("^~ ") and not self.last_code:  # not the caret line under it
                self.last_code, self.last_code_line = stripped, number
            if self.frames and not self.frames[-1].calls and (call := _CALL.search(text)):
                self.frames[-1] = replace(self.frames[-1], calls=call[1])
        elif self.state is _TracebackState.FRAMES and stripped:
            # Python's exception line starts with the type's dotted name; anything else
            # after the frames (torch.compile's `Use tlparse ...` under an `Original
            # traceback:`, a paste cut inside a frame) ends them without saying what
            # was raised.
            self.state = _TracebackState.RAISED
            if m := _EXCEPTION.match(stripped):
                kind, message = m["inner"] or m["type"], m["message"] or ""
                if not message and kind.endswith("AssertionError"):
                    message = self.last_code if self.last_code.startswith("assert ") else ""
                self.open_exception = RaisedException(kind, message, number)
        elif self.state is _TracebackState.RAISED and self.open_exception and stripped:
            # Indented details and multi-line messages belong to the exception; rich
            # wrapped its message at the box's width, at a space.
            old = self.open_exception
            joint = " " if self.rich_width else "\n"
            self.open_exception = RaisedException(
                old.type, old.message + joint + stripped, old.line
            )

    def _fault_line(self, stripped: str) -> None:
        """One line of a faulthandler dump: a thread's stack header or one of its frames
        (innermost first, so each goes in front).  Only the crashed thread's are kept."""
        if _FAULT_STACK.fullmatch(stripped):
            self.state = _TracebackState.FRAMES
            self.fault_thread = not stripped.startswith("Thread ")  # `Current thread`, `Stack`
        elif self.fault_thread and (frame := _FRAME.fullmatch(stripped)):
            self.frames.insert(0, Frame(frame["file"], int(frame["line"]), frame["func"] or ""))

    def _fault_accepts(self, stripped: str) -> bool:
        return (
            not stripped
            or _FAULT_STACK.fullmatch(stripped) is not None
            or _FRAME.fullmatch(stripped) is not None
            or _FAULT_NOISE.fullmatch(stripped) is not None
        )

    def _rich_line(self, stripped: str) -> None:
        """One line inside a rich traceback's box: a piece of a frame location, a code
        line, or the box's bottom."""
        if _RICH_FOOTER.fullmatch(stripped):
            self.rich_boxed, self.rich_path = False, ""
            return
        content = stripped[1:-1] if stripped[:1] == stripped[-1:] == "│" else ""
        piece = content.strip()
        starts_location = content[:2] == " " + piece[:1]  # in the box's first column
        if (
            piece[:1] not in ("", "❱", "╭", "╰")
            and "│" not in piece
            and (starts_location or self.rich_path)
        ):
            self.rich_path += piece  # the space at a wrap is lost; _RICH_FRAME allows for it
            if frame := _RICH_FRAME.fullmatch(self.rich_path):
                self.frames.append(Frame(frame["file"], int(frame["line"]), frame["func"]))
                self.last_code, self.rich_path = "", ""
            return
        self.rich_path = ""
        if (code := _RICH_CODE.match(piece)) and self.frames:
            self.last_code = code["code"].replace("│", " ").strip()  # minus indent guides
            if not self.frames[-1].calls and (call := _CALL.search(self.last_code)):
                self.frames[-1] = replace(self.frames[-1], calls=call[1])

    def _wraps_on(self, text: str) -> bool:
        """Is `text` the rest of a rich exception message, wrapped at the box's width?
        rich moves a word down only when it would not fit on the line before."""
        previous, word = self.texts[-1].rstrip(), text.split(" ", 1)[0]
        return bool(word) and len(previous) + 1 + len(word) > self.rich_width

    def _ipython_line(self, number: int, stripped: str) -> None:
        """One line inside an IPython traceback: a frame, a code line or the exception."""
        if not stripped:
            return
        if frame := _IPYTHON_FRAME.fullmatch(stripped):
            file = frame["file"] or frame["file7"] or "<cell>"
            name = frame["func"] or frame["func7"] or frame["cell_func"] or "<module>"
            function = name.rsplit(".", 1)[-1]
            line = int(frame["line"] or frame["cell_line"] or 0)
            self.frames.append(Frame(file, line, function))
            self.last_code = ""
        elif code := _IPYTHON_CODE.fullmatch(stripped):
            if code["arrow"] and code["code"]:
                self.last_code = code["code"].strip()
                if self.frames and (call := _CALL.search(self.last_code)):
                    self.frames[-1] = replace(self.frames[-1], calls=call[1])
        else:
            m = _EXCEPTION.match(stripped)
            kind, message = (m["inner"] or m["type"], m["message"] or "") if m else (stripped, "")
            self.open_exception = RaisedException(kind, message, number)
            self.state = _TracebackState.RAISED

    def _close_exception(self) -> None:
        if self.open_exception is not None:
            self.exceptions.append(self.open_exception)
            self.open_exception = None

    def accepts(self, record: Record) -> bool:
        """Does `record` (same stream) continue this event?"""
        f = record.fields
        text = f.message
        if self.first.fields.kind == "vllm":
            if f.kind == "raw" and not text.strip():
                # Pastes of wrapped terminal lines put blank lines between a logged
                # traceback's records; the traceback goes on after them.
                return self.state is not _TracebackState.NONE
            if f.kind != "vllm" or (f.level, f.time, f.file, f.file_line) != self.key:
                return False
            return (
                self.state is not _TracebackState.NONE
                or text.endswith(_TRACEBACK_START)
                or not text
                or text[:1].isspace()
                or not self.texts[0]  # the ASCII banner opens with an empty line
            )
        if f.kind != "raw" or self.first.fields.kind != "raw":
            return False
        text = self._own(text)
        stripped = text.strip()
        if self.fault is not None:
            return self._fault_accepts(stripped)
        if self.state is _TracebackState.HEADER:
            return text.startswith(_TRACEBACK_START) or not stripped
        if self.state is _TracebackState.FRAMES:
            return True
        if self.state is _TracebackState.RAISED:
            return (
                text[:1].isspace()
                or not stripped
                or stripped in _CHAIN_MARKERS
                or (self.rich_width > 0 and self._wraps_on(text))
                or (self._quote_open() and not text.startswith(_TRACEBACK_START))
            )
        return False

    def _quote_open(self) -> bool:
        """Does the exception being read end inside a quoted string, so that the
        next unindented lines are the rest of its message?"""
        exc = self.open_exception
        return (
            exc is not None
            and self.numbers[-1] - exc.line < MAX_QUOTED_LINES
            and len(_QUOTE.findall(exc.message)) % 2 == 1
        )

    def build(self) -> Event:
        self._close_exception()
        if (
            self.frames
            and not self.exceptions
            and self.last_code_line
            and (raised := _RAISE.match(self.last_code))
        ):
            self.exceptions.append(
                RaisedException(raised["type"], raised["message"], self.last_code_line)
            )
        if self.ipython is not None and not self.exceptions:
            self.exceptions.append(self.ipython)  # cut off: the header still names the type
        if self.fault is not None:
            self.exceptions.append(self.fault)
        f = self.first.fields
        if f.kind == "vllm":
            kind = EventKind.RECORD
        elif f.kind == "uvicorn":
            kind = EventKind.UVICORN
        elif self.frames or self.exceptions or self.state is not _TracebackState.NONE:
            kind = EventKind.TRACEBACK
        else:
            kind = EventKind.UNPARSED
        return Event(
            kind=kind,
            line_numbers=tuple(self.numbers),
            texts=tuple(self.texts),
            process=f.process,
            pid=f.pid,
            level=f.level,
            time=f.time,
            file=f.file,
            frames=tuple(self.frames),
            exceptions=tuple(self.exceptions),
        )


def _starts_fragment(record: Record) -> bool:
    """A `  File "..."` line with no traceback open: an excerpt cut mid-trace."""
    return record.fields.kind != "uvicorn" and _FRAME.fullmatch(record.fields.message) is not None


def _routine(run: RoutineRun) -> Event:
    text = ROUTINE_SERVING_TEXT if run.serving else ROUTINE_TEXT
    lines = range(run.first, run.first + run.count)
    return Event(EventKind.ROUTINE, lines, (text,), samples=run.stats, columns=run.columns)


ROUTINE_TEXT = "(routine INFO lines, counted but not parsed)"
ROUTINE_SERVING_TEXT = "(routine serving lines: stats, requests, access log; counted)"


def assemble(records: Iterable[Record | RoutineRun | None]) -> Iterator[Event]:
    """Group records into events, yielded in order of their first line.

    A `None` in the input means "the source is idle" (a live log waiting for
    more): every open event is closed and yielded, so a follower sees a
    traceback as soon as its last line arrived instead of at the next line.
    """
    open_by_stream: dict[tuple[str | None, int | None], _Builder] = {}
    done: list[tuple[int, Event]] = []  # heap of finished events by first line
    last_seen: dict[tuple[str | None, int | None], int] = {}

    def finish(stream: tuple[str | None, int | None]) -> None:
        builder = open_by_stream.pop(stream)
        event = builder.build()
        heapq.heappush(done, (event.line, event))

    def flush_ready() -> Iterator[Event]:
        oldest_open = min((b.numbers[0] for b in open_by_stream.values()), default=None)
        while done and (oldest_open is None or done[0][0] < oldest_open):
            yield heapq.heappop(done)[1]

    for number, record in enumerate(records):
        if record is None:
            for stream in list(open_by_stream):
                finish(stream)
            yield from flush_ready()
            continue
        if isinstance(record, RoutineRun):
            event = _routine(record)
            heapq.heappush(done, (event.line, event))
            yield from flush_ready()
            continue
        f = record.fields
        stream = (f.process, f.pid)
        builder = open_by_stream.get(stream)
        if builder is not None and builder.accepts(record):
            builder.add(record.number, f.message)
        else:
            if builder is not None:
                finish(stream)
            builder = _Builder(record)
            if _starts_fragment(record):
                builder.state = _TracebackState.FRAMES
            builder.add(record.number, f.message)
            open_by_stream[stream] = builder
        last_seen[stream] = number
        if number % 256 == 0:
            for other in [s for s, n in last_seen.items() if number - n > STALE_AFTER]:
                del last_seen[other]
                if other in open_by_stream:
                    finish(other)
        yield from flush_ready()
    for stream in list(open_by_stream):
        finish(stream)
    yield from flush_ready()
