"""The literal prefilter never skips a search that would have matched."""

from __future__ import annotations

from pathlib import Path

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from support import FIXTURES, ROOT, corpus_logs
from vlogscope.needles import NeedleIndex, may_match, required_literals
from vlogscope.pipeline import _DIGITS, read_events, signature_index
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


def test_the_needle_index_finds_what_testing_every_signature_finds() -> None:
    """`NeedleIndex.candidates` is `may_match` over the whole catalog, in catalog
    order, on every text of every known log (short messages are read by their
    three-character heads) and on all of them joined (a text long enough to be
    tested needle by needle)."""
    signatures = list(load_signatures().values())
    index = signature_index(signatures)
    texts = [
        "\n".join(t for _, t in candidate_texts(event))
        for path in _logs()
        for event in read_events(Source.from_path(path))
    ]
    texts.append("\n".join(texts))
    assert len(texts[-1]) > NeedleIndex.LONG_TEXT
    for text in texts:
        assert index.candidates(text) == [s for s in signatures if may_match(s.needles, text)]


@pytest.mark.parametrize(
    "text", ["", "ab", "abc", "zzabc", "KV", "KV cache", "xKV cachex", "no needle at all"]
)
def test_the_needle_index_on_short_texts(text: str) -> None:
    """Needles at either end of the text and texts shorter than a head."""
    filed = [("kv", frozenset({"KV cache"})), ("none", None), ("abc", frozenset({"abc"}))]
    index = NeedleIndex(filed)
    assert index.candidates(text) == [item for item, n in filed if may_match(n, text)]
    assert index.present(text) == frozenset(n for n in ("KV cache", "abc") if n in text)


@given(
    st.text(alphabet="ab9 0", max_size=12),
    st.text(alphabet="ab9 0", min_size=1, max_size=6),
    st.text(alphabet="ab9 0", max_size=12),
)
def test_a_needle_in_a_message_is_in_its_folded_shape(before: str, needle: str, after: str) -> None:
    """`RunBuilder` skips the test for needles with digits on a message whose shape
    (digit runs folded to 0) holds none of them folded: sound only if folding
    keeps every occurrence."""
    message = before + needle + after
    assert _DIGITS.sub("0", needle) in _DIGITS.sub("0", message)
