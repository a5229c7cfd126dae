"""Signature files: loading, user folders, overrides, and the catalog checks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from support import fixture, run_cli
from vlogscope.catalog import lint
from vlogscope.signatures import SignatureError, load_signatures

USER_SIG = """
[[signature]]
id = "{id}"
category = "other"
severity = "error"
priority = 99
title = "Site rule: {title}"
explain = "Our cluster's own rule."
fix = ["Call the on-call."]
[signature.match]
message = '{regex}'
"""


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_builtin_catalog_loads_and_covers_every_category() -> None:
    from vlogscope.taxonomy import CATEGORIES

    sigs = load_signatures()
    covered = {s.category for s in sigs.values()}
    # kv-dtype-override-ignored and other come from Python rules (rules.py).
    assert set(CATEGORIES) - covered <= {"kv-dtype-override-ignored", "other"}


def test_user_folder_adds_a_signature_that_outranks_builtins(tmp_path: Path) -> None:
    _write(
        tmp_path / "mine",
        "site.toml",
        USER_SIG.format(id="other/site-oom", title="oom", regex="CUDA out of memory"),
    )
    result = run_cli(
        "diagnose",
        str(fixture("v0.8.5-qwen-cuda-oom-profile.log")),
        "--format",
        "json",
        "--patterns",
        str(tmp_path / "mine"),
    )
    report = json.loads(result.stdout)
    assert report["findings"][0]["id"] == "other/site-oom"


def test_environment_folder_overrides_a_builtin_by_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(
        tmp_path / "env",
        "override.toml",
        USER_SIG.format(id="cuda-oom/out-of-memory", title="replaced", regex="CUDA out of memory"),
    )
    monkeypatch.setenv("VLOGSCOPE_PATTERNS", str(tmp_path / "env"))
    sig = load_signatures()["cuda-oom/out-of-memory"]
    assert sig.title == "Site rule: replaced"
    assert sig.origin == tmp_path / "env" / "override.toml"


def test_malformed_toml_is_a_one_line_error_naming_the_file(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad", "broken.toml", "[[signature]]\nid = = 'x'\n")
    with pytest.raises(SignatureError, match=r"broken\.toml"):
        load_signatures([bad.parent])
    result = run_cli(
        "diagnose", str(fixture("v0.8.5-qwen-cuda-oom-profile.log")), "--patterns", str(bad.parent)
    )
    assert result.returncode == 2
    [line] = result.stderr.decode().strip().splitlines()
    assert "broken.toml" in line and "line 2" in line


def test_unknown_category_is_rejected(tmp_path: Path) -> None:
    text = USER_SIG.format(id="other/x", title="t", regex="x").replace(
        'category = "other"', 'category = "gremlins"'
    )
    _write(tmp_path / "cat", "c.toml", text)
    with pytest.raises(SignatureError, match="unknown category 'gremlins'"):
        load_signatures([tmp_path / "cat"])


def test_startup_only_must_be_a_boolean(tmp_path: Path) -> None:
    text = USER_SIG.format(id="other/x", title="t", regex="x") + 'startup_only = "yes"\n'
    _write(tmp_path / "flag", "f.toml", text)
    with pytest.raises(SignatureError, match=r"match\.startup_only must be true/false"):
        load_signatures([tmp_path / "flag"])
    _write(tmp_path / "ok", "f.toml", text.replace('"yes"', "true"))
    assert load_signatures([tmp_path / "ok"])["other/x"].startup_only


def test_lint_flags_catastrophic_regexes_and_missing_tests(tmp_path: Path) -> None:
    _write(
        tmp_path / "lint",
        "slow.toml",
        USER_SIG.format(id="other/slow", title="slow", regex="(a+)+$"),
    )
    sigs = {k: v for k, v in load_signatures([tmp_path / "lint"]).items() if k == "other/slow"}
    messages = [p.message for p in lint(sigs, [tmp_path / "lint"])]
    assert any("backtrack" in m for m in messages)
    assert any("no test" in m for m in messages)


def test_lint_flags_a_template_that_str_format_would_leave_unfilled(tmp_path: Path) -> None:
    """A `:` in a fallback starts a format spec; single braces around JSON do too."""
    text = USER_SIG.format(id="other/spec", title="{port|see: the log}", regex="x")
    text += USER_SIG.format(id="other/json", title="ok", regex="y").replace(
        '["Call the on-call."]', r'["Pass --compilation-config {\"level\": 0} to skip it."]'
    )
    text += USER_SIG.format(id="other/fine", title="{limit|the default is 0.9}", regex="z")
    _write(tmp_path / "lint", "t.toml", text)
    sigs = {k: v for k, v in load_signatures([tmp_path / "lint"]).items() if k.startswith("other/")}
    unfilled = {p.signature for p in lint(sigs, [tmp_path / "lint"]) if "unfilled" in p.message}
    assert unfilled == {"other/spec", "other/json"}


def _patterns_test(folder: Path, rule: str, test_log: str) -> tuple[int, str]:
    """`vlogscope patterns test` over a user folder of one rule and its test log."""
    _write(folder, "rule.toml", rule)
    _write(folder / "tests", "rule.log", test_log)
    result = run_cli("patterns", "test", "--patterns", str(folder))
    return result.returncode, result.stdout.decode()


def test_patterns_test_says_which_block_should_have_fired(tmp_path: Path) -> None:
    code, out = _patterns_test(
        tmp_path / "site",
        USER_SIG.format(id="other/site-rule", title="t", regex="frobnicator exploded"),
        "# ruleid: other/site-rule\nERROR 05-14 09:10:07 [x.py:1] the frobnicator melted\n\n"
        "# ok: other/site-rule\nERROR 05-14 09:10:07 [x.py:1] all good\n",
    )
    assert code == 1
    assert "rule.log:2: other/site-rule: should have matched but did not: ERROR 05-14" in out


def test_patterns_test_fails_an_info_rule_whose_lines_diagnose_never_reads(tmp_path: Path) -> None:
    """An INFO line the skim counts as routine never reaches signatures: say so."""
    rule = USER_SIG.format(id="other/info-rule", title="t", regex="Frobnicator is warming up")
    code, out = _patterns_test(
        tmp_path / "info",
        rule + 'levels = ["INFO"]\n',
        "# ruleid: other/info-rule\nINFO 05-14 09:10:07 [x.py:1] Frobnicator is warming up\n",
    )
    assert code == 1
    assert "rule.log:2: other/info-rule: should have matched but did not" in out


def test_builtin_catalog_passes_its_own_tests_and_lint() -> None:
    for command in ("test", "lint"):
        result = run_cli("patterns", command)
        assert result.returncode == 0, result.stdout.decode()[-3000:]
        assert "no problems" in result.stdout.decode()


def test_patterns_list_and_show_describe_a_signature() -> None:
    listed = run_cli("patterns", "list").stdout.decode()
    assert "kv-cache-dtype-unsupported/mla-backend-no-fp8" in listed
    shown = run_cli("patterns", "show", "kv-cache-dtype-unsupported/mla-backend-no-fp8")
    assert shown.returncode == 0
    assert "TritonMLA" in shown.stdout.decode()
    assert run_cli("patterns", "show", "no/such-id").returncode == 2


def test_catastrophic_user_pattern_times_out_once_and_is_disabled_by_name(tmp_path: Path) -> None:
    import subprocess
    import time

    from support import vlogscope_command

    # `regex` defuses `(a+)+$`; alternation of overlapping branches still explodes.
    _write(
        tmp_path / "slow",
        "slow.toml",
        USER_SIG.format(id="other/slow", title="slow", regex="(a|aa)+$"),
    )
    log = tmp_path / "vllm.log"
    log.write_text(("ERROR 05-14 09:10:07 [x.py:1] " + "a" * 40 + "!\n") * 2000)
    env = dict(os.environ, VLOGSCOPE_PATTERNS=str(tmp_path / "slow"))
    start = time.monotonic()
    result = subprocess.run(
        [*vlogscope_command(), "diagnose", str(log), "--format", "json"],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert time.monotonic() - start < 30  # one timeout, not one per line
    report = json.loads(result.stdout)
    assert any("other/slow" in w and "disabled" in w for w in report["warnings"])
    [line] = [ln for ln in result.stderr.decode().splitlines() if "other/slow" in ln]
    assert line.startswith("vlogscope: warning: signature other/slow")


def test_signature_fixture_logs_must_fire_and_ignores_must_not(tmp_path: Path) -> None:
    from vlogscope.catalog import run_tests

    oom, healthy = (
        fixture("v0.8.5-qwen-cuda-oom-profile.log"),
        fixture("v0.16-llama31-8b-healthy-startup.log"),
    )
    text = USER_SIG.format(id="other/site-oom", title="t", regex="CUDA out of memory") + (
        f'[signature.tests]\nfires = ["{oom}", "{healthy}"]\nignores = ["{healthy}", "/no/such.log"]\n'
    )
    _write(tmp_path / "fx", "fx.toml", text)
    sigs = {k: v for k, v in load_signatures([tmp_path / "fx"]).items() if k == "other/site-oom"}
    messages = sorted(p.message for p in run_tests(sigs, []))
    assert messages == [f"did not fire on {healthy}", "fixture /no/such.log not found"]


def test_the_shipped_catalog_compiles_lazily_and_lint_catches_a_broken_pattern(
    tmp_path: Path,
) -> None:
    """Built-in regexes compile on first use (start-up cost); lint compiles them all."""
    from vlogscope.signatures import LazyPattern, load_file

    builtin = load_signatures()
    assert all(isinstance(s.message, LazyPattern) for s in builtin.values() if s.message)
    path = _write(
        tmp_path / "lazy", "bad.toml", USER_SIG.format(id="other/bad", title="t", regex="(unclosed")
    )
    [sig] = load_file(path, lazy=True)
    messages = [p.message for p in lint({sig.id: sig}, [tmp_path / "lazy"])]
    assert any("not a valid regex" in m for m in messages)
    with pytest.raises(SignatureError, match=r"bad match\.message"):
        load_signatures([tmp_path / "lazy"])  # a user folder is compiled when loaded


def test_a_placeholder_the_log_does_not_fill_reads_its_fallback_or_unknown() -> None:
    from vlogscope.findings import render

    template = "util {gpu_memory_utilization|not in the log}, version {vllm_version}"
    assert render(template, {}, {}) == "util not in the log, version (unknown vllm_version)"
    facts = {"gpu_memory_utilization": 0.85, "vllm_version": "0.11.0"}
    assert render(template, {}, facts) == "util 0.85, version 0.11.0"
    assert render("{x|fallback}", {"x": "captured"}, {}) == "captured"


@pytest.mark.parametrize(
    ("regex", "seen_before", "then"),
    [
        ("widget 7 broke", "widget 3 broke", "widget 7 broke"),  # the needle holds a digit
        ("widget [7-9] broke", "widget 3 broke", "widget 8 broke"),  # the needle does not
    ],
)
def test_a_user_pattern_naming_a_digit_is_read_on_every_record(
    tmp_path: Path, regex: str, seen_before: str, then: str
) -> None:
    """Records repeat one shape with other numbers; one that matches must not be skipped
    because a record of its shape with other digits did not."""
    import io

    from vlogscope.pipeline import analyze
    from vlogscope.source import Source

    _write(tmp_path / "site", "w.toml", USER_SIG.format(id="other/widget", title="w", regex=regex))
    header = "WARNING 05-14 09:10:0{} [w.py:1] "
    text = "".join(header.format(i) + seen_before + "\n" for i in range(3))
    text += header.format(5) + then + "\n"
    sigs = load_signatures([tmp_path / "site"])
    for skim_routine in (False, True):
        d = analyze(
            Source.from_stream("<t>", io.BytesIO(text.encode())), sigs, skim_routine=skim_routine
        )
        widget = [f for f in d.findings if f.id == "other/widget"]
        assert [e.line for f in widget for e in f.evidence] == [4]
