"""Shared test helpers: where fixtures and the shared development corpora live."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vlogscope.pipeline import Diagnosis, analyze
from vlogscope.source import Source

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "logs"
SHARED = ROOT.parent / "shared"
CORPORA = [SHARED / "corpus", SHARED / "corpus-generated"]
# Real logs collected after the catalog was written (bench/holdout/README.md).
HOLDOUT = sorted(p.parent for p in (ROOT / "bench" / "holdout").glob("*/labels.tsv"))
GENLOG = SHARED / "bench" / "genlog.py"

# Filled by tests/test_corpus.py, printed by conftest.py at the end of the run.
ACCURACY_REPORT: list[str] = []


def fixture(name: str) -> Path:
    path = FIXTURES / name
    assert path.exists(), f"missing fixture {name}"
    return path


def diagnose_text(text: str) -> Diagnosis:
    """The diagnosis of a log given as text, as if read from a pipe."""
    return analyze(Source.from_stream("<t>", io.BytesIO(text.encode())))


def vlogscope_command() -> list[str]:
    """The installed console script, as a user would run it."""
    exe = shutil.which("vlogscope", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the vlogscope console script is not installed in this environment")
    return [exe]


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*vlogscope_command(), *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


def corpus_logs() -> list[Path]:
    return sorted(p for c in CORPORA if c.is_dir() for p in c.glob("*.log"))


needs_genlog = pytest.mark.skipif(not GENLOG.exists(), reason="shared/bench/genlog.py not present")


def generated_log(lines: int, seed: int, failure: str) -> bytes:
    """Bytes of a log from the shared deterministic generator."""
    command = [sys.executable, str(GENLOG), "--lines", str(lines), "--seed", str(seed)]
    return subprocess.run([*command, "--failure", failure], capture_output=True, check=True).stdout
