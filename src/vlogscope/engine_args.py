"""Domain knowledge: which vLLM releases take which engine argument.

Training and serving frameworks build `EngineArgs(**kwargs)` themselves, so a
framework written for one vLLM release meets another release's `TypeError:
EngineArgs.__init__() got an unexpected keyword argument 'x'`.  The message
cannot say what the user must change; the argument's history can: removed
since (change the caller, or pin an older vLLM), added later (upgrade vLLM),
or held by the very release that refused it (a stale or mixed installation).

`data/engine_args.json` lists, per field of `EngineArgs` and `AsyncEngineArgs`,
the runs of releases that declare it; `scripts/engine_args_history.py` rebuilds
it from the releases' wheels on PyPI.

Examples:
    >>> h = argument_history("worker_use_ray")
    >>> h.first, h.last, h.current
    ('0.1.4', '0.6.6.post1', False)
    >>> h.held_by((0, 6, 3)), h.held_by((0, 8, 0))
    (True, False)
    >>> argument_history("no_such_argument") is None
    True
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

Release = tuple[int, int, int]


_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def release(text: object) -> Release | None:
    """The release line a version belongs to, or None for text that is no version.

    >>> release("0.16.0rc2.dev313+g662205d34"), release("0.6.1.post1"), release("unknown")
    ((0, 16, 0), (0, 6, 1), None)
    """
    m = _RELEASE.match(str(text)) if text is not None else None
    return (int(m[1]), int(m[2]), int(m[3] or 0)) if m else None


def _known(version: str) -> Release:
    """A release named by the shipped data, which holds only release numbers."""
    found = release(version)
    if found is None:
        raise ValueError(f"not a vLLM release: {version!r}")
    return found


@dataclass(frozen=True, slots=True)
class ArgumentHistory:
    """The releases that declare one engine argument, as runs of consecutive releases."""

    name: str
    spans: tuple[tuple[str, str], ...]  # (first, last) release of each run
    newest: str  # the newest release the data covers

    @property
    def first(self) -> str:
        return self.spans[0][0]

    @property
    def last(self) -> str:
        return self.spans[-1][1]

    @property
    def current(self) -> bool:
        """Still declared by the newest release the data knows."""
        return self.last == self.newest

    def held_by(self, version: Release) -> bool:
        return any(_known(a) <= version <= _known(b) for a, b in self.spans)

    def added_after(self, version: Release) -> bool:
        """Did the argument first appear in a release newer than `version`?"""
        return version < _known(self.first)

    def releases_text(self) -> str:
        """`0.5.5 to 0.10.0`, or several runs joined: where the argument exists."""
        return ", ".join(a if a == b else f"{a} to {b}" for a, b in self.spans)


@cache
def _history() -> dict[str, Any]:
    data = resources.files("vlogscope") / "data" / "engine_args.json"
    loaded: dict[str, Any] = json.loads(data.read_text(encoding="utf-8"))
    return loaded


def argument_history(name: str, asynchronous: bool = True) -> ArgumentHistory | None:
    """The history of engine argument `name`, or None if no release declares it.

    `asynchronous`: also the fields only `AsyncEngineArgs` has (the API server's).
    """
    history = _history()
    spans = history["EngineArgs"].get(name)
    if spans is None and asynchronous:
        spans = history["AsyncEngineArgs"].get(name)
    if spans is None:
        return None
    return ArgumentHistory(name, tuple((a, b) for a, b in spans), history["releases"][-1])
