"""The history of vLLM's engine arguments: the shipped data and the script that builds it."""

from __future__ import annotations

import importlib.util
import json
from importlib import resources
from types import ModuleType

from support import ROOT
from vlogscope.engine_args import argument_history, release


def _script() -> ModuleType:
    path = ROOT / "scripts" / "engine_args_history.py"
    spec = importlib.util.spec_from_file_location("engine_args_history", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_reads_both_classes_fields_from_arg_utils() -> None:
    source = (
        "from dataclasses import dataclass\n"
        "@dataclass\nclass EngineArgs:\n    model: str\n    seed: int = 0\n    def f(self): x: int = 1\n"
        "@dataclass\nclass AsyncEngineArgs(EngineArgs):\n    disable_log_requests: bool = False\n"
        "class Other:\n    model: str\n"
    )
    assert _script().fields_of(source) == {
        "EngineArgs": {"model", "seed"},
        "AsyncEngineArgs": {"disable_log_requests"},
    }


def test_the_script_joins_consecutive_releases_into_runs() -> None:
    versions = ["0.1", "0.2", "0.3", "0.4", "0.5"]
    runs = _script().runs([True, True, False, True, True], versions)
    assert runs == [["0.1", "0.2"], ["0.4", "0.5"]]


def test_the_shipped_history_is_ordered_and_names_only_known_releases() -> None:
    data = json.loads((resources.files("vlogscope") / "data" / "engine_args.json").read_text())
    releases = data["releases"]
    assert releases == sorted(releases, key=release) and len(releases) > 90
    for table in ("EngineArgs", "AsyncEngineArgs"):
        for name, spans in data[table].items():
            for first, last in spans:
                assert releases.index(first) <= releases.index(last), name


def test_an_argument_that_left_and_came_back_is_held_only_in_its_runs() -> None:
    history = argument_history("model")
    assert history is not None and history.current and history.held_by(release("0.6.3"))
    gone = argument_history("max_log_len")  # AsyncEngineArgs only, 0.2.0 to 0.5.2
    assert gone is not None and not gone.current
    assert gone.held_by((0, 4, 0)) and not gone.held_by((0, 6, 0))
    assert argument_history("max_log_len", asynchronous=False) is None
