"""Literal prefilters for signature regexes: skip a search that cannot match.

A long log repeats thousands of distinct WARNING lines, and each is tried by
every signature; a regex search costs microseconds even when it fails on the
first character it needs.  Most message patterns need some literal text
(`No valid attention backend`, `KV cache`), so a plain substring test, which
runs at memchr speed, answers "cannot match" first.

`required_literals(pattern)` reads the pattern's syntax tree (the standard
library's own regex parser, which reads the `regex` package's common syntax)
and returns literals such that every match contains at least one of them, or
None when it cannot promise that (case-insensitive parts, a syntax the
standard parser does not know, no literal of useful length).  None costs
nothing: the signature is simply always searched.  `tests/test_needles.py`
proves the promise on every line of the fixtures and corpora.

Examples:
    >>> sorted(required_literals(r"No valid attention backend (?:found|for) (\\w+)"))
    ['No valid attention backend fo']
    >>> sorted(required_literals(r"(?:CUDA out of memory|OutOfMemoryError)"))
    ['CUDA out of memory', 'OutOfMemoryError']
    >>> required_literals(r"(?i)out of memory") is None
    True
"""

from __future__ import annotations

import importlib
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

# The standard library's regex parser: no public name, but stable since 3.11
# (re/_parser.py).  Anything it cannot read just gets no prefilter.
_parser: Any = importlib.import_module("re._parser")

# A literal shorter than this filters too little to be worth a test.
MIN_NEEDLE = 3
# Syntax that both parsers accept but read differently: the regex package's POSIX
# classes (`[[:alpha:]]`) and fuzzy constraints (`{e<=1}`) are literal text to re.
_REGEX_ONLY = re.compile(r"(?<!\\)(?:\[:|\{[^}0-9,])")
# The regex package lets alternatives reuse a group name (`(?P<backend>A)|(?P<backend>B)`),
# which re refuses; names do not matter for literals, so groups lose them first.
_GROUP_NAME = re.compile(r"(?<!\\)\(\?P?<(?![=!])\w+>")
_BACKREF = re.compile(r"(?<!\\)\(\?P=\w+\)")

Needles = frozenset[str]
T = TypeVar("T")


def required_literals(pattern: str) -> Needles | None:
    """Literals of which every match of `pattern` contains at least one, or None."""
    if _REGEX_ONLY.search(pattern):
        return None
    try:
        tree = _parser.parse(_BACKREF.sub("(?:)", _GROUP_NAME.sub("(", pattern)))
    except (re.error, RecursionError, OverflowError, ValueError):  # e.g. regex-only syntax
        return None
    if tree.state.flags & re.IGNORECASE:
        return None
    found = _sequence(list(tree.data))
    if found is None or min(len(s) for s in found) < MIN_NEEDLE:
        return None
    return found


def _sequence(items: list[tuple[Any, Any]]) -> Needles | None:
    """The best requirement of a sequence: each item must match, so any one
    item's requirement holds; the one whose shortest literal is longest wins."""
    options: list[Needles] = []
    run: list[str] = []
    for op, arg in items:
        if op is _parser.LITERAL:
            run.append(chr(arg))
            continue
        if run:
            options.append(frozenset(("".join(run),)))
            run = []
        found = _item(op, arg)
        if found is not None:
            options.append(found)
    if run:
        options.append(frozenset(("".join(run),)))
    if not options:
        return None
    return max(options, key=lambda s: (min(len(x) for x in s), -len(s)))


def _item(op: Any, arg: Any) -> Needles | None:
    """What one non-literal item of a sequence requires, if anything."""
    if op is _parser.SUBPATTERN:
        _group, add_flags, _del_flags, body = arg
        return None if add_flags & re.IGNORECASE else _sequence(list(body))
    if op is _parser.ATOMIC_GROUP:
        return _sequence(list(arg))
    if op is _parser.BRANCH:
        branches = [_sequence(list(b)) for b in arg[1]]
        if any(b is None for b in branches):
            return None
        return frozenset().union(*(b for b in branches if b is not None))
    if op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT, _parser.POSSESSIVE_REPEAT):
        low, _high, body = arg
        return _sequence(list(body)) if low >= 1 else None
    if op is _parser.ASSERT:  # a positive lookaround's text is in the line too
        _direction, body = arg
        return _sequence(list(body))
    return None


def may_match(needles: Needles | None, text: str) -> bool:
    """False only when `text` holds none of the needles, so the search cannot match."""
    return needles is None or any(n in text for n in needles)


class NeedleIndex(Generic[T]):
    """Items (signatures) filed under their needles, to find the few a text can match.

    Testing each of a catalog's ~450 needles against a message costs ~35 µs;
    a thousand distinct warnings in a long log pay that each time, and then
    every signature's intersection on top.  Every needle is at least
    `MIN_NEEDLE` characters long, so one occurs in a text only where the text
    holds its first three characters: the index reads the text's three-character
    substrings once, tests only the needles that start with one of them, and
    returns the items those needles (or no needles at all) were filed under,
    in their original order.  The answer is the same as testing every item
    with `may_match`; `tests/test_needles.py` checks that on every known log.

        >>> index = NeedleIndex([("oom", frozenset({"out of memory"})), ("any", None),
        ...                      ("kv", frozenset({"KV cache", "kv_cache"}))])
        >>> index.candidates("CUDA out of memory")
        ['oom', 'any']
        >>> sorted(index.present("the KV cache is full"))
        ['KV cache']
    """

    # Beyond this many characters (a long traceback) the substrings cost more
    # than testing each needle.
    LONG_TEXT = 4000

    def __init__(self, items: Sequence[tuple[T, Needles | None]]) -> None:
        self._items = [item for item, _ in items]
        self._always = [i for i, (_, needles) in enumerate(items) if needles is None]
        filed: dict[str, list[int]] = defaultdict(list)
        for i, (_, needles) in enumerate(items):
            for needle in needles or ():
                filed[needle].append(i)
        self._filed = dict(filed)
        by_head: dict[str, list[str]] = defaultdict(list)
        for needle in sorted(self._filed):
            by_head[needle[:MIN_NEEDLE]].append(needle)
        self._by_head = dict(by_head)
        self._heads = frozenset(self._by_head)

    def present(self, text: str) -> Needles:
        """Which of the filed needles occur in `text`."""
        if len(text) > self.LONG_TEXT:
            return frozenset(n for n in self._filed if n in text)
        last = len(text) - MIN_NEEDLE + 1
        heads = self._heads.intersection([text[i : i + MIN_NEEDLE] for i in range(last)])
        return frozenset(n for head in heads for n in self._by_head[head] if n in text)

    def candidates(self, text: str) -> list[T]:
        """The items that may match `text`: a needle of theirs occurs in it, or they have none."""
        return self.filed_under(self.present(text))

    def filed_under(self, present: Needles) -> list[T]:
        """`candidates` of a text whose `present` needles are already known."""
        chosen = set(self._always)
        for needle in present:
            chosen.update(self._filed[needle])
        return [self._items[i] for i in sorted(chosen)]
