#!/usr/bin/env python3
"""Print top-1 accuracy per category over the labelled development corpora.

Usage: python bench/accuracy.py [CORPUS_DIR ...]
       (default: ../shared/corpus* and the held-out sets in bench/holdout/*)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vlogscope.evaluate import evaluate, summarize

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description="Top-1 accuracy of the root cause per category over labelled log folders."
    )
    parser.add_argument(
        "corpus",
        nargs="*",
        type=Path,
        help="a folder with logs and a labels.tsv (default: ../shared/corpus* and bench/holdout/*)",
    )
    args = parser.parse_args(argv)
    dirs = args.corpus or [
        *sorted((ROOT.parent / "shared").glob("corpus*")),
        *sorted(p.parent for p in (ROOT / "bench" / "holdout").glob("*/labels.tsv")),
    ]
    for corpus in dirs:
        if not (corpus / "labels.tsv").is_file():
            parser.error(f"{corpus}: no labels.tsv in this folder")
    for corpus in dirs:
        outcomes = evaluate(corpus)
        print(f"== {corpus}")
        for level in ("high+medium", "all"):
            chosen = [o for o in outcomes if level == "all" or o.confidence in ("high", "medium")]
            print(f"-- {level} confidence ({len(chosen)} logs)")
            print(summarize(chosen).table())
        wrong = [o for o in outcomes if not o.correct]
        for o in wrong:
            print(
                f"   wrong: {o.file}: expected {'|'.join(o.expected)}, got {o.predicted}"
                + (f" ({o.error})" if o.error else "")
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
