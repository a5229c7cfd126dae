"""The signature catalog's own checks: `vlogscope patterns test` and `lint`.

Signatures are detection rules, and like Semgrep rules they ship with logs
that must and must not fire them.  Beside each `patterns/NAME.toml` lives
`patterns/tests/NAME.log`, a log whose blocks are annotated:

    # ruleid: cuda-oom/out-of-memory
    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 ...
    # ok: cuda-oom/out-of-memory
    INFO 05-14 09:10:07 [gpu_worker.py:1] Memory profiling takes 3.02 seconds

A block runs from its annotation to the next annotation or blank line and is
diagnosed on its own; `ruleid` says the signature must match it, `ok` that it
must not (the near misses).  A signature's `tests.fires` / `tests.ignores`
name whole fixture logs the same way.  When a rule does not fire, the report
names the block's first line — the question insights-core users ask most is
"why didn't my rule fire?".

`lint` checks what can be checked without logs: id shape, category prefix,
tests present, and regexes that backtrack catastrophically (found both by
shape and by timing them on adversarial input).

Examples:
    >>> blocks = list(annotated_blocks(["# ruleid: a/b", "line one", "", "# ok: a/b", "x"]))
    >>> [(b.expect_fire, b.ids, b.first_line) for b in blocks]
    [(True, ('a/b',), 2), (False, ('a/b',), 5)]
"""

from __future__ import annotations

import io
import re
import string
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from vlogscope.pipeline import event_matches, read_events
from vlogscope.signatures import Signature
from vlogscope.source import Source

_ANNOTATION = re.compile(r"#\s*(?P<kind>ruleid|ok):\s*(?P<ids>.+)$")
_ID_SHAPE = re.compile(r"[a-z0-9-]+/[a-z0-9][a-z0-9-]*")
# A quantified group that itself ends in a quantifier: (x+)+, (x*)*, (.*a)+ ...
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*]\)[+*{]")
_ADVERSARIAL = ("a" * 4000 + "!", " " * 4000 + "!", "a " * 2000 + "!", "(" * 2000, "1" * 4000 + "x")
_LINT_TIMEOUT_S = 0.2


@dataclass(frozen=True, slots=True)
class Block:
    """An annotated run of log lines from a pattern test file."""

    path: Path
    first_line: int
    expect_fire: bool
    ids: tuple[str, ...]
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the catalog, located where a person can fix it."""

    where: str
    signature: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.signature}: {self.message}"


def annotated_blocks(lines: Iterable[str], path: Path = Path("-")) -> Iterator[Block]:
    current: tuple[bool, tuple[str, ...]] | None = None
    body: list[str] = []
    start = 0

    def flush() -> Iterator[Block]:
        if current is not None and body:
            yield Block(path, start, current[0], current[1], tuple(body))

    for number, line in enumerate(lines, 1):
        m = _ANNOTATION.match(line.strip())
        if m:
            yield from flush()
            ids = tuple(i.strip() for i in m["ids"].split(",") if i.strip())
            current, body, start = (m["kind"] == "ruleid", ids), [], number + 1
        elif not line.strip():
            yield from flush()
            current, body = None, []
        elif current is not None:
            body.append(line)
    yield from flush()


def _fired(signature: Signature, source: Source) -> bool:
    """Does the signature fire on the events `diagnose` sees?  Through the skim,
    so that an INFO-level line the skim would count as routine fails its test."""
    return any(event_matches(e, [signature]) for e in read_events(source, skim_routine=True))


def _text_source(lines: Iterable[str]) -> Source:
    return Source.from_stream("<test>", io.BytesIO("".join(f"{line}\n" for line in lines).encode()))


def _test_files(directory: Path) -> list[Path]:
    return sorted((directory / "tests").glob("*.log")) if (directory / "tests").is_dir() else []


def run_tests(signatures: Mapping[str, Signature], roots: Iterable[Path]) -> list[Problem]:
    """Run every annotated block and every `tests.fires/ignores` fixture."""
    problems: list[Problem] = []
    for directory in roots:
        for path in _test_files(directory):
            lines = path.read_text(encoding="utf-8").splitlines()
            for block in annotated_blocks(lines, path):
                for sig_id in block.ids:
                    sig = signatures.get(sig_id)
                    where = f"{path}:{block.first_line}"
                    if sig is None:
                        problems.append(Problem(where, sig_id, "no signature has this id"))
                    elif _fired(sig, _text_source(block.lines)) != block.expect_fire:
                        verb = (
                            "should have matched but did not"
                            if block.expect_fire
                            else ("matched a line marked ok")
                        )
                        problems.append(Problem(where, sig_id, f"{verb}: {block.lines[0][:160]}"))
    for sig in signatures.values():
        for fixture, expect in [(f, True) for f in sig.tests.fires] + [
            (f, False) for f in sig.tests.ignores
        ]:
            found = _resolve(fixture, sig.origin)
            if found is None:
                problems.append(Problem(str(sig.origin), sig.id, f"fixture {fixture} not found"))
                continue
            if _fired(sig, Source.from_path(found)) != expect:
                verb = "did not fire on" if expect else "fired on"
                problems.append(Problem(str(sig.origin), sig.id, f"{verb} {fixture}"))
    return problems


def _resolve(fixture: str, origin: Path) -> Path | None:
    """Fixture paths are relative to the repository (the patterns folder's parent)."""
    for base in (origin.parent.parent, origin.parent, Path.cwd()):
        if (base / fixture).is_file():
            return base / fixture
    return None


def _backtracks(pattern: Any) -> bool:
    for text in _ADVERSARIAL:
        try:
            pattern.search(text, timeout=_LINT_TIMEOUT_S)
        except TimeoutError:
            return True
    return False


def _compile_error(pattern: str) -> str | None:
    """Why a pattern does not compile (the shipped catalog compiles lazily, so
    lint is where a broken built-in pattern shows), or None."""
    try:
        regex.compile(pattern)
    except regex.error as exc:
        return str(exc)
    return None


def _template_error(template: str) -> str | None:
    """Why a title, explain or fix template would be shown unfilled, or None.

    Templates are `str.format` strings, filled leniently (findings.render): a
    `:` or `!` inside braces starts a format spec or conversion, so a fallback
    such as `{port|see: the log}`, or JSON written with single braces, would
    leave the whole text printed as written.
    """
    try:
        fields = [f for f in string.Formatter().parse(template) if f[1] is not None]
    except ValueError as error:
        return str(error)
    for _, name, spec, conversion in fields:
        if spec or conversion:
            return (
                f"placeholder {{{name}...}} holds `:` or `!`, which str.format reads as a "
                "format spec: the text would be shown unfilled (write literal braces as {{ }})"
            )
    return None


def lint(signatures: Mapping[str, Signature], roots: Iterable[Path]) -> list[Problem]:
    """Static checks of every signature: shape, tests present, safe regexes."""
    tested: set[str] = set()
    for directory in roots:
        for path in _test_files(directory):
            lines = path.read_text(encoding="utf-8").splitlines()
            for block in annotated_blocks(lines, path):
                if block.expect_fire:
                    tested.update(block.ids)
    problems = []
    for sig in signatures.values():
        where = str(sig.origin)

        def problem(message: str, sig_id: str = sig.id, where: str = where) -> None:
            problems.append(Problem(where, sig_id, message))

        if not _ID_SHAPE.fullmatch(sig.id):
            problem("id must look like `category/short-name` (lower case, digits, dashes)")
        elif sig.id.split("/")[0] != sig.category:
            problem(f"id must start with its category `{sig.category}/`")
        if sig.id not in tested and not sig.tests.fires:
            problem("no test: add a `# ruleid:` block in patterns/tests/ or tests.fires")
        if not sig.fix:
            problem("no fix text")
        for template in (sig.title, sig.explain, *sig.fix):
            if error := _template_error(template):
                problem(f"template `{template[:60]}`: {error}")
        for what, pattern in (("frame", sig.frame), ("path", sig.path)):
            if pattern is not None and (error := _compile_error(pattern.pattern)):
                problem(f"match.{what} is not a valid regex: {error}")
        for what, pattern in (("message", sig.message), ("exception", sig.exception)):
            if pattern is None:
                continue
            if error := _compile_error(pattern.pattern):
                problem(f"match.{what} is not a valid regex: {error}")
            elif _NESTED_QUANTIFIER.search(pattern.pattern):
                problem(f"match.{what} nests quantifiers, which can backtrack catastrophically")
            elif _backtracks(pattern):
                problem(f"match.{what} takes over {_LINT_TIMEOUT_S}s on adversarial input")
    return problems
