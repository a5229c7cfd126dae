"""Capacity arithmetic: turn the log's own memory numbers into concrete settings.

A user told "the KV cache is too small" wants the number to type.  vLLM's
messages carry enough to compute it: the KV memory needed for one
max-length request and the memory available (V1), or the tokens that fit
(V0), plus — when the log shows it — the GPU's total memory and the
`gpu_memory_utilization` in force.  KV-cache memory grows linearly with
tokens, so the largest `--max-model-len` that fits is the requested length
scaled by available/needed, and the utilization that would fit the requested
length adds the shortfall as a fraction of the GPU.

Examples:
    >>> derive({"max_len": "32768", "needed": "4.0", "available": "3.0"},
    ...        {"gpu_memory_utilization": 0.9, "gpu_total_gib": 24.0})
    {'fit_max_model_len': '24576', 'needed_utilization': '0.95'}
    >>> derive({"max_len": "29000", "tokens": "23648"}, {})
    {'fit_max_model_len': '23648'}
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from vlogscope.reprs import PyValue


def _number(value: object) -> float | None:
    try:
        return float(str(value).replace(",", ""))
    except (TypeError, ValueError):
        return None


def derive(captures: Mapping[str, str], facts: Mapping[str, PyValue]) -> dict[str, str]:
    """Computed placeholders for fix texts: `fit_max_model_len`, `needed_utilization`."""
    out: dict[str, str] = {}
    max_len = _number(captures.get("max_len") or facts.get("max_model_len"))
    needed, available = _number(captures.get("needed")), _number(captures.get("available"))
    tokens = _number(captures.get("tokens"))
    estimated = _number(captures.get("estimated_max_len"))
    if estimated:
        out["fit_max_model_len"] = str(int(estimated))
    elif tokens:
        out["fit_max_model_len"] = str(int(tokens))
    elif max_len and needed and available is not None:
        out["fit_max_model_len"] = str(int(max_len * available / needed))
    utilization = _number(facts.get("gpu_memory_utilization"))
    total = _number(facts.get("gpu_total_gib"))
    if utilization and total and needed and available is not None:
        wanted = math.ceil((utilization + (needed - available) / total) * 100) / 100
        if wanted <= 0.99:
            out["needed_utilization"] = f"{wanted:.2f}"
    return out
