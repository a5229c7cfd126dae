"""Accuracy against labelled logs: how often the root cause names the right category.

A labelled corpus is a folder of logs with a `labels.tsv` (columns `file`,
`category`, `confidence`, ...); `category` is a taxonomy id or `healthy`,
and may list several acceptable ids joined by `|`.  The predicted label of
a log is its root cause's category; without an error finding, its most
important warning's category (preemption, rejected requests); else
`healthy`, or `no-vllm-lines`.

Examples:
    >>> Outcome("a.log", ("cuda-oom",), "high", "cuda-oom", None).correct
    True
    >>> summarize([Outcome("a.log", ("healthy",), "high", "cuda-oom", None)]).overall
    (0, 1)
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from vlogscope.pipeline import Verdict, analyze
from vlogscope.signatures import Severity, Signature, load_signatures
from vlogscope.source import Source


@dataclass(frozen=True, slots=True)
class Outcome:
    file: str
    expected: tuple[str, ...]
    confidence: str
    predicted: str
    error: str | None  # a crash of the pipeline, which always counts as wrong

    @property
    def correct(self) -> bool:
        return self.error is None and self.predicted in self.expected


@dataclass(frozen=True)
class Summary:
    per_category: Mapping[str, tuple[int, int]]  # category -> (correct, total)
    overall: tuple[int, int]

    def table(self) -> str:
        rows = [f"{'category':<30} {'correct':>7} {'total':>5} {'acc':>6}"]
        for category, (ok, total) in sorted(self.per_category.items()):
            rows.append(f"{category:<30} {ok:>7} {total:>5} {ok / total:>6.0%}")
        ok, total = self.overall
        rows.append(f"{'OVERALL':<30} {ok:>7} {total:>5} {ok / max(total, 1):>6.0%}")
        return "\n".join(rows)


def predicted_label(source: Source, signatures: Mapping[str, Signature]) -> str:
    diagnosis = analyze(source, signatures)
    root = diagnosis.root_cause
    if root is not None:
        return root.category
    warnings = [f for f in diagnosis.findings if f.severity is Severity.WARNING]
    if warnings:  # not a failure, but what is wrong with the run
        return warnings[0].category
    return "no-vllm-lines" if diagnosis.verdict is Verdict.NOT_VLLM else "healthy"


def evaluate(corpus: Path, signatures: Mapping[str, Signature] | None = None) -> list[Outcome]:
    sigs = signatures if signatures is not None else load_signatures()
    outcomes = []
    with (corpus / "labels.tsv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            path = corpus / row["file"]
            expected = tuple(row["category"].split("|"))
            try:
                label, error = predicted_label(Source.from_path(path), sigs), None
            except Exception as exc:  # a crash is a result here, not a reason to stop
                label, error = "crash", f"{type(exc).__name__}: {exc}"
            outcomes.append(Outcome(row["file"], expected, row["confidence"], label, error))
    return outcomes


def summarize(outcomes: Iterable[Outcome]) -> Summary:
    per: dict[str, tuple[int, int]] = {}
    ok_all = total_all = 0
    for o in outcomes:
        key = o.expected[0]
        ok, total = per.get(key, (0, 0))
        per[key] = (ok + o.correct, total + 1)
        ok_all += o.correct
        total_all += 1
    return Summary(per, (ok_all, total_all))
