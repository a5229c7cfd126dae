"""Reports meant to be shared: Markdown, HTML, redaction, and output that log text cannot drive."""

from __future__ import annotations

import json
import re

import pytest

from support import fixture, run_cli

SECRETS = (
    "sk-proj-a1B2c3D4e5F6g7H8i9J0kLmN",
    "hf_QwErTyUiOpAsDfGhJkLzXcVbNm123456",
    "10.20.30.40",
    "10.20.30.41",
    "alice",
    "gpu-node-17",
    "internal-mirror.corp.example",
    "078-05-1120",
    "eyJhbGciOiJIUzI1NiJ9",
    "fe80::1ff:fe23:4567:890a",
)


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html"])
def test_redact_removes_every_planted_secret_in_every_format(fmt: str) -> None:
    path = fixture("planted-secrets.log")
    result = run_cli("diagnose", str(path), "--format", fmt, "--redact")
    out = result.stdout.decode() + result.stderr.decode()
    assert result.returncode == 1
    leaked = [s for s in SECRETS if s in out]
    assert leaked == []
    assert "redacted-" in out


def test_redaction_placeholders_are_stable_and_counted() -> None:
    result = run_cli(
        "diagnose", str(fixture("planted-secrets.log")), "--format", "json", "--redact"
    )
    report = json.loads(result.stdout)
    assert report["redacted"]["hf-token"] == 1  # the same token twice is one placeholder
    assert report["redacted"]["ip"] >= 3
    text = json.dumps(report)
    assert text.count("redacted-hf-token-1") >= 1 and "redacted-hf-token-2" not in text


def test_without_redact_nothing_is_replaced() -> None:
    report = json.loads(
        run_cli("diagnose", str(fixture("planted-secrets.log")), "--format", "json").stdout
    )
    assert report["redacted"] == {}


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_escape_sequences_and_markup_from_the_log_are_shown_as_text(fmt: str) -> None:
    result = run_cli("diagnose", str(fixture("escapes-and-markup.log")), "--format", fmt)
    out = result.stdout.decode()
    assert result.returncode == 1
    assert "\x1b" not in out and "\x07" not in out and "\x08" not in out
    if fmt == "text":
        assert "[bold red]PWNED[/bold red]" in out  # literal, not rendered by rich
    if fmt == "html":
        assert "<bold" not in out and "[bold red]" in out


def test_markdown_report_has_root_cause_evidence_fix_and_folded_symptoms() -> None:
    result = run_cli(
        "diagnose",
        str(fixture("v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log")),
        "--format",
        "markdown",
    )
    md = result.stdout.decode()
    assert md.startswith("## vlogscope: failed")
    assert "### Root cause: `kv-dtype-override-ignored`" in md
    assert re.search(r"```text\n\s+7 \| non-default args", md)
    assert "**Fix**" in md and "<details><summary>Symptoms of the root cause" in md


def test_html_report_is_one_self_contained_file() -> None:
    result = run_cli(
        "diagnose",
        str(fixture("v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log")),
        "--format",
        "html",
    )
    page = result.stdout.decode()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", page)
    assert "kv-dtype-override-ignored" in page


def test_diff_of_the_founding_launches_says_auto_changed_nothing() -> None:
    a = fixture("v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log")
    b = fixture("v0.16-kimi-k25-tp8-launch2-kv-auto-stops-mid-startup.log")
    result = run_cli("diff", str(a), str(b), "--format", "json")
    assert result.returncode == 0
    report = json.loads(result.stdout)
    assert report["requested"] == []
    assert any("came from the checkpoint" in n and "in both runs" in n for n in report["notes"])
    assert "kv-cache-dtype-unsupported/no-mla-backend-for-kv-dtype" in report["findings_lost"]


def test_diff_says_when_a_visible_flag_changed_but_the_effective_dtype_did_not(tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = fixture("v0.17-compressed-tensors-kv-scheme-overrides-bfloat16.log").read_text()
    other = tmp_path / "fp8-e5m2.log"
    other.write_text(src.replace("'kv_cache_dtype': 'bfloat16'", "'kv_cache_dtype': 'fp8_e5m2'"))
    result = run_cli(
        "diff",
        str(fixture("v0.17-compressed-tensors-kv-scheme-overrides-bfloat16.log")),
        str(other),
        "--format",
        "json",
    )
    report = json.loads(result.stdout)
    assert ["kv_cache_dtype", "bfloat16", "fp8_e5m2"] in report["requested"]
    assert any("something overrides the flag" in n for n in report["notes"])


def test_diff_text_output_and_stdin_side() -> None:
    a = fixture("v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log")
    b = fixture("v0.16-llama31-8b-healthy-startup.log")
    result = run_cli("diff", "-", str(b), stdin=a.read_bytes())
    text = result.stdout.decode()
    assert result.returncode == 0
    assert "verdict" in text and "healthy" in text and "failed" in text


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
@pytest.mark.parametrize(("lines", "said"), [(1, "(1 line)"), (2, "(2 lines)")])
def test_every_format_says_the_size_of_the_input_in_words(fmt: str, lines: int, said: str) -> None:
    log = b"INFO 05-14 09:10:07 [api_server.py:1] vLLM API server version 0.5.0\n" * lines
    result = run_cli("diagnose", "-", "--format", fmt, stdin=log)
    assert said in result.stdout.decode()
