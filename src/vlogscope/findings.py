"""Stage 6 — findings: signature matches become findings, then one root cause.

A failed launch prints its cause once per rank, then a cascade of symptoms
(`WorkerProc initialization failed`, `Engine core initialization failed.
See root cause above`).  This stage groups the matches of each signature
into one finding (so the same error on eight ranks says "8/8 ranks"), fills
the explanation and fix templates with captures and facts, and ranks:
exactly one error finding is the root cause — causes before symptoms, more
specific signatures before generic ones, earlier before later — and every
other error finding is linked under it as a symptom.

Examples:
    >>> render("KV cache holds {tokens} tokens; max_model_len is {max_model_len}",
    ...        {"tokens": "12,288"}, {"max_model_len": 32768})
    'KV cache holds 12,288 tokens; max_model_len is 32768'
    >>> render("{missing} stays readable", {}, {})
    '(unknown missing) stays readable'
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from vlogscope.capacity import derive
from vlogscope.facts import WORKER_PREFIXES, Facts
from vlogscope.reprs import PyValue
from vlogscope.signatures import Match, Role, Severity

MAX_EVIDENCE = 4


@dataclass(frozen=True, slots=True)
class Evidence:
    line: int
    text: str
    process: str | None = None
    note: str = ""  # what this line proves, when the line alone does not say


@dataclass(frozen=True)
class Finding:
    """What went wrong, why, how to fix it, and the lines that prove it."""

    id: str
    category: str
    severity: Severity
    title: str
    explanation: str
    fix: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    confidence: float
    role: Role = Role.CAUSE
    priority: int = 50
    references: tuple[str, ...] = ()
    processes: tuple[str, ...] = ()
    ranks: str | None = None  # "8/8 ranks" when the same error came from several ranks
    root_cause: bool = False
    symptom_of: str | None = None
    symptoms: tuple[str, ...] = ()

    @property
    def line(self) -> int:
        return min((e.line for e in self.evidence), default=0)


class _Lenient(string.Formatter):
    """Fills `{name}` from captures, then facts; a missing name reads as unknown.

    `{name|text}` reads `text` when the log does not say `name` (an excerpt
    without the line that states it, or a pattern group that did not take part
    in the match): a template can say what it means then.

    A name is only ever looked up, never taken apart: `.` and `[` in a fallback
    (`{limit|the default is 0.9}`) are text, not attribute or index access.
    `:` and `!` still start a format spec or conversion (`patterns lint` says so).

    Examples:
        >>> render("head size {size|unknown}", {"size": ""}, {})
        'head size unknown'
        >>> render("head size {size}", {"size": ""}, {})
        'head size '
        >>> render("utilization {u|the default is 0.9}", {}, {})
        'utilization the default is 0.9'
    """

    def __init__(self, captures: Mapping[str, str], facts: Mapping[str, PyValue]) -> None:
        self.captures, self.facts = captures, facts

    def get_field(
        self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> tuple[Any, str]:
        return self.get_value(field_name, args, kwargs), field_name

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        name, bar, fallback = str(key).partition("|")
        if name in self.captures and (self.captures[name] or not bar):
            return self.captures[name]
        if self.facts.get(name) is not None:
            return self.facts[name]
        return fallback if bar else f"(unknown {name})"


def render(template: str, captures: Mapping[str, str], facts: Mapping[str, PyValue]) -> str:
    try:
        return _Lenient(captures, facts).vformat(template, (), {})
    except (ValueError, IndexError, KeyError, AttributeError):
        return template  # a malformed template is shown as written, never fatal


def _process_label(match: Match) -> str | None:
    event = match.event
    if event.process is None and event.pid is None:
        return None
    return f"{event.process or 'pid'} pid={event.pid}" if event.pid is not None else event.process


def _rank_summary(matches: Sequence[Match], facts: Facts) -> str | None:
    """ "8/8 ranks": distinct worker processes (by pid) that hit this, out of the world size."""
    workers = {
        m.event.pid if m.event.pid is not None else m.event.process
        for m in matches
        if (m.event.process or "").startswith(WORKER_PREFIXES)
    }
    if len(workers) < 2:
        return None
    total = max(
        len(workers),
        int(str(facts.value("worker_processes", 0) or 0)),
        _world_size(facts),
    )
    return f"{len(workers)}/{total} ranks"


def _world_size(facts: Facts) -> int:
    size = 1
    for name in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = facts.value(name)
        if isinstance(value, int):
            size *= value
    return size


def _fixes(
    templates: Sequence[str], captures: Mapping[str, str], facts: Mapping[str, PyValue]
) -> tuple[str, ...]:
    """Rendered fixes; one whose numbers the log does not give is left out, not shown vague."""
    rendered = [render(t, captures, facts) for t in templates]
    known = tuple(f for f in rendered if "(unknown " not in f)
    return known or tuple(rendered)


def _ending(match: Match) -> dict[str, str]:
    """`{raised}` and `{ending}`: how the matched traceback ends, for signatures that
    guess from where it ran (a frame, a path).  They speak for tracebacks cut off
    before their exception line, and for those whose exception no signature knows."""
    if not match.event.exceptions:
        return {
            "raised": "the error line is not in the log",
            "ending": "and the log ends before its exception line",
        }
    exc = match.event.exceptions[-1]
    shown = str(exc).partition("\n")[0][:200]
    return {
        "raised": f"an unrecognised {exc.type}",
        "ending": f"and ends in `{shown}` (line {exc.line}), which no signature recognises",
    }


def from_matches(matches: Iterable[Match], facts: Facts) -> list[Finding]:
    """One finding per signature, its evidence the distinct matched lines."""
    grouped: dict[str, list[Match]] = {}
    for match in matches:
        grouped.setdefault(match.signature.id, []).append(match)
    fact_values = facts.as_dict()
    findings = []
    for group in grouped.values():
        group.sort(key=lambda m: m.line)
        sig, first = group[0].signature, group[0]
        evidence: list[Evidence] = []
        seen_texts: set[str] = set()
        for m in group:
            if m.text not in seen_texts and len(evidence) < MAX_EVIDENCE:
                seen_texts.add(m.text)
                evidence.append(Evidence(m.line, m.text, _process_label(m)))
        processes = tuple(dict.fromkeys(p for m in group if (p := _process_label(m))))
        # A named group that did not take part in the match reads as empty text.
        optional = dict.fromkeys(sig.message.groupindex, "") if sig.message is not None else {}
        # `{text}` stands inside a sentence: the matched line, not a multi-line exception
        # message, and without the indentation and column padding of the log (the
        # evidence keeps all of it as printed).
        text = " ".join(first.text.partition("\n")[0].split())[:300]
        captures = {
            **optional,
            **_ending(first),
            **first.captures,
            "line": str(first.line),
            "text": text,
        }
        captures.update(derive(captures, fact_values))
        findings.append(
            Finding(
                id=sig.id,
                category=sig.category,
                severity=sig.severity,
                title=render(sig.title, captures, fact_values),
                explanation=render(sig.explain, captures, fact_values),
                fix=_fixes(sig.fix, captures, fact_values),
                evidence=tuple(evidence),
                confidence=sig.confidence,
                role=sig.role,
                priority=sig.priority,
                references=sig.references,
                processes=processes,
                ranks=_rank_summary(group, facts),
            )
        )
    return findings


def _by_importance(f: Finding) -> tuple[bool, int, int]:
    return f.severity is not Severity.WARNING, -f.priority, f.line


def rank(findings: Iterable[Finding]) -> list[Finding]:
    """Mark exactly one error finding as root cause; link the other errors to it.

    Order of the result: root cause, its symptoms, then warnings and infos.
    """
    items = list(findings)
    errors = [f for f in items if f.severity is Severity.ERROR]
    if not errors:
        return sorted(items, key=_by_importance)
    root = min(errors, key=lambda f: (f.role is not Role.CAUSE, -f.priority, f.line))
    symptoms = sorted((f for f in errors if f is not root), key=lambda f: f.line)
    root = replace(
        root,
        root_cause=True,
        symptoms=tuple(f"line {s.line}: {s.title}" for s in symptoms),
    )
    linked = [replace(s, symptom_of=root.id) for s in symptoms]
    rest = sorted((f for f in items if f.severity is not Severity.ERROR), key=_by_importance)
    return [root, *linked, *rest]
