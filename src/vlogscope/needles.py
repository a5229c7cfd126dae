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
from typing import Any

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


def present_needles(every_needle: Needles, text: str) -> Needles:
    """Which of many signatures' needles occur in `text`: one pass for all of
    them, after which each signature's test is a set intersection."""
    return frozenset(n for n in every_needle if n in text)


def may_match_present(needles: Needles | None, present: Needles) -> bool:
    """`may_match`, given `present_needles` of the same text."""
    return needles is None or not needles.isdisjoint(present)
