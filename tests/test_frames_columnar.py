"""`vlogscope.read` builds routine rows from Arrow columns: the frames must be
exactly those of the object path (every line parsed into an Event)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import vlogscope
from support import FIXTURES, corpus_logs, generated_log, needs_genlog
from vlogscope.log import Log
from vlogscope.pipeline import analyze
from vlogscope.source import Source

LOGS = (
    sorted(FIXTURES.glob("*.log")) + sorted((FIXTURES / "variants").glob("*.log")) + corpus_logs()
)
FRAMES = ("events", "metrics", "timeline", "facts", "findings", "runs")


def _assert_same_frames(path: Path) -> None:
    reference = Log(analyze(Source.from_path(path)), 2025)
    columnar = vlogscope.read(path, year=2025)
    assert any(e.columns is not None for e in columnar.diagnosis.events) or not any(
        e.kind.value == "routine" for e in columnar.diagnosis.events
    )
    for name in FRAMES:
        pd.testing.assert_frame_equal(
            getattr(columnar, name), getattr(reference, name), obj=f"{path.name}: {name}"
        )


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_columnar_frames_equal_the_object_path(path: Path) -> None:
    _assert_same_frames(path)


@needs_genlog
@pytest.mark.parametrize("failure", ["kv-fp8-mla", "oom"])
def test_columnar_frames_equal_the_object_path_on_generated_logs(
    failure: str, tmp_path: Path
) -> None:
    path = tmp_path / "gen.log"
    path.write_bytes(generated_log(20000, 9, failure))
    _assert_same_frames(path)
