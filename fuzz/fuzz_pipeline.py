#!/usr/bin/env python3
"""Coverage-guided fuzzing of the line grammar, the repr parser and the whole pipeline.

Run:  python fuzz/fuzz_pipeline.py -max_total_time=60 fuzz/corpus
(needs `pip install atheris`; the corpus folder is seeded from the fixture logs
on first run).  Any exception other than the documented ReprError is a bug.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from vlogscope.grammar import parse_line
    from vlogscope.pipeline import analyze
    from vlogscope.records import classify
    from vlogscope.reprs import ReprError, parse_config_fields, parse_value
    from vlogscope.signatures import load_signatures
    from vlogscope.source import Source

SIGNATURES = load_signatures()
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "logs"


def seed(corpus: Path) -> None:
    """One seed file per fixture line group, so the fuzzer starts from real vLLM text."""
    corpus.mkdir(parents=True, exist_ok=True)
    if any(corpus.iterdir()):
        return
    for i, path in enumerate(sorted(FIXTURES.glob("*.log"))):
        lines = path.read_bytes().splitlines(keepends=True)
        for j in range(0, len(lines), 40):
            (corpus / f"seed-{i}-{j}").write_bytes(b"".join(lines[j : j + 40]))


def test_one(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    first = text.split("\n", 1)[0].replace("\r", "")
    if classify(first) != parse_line(first):
        raise AssertionError(f"grammar and regex disagree on {first!r}")
    with contextlib.suppress(ReprError):
        parse_value(first)
    parse_config_fields(first)
    diagnosis = analyze(Source.from_stream("<fuzz>", io.BytesIO(data)), SIGNATURES)
    if sum(r.lines for r in diagnosis.runs) != diagnosis.lines:
        raise AssertionError("run line counts do not add up")


def main() -> None:
    corpus = next((Path(a) for a in sys.argv[1:] if not a.startswith("-")), None)
    if corpus is not None:
        seed(corpus)
    atheris.Setup(sys.argv, test_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
