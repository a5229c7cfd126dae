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


def _assert_same_without_messages(path: Path, jobs: int = 1) -> None:
    """`read(messages=False)`: the same frames, and a message on exactly the
    events that are not routine lines, which `text()` reads back from the file."""
    full = vlogscope.read(path, year=2025)
    lean = vlogscope.read(path, year=2025, messages=False, jobs=jobs)
    for name in FRAMES:
        if name == "events":
            continue
        pd.testing.assert_frame_equal(
            getattr(lean, name), getattr(full, name), obj=f"{path.name}: {name}"
        )
    events = full.events
    pd.testing.assert_frame_equal(
        lean.events.drop(columns="message"), events.drop(columns="message"), obj=path.name
    )
    objects = {e.line for e in full.diagnosis.events if e.columns is None}
    kept = lean.events["message"].notna()
    assert (kept == events["line"].isin(objects)).all()
    assert (lean.events["message"][kept] == events["message"][kept]).all()
    routine = events.loc[~kept, ["line", "message"]].head(50)
    if len(routine):
        text = lean.text(routine["line"])
        assert all(m in t for m, t in zip(routine["message"], text, strict=True))


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_without_messages_the_frames_are_the_same(path: Path) -> None:
    _assert_same_without_messages(path)


@needs_genlog
def test_without_messages_the_frames_are_the_same_in_parallel(tmp_path: Path) -> None:
    path = tmp_path / "gen.log"
    path.write_bytes(generated_log(40000, 3, "kv-fp8-mla"))
    _assert_same_without_messages(path, jobs=2)


def test_without_messages_needs_a_file_to_read_text_back() -> None:
    with pytest.raises(ValueError, match="needs a file"):
        vlogscope.read(["INFO 07-07 20:12:40 api_server.py:1] vLLM API server version 0.5.0"],
                       messages=False)  # fmt: skip
    log = vlogscope.read(["INFO 07-07 20:12:40 api_server.py:1] vLLM API server version 0.5.0"])
    with pytest.raises(ValueError, match="not read from one"):
        log.text([1])


def test_text_reads_lines_back_as_written(tmp_path: Path) -> None:
    path = tmp_path / "vllm.log"
    path.write_text("INFO 07-07 20:12:40 api_server.py:1] vLLM API server version 0.5.0\nplain\n")
    log = vlogscope.read(path, messages=False)
    text = log.text([2, 1, 2])
    assert text.to_dict() == {
        1: "INFO 07-07 20:12:40 api_server.py:1] vLLM API server version 0.5.0",
        2: "plain",
    }
