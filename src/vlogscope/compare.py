"""`vlogscope diff A B`: what changed between two launches, and what did not.

The founding scenario's second launch added `--kv-cache-dtype auto` and
failed the same way.  A diff of requested settings shows nothing (the flag
is the default, so it never appears in `non-default args`); a diff of
effective settings shows nothing either (fp8 in both).  Saying *why* is the
point: when a visible flag changed and the effective value did not,
something overrides the flag; when the flag is invisible because it is the
default, the effective fp8 came from the checkpoint both times.

Examples:
    >>> changed({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4})
    [('b', 2, 3), ('c', None, 4)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vlogscope.pipeline import Diagnosis
from vlogscope.reprs import PyValue

_FP8_WORDS = ("fp8", "float8")


@dataclass(frozen=True)
class LaunchDiff:
    """Two launches side by side (the latest run of each input)."""

    a: str
    b: str
    requested: list[tuple[str, PyValue, PyValue]]
    effective: list[tuple[str, PyValue, PyValue]]
    phase: tuple[PyValue, PyValue]
    verdict: tuple[str, str]
    root_cause: tuple[str | None, str | None]
    findings_gained: list[str]
    findings_lost: list[str]
    notes: list[str]


def changed(
    a: Mapping[str, PyValue], b: Mapping[str, PyValue]
) -> list[tuple[str, PyValue, PyValue]]:
    """Keys whose values differ, in sorted order, with None for a missing side."""
    return [(k, a.get(k), b.get(k)) for k in sorted({*a, *b}) if a.get(k) != b.get(k)]


def _mapping(value: PyValue) -> dict[str, PyValue]:
    return dict(value) if isinstance(value, dict) else {}


def _kv(d: Diagnosis) -> tuple[PyValue, bool, PyValue]:
    """(requested kv dtype, whether it was explicit, effective kv dtype)."""
    facts = d.facts
    effective = facts.value("selector_kv_cache_dtype") or facts.value("kv_cache_dtype")
    explicit = bool(facts.value("requested_kv_cache_dtype_explicit"))
    return facts.value("requested_kv_cache_dtype"), explicit, effective


def _is_fp8(value: PyValue) -> bool:
    return any(word in str(value).lower() for word in _FP8_WORDS)


def _kv_notes(a: Diagnosis, b: Diagnosis) -> list[str]:
    (req_a, exp_a, eff_a), (req_b, exp_b, eff_b) = _kv(a), _kv(b)
    notes = []
    if (exp_a or exp_b) and req_a != req_b and eff_a == eff_b and eff_a is not None:
        notes.append(
            f"The requested --kv-cache-dtype changed ({req_a} -> {req_b}) but the effective KV "
            f"cache dtype did not ({eff_a} in both): something overrides the flag (a "
            "compressed-tensors `kv_cache_scheme` does so in vLLM 0.15-0.20)."
        )
    if (
        not exp_a
        and not exp_b
        and req_a is not None
        and req_b is not None
        and _is_fp8(eff_a)
        and _is_fp8(eff_b)
    ):
        notes.append(
            "kv_cache_dtype appears in neither run's non-default args (it was the default, "
            f"`auto`, even if passed explicitly), yet the KV cache is {eff_a} / {eff_b}: the "
            "fp8 came from the checkpoint's quantization config (`kv_cache_quant_algo` in "
            "hf_quant_config.json, `kv_cache_scheme` in config.json) in both runs, so "
            "`--kv-cache-dtype auto` changes nothing. Pass an explicit 16-bit dtype instead."
        )
    return notes


def diff_launches(a: Diagnosis, b: Diagnosis) -> LaunchDiff:
    fa, fb = a.facts, b.facts
    ids_a, ids_b = {f.id for f in a.findings}, {f.id for f in b.findings}
    requested = changed(_mapping(fa.value("requested_args")), _mapping(fb.value("requested_args")))
    effective = changed(_mapping(fa.value("engine_config")), _mapping(fb.value("engine_config")))
    for name in ("selector_kv_cache_dtype", "attention_backend"):
        if fa.value(name) != fb.value(name):
            effective.append((name, fa.value(name), fb.value(name)))
    notes = _kv_notes(a, b)
    if a.root_cause and b.root_cause and a.root_cause.id == b.root_cause.id:
        notes.append(f"Both launches failed the same way: {b.root_cause.title}.")
    return LaunchDiff(
        a=a.source,
        b=b.source,
        requested=requested,
        effective=effective,
        phase=(fa.value("last_phase"), fb.value("last_phase")),
        verdict=(str(a.verdict), str(b.verdict)),
        root_cause=(
            a.root_cause.category if a.root_cause else None,
            b.root_cause.category if b.root_cause else None,
        ),
        findings_gained=sorted(ids_b - ids_a),
        findings_lost=sorted(ids_a - ids_b),
        notes=notes,
    )
