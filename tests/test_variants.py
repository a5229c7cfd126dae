"""Acceptance: founding-scenario logs written independently of the tool.

The files in tests/fixtures/logs/variants/ were written from the vLLM format
reference by someone who did not read vlogscope's code: other TP sizes,
expert parallelism, kubectl time stamps, docker-compose prefixes, colour
codes from a TTY, and a launch 2 that stops in torch.compile.
"""

from __future__ import annotations

import json

import pytest

from support import FIXTURES, run_cli

VARIANTS = sorted((FIXTURES / "variants").glob("founding-*.log"))


@pytest.mark.parametrize("path", VARIANTS, ids=[p.stem for p in VARIANTS])
def test_founding_variant_names_the_checkpoint_as_the_root_cause(path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("diagnose", str(path), "--format", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    root = report["findings"][0]
    assert root["root_cause"] and root["category"] == "kv-dtype-override-ignored"
    text = " ".join([root["explanation"], *root["fix"]])
    assert "whatever the checkpoint declares" in text
    assert "kv_cache_quant_algo" in text and "--kv-cache-dtype bfloat16" in text
    ranks = [
        f["ranks"] for f in report["findings"] if f["category"] == "kv-cache-dtype-unsupported"
    ]
    if "launch1" in path.name:
        assert ranks and ranks[0].split("/")[0] == ranks[0].split("/")[1].split()[0]  # n/n ranks


def test_healthy_variant_is_healthy() -> None:
    healthy = sorted((FIXTURES / "variants").glob("healthy-*.log"))
    if not healthy:
        pytest.skip("no healthy variant written")
    for path in healthy:
        result = run_cli("diagnose", str(path), "--format", "json")
        assert result.returncode == 0, result.stdout[-2000:]
        assert json.loads(result.stdout)["verdict"] == "healthy"
