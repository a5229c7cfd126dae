"""Stage 1 — source: turn what the user named into numbered physical lines.

A user points vlogscope at a file, several files, a directory of pod logs, a
compressed log, or `-` for a pipe (`ssh host cat /tmp/vllm.log | vlogscope
diagnose -`).  This stage hides all of that: each input becomes a `Source`
whose `lines()` yields `PhysicalLine`s lazily, one per `\\n`-terminated chunk
of bytes, so a multi-gigabyte log is never held in memory.

Compression is recognised by magic bytes, not by file name, because pod-log
collectors rarely keep the suffix honest.  Invalid UTF-8 is decoded with
replacement characters rather than rejected: a log is evidence, and evidence
with a few broken bytes is still evidence.

Examples:
    >>> import io
    >>> bar = b"shards:  50% Completed | 1/2\\rshards: 100% Completed | 2/2\\n"
    >>> src = Source.from_stream("<stdin>", io.BytesIO(b"INFO a\\r\\n" + bar + b"b\\rc\\n\\xffend"))
    >>> [(line.number, line.text) for line in src.lines()]
    [(1, 'INFO a'), (2, 'shards: 100% Completed | 2/2'), (3, 'b'), (4, 'c'), (5, '\\ufffdend')]
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar, cast

T = TypeVar("T")

STDIN_NAME = "<stdin>"
# Longer lines are cut (and say so): no vLLM line comes near it, and a 100 MB
# line of garbage must not cost 100 MB or minutes of regex time.
MAX_LINE_BYTES = 256 * 1024

# Names a directory walk picks up.  Pod-log collectors add rotation numbers
# (`vllm.log.1`) and compression suffixes (`vllm.log.gz`), so any dotted part
# may carry the log suffix.
_LOG_SUFFIXES = frozenset({"log", "txt", "out", "err", "stdout", "stderr"})

_MAGIC_GZIP = b"\x1f\x8b\x08"  # magic + deflate, the only method gzip defines
_MAGIC_BZIP2 = (b"BZh1", b"BZh2", b"BZh3", b"BZh4", b"BZh5", b"BZh6", b"BZh7", b"BZh8", b"BZh9")
_MAGIC_XZ = b"\xfd7zXZ\x00"
_MAGIC_ZSTD = b"\x28\xb5\x2f\xfd"


class InputError(Exception):
    """The input cannot be read; the message is one line a person can act on."""


@dataclass(frozen=True, slots=True)
class PhysicalLine:
    """One `\\n`-terminated line of the input, 1-based, terminator removed.

    A trailing `\\r` (vLLM's NewLineFormatter writes `\\r\\n` inside multi-line
    records) is dropped.  Carriage returns inside the line are tqdm progress
    bars redrawing themselves; only the last non-empty state is kept, which is
    what a terminal would have shown.
    """

    number: int
    text: str


# What marks a progress bar's state: tqdm's bar (`%|`), its rate and its time field, which
# closes every bar whatever its unit (`[00:00<?, ?it/s]`, `[00:01, 1556211.80 examples/s]`),
# and vLLM's own `% Completed` shard counter.
_BAR_STATE = re.compile(r"%\||it/s\]|s/it\]|% Completed|\[\d+:\d\d(?::\d\d)?[<,\]]")
# Ray (and other launchers) print a process prefix, then the child's `\r`-laden line.
_PREFIX_ONLY = re.compile(r"(?:\x1b\[[0-9;]*m)*\([^()\r\n]{1,120}\)(?:\x1b\[[0-9;]*m)* ?")


# A vLLM record's header: two states that each carry one are two records, not a redraw,
# however alike their starts (the same process prefix).
_LEVEL = r"(?:INFO|DEBUG|WARNING|ERROR|CRITICAL) "
_RECORD_HEADER = re.compile(_LEVEL + r"\d\d-\d\d \d\d:\d\d:\d\d")


def _is_redraw(states: list[str]) -> bool:
    """tqdm redraws one bar; other `\\r`-separated text is old-Mac (CR-only) line ends."""
    if any(_BAR_STATE.search(s) for s in states):
        return True
    if sum(1 for s in states if _RECORD_HEADER.search(s)) > 1:
        return False
    return len({s[:12] for s in states}) == 1


# A carriage return copied in caret notation (`cat -v`, a pager, an editor that shows
# control characters): `^M` where a line ends or the next one starts, not a `^M...`
# inside a regular expression that a message quotes.
_CARET_CR = re.compile(r"\^M(?=$|\^\[|\x1b|\(|\s|" + _LEVEL + ")")


def split_line(raw: bytes) -> list[str]:
    """The physical lines in one `\\n`-terminated chunk: usually one.

    A trailing `\\r` (CRLF, and the `\\r\\r\\n` a pseudo-terminal makes of it) is
    dropped; a progress bar's redraws collapse to the last state; a file with
    CR-only line ends is split at each `\\r`. A `^M` in caret notation counts
    as the `\\r` it stands for.
    """
    raw = raw.removesuffix(b"\n").rstrip(b"\r")
    text = raw.decode("utf-8", errors="replace")
    if "^M" in text:
        text = _CARET_CR.sub("\r", text).rstrip("\r")
    if "\r" not in text:
        return [text]
    states = [state for state in text.split("\r") if state]
    if not states:
        return [""]
    prefix = ""
    if len(states) > 1 and _PREFIX_ONLY.fullmatch(states[0]):
        prefix, states = states[0], states[1:]  # the prefix belongs to what follows it
    if _is_redraw(states):
        return [prefix + states[-1]]
    return [prefix + states[0], *states[1:]]


def _read_lines(stream: BinaryIO) -> Iterator[bytes]:
    """`\\n`-terminated chunks, a giant line cut to MAX_LINE_BYTES without reading it whole."""
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            dropped = 0
            while (rest := stream.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                dropped += len(rest)
            dropped += len(rest)
            raw = raw[:MAX_LINE_BYTES] + f" [... {dropped} bytes cut by vlogscope]\n".encode()
        yield raw


def _open_decompressed(stream: BinaryIO, name: str) -> BinaryIO:
    """Wrap `stream` in a decompressor chosen by its first bytes."""
    buffered = (
        stream
        if isinstance(stream, io.BufferedReader)
        else io.BufferedReader(cast("io.RawIOBase", stream))
    )
    head = buffered.peek(8)[:8]
    if head.startswith(_MAGIC_GZIP):
        return gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[return-value]
    if head.startswith(_MAGIC_BZIP2):
        return bz2.BZ2File(buffered, mode="rb")  # type: ignore[return-value]
    if head.startswith(_MAGIC_XZ):
        return lzma.LZMAFile(buffered, mode="rb")  # type: ignore[return-value]
    if head.startswith(_MAGIC_ZSTD):
        raise InputError(
            f"{name}: zstd-compressed input is not supported yet; "
            f"decompress it first (zstd -dc {name} | vlogscope diagnose -)"
        )
    return buffered


@dataclass(frozen=True)
class Source:
    """A named input that can be read once, lazily, as physical lines."""

    name: str
    _open: Callable[[], BinaryIO]
    path: Path | None = None  # a file on disk, which `diagnose --jobs` may split

    @classmethod
    def from_path(cls, path: Path) -> Source:
        return cls(str(path), lambda: path.open("rb"), path)

    @classmethod
    def from_stream(cls, name: str, stream: BinaryIO) -> Source:
        return cls(name, lambda: stream)

    def lines(self) -> Iterator[PhysicalLine]:
        """Yield every physical line; decoding and I/O errors become InputError."""
        return self.read(_every_line)

    def read(self, reader: Callable[[BinaryIO], Iterator[T]]) -> Iterator[T]:
        """Open (and decompress) the input, run `reader` over the bytes, close it.

        Opening, decompression and I/O errors become InputError, whatever the reader.
        """
        try:
            raw_stream = self._open()
        except PermissionError:
            raise InputError(f"{self.name}: permission denied") from None
        except OSError as exc:
            raise InputError(f"{self.name}: cannot read: {exc.strerror or exc}") from exc
        try:
            yield from reader(_open_decompressed(raw_stream, self.name))
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise InputError(f"{self.name}: cannot read: {exc}") from exc
        finally:
            if raw_stream is not sys.stdin.buffer:
                raw_stream.close()


def _every_line(stream: BinaryIO) -> Iterator[PhysicalLine]:
    number = 0
    for raw in _read_lines(stream):
        for text in split_line(raw):
            number += 1
            yield PhysicalLine(number, text)


def _looks_like_log(path: Path) -> bool:
    suffixes = path.name.lower().split(".")[1:]
    return not suffixes or any(part in _LOG_SUFFIXES for part in suffixes)


def _walk(directory: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(
            Path(root) / name
            for name in sorted(files)
            if not name.startswith(".") and _looks_like_log(Path(name))
        )
    return found


def open_sources(specs: Sequence[str], stdin: BinaryIO | None = None) -> list[Source]:
    """Resolve command-line inputs into Sources, failing early with InputError.

    `-` is standard input; a directory contributes every log-like file below
    it (``*.log``, ``*.txt``, ``*.out``, rotated ``*.log.1``, and their
    ``.gz``/``.bz2``/``.xz`` forms, plus files without a suffix).
    """
    sources: list[Source] = []
    for spec in specs or ["-"]:
        if spec == "-":
            sources.append(Source.from_stream(STDIN_NAME, stdin or sys.stdin.buffer))
            continue
        path = Path(spec)
        try:
            path.stat()
        except FileNotFoundError:
            raise InputError(f"{spec}: no such file or directory") from None
        except OSError as exc:
            reason = (
                "permission denied (check its permissions, or run as a user who can read it)"
                if isinstance(exc, PermissionError)
                else exc.strerror
            )
            raise InputError(f"{spec}: {reason}") from None
        if path.is_dir():
            logs = _walk(path)
            if not logs:
                raise InputError(f"{spec}: directory holds no log files (*.log, *.txt, *.out, ...)")
            sources.extend(Source.from_path(p) for p in logs)
        elif not os.access(path, os.R_OK):
            raise InputError(
                f"{spec}: permission denied (check its permissions, or run as a user who can "
                "read it)"
            )
        else:
            sources.append(Source.from_path(path))
    return sources
