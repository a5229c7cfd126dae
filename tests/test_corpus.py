"""Accuracy over the labelled development corpora in ../shared (skipped when absent).

The figures are printed in the test summary; the assertions hold what must
never regress: no crash, no error finding on a healthy log, no log called
healthy when it has an error record.
"""

from __future__ import annotations

import re
import string
import subprocess
import sys
from pathlib import Path

import pytest

from support import ACCURACY_REPORT, CORPORA, HOLDOUT, ROOT
from vlogscope.evaluate import evaluate, summarize
from vlogscope.findings import Finding
from vlogscope.signatures import load_signatures
from vlogscope.source import Source

# A placeholder left unfilled in a title: `{name}` or `{name|fallback}` (not a JSON value).
_PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*(?:\|[^{}]*)?\}")
_SIGNATURES = load_signatures()


def _unfilled(f: Finding) -> list[str]:
    """What a finding's texts show of placeholders the log did not fill: `(unknown name)`
    for a name its signature's templates use (a log may say "(unknown location)" itself),
    or a `{name}` left in the title."""
    text = " ".join([f.title, f.explanation, *f.fix])
    sig = _SIGNATURES.get(f.id)
    templates = [sig.title, sig.explain, *sig.fix] if sig is not None else []
    names = {
        field.partition("|")[0]
        for template in templates
        for _, field, _, _ in string.Formatter().parse(template)
        if field
    }
    found = [f"(unknown {name})" for name in sorted(names) if f"(unknown {name})" in text]
    return found + _PLACEHOLDER.findall(f.title)


PRESENT = [c for c in CORPORA if (c / "labels.tsv").exists()]


@pytest.mark.corpus
@pytest.mark.skipif(not PRESENT, reason="../shared/corpus* not present")
@pytest.mark.parametrize("corpus", PRESENT, ids=[c.name for c in PRESENT])
def test_corpus_accuracy_is_measured_and_nothing_crashes(corpus: Path) -> None:
    outcomes = evaluate(corpus)
    assert [o for o in outcomes if o.error] == []
    confident = [o for o in outcomes if o.confidence in ("high", "medium")]
    ACCURACY_REPORT.append(f"== {corpus.name}: high+medium confidence ({len(confident)} logs)")
    ACCURACY_REPORT.append(summarize(confident).table())
    ACCURACY_REPORT.append(f"== {corpus.name}: all ({len(outcomes)} logs)")
    ACCURACY_REPORT.append(summarize(outcomes).table())
    healthy_called_failed = [
        o.file
        for o in outcomes
        if o.expected == ("healthy",) and o.predicted != "healthy" and o.confidence == "high"
    ]
    assert healthy_called_failed == []


NOT_FAILURES = {"context-length-exceeded", "preemption-kv-pressure"}


@pytest.mark.corpus
@pytest.mark.parametrize("holdout", HOLDOUT, ids=[f"holdout-{c.name}" for c in HOLDOUT])
def test_held_out_logs_are_measured_and_nothing_crashes(holdout: Path) -> None:
    """The sets in bench/holdout ship with the repository, so this runs everywhere."""
    outcomes = evaluate(holdout)
    assert outcomes, f"{holdout}/labels.tsv lists no logs"  # sets hold what a collector found
    assert [o for o in outcomes if o.error] == []
    ACCURACY_REPORT.append(f"== holdout {holdout.name} ({len(outcomes)} logs)")
    ACCURACY_REPORT.append(summarize(outcomes).table())
    # As for the corpus: a run labelled healthy with high confidence is never called failed
    # (an excerpt that stops mid-start-up is, by DESIGN §5, a finding of its own), and
    # no failed run is ever called healthy.
    healthy_called_failed = [
        o.file
        for o in outcomes
        if o.expected == ("healthy",) and not o.correct and o.confidence == "high"
    ]
    assert healthy_called_failed == []
    # A rejected request or a preempted one is a warning about a run that served: a
    # miss there is a wrong category, not a failed run called healthy.
    failed_called_healthy = [
        o.file
        for o in outcomes
        if o.predicted == "healthy" and not o.correct and not set(o.expected) <= NOT_FAILURES
    ]
    assert failed_called_healthy == []


def _lines_in(path: Path) -> int:
    """The physical lines of a log: one per `\\n`, and more where a carriage return (or
    its caret notation `^M`) separates lines that a redraw does not explain."""
    data = path.read_bytes()
    newlines = data.count(b"\n") + (not data.endswith(b"\n"))
    yielded = sum(1 for _ in Source.from_path(path).lines())
    if b"\r" not in data and b"^M" not in data:
        assert yielded == newlines, path
    return yielded


@pytest.mark.corpus
@pytest.mark.skipif(not PRESENT, reason="../shared/corpus* not present")
def test_every_corpus_log_reads_into_frames_with_all_lines_accounted() -> None:
    import vlogscope

    for corpus in PRESENT:
        for path in sorted(corpus.glob("*.log")):
            log = vlogscope.read(path, year=2025)
            assert log.events["lines"].sum() == _lines_in(path), path
            for frame in (log.metrics, log.timeline, log.facts, log.findings, log.runs):
                assert frame is not None


def test_no_finding_shows_an_unfilled_placeholder() -> None:
    from support import FIXTURES, corpus_logs
    from vlogscope.pipeline import analyze
    from vlogscope.source import Source

    logs = (
        sorted(FIXTURES.glob("*.log"))
        + sorted((FIXTURES / "variants").glob("*.log"))
        + corpus_logs()
    )
    for path in logs:
        for f in analyze(Source.from_path(path)).findings:
            assert _unfilled(f) == [], (path.name, f.id)


@pytest.mark.corpus
@pytest.mark.parametrize("holdout", HOLDOUT, ids=[f"holdout-{c.name}" for c in HOLDOUT])
def test_held_out_logs_read_into_frames_and_fill_every_placeholder(holdout: Path) -> None:
    """Real logs of every shape: all lines accounted, frames built, no `(unknown x)` text."""
    import vlogscope

    for path in sorted(holdout.glob("*.log")):
        log = vlogscope.read(path, year=2025)
        assert log.events["lines"].sum() == _lines_in(path), path
        for frame in (log.metrics, log.timeline, log.facts, log.runs):
            assert frame is not None
        for f in log.diagnosis.findings:
            assert _unfilled(f) == [], (path.name, f.id)


def test_accuracy_script_prints_a_table_and_rejects_a_folder_without_labels(tmp_path: Path) -> None:
    """`bench/accuracy.py` is how the note's figures are made: it runs on a set, and a
    folder without labels is a one-line error with exit code 2, not a traceback."""
    script = ROOT / "bench" / "accuracy.py"
    small = min(HOLDOUT, key=lambda d: len((d / "labels.tsv").read_text(encoding="utf-8")))
    done = subprocess.run(
        [sys.executable, str(script), str(small)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    rows = sum(1 for _ in (small / "labels.tsv").open(encoding="utf-8")) - 1
    assert f"-- all confidence ({rows} logs)" in done.stdout
    assert "OVERALL" in done.stdout
    bad = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1].endswith("no labels.tsv in this folder")
