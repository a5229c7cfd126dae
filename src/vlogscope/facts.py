"""Stage 5 — facts: what the log says about the run, each with its line.

Diagnosis needs the run's identity and, above all, the *requested* settings
beside the *effective* ones: the founding bug of this project was an fp8 KV
cache that nobody asked for (`non-default args` had no `kv_cache_dtype`,
i.e. `auto`) but that the engine config line showed in force
(`kv_cache_dtype=fp8`, filled in from the checkpoint's quantization config).

Each extractor below recognises one kind of vLLM line, cheaply rejected by a
substring test before any regex runs; rich payloads (dict reprs, config
dumps, `AttentionSelectorConfig(...)`) go through the pyparsing grammar in
`reprs.py`.  When a fact appears more than once, the last value wins (the
latest launch in an appended log) and the line it came from is kept.

Examples:
    >>> from vlogscope.assemble import Event, EventKind
    >>> line = ("Initializing a V1 LLM engine (v0.16.0rc2.dev313+g662205d34) with config: "
    ...         "model='/shared/kimi-k2.5-nvfp4', tensor_parallel_size=8, kv_cache_dtype=fp8")
    >>> facts = extract_facts([Event(EventKind.RECORD, (12,), (line,))])
    >>> facts.value("vllm_version"), facts.value("kv_cache_dtype"), facts.get("model").line
    ('0.16.0rc2.dev313+g662205d34', 'fp8', 12)
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from vlogscope.assemble import Event, EventKind
from vlogscope.phases import PhaseTracker
from vlogscope.reprs import (
    Call,
    PyValue,
    ReprError,
    parse_config_fields,
    parse_mapping,
    parse_reasons,
    parse_value,
)

# Process-name prefixes of tensor/pipeline-parallel workers in every era.
WORKER_PREFIXES = ("Worker", "VllmWorker", "RayWorker")

MLA_ARCHITECTURES = re.compile(
    r"Deepseek(?:V2|V3|V32)|DeepSeekMTP|KimiK2|KimiK25|Kimi(?:VL|Linear)|GlmMoeDsa|MiniCPM3"
    r"|Glm4Moe(?:Lite)?ForCausalLM|MistralLarge3|LongcatFlash",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Fact:
    """One thing the log states, where it states it, and what kind of line said it."""

    name: str
    value: PyValue
    line: int
    source: str
    text: str = ""  # the stating line, shortened, to show as evidence


MAX_TEXT = 400


@dataclass(frozen=True)
class Facts:
    """The facts of one run, by name."""

    by_name: Mapping[str, Fact]

    def get(self, name: str) -> Fact | None:
        return self.by_name.get(name)

    def value(self, name: str, default: PyValue = None) -> PyValue:
        fact = self.by_name.get(name)
        return fact.value if fact is not None else default

    def as_dict(self) -> dict[str, PyValue]:
        return {name: fact.value for name, fact in self.by_name.items()}


_Sink = Callable[[str, PyValue, str], None]


def _find(needle: str, pattern: re.Pattern[str], message: str) -> re.Match[str] | None:
    """`pattern` in `message`, after a substring test that every match passes: most
    messages are rejected without running the regex."""
    return pattern.search(message) if needle in message else None


_ENGINE_CONFIG = re.compile(
    r"(?:Initializing an? (?:(?P<engine>V[01]) )?LLM engine|Dumping input data for V1 LLM engine)"
    r"(?: \(v(?P<version>[^)]+)\))? with config: (?P<body>.*)",
    re.DOTALL,
)
# Engine config fields surfaced as facts of their own, under clearer names.
_CONFIG_FACTS = {
    "model": "model",
    "tensor_parallel_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size",
    "data_parallel_size": "data_parallel_size",
    "quantization": "quantization",
    "quantization_config": "quantization_config",
    "kv_cache_dtype": "kv_cache_dtype",
    "max_seq_len": "max_model_len",
    "dtype": "dtype",
    "enforce_eager": "enforce_eager",
    "device_config": "device",
}


def _engine_config(message: str, emit: _Sink) -> None:
    """`Initializing a V1 LLM engine (v0.11.0) with config: model='...', ...`
    (before 0.4: `Initializing an LLM engine with config: ...`)."""
    m = _find("with config: ", _ENGINE_CONFIG, message)
    if m is None:
        return
    if m["version"]:  # before 0.4 the line names no version
        emit("vllm_version", m["version"], "engine config line")
    emit("engine", m["engine"] or "V0", "engine config line")
    fields = parse_config_fields(m["body"])
    emit("engine_config", fields, "engine config line")
    for key, name in _CONFIG_FACTS.items():
        if key in fields:
            emit(name, fields[key], "engine config line")


_BANNER_VERSION = re.compile(r"\bversion (?P<version>\d[\w.+\-]*)")
_BANNER_MODEL = re.compile(r"\bmodel +(?P<model>\S+)")
_VERSION_LINES = re.compile(
    r"vLLM (?:API server|batch processing API|gRPC server) version (?P<version>\S+)"
    r"|vLLM server version (?P<version2>[^,\s]+), serving model (?P<model>\S+)"
)


def _version(message: str, emit: _Sink) -> None:
    """Banner (`version 0.23.1rc1...`, `model /path`) and `vLLM API server version 0.5.0`."""
    if "version" not in message:
        return
    if "█" in message:
        for line in message.split("\n"):
            if v := _BANNER_VERSION.search(line):
                emit("vllm_version", v["version"], "start-up banner")
            if mdl := _BANNER_MODEL.search(line):
                emit("model", mdl["model"], "start-up banner")
        return
    m = _VERSION_LINES.search(message)
    if m:
        emit("vllm_version", m["version"] or m["version2"], "version line")
        if m["model"]:
            emit("model", m["model"], "version line")


_ARGS = re.compile(r"(?:non-default args|args): (?P<body>(?:Namespace\(|\{).*)", re.DOTALL)


def _requested_args(message: str, emit: _Sink) -> None:
    """`non-default args: {'model': ..., 'kv_cache_dtype': 'fp8'}` or `args: Namespace(...)`.

    The key `kv_cache_dtype` appears in `non-default args` only when the user
    passed a value other than the default, so its absence means `auto`.
    """
    m = _find("args: ", _ARGS, message)
    if m is None:
        return
    try:
        value = parse_value(m["body"].strip())
    except ReprError:
        return
    if isinstance(value, Call):
        args, source, default_shown = dict(value.kwargs), "args: Namespace(...)", True
    elif isinstance(value, dict):
        args, source, default_shown = value, "non-default args", False
    else:
        return
    emit("requested_args", args, source)
    if isinstance(args.get("port"), int):
        emit("port", args["port"], source)
    if "gpu_memory_utilization" in args:
        emit("gpu_memory_utilization", args["gpu_memory_utilization"], source)
    elif not default_shown:
        emit("gpu_memory_utilization", 0.9, f"{source} (absent: the default)")
    requested = args.get("kv_cache_dtype")
    if requested is not None:
        emit("requested_kv_cache_dtype", requested, source)
        emit("requested_kv_cache_dtype_explicit", True, source)
    elif not default_shown:
        emit("requested_kv_cache_dtype", "auto", source)
        emit("requested_kv_cache_dtype_explicit", False, source)
    if "model" in args:
        emit("model", args["model"], source)


_SELECTOR = re.compile(r"AttentionSelectorConfig\((?P<body>[^()]*(?:\([^()]*\)[^()]*)*)\)")
_OLD_SELECTOR = re.compile(
    r"with head_size: (?P<head_size>\d+), dtype: (?P<dtype>\S+), kv_cache_dtype: (?P<kv>[^,]+),"
    r".*?use_mla: (?P<mla>\w+)"
)
_REASONS = re.compile(r"Reasons?: (?P<body>[\[{].*?[\]}])\.?\s*$", re.DOTALL)


def _attention_selector(message: str, emit: _Sink) -> None:
    """The 0.11.1+ selector: `... with AttentionSelectorConfig(head_size=576, dtype=...,
    kv_cache_dtype=fp8, ..., use_mla=True, ...). Reasons: {TRITON_MLA: [...]}.`"""
    if "kv_cache_dtype" not in message:
        return
    if m := _SELECTOR.search(message):
        try:
            fields = parse_mapping(m.group(0))
        except ReprError:
            fields = {}
        for key in ("kv_cache_dtype", "use_mla", "head_size", "dtype", "use_sparse"):
            if key in fields:
                emit(f"selector_{key}", fields[key], "attention selector")
    elif old := _OLD_SELECTOR.search(message):
        emit("selector_kv_cache_dtype", old["kv"], "attention selector")
        emit("selector_use_mla", old["mla"] == "True", "attention selector")
        emit("selector_head_size", int(old["head_size"]), "attention selector")
    if r := _REASONS.search(message):
        try:
            reasons: PyValue = {k: list(v) for k, v in parse_reasons(r["body"]).items()}
        except ReprError:
            return
        emit("attention_backend_reasons", reasons, "attention selector")


_BACKEND_CHOSEN = re.compile(
    r"Using (?P<name>[A-Z][A-Z0-9_]+) attention backend out of potential backends: (?P<c>\[.*?\])"
    r"|Using (?P<old>[\w\- ]+?) backend(?: on V1 engine)?\.$"
    r"|Valid backends: (?P<valid>\[.*?\])"
)


def _attention_backend(message: str, emit: _Sink) -> None:
    """`Using TRITON_MLA attention backend out of potential backends: ['TRITON_MLA'].`"""
    m = _find("backend", _BACKEND_CHOSEN, message)
    if m is None:
        return
    if m["name"]:
        emit("attention_backend", m["name"], "attention backend line")
        with contextlib.suppress(ReprError):
            emit("attention_backend_candidates", parse_value(m["c"]), "attention backend line")
    elif m["old"] and "KV cache layout" not in message:
        emit("attention_backend", m["old"], "attention backend line")


_NUMBER_FACTS = (
    ("GPU KV cache size", re.compile(r"KV cache size: (?P<v>[\d,]+) tokens"), "kv_cache_tokens"),
    (
        "Available KV cache memory",
        re.compile(r"Available KV cache memory: (?P<v>[\d.]+) GiB"),
        "available_kv_cache_gib",
    ),
    (
        "Maximum concurrency",
        re.compile(r"Maximum concurrency for (?P<v>[\d,]+) tokens per request"),
        "max_concurrency_tokens",
    ),
    ("took", re.compile(r"[Mm]odel (?:loading|weights) took (?P<v>[\d.]+) GiB?"), "model_gib"),
    ("blocks:", re.compile(r"# (?:GPU|CUDA|\w+) blocks: (?P<v>\d+)"), "gpu_blocks"),
    ("Resolved architecture", re.compile(r"Resolved architecture: (?P<v>\w+)"), "architecture"),
    (
        "total capacity",
        re.compile(r"GPU \d+ has a total capacity of (?P<v>[\d.]+) GiB"),
        "gpu_total_gib",
    ),
    (
        "on startup is less than",
        re.compile(r"Free memory on device (?:\S+ )?\([\d.]+/(?P<v>[\d.]+) GiB\)"),
        "gpu_total_gib",
    ),
    ("total_gpu_memory", re.compile(r"total_gpu_memory[=(](?P<v>[\d.]+) ?GiB"), "gpu_total_gib"),
    ("Using max model len", re.compile(r"Using max model len (?P<v>\d+)"), "max_model_len"),
    (
        "data type to store kv cache",
        re.compile(r"Using (?P<v>\w+) data type to store kv cache"),
        "kv_cache_dtype_notice",
    ),
)


def _numbers(message: str, emit: _Sink) -> None:
    """Single-value lines: `GPU KV cache size: 1,234,560 tokens`, `# GPU blocks: 0`, ..."""
    for needle, pattern, name in _NUMBER_FACTS:
        if needle in message and (m := pattern.search(message)):
            raw = m["v"]
            value: PyValue = int(raw.replace(",", "")) if raw.replace(",", "").isdigit() else raw
            if name in ("model_gib", "gpu_total_gib"):
                value = float(raw)
            emit(name, value, needle)


# The platform vLLM runs on: detected (`Automatically detected platform cuda.`), taken
# over by an out-of-tree plugin (`Platform plugin ascend is activated`), or none.
_PLATFORM = re.compile(
    r"Automatically detected platform (?P<detected>\w+)"
    r"|Platform plugin (?P<plugin>[\w.-]+) is activated"
    r"|No platform detected, vLLM is running on (?P<none>UnspecifiedPlatform)"
)


def _platform(message: str, emit: _Sink) -> None:
    """The platform, as `cuda`, `rocm`, `ascend`, ... or `unspecified`.

    A plugin platform is activated after vLLM's own detection, which may have
    found nothing: the last line says what the run ended up on."""
    m = _find("latform", _PLATFORM, message)
    if m is None:
        return
    if m["none"]:
        emit("platform", "unspecified", "platform detection")
    else:
        emit("platform", m["detected"] or m["plugin"], "platform detection")


# A wrapper (supervisor, GPUStack, a launch script) that prints the command it runs.
_COMMAND_LINE = re.compile(
    # `vllm serve`, `/venv/bin/vllm serve`, `Run vllm with arguments: serve` (GPUStack)
    r"\bvllm\b[^\n]{0,40}?\bserve\b"
    r"|vllm\.entrypoints\.openai\.api_server|entrypoints/openai/api_server\.py"
)
_COMMAND_FLAGS = {
    "tensor_parallel_size": re.compile(r"(?:--tensor[-_]parallel[-_]size|-tp)[ =]['\"]?(\d+)"),
    "pipeline_parallel_size": re.compile(r"(?:--pipeline[-_]parallel[-_]size|-pp)[ =]['\"]?(\d+)"),
}


def _command_line(message: str, emit: _Sink) -> None:
    """`... Run vllm with arguments: serve /models/x --tensor-parallel-size 3 ...`."""
    if not _find("serve", _COMMAND_LINE, message):  # every alternative holds "serve"
        return
    for name, flag in _COMMAND_FLAGS.items():
        if m := flag.search(message):
            emit(name, int(m[1]), "command line")


_EXTRACTORS = (
    _engine_config,
    _version,
    _requested_args,
    _attention_selector,
    _attention_backend,
    _numbers,
    _platform,
    _command_line,
)


def _payloads(event: Event) -> Iterable[tuple[int, str]]:
    """(line, text) pairs worth reading: a record's message, or the exception lines."""
    if event.kind is EventKind.UNPARSED and "vllm" in event.message:
        return ((event.line, event.message),)  # a wrapper's line about vLLM (its command)
    if event.kind in (EventKind.UNPARSED, EventKind.ROUTINE):
        return ()
    if event.kind is EventKind.RECORD and not event.exceptions:
        return ((event.line, "\n".join(event.texts)),)
    return ((event.line, event.message), *((e.line, str(e)) for e in event.exceptions))


class FactCollector:
    """Collects facts from events as they stream past; `facts()` gives the result."""

    def __init__(self) -> None:
        self._found: dict[str, Fact] = {}
        self._phases = PhaseTracker()
        self._workers: dict[tuple[str | None, int | None], int] = {}

    def observe(self, event: Event) -> None:
        self._phases.observe(event)
        if event.process and event.process.startswith(WORKER_PREFIXES):
            # Keyed by pid: 0.18+ renames a worker from `Worker` to `Worker_TP3` mid-start-up.
            key = (None, event.pid) if event.pid is not None else (event.process, None)
            self._workers.setdefault(key, event.line)

        for line, payload in _payloads(event):

            def emit(
                name: str, value: PyValue, source: str, line: int = line, text: str = payload
            ) -> None:
                self._found[name] = Fact(name, value, line, source, text[:MAX_TEXT])

            for extractor in _EXTRACTORS:
                extractor(payload, emit)

    @property
    def startup_complete(self) -> bool:
        """Has the run so far got past start-up (the engine ready, or serving)?"""
        return self._phases.startup_complete

    def facts(self) -> Facts:
        found = dict(self._found)
        if self._workers:
            first = min(self._workers.values())
            found["worker_processes"] = Fact(
                "worker_processes", len(self._workers), first, "process prefixes"
            )
        for name, (value, line) in self._phases.facts().items():
            found[name] = Fact(name, value, line, "start-up milestones")
        _derive_mla(found)
        return Facts(found)


def extract_facts(events: Iterable[Event]) -> Facts:
    """Read every event once and collect the facts it states."""
    collector = FactCollector()
    for event in events:
        collector.observe(event)
    return collector.facts()


def _derive_mla(found: dict[str, Fact]) -> None:
    """Whether the model uses MLA attention: the selector says so, or the architecture does."""
    selector = found.get("selector_use_mla")
    if selector is not None:
        found["uses_mla"] = Fact("uses_mla", bool(selector.value), selector.line, selector.source)
        return
    backend = found.get("attention_backend")
    if backend is not None and "MLA" in str(backend.value).upper():
        found["uses_mla"] = Fact("uses_mla", True, backend.line, backend.source)
        return
    for name in ("architecture", "model"):
        fact = found.get(name)
        if fact is not None and MLA_ARCHITECTURES.search(str(fact.value).replace("-", "")):
            found["uses_mla"] = Fact("uses_mla", True, fact.line, f"{name} ({fact.value})")
            return
