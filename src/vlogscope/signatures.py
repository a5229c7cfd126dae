"""Signatures: declarative failure patterns read from `patterns/*.toml`.

A signature names one way vLLM fails — `TritonMLA V1 with FP8 KV cache not
yet supported` — and says what it means and how to fix it.  Signatures are
data, read with `tomllib`, never executed; their regexes run under the
`regex` package's timeout so that a careless user pattern cannot hang the
tool.  The built-in folder ships inside the wheel; `--patterns DIR` and
`VLOGSCOPE_PATTERNS` add folders whose signatures override built-ins by id.

A file holds any number of `[[signature]]` tables:

    [[signature]]
    id = "kv-cache-dtype-unsupported/triton-mla-fp8"
    category = "kv-cache-dtype-unsupported"
    severity = "error"             # error | warning | info
    role = "cause"                 # cause | symptom (symptoms never rank above causes)
    priority = 80                  # more specific signatures rank higher
    title = "..."
    explain = "... {backend} ..."  # captures and facts fill the braces
    fix = ["..."]
    references = ["https://github.com/vllm-project/vllm/pull/34597"]
    versions = "0.8.0..0.17.0"     # optional, the range the message exists in
    [signature.match]
    message = '(?P<backend>\\w+) V1 with FP8 KV cache not yet supported'
    exception = "NotImplementedError"      # optional, regex on the exception type
    frame = "get_attn_backend"             # optional, regex on a frame's function (or its call)
    path = 'vllm/attention/'               # optional, regex on a frame's file path
    levels = ["ERROR"]                     # optional
    kinds = ["record", "traceback"]        # optional
    startup_only = true                    # optional: only before the server was up
    cut_off_only = true                    # optional: only tracebacks without an exception line
    [signature.tests]
    fires = ["tests/fixtures/logs/x.log"]  # must produce this signature
    ignores = ["tests/fixtures/logs/y.log"]  # must not

Examples:
    >>> sigs = load_signatures()
    >>> sig = sigs["kv-cache-dtype-unsupported/mla-backend-no-fp8"]
    >>> sig.category, str(sig.severity)
    ('kv-cache-dtype-unsupported', 'error')
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any

import regex

from vlogscope.assemble import Event, EventKind, Frame
from vlogscope.needles import Needles, may_match, required_literals
from vlogscope.taxonomy import CATEGORIES

REGEX_TIMEOUT_S = 0.5
ENV_PATTERNS = "VLOGSCOPE_PATTERNS"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Role(StrEnum):
    CAUSE = "cause"
    SYMPTOM = "symptom"


class SignatureError(ValueError):
    """A signature file is malformed; the message names the file and the signature."""


@dataclass(frozen=True, slots=True)
class SignatureTests:
    fires: tuple[str, ...] = ()
    ignores: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Signature:
    id: str
    category: str
    severity: Severity
    role: Role
    priority: int
    confidence: float
    title: str
    explain: str
    fix: tuple[str, ...]
    references: tuple[str, ...]
    versions: str | None
    message: Any  # regex.Pattern[str] | None; the regex package ships no stubs
    exception: Any
    frame: Any
    path: Any
    levels: frozenset[str]
    kinds: frozenset[EventKind]
    tests: SignatureTests
    origin: Path
    # Literals every `message` match contains (needles.py), or None: a line
    # holding none of them is not searched.
    needles: Needles | None = None
    # Speaks only for events before start-up completed: guesses from where a
    # traceback ran ("while loading weights") say nothing about a serving crash.
    startup_only: bool = False
    # Speaks only for tracebacks cut off before their exception line: a guess at
    # the missing line ("out of memory, as usual there") is wrong once the line
    # is there and no signature recognised it.
    cut_off_only: bool = False


def reads_digits(sig: Signature) -> bool:
    """Can this signature's verdict on a message change with the message's digits?

    Long logs repeat one message shape with other numbers, and the outcome of a
    shape is remembered with its digits folded (`RunBuilder._matches`).  That
    holds for patterns that read numbers generically (`\\d+`), not for those
    naming a digit: `KV cache usage: 9\\d`, `Preemptions: [1-9]`, `fp8`.
    """
    return sig.message is not None and any(c.isdigit() for c in sig.message.pattern)


def is_fallback(sig: Signature) -> bool:
    """Frame/path-only signatures guess from where a traceback ran, not what it said.

    They only speak for events that no message- or exception-based signature
    explains (typically excerpts cut off before the exception line).
    """
    return sig.message is None and sig.exception is None


@dataclass(frozen=True, slots=True)
class Match:
    """One event matched by one signature, with what the regex captured."""

    signature: Signature
    event: Event
    line: int  # the physical line that matched
    text: str  # that line's text
    captures: Mapping[str, str]

    @property
    def explains_event(self) -> bool:
        """A cause explains its event; a symptom only if it matched the final exception.

        `WorkerProc failed to start.` (a symptom) heads a traceback whose last
        line may be a real, unrecognised error: that event stays unexplained,
        and so does a traceback under it that is cut off before its exception.
        """
        if self.signature.role is Role.CAUSE:
            return True
        if not self.event.exceptions:  # a cut-off traceback under it still needs explaining
            return not self.event.frames
        return self.line == self.event.exceptions[-1].line


def builtin_patterns_dir() -> Path:
    """The shipped `patterns/` folder: inside the wheel, or at the top of a checkout."""
    packaged = Path(str(resources.files("vlogscope"))) / "patterns"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "patterns"


class LazyPattern:
    """A `regex` pattern compiled on its first search.

    Compiling the catalog costs more than reading a start-up log, and a
    diagnosis searches only the patterns whose needles occur in some line, so
    the shipped catalog (compiled and tested in CI) is compiled as it is used.
    User folders are compiled when loaded, so that a bad pattern is reported
    at once.
    """

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: Any = None

    def compiled(self) -> Any:
        if self._compiled is None:
            self._compiled = regex.compile(self.pattern)
        return self._compiled

    def search(self, text: str, **options: Any) -> Any:
        return self.compiled().search(text, **options)

    def __getattr__(self, name: str) -> Any:  # groupindex, flags, ...: the compiled pattern's
        return getattr(self.compiled(), name)


def _compile(source: Path, sig_id: str, pattern: object, what: str, lazy: bool) -> Any:
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise SignatureError(f"{source}: signature {sig_id!r}: match.{what} must be a string")
    if lazy:
        return LazyPattern(pattern)
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise SignatureError(f"{source}: signature {sig_id!r}: bad match.{what}: {exc}") from exc


def _strings(value: object, source: Path, sig_id: str, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise SignatureError(f"{source}: signature {sig_id!r}: {what} must be a list of strings")


def _parse(table: Mapping[str, Any], source: Path, lazy: bool = False) -> Signature:
    sig_id = table.get("id")
    if not isinstance(sig_id, str) or not sig_id:
        raise SignatureError(f"{source}: a [[signature]] has no id")
    missing = [k for k in ("category", "severity", "title", "explain") if k not in table]
    if missing:
        raise SignatureError(f"{source}: signature {sig_id!r} lacks {', '.join(missing)}")
    category = table["category"]
    if category not in CATEGORIES:
        raise SignatureError(f"{source}: signature {sig_id!r}: unknown category {category!r}")
    match = table.get("match", {})
    if not any(k in match for k in ("message", "exception", "frame", "path")):
        raise SignatureError(
            f"{source}: signature {sig_id!r}: match needs message, exception, frame or path"
        )
    try:
        severity, role = Severity(table["severity"]), Role(table.get("role", "cause"))
        kinds = frozenset(
            EventKind(k) for k in _strings(match.get("kinds"), source, sig_id, "kinds")
        )
    except ValueError as exc:
        raise SignatureError(f"{source}: signature {sig_id!r}: {exc}") from exc
    flags = {name: match.get(name, False) for name in ("startup_only", "cut_off_only")}
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise SignatureError(f"{source}: signature {sig_id!r}: match.{name} must be true/false")
    tests = table.get("tests", {})
    return Signature(
        id=sig_id,
        category=category,
        severity=severity,
        role=role,
        priority=int(table.get("priority", 50)),
        confidence=float(table.get("confidence", 0.8)),
        title=str(table["title"]),
        explain=str(table["explain"]),
        fix=_strings(table.get("fix"), source, sig_id, "fix"),
        references=_strings(table.get("references"), source, sig_id, "references"),
        versions=table.get("versions"),
        message=_compile(source, sig_id, match.get("message"), "message", lazy),
        exception=_compile(source, sig_id, match.get("exception"), "exception", lazy),
        frame=_compile(source, sig_id, match.get("frame"), "frame", lazy),
        path=_compile(source, sig_id, match.get("path"), "path", lazy),
        levels=frozenset(_strings(match.get("levels"), source, sig_id, "levels")),
        kinds=kinds,
        tests=SignatureTests(
            _strings(tests.get("fires"), source, sig_id, "tests.fires"),
            _strings(tests.get("ignores"), source, sig_id, "tests.ignores"),
        ),
        origin=source,
        needles=required_literals(match["message"]) if "message" in match else None,
        **flags,
    )


def load_file(path: Path, lazy: bool = False) -> list[Signature]:
    """The signatures of one TOML file; `lazy` compiles their regexes on first use."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SignatureError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise SignatureError(f"{path}: cannot read: {exc.strerror}") from exc
    tables = data.get("signature", [])
    if not isinstance(tables, list):
        raise SignatureError(f"{path}: `signature` must be an array of tables ([[signature]])")
    return [_parse(table, path, lazy) for table in tables]


def pattern_dirs(extra_dirs: Iterable[Path] = ()) -> list[Path]:
    """Built-ins, then `VLOGSCOPE_PATTERNS` folders, then `extra_dirs`, in override order."""
    env_dirs = [Path(p) for p in os.environ.get(ENV_PATTERNS, "").split(os.pathsep) if p]
    return [builtin_patterns_dir(), *env_dirs, *extra_dirs]


def load_signatures(extra_dirs: Iterable[Path] = ()) -> dict[str, Signature]:
    """Every signature of `pattern_dirs(extra_dirs)`; a later folder's id wins."""
    by_id: dict[str, Signature] = {}
    builtin = builtin_patterns_dir()
    for directory in pattern_dirs(extra_dirs):
        if not directory.is_dir():
            raise SignatureError(f"{directory}: patterns folder does not exist")
        for path in sorted(directory.glob("*.toml")):
            for sig in load_file(path, lazy=directory == builtin):
                by_id[sig.id] = sig
    return by_id


def _search(pattern: Any, text: str) -> Any:
    """Search under the timeout; a TimeoutError reaches the caller, who disables the rule."""
    return pattern.search(text, timeout=REGEX_TIMEOUT_S)


class SignatureGuard:
    """Disables a signature whose regex timed out, so one bad rule costs one timeout.

    A catastrophic user pattern (`(a+)+$`) would otherwise spend the timeout on
    every line of a million-line log.  The warning names the rule and its file.
    """

    def __init__(self) -> None:
        self.disabled: set[str] = set()
        self.warnings: list[str] = []

    def matches(
        self, sig: Signature, event: Event, texts: list[tuple[int, str]] | None = None
    ) -> Match | None:
        if sig.id in self.disabled:
            return None
        try:
            return match_event(sig, event, texts)
        except TimeoutError:
            self.disabled.add(sig.id)
            self.warnings.append(
                f"signature {sig.id} ({sig.origin}) took over {REGEX_TIMEOUT_S} s on line "
                f"{event.line} and was disabled; check it with `vlogscope patterns lint`"
            )
            return None


def candidate_texts(event: Event) -> list[tuple[int, str]]:
    """The (line, text) pairs a message pattern is tried on, most telling first."""
    if event.exceptions:
        found = [(exc.line, str(exc)) for exc in reversed(event.exceptions)]
        return [*found, (event.line, event.message)]
    return list(zip(event.line_numbers, event.texts, strict=True))


def _frame_hit(pattern: Any, attribute: str, frames: tuple[Frame, ...]) -> tuple[Frame | None, str]:
    """The first frame whose function (or, for `frame`, the call in its source
    line) or file matches, with the function name that matched."""
    for f in frames:
        if _search(pattern, getattr(f, attribute)):
            return f, f.function
        if attribute == "function" and f.calls and _search(pattern, f.calls):
            return f, f.calls
    return None, ""


def _cut_off_under_its_message(event: Event) -> bool:
    """An ERROR record whose traceback stops before the exception line.

    The V0 engine logs a failure as `logger.exception(e)`: the record's message
    is the exception's own text (`No module named 'vllm_ascend.lora'`) and the
    traceback follows.  When a paste cuts the traceback off, that message is all
    that is left of the exception, so a signature that asks for an exception
    type is tried on it, without the type.
    """
    return event.cut_off and event.kind is EventKind.RECORD and event.level in ("ERROR", "CRITICAL")


def match_event(
    sig: Signature, event: Event, texts: list[tuple[int, str]] | None = None
) -> Match | None:
    """Does `sig` describe `event`?  All given conditions must hold.

    `texts` is `candidate_texts(event)`, when the caller has it already.
    """
    if sig.kinds and event.kind not in sig.kinds:
        return None
    if sig.cut_off_only and not event.cut_off:
        return None
    # `levels` narrows levelled records; unlevelled lines (raw tracebacks, pasted
    # text without the header) always qualify.
    if sig.levels and event.level is not None and event.level not in sig.levels:
        return None
    exception_captures: dict[str, str] = {}
    if sig.exception is not None and _cut_off_under_its_message(event):
        if sig.message is None:
            return None
        texts = [(event.line, event.message)]
    elif sig.exception is not None:
        hit = next((m for exc in event.exceptions if (m := _search(sig.exception, exc.type))), None)
        if hit is None:
            return None
        exception_captures = {k: v for k, v in hit.groupdict().items() if v is not None}
    frame_captures: dict[str, str] = {}
    for pattern, attribute in ((sig.frame, "function"), (sig.path, "file")):
        if pattern is None:
            continue
        hit, function = _frame_hit(pattern, attribute, event.frames)
        if hit is None:
            return None
        frame_captures = {"function": function, "file": hit.file}
    if sig.message is None:
        line = event.exceptions[-1].line if event.exceptions else event.line
        text = str(event.exceptions[-1]) if event.exceptions else event.message
        return Match(sig, event, line, text, {**frame_captures, **exception_captures})
    for line, text in texts if texts is not None else candidate_texts(event):
        if not may_match(sig.needles, text):
            continue
        m = _search(sig.message, text)
        if m is not None:
            captures = {k: v for k, v in m.groupdict().items() if v is not None}
            return Match(
                sig, event, line, text, {**frame_captures, **exception_captures, **captures}
            )
    return None
