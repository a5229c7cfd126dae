"""Periodic stats lines as numbers: throughput, queues, KV-cache usage.

vLLM logs a stats line every 5-10 s while serving.  Its wording changed many
times (formats reference §5): V0 `Avg prompt throughput: 512.3 tokens/s, ...,
Running: 12 reqs, Swapped: 0 reqs, Pending: 3 reqs, GPU KV cache usage: 37.5%,
CPU KV cache usage: 0.0%.`; V1 `Engine 000: ... Running: 32 reqs, Waiting: 5
reqs, Preemptions: 2, GPU KV cache usage: 78.2%, Prefix cache hit rate:
41.0%`; 0.30+ `CPU KV cache usage` on CPU; separate `Prefix cache hit rate:
GPU: x%, CPU: y%` and `SpecDecoding metrics: ...` lines.  Rather than one
regex per era, every `Label: number` pair is read and the label mapped to a
stable column name, so unknown future fields are simply ignored.

Examples:
    >>> read_stats("Engine 000: Avg prompt throughput: 1532.4 tokens/s, Avg generation "
    ...            "throughput: 411.7 tokens/s, Running: 32 reqs, Waiting: 5 reqs, "
    ...            "GPU KV cache usage: 78.2%, Prefix cache hit rate: 41.0%")
    {'engine': 0.0, 'prompt_throughput': 1532.4, 'generation_throughput': 411.7, \
'running': 32.0, 'waiting': 5.0, 'gpu_kv_cache_usage': 78.2, 'prefix_cache_hit_rate': 41.0}
    >>> read_stats("Using max model len 4096") is None
    True
"""

from __future__ import annotations

import re

COLUMNS = (
    "engine",
    "prompt_throughput",
    "generation_throughput",
    "running",
    "waiting",
    "swapped",
    "deferred",
    "preemptions",
    "gpu_kv_cache_usage",
    "cpu_kv_cache_usage",
    "prefix_cache_hit_rate",
    "cpu_prefix_cache_hit_rate",
    "external_prefix_cache_hit_rate",
    "mm_cache_hit_rate",
    "spec_acceptance_rate",
    "spec_mean_acceptance_length",
    "spec_accepted_tokens",
    "spec_drafted_tokens",
)

_LABELS = {
    "avg prompt throughput": "prompt_throughput",
    "avg generation throughput": "generation_throughput",
    "running": "running",
    "waiting": "waiting",
    "pending": "waiting",  # V0 called the waiting queue "Pending"
    "swapped": "swapped",
    "deferred": "deferred",
    "preemptions": "preemptions",
    "gpu kv cache usage": "gpu_kv_cache_usage",
    "xpu kv cache usage": "gpu_kv_cache_usage",
    "cpu kv cache usage": "cpu_kv_cache_usage",
    "prefix cache hit rate": "prefix_cache_hit_rate",
    "gpu": "prefix_cache_hit_rate",  # `Prefix cache hit rate: GPU: x%, CPU: y%` (V0)
    "cpu": "cpu_prefix_cache_hit_rate",
    "external prefix cache hit rate": "external_prefix_cache_hit_rate",
    "mm cache hit rate": "mm_cache_hit_rate",
    "draft acceptance rate": "spec_acceptance_rate",
    "avg draft acceptance rate": "spec_acceptance_rate",
    "mean acceptance length": "spec_mean_acceptance_length",
    "accepted": "spec_accepted_tokens",
    "drafted": "spec_drafted_tokens",
}

# Also run by Arrow (RE2) over routine columns: keep it free of look-arounds.
STATS_LINE = (
    r"(?:Engine \d+: |\d+ Engines Aggregated: )?(?:Avg prompt throughput|Running: \d+ reqs"
    r"|Prefix cache hit rate: GPU|SpecDecoding metrics|Speculative metrics)"
)
_STATS_LINE = re.compile(STATS_LINE)
_ENGINE = re.compile(r"Engine (\d+): ")
_PAIR = re.compile(r"(?P<label>[A-Za-z][A-Za-z ]*?): (?P<value>[0-9][0-9.]*)")


def read_stats(message: str) -> dict[str, float] | None:
    """The numbers of one stats line by column name, or None for other lines."""
    if not _STATS_LINE.match(message):
        return None
    values: dict[str, float] = {}
    if engine := _ENGINE.match(message):
        values["engine"] = float(engine[1])
    for m in _PAIR.finditer(message):
        label = m["label"].strip().lower()
        label = label.removeprefix("specdecoding metrics: ").removeprefix("speculative metrics: ")
        column = _LABELS.get(label)
        if column is not None and column not in values:
            try:
                values[column] = float(m["value"].rstrip("."))
            except ValueError:
                continue
    return values or None
