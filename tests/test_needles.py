"""The literal prefilter never skips a search that would have matched."""

from __future__ import annotations

from pathlib import Path

import pytest
import regex

from support import FIXTURES, ROOT, corpus_logs
from vlogscope.needles import may_match, required_literals
from vlogscope.pipeline import read_events
from vlogscope.signatures import candidate_texts, load_signatures
from vlogscope.source import Source


@pytest.mark.parametrize(
    ("pattern", "needles"),
    [
        (r"No valid attention backend", {"No valid attention backend"}),
        (r"CUDA out of memory|OutOfMemoryError", {"CUDA out of memory", "OutOfMemoryError"}),
        # The longest requirement of a sequence wins; a lone optional part is no requirement.
        (r"(?:foo)?bar baz \d+", {"bar baz "}),
        (r"ab(?:cdef)+", {"cdef"}),
        (r"(?=.*use_mla=True).*Reasons: ", {"use_mla=True"}),  # a lookahead's text is there
        (r"(?=.*use_mla=True).*Reasons: (?!.*kv_cache_dtype)", {"use_mla=True"}),
        # The regex package allows a group name twice across alternatives.
        (r"(?P<b>Triton)MLA fails|FP8 (?P<b>Cutlass) MLA", {"MLA fails", "Cutlass"}),
        (r"x\{.*\} shape", {"} shape"}),  # escaped braces are text
        (r"\w+ failed|Engine", {" failed", "Engine"}),
    ],
)
def test_required_literals(pattern: str, needles: set[str]) -> None:
    assert required_literals(pattern) == needles


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?i)out of memory",  # case-insensitive: a substring test would be wrong
        r"(?i:out of memory)",
        r"ab|cd",  # too short to filter anything
        r"\w+ failed|\d+",  # one alternative requires nothing
        r"(?:out of memory){e<=1}",  # fuzzy matching: re reads the braces as text
        r"[[:alpha:]]+ failed",  # a POSIX class: re reads it as a set and a "]"
        r"\p{Lu}{3} failed",  # syntax re does not know
        r"(?|(a)|(b))",
    ],
)
def test_no_needles_when_no_promise_can_be_made(pattern: str) -> None:
    assert required_literals(pattern) is None
    regex.compile(pattern)  # all valid for the regex package itself


def test_may_match() -> None:
    assert may_match(None, "anything")
    assert may_match(frozenset({"KV cache", "OOM"}), "an OOM here")
    assert not may_match(frozenset({"KV cache", "OOM"}), "all is well")


def _logs() -> list[Path]:
    shipped = [
        *FIXTURES.glob("*.log"),
        *(ROOT / "patterns" / "tests").glob("*.log"),
        *(ROOT / "src" / "vlogscope" / "samples").glob("*.log"),
    ]
    return sorted(shipped) + corpus_logs()


def test_every_shipped_signature_has_needles() -> None:
    """A pattern the prefilter cannot read costs every WARNING line a search."""
    missing = [
        s.id for s in load_signatures().values() if s.message is not None and s.needles is None
    ]
    assert missing == []


def test_prefilter_agrees_with_the_regex_on_every_known_log() -> None:
    """Every text a message pattern matches holds one of its needles."""
    signatures = [s for s in load_signatures().values() if s.needles is not None]
    checked = 0
    for path in _logs():
        for event in read_events(Source.from_path(path)):
            for _line, text in candidate_texts(event):
                for sig in signatures:
                    if sig.message.search(text):
                        checked += 1
                        assert may_match(sig.needles, text), (sig.id, path.name, text)
    assert checked > 50
