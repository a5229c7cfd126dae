"""Wrappers around vLLM lines are peeled off and kept."""

from __future__ import annotations

import pytest

from vlogscope.envelope import strip_escapes, unwrap
from vlogscope.source import PhysicalLine

INNER = "(APIServer pid=8707) INFO 08-19 18:34:30 [api_server.py:1] ok"


@pytest.mark.parametrize(
    "wrapped",
    [
        f"2025-08-19T18:34:30.123456789Z {INNER}",
        f"2025-08-19T18:34:30+02:00 {INNER}",
        f"Aug 19 18:34:30 gpu-node-7 vllm[8707]: {INNER}",
        f"авг 19 18:34:30 llm python3[8707]: {INNER}",
        f"août 19 18:34:30 llm python3[8707]: {INNER}",
        f"Okt. 19 18:34:30 llm python3[8707]: {INNER}",
        f"8月 19 18:34:30 llm python3[8707]: {INNER}",
        f"vllm-1  | {INNER}",
        f"vllm-openai-1 | {INNER}",
        f"[2025-08-19T18:34:30Z] {INNER}",
        f"2025-08-19 18:34:30 {INNER}",
        f"2025-08-19 18:34:30,123 {INNER}",
        "\x1b[1;36m(APIServer pid=8707)\x1b[0;0m \x1b[32mINFO\x1b[0m 08-19 18:34:30 [api_server.py:1] ok",
        f"\x1b_bk;t=1700000000000\x07{INNER}",
    ],
)
def test_wrappers_and_colours_are_removed(wrapped: str) -> None:
    assert unwrap(PhysicalLine(1, wrapped)).text == INNER


def test_what_was_removed_is_kept_as_the_wrapper() -> None:
    line = unwrap(PhysicalLine(4, f"vllm-1  | {INNER}"))
    assert (line.number, line.wrapper) == (4, "vllm-1  | ")


def test_ray_deduplication_suffix_is_removed() -> None:
    text = "(RayWorkerWrapper pid=2, ip=10.0.0.2) INFO 01-01 00:00:00 [a.py:1] m [repeated 7x across cluster]"
    assert unwrap(PhysicalLine(1, text)).text.endswith("[a.py:1] m")


def test_osc_hyperlinks_and_screen_clears_are_neutralised() -> None:
    text = "\x1b]8;;http://evil\x07click\x1b]8;;\x07 \x1b[2J\x1b[Hdone"
    assert strip_escapes(text) == "click done"


def test_plain_vllm_lines_pass_unchanged() -> None:
    for text in (INNER, '  File "/x.py", line 1, in f', "Traceback (most recent call last):", ""):
        assert unwrap(PhysicalLine(1, text)).text == text


def test_json_formatter_records_become_text_records_with_their_exception() -> None:
    import json

    from vlogscope.records import classify

    record = {
        "asctime": "2025-05-14 09:10:07,123",
        "levelname": "ERROR",
        "name": "vllm.v1.engine.core",
        "processName": "EngineCore_DP0",
        "process": 975,
        "message": "EngineCore failed to start.",
        "exc_info": 'Traceback (most recent call last):\n  File "x.py", line 1, in f\nValueError: No valid attention backend found for cuda',
    }
    line = unwrap(PhysicalLine(1, json.dumps(record)))
    fields = classify(line.text)
    assert (fields.kind, fields.process, fields.pid, fields.level, fields.time) == (
        "vllm",
        "EngineCore_DP0",
        975,
        "ERROR",
        "05-14 09:10:07",
    )
    assert fields.message.endswith("| ValueError: No valid attention backend found for cuda")
    assert line.wrapper.startswith("{")


def test_json_that_is_not_a_log_record_is_left_alone() -> None:
    text = '{"asctime": 1, "other": 2}'
    assert unwrap(PhysicalLine(1, text)).text == text


def test_colours_in_caret_notation_are_removed() -> None:
    line = unwrap(
        PhysicalLine(1, "^[[1;36m(APIServer pid=6)^[[0;0m INFO 08-22 21:36:14 [a.py:1] x")
    )
    assert line.text == "(APIServer pid=6) INFO 08-22 21:36:14 [a.py:1] x"


@pytest.mark.parametrize(
    ("wrapped", "inner"),
    [
        (
            "FAILED tests/test_vllm_client_server.py::TestServer::test_generate - "
            "ImportError: vLLM is not installed.",
            "ImportError: vLLM is not installed.",
        ),
        (
            "ERROR tests/v1/test_async_llm_dp.py::test_load[ray-2] - RuntimeError: "
            "Engine core initialization failed.",
            "RuntimeError: Engine core initialization failed.",
        ),
        (
            "E       torch.OutOfMemoryError: CUDA out of memory.",
            "torch.OutOfMemoryError: CUDA out of memory.",
        ),
    ],
)
def test_pytest_summary_and_failure_gutters_are_removed(wrapped: str, inner: str) -> None:
    """CI logs of projects that test with vLLM show its exceptions through pytest."""
    assert unwrap(PhysicalLine(1, wrapped)).text == inner


def test_vllm_error_records_are_not_mistaken_for_pytest_lines() -> None:
    record = "ERROR 05-14 09:10:07 [core.py:708] EngineCore failed to start."
    assert unwrap(PhysicalLine(1, record)).text == record
    assert unwrap(PhysicalLine(1, "E")).text == "E"


def test_a_plain_time_stamp_before_a_traceback_line_keeps_its_indentation() -> None:
    frame = '  File "/venv/urllib3/connectionpool.py", line 467, in _make_request'
    assert unwrap(PhysicalLine(1, f"2023-11-29 11:34:19 {frame}")).text == frame
    # TensorFlow's own lines carry a time stamp that is part of them, not a wrapper.
    tf = "2024-09-23 17:49:44.893334: I tensorflow/core/util/port.cc:153] oneDNN custom operations"
    assert unwrap(PhysicalLine(1, tf)).text == tf
