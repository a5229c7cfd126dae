"""Named Python rules: diagnoses that need more than one line to say.

Signatures match one event each.  Some root causes are only visible across
events and facts — a KV-cache dtype in force that nobody asked for, a log
that simply stops — so they live here as small functions of facts and
signature findings, returning findings that look exactly like a
signature's.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from vlogscope.assemble import Event, EventKind
from vlogscope.engine_args import ArgumentHistory, argument_history, release
from vlogscope.facts import Fact, Facts
from vlogscope.findings import Evidence, Finding
from vlogscope.signatures import Match, Role, Severity, candidate_texts

_FP8 = re.compile(r"fp8|float8", re.IGNORECASE)
# Exceptions printed by an orderly shutdown, not by a failure.
_SHUTDOWN_EXCEPTIONS = re.compile(r"KeyboardInterrupt|SystemExit|CancelledError|BrokenPipeError")


def ends_in_shutdown(event: Event) -> bool:
    """A traceback whose final exception is a shutdown (Ctrl-C, SIGTERM, exit)."""
    return bool(event.exceptions) and bool(_SHUTDOWN_EXCEPTIONS.search(event.exceptions[-1].type))


CHECKPOINT_KV_KEYS = (
    "`kv_cache_quant_algo` in hf_quant_config.json (ModelOpt) and `kv_cache_scheme` in "
    "config.json's `quantization_config` (compressed-tensors, newer ModelOpt exports)"
)


def excerpt(text: str, needle: str, width: int = 160) -> str:
    """The part of a long line around `needle`, so evidence shows what matters.

    >>> excerpt("a" * 300 + " kv_cache_dtype=fp8, " + "b" * 300, "kv_cache_dtype", 40)
    '…aaaaaaaaa kv_cache_dtype=fp8, bbbbbbbbbb…'
    """
    if len(text) <= width:
        return text
    at = text.find(needle)
    if at < 0:
        return text[: width - 1] + "…"
    start = max(0, at - width // 4)
    end = min(len(text), start + width)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _is_fp8(value: object) -> bool:
    return value is not None and bool(_FP8.search(str(value)))


def _checkpoint_source(quantization: object) -> str:
    q = str(quantization or "").lower()
    if q.startswith("modelopt"):
        return (
            f"the ModelOpt checkpoint (quantization={quantization}) declares "
            "`kv_cache_quant_algo: FP8` in hf_quant_config.json"
        )
    if "compressed" in q:
        return (
            "the compressed-tensors checkpoint declares `quantization_config.kv_cache_scheme` "
            "in config.json"
        )
    return f"the checkpoint's quantization config ({CHECKPOINT_KV_KEYS})"


def _fixes(facts: Facts, version: tuple[int, int, int] | None) -> tuple[str, ...]:
    compressed = "compressed" in str(facts.value("quantization") or "").lower()
    flag = (
        "Pass `--kv-cache-dtype bfloat16` (accepted from vLLM 0.11; an explicit dtype beats a "
        "ModelOpt checkpoint from 0.14)."
    )
    if compressed and version is not None and (0, 15, 0) <= version < (0, 21, 0):
        flag = (
            "An explicit `--kv-cache-dtype bfloat16` does NOT help on this version: in vLLM "
            "0.15-0.20 a compressed-tensors `kv_cache_scheme` overrides any flag (fixed in 0.22, "
            "where an explicit dtype wins)."
        )
    fixes = [
        flag,
        f"Remove the checkpoint's KV-cache quantization keys ({CHECKPOINT_KV_KEYS}) to fall back "
        "to a 16-bit KV cache.",
    ]
    if facts.value("uses_mla") and (version is None or version < (0, 18, 0)):
        fixes.append(
            "Upgrade to vLLM >= 0.18, where the TRITON_MLA backend accepts an fp8 KV cache "
            "(vllm-project/vllm#34597)."
        )
    return tuple(fixes)


def _requested_text(requested: Fact, explicit: bool) -> str:
    if explicit:
        where = f"{requested.source} line {requested.line}"
        return f"`--kv-cache-dtype {requested.value}` was asked for ({where})"
    return (
        f"no fp8 was asked for ({requested.source} line {requested.line}: kv_cache_dtype not "
        "set, i.e. `auto`)"
    )


def _shown_text(config: Fact | None, selector: Fact | None) -> str:
    if config is None:
        return "the engine config line is not in the log"
    shown = f"engine config line {config.line}: kv_cache_dtype={config.value}"
    if selector is not None and not _is_fp8(config.value):
        shown += (
            f"; the attention selector (line {selector.line}) got kv_cache_dtype="
            f"{selector.value}, so the override happened after the config line was printed"
        )
    return shown


# The API server's shutdown note: `port 8000 is used by process psutil.Process(pid=N, ...)`.
_PORT_HOLDER = re.compile(r"port \d+ is used by process psutil\.Process\(pid=(?P<pid>\d+)")


def self_explained(matches: Sequence[Match]) -> list[Match]:
    """Drop matches whose own text shows they are not a failure.

    When the API server shuts down it reports which process holds its port; when
    that is the server itself (same pid as the record's prefix), nothing else
    held the port.
    """
    kept = []
    for m in matches:
        holder = _PORT_HOLDER.search(m.text)
        if holder and m.event.pid is not None and int(holder["pid"]) == m.event.pid:
            continue
        kept.append(m)
    return kept


# An operator or supervisor asked the server to stop (0.11+ tags these `[shutdown]`).
_SHUTDOWN_REQUEST = re.compile(
    r"shutdown triggered|received signal=SIG(?:TERM|INT)|Received (?:SIGTERM|SIGINT|signal \d+)"
    r"|Shutting down gracefully|interrupted by (?:user|SIGINT)"
    # V0 servers: the RPC server's and the HTTP launcher's answers to SIGINT/SIGTERM.
    r"|RPC Server was interrupted|Gracefully stopping http server"
)
# What a requested shutdown brings about and is no failure then.
_STOPPED_BY_SHUTDOWN = ("engine-dead-runtime", "engine-died-silently")


class ShutdownRequest:
    """The first line at which the run was asked to stop, and the first traceback
    that ends in KeyboardInterrupt (SIGINT, or vLLM's SIGTERM handler)."""

    def __init__(self) -> None:
        self.line: int | None = None
        self.interrupted: Event | None = None

    def observe(self, event: Event) -> None:
        if (
            self.line is None
            and event.kind is not EventKind.ROUTINE
            and _SHUTDOWN_REQUEST.search(event.message)
        ):
            self.line = event.line
        if (
            self.interrupted is None
            and event.exceptions
            and event.exceptions[-1].type.endswith("KeyboardInterrupt")
        ):
            self.interrupted = event


# Where a process that was stopped had been blocked: the frames of its interruption.
_WAITS = (
    (re.compile(r"huggingface_hub/"), "the Hugging Face Hub (downloading files or metadata)"),
    (re.compile(r"/(?:ssl|socket)\.py$|/(?:httpcore|httpx|urllib3|requests|aiohttp)/"),
     "the network"),
    (re.compile(r"/subprocess\.py$"),
     "a subprocess (vLLM inspects the model's class in one, and runs compilers in others)"),
    (re.compile(r"torch/distributed/|/pynccl|/shm_broadcast\.py$"),
     "other ranks (a collective or the shared-memory broadcast)"),
    (re.compile(r"/filelock/|file_baton\.py$"), "a file lock held by another process"),
    (re.compile(r"/multiprocessing/connection\.py$"),
     "another process (a pipe: vLLM's engine process reports its start-up through one)"),
)  # fmt: skip


def _waiting_on(event: Event) -> str | None:
    """What the interrupted process was blocked on, judged by its innermost frames."""
    for frame in reversed(event.frames[-6:]):
        for pattern, what in _WAITS:
            if pattern.search(frame.file):
                return what
    return None


# Facts that only a vLLM process that began to start prints.
_STARTED = ("platform", "vllm_version", "engine_config", "requested_args")


def interrupted_startup(event: Event | None, facts: Facts) -> Finding | None:
    """Start-up ended in KeyboardInterrupt: someone (or something) sent SIGINT or SIGTERM.

    Nothing in vLLM failed by itself; the "Engine core initialization failed"
    that follows is the interruption's echo.  If the traceback shows the
    process blocked on the network, the Hub, other ranks, a lock or a
    subprocess, start-up was stuck and the signal ended the wait.  Otherwise a
    bare `KeyboardInterrupt` is SIGINT, a person's Ctrl-C (no failure: the
    taxonomy's `other`), and `KeyboardInterrupt: terminated` is vLLM's SIGTERM
    handler, a supervisor killing the process (`engine-died-silently`).
    """
    phase = facts.value("last_phase")
    if phase is None and any(facts.get(name) for name in _STARTED):
        phase = "start-up"  # vLLM had started, before any milestone it names
    if event is None or phase is None or facts.value("startup_complete"):
        return None
    exc = event.exceptions[-1]
    stopped = f"{event.process or 'A process'} stopped with `{str(exc)[:200]}` (line {exc.line})"
    waiting = _waiting_on(event)
    fix: tuple[str, ...]
    if waiting is not None:
        id_ = "startup-hang/stopped-while-waiting"
        title = f"Start-up was stuck waiting on {waiting.split(' (')[0]} and was stopped"
        explanation = (
            f"{stopped} during {phase}, and its traceback shows it blocked waiting on "
            f"{waiting}: start-up was not progressing, and a supervisor, a timeout or a person "
            "stopped it."
        )
        fix = (
            "For downloads: check network access to the Hub (proxy, DNS, HF_ENDPOINT), or "
            "download the model beforehand and set HF_HUB_OFFLINE=1.",
            "For other ranks: rerun with NCCL_DEBUG=INFO and check that every rank started; "
            "for a lock: make sure no other process holds it, or remove a stale lock file.",
        )
    elif not exc.message.strip():  # no message of its own: SIGINT
        id_ = "other/startup-stopped-by-user"
        title = f"Start-up was stopped with Ctrl-C (SIGINT) during {phase}"
        explanation = (
            f"{stopped} while starting ({phase}), with no message: the process received "
            "SIGINT, which Ctrl-C in a terminal and a notebook's interrupt send (vLLM's server "
            "turns the SIGTERM of a supervisor into `KeyboardInterrupt: terminated` instead). "
            "Nothing in vLLM failed; the errors that follow report the interruption."
        )
        fix = (
            "Let start-up finish: check the timeline for the phase it was in; torch.compile, "
            "CUDA-graph capture and first downloads can take minutes.",
            "If it was stuck there, rerun with VLLM_LOGGING_LEVEL=DEBUG to see where it waits.",
        )
    else:
        id_ = "engine-died-silently/startup-interrupted"  # the taxonomy's "killed by a signal"
        title = f"Start-up was interrupted ({exc.type}) during {phase}"
        explanation = (
            f"{stopped} while starting ({phase}): the process received a signal to stop (a "
            "supervisor, orchestrator or job scheduler stopping it; vLLM's server turns SIGTERM "
            "into `KeyboardInterrupt: terminated`). The errors that follow report the "
            "interruption; nothing in vLLM failed by itself."
        )
        fix = (
            "If nobody stopped it on purpose, look for what sent the signal: a job scheduler's "
            "time limit, a start-up timeout in the wrapper, or a container being replaced.",
            "A long start-up phase (torch.compile, weight download) is often mistaken for a "
            "hang; check the timeline before a supervisor's start-up timeout.",
        )
    return Finding(
        id=id_,
        category=id_.split("/")[0],
        severity=Severity.ERROR,
        title=title,
        explanation=explanation,
        fix=fix,
        evidence=(Evidence(exc.line, str(exc).splitlines()[0], event.process),),
        confidence=0.7 if waiting is None else 0.6,
        priority=3 if waiting is None else 4,
    )


def stopped_on_request(findings: Sequence[Finding], requested_line: int | None) -> list[Finding]:
    """An engine that 'died' after the run was asked to stop was stopped: information."""
    if requested_line is None:
        return list(findings)
    why = f"The run had been asked to stop at line {requested_line}, so this is the shutdown."
    return [
        _demoted(f, "after a requested shutdown", why)
        if f.category in _STOPPED_BY_SHUTDOWN and f.line > requested_line
        else f
        for f in findings
    ]


def platform_found_later(findings: Sequence[Finding], facts: Facts) -> list[Finding]:
    """Findings without the "No platform detected" that a platform plugin then answered.

    vLLM looks for its own platforms before the out-of-tree ones (Kunlun, some
    Ascend and Gaudi releases), so a plugin platform's log can say
    "UnspecifiedPlatform" just before "Platform plugin X is activated": that
    is how such a run starts, not a failure, so nothing is left to report.
    """
    platform = facts.get("platform")
    if platform is None or platform.value == "unspecified":
        return list(findings)
    return [
        f
        for f in findings
        if f.id != "platform-unsupported/unspecified-platform" or f.line > platform.line
    ]


def _demoted(f: Finding, note: str, why: str) -> Finding:
    """A finding the run's own later lines show to be no failure, kept as information."""
    return dataclasses.replace(
        f, severity=Severity.INFO, title=f"{f.title} ({note})", explanation=f"{f.explanation} {why}"
    )


def stalled_with_warnings(findings: Sequence[Finding], facts: Facts) -> Finding | None:
    """The log stops mid-start-up after stall warnings nothing moved on from.

    A process that prints "no shared memory broadcast block found in 60
    seconds" is alive and waiting; if no progress follows and the log ends
    before start-up completes, the start-up hung (a killed process prints
    nothing more).
    """
    stalls = [
        f for f in findings if f.category == "startup-hang" and f.severity is Severity.WARNING
    ]
    phase = facts.get("last_phase")
    if not stalls or phase is None or facts.value("startup_complete"):
        return None
    first, last = stalls[0], stalls[-1]
    return Finding(
        id="startup-hang/stalled-until-log-end",
        category="startup-hang",
        severity=Severity.ERROR,
        title=f"Start-up hung in {phase.value}: processes kept waiting and the log ends",
        explanation=(
            f"After `{phase.value}` (line {phase.line}) vLLM warned that a process stopped "
            f"consuming work ({last.title.lower()}, lines {first.line}–{last.line}), nothing "
            "moved on afterwards, and the log ends before start-up completed. The processes "
            "were alive and waiting: for a peer stuck in a collective, for a kernel build or "
            "a lock held by another process (a stale JIT lock file after a killed build), or "
            "for slow storage."
        ),
        fix=(
            "Dump the stuck processes' stacks (`py-spy dump --pid PID`) to see what they wait "
            "for; rerun with NCCL_DEBUG=INFO for collectives.",
            "If the last lines wait on a lock file (`waiting for baton release at ...`), make "
            "sure no other build runs, delete the stale lock and restart.",
        ),
        evidence=(
            Evidence(phase.line, f"last start-up phase reached: {phase.value}"),
            *(e for f in (first, last) for e in f.evidence[:1]),
        ),
        confidence=0.55,
        priority=8,
    )


UNEXPECTED_KEYWORD = "invalid-argument/unexpected-keyword"
# The classes whose keywords are engine arguments (LLM passes its own through).
_ENGINE_ARGS_CLASS = re.compile(r"(?:Async)?EngineArgs|LLM")
_STALE_INSTALL_HINT = (
    "If the installed vLLM should take `{arg}`, look for a stale or mixed installation: "
    "`pip show vllm` and `python -c 'import vllm; print(vllm.__file__)'` must name the same "
    "place; reinstall vLLM into a clean environment."
)


def engine_argument_history(
    findings: Sequence[Finding], matches: Sequence[Match], facts: Facts
) -> list[Finding]:
    """An engine argument refused by `EngineArgs`, judged by its history (engine_args.py).

    The signature only knows that a keyword was refused.  Whether vLLM removed
    it since, added it later, or holds it in the very release that refused it
    decides what the user must change: the caller, the vLLM version, or the
    installation.
    """
    match = next((m for m in matches if m.signature.id == UNEXPECTED_KEYWORD), None)
    generic = next((f for f in findings if f.id == UNEXPECTED_KEYWORD), None)
    if match is None or generic is None:
        return list(findings)
    arg, cls = match.captures.get("arg", ""), match.captures.get("cls", "")
    names_engine_args = _ENGINE_ARGS_CLASS.fullmatch(cls) is not None or (
        cls == "__init__"  # Python < 3.10 leaves the class out; the caller's line names it
        and any("EngineArgs" in text for text in match.event.texts)
    )
    history = argument_history(arg, asynchronous=cls != "EngineArgs") if names_engine_args else None
    if history is None:
        return list(findings)
    judged = _judged_argument(generic, history, cls, release(facts.value("vllm_version")))
    return [judged if f is generic else f for f in findings]


def _judged_argument(
    generic: Finding, history: ArgumentHistory, cls: str, running: tuple[int, int, int] | None
) -> Finding:
    arg, where = history.name, history.releases_text()
    caller = "EngineArgs" if cls == "__init__" else cls
    this = f"this log's vLLM is {'.'.join(map(str, running))}" if running else ""
    stale = _STALE_INSTALL_HINT.format(arg=arg)
    if running is not None and history.held_by(running):
        return dataclasses.replace(
            generic,
            id="dependency-missing/stale-vllm-installation",
            category="dependency-missing",
            title=f"vLLM {'.'.join(map(str, running))} should take `{arg}`, yet refused it",
            explanation=(
                f"{caller} refused `{arg}` (line {generic.line}), and vLLM releases {where} "
                f"declare it; {this}. The code that ran is not the release that printed its "
                "version: a stale or mixed installation (an older copy earlier on the path, "
                "files of two releases in one site-packages) shadows it."
            ),
            fix=(stale, "Reinstall vLLM into a fresh virtual environment and try again."),
            priority=84,
            confidence=0.75,
        )
    too_old = (running is not None and history.added_after(running)) or (
        running is None and history.current
    )
    if too_old:
        return dataclasses.replace(
            generic,
            id="dependency-missing/engine-argument-too-new",
            category="dependency-missing",
            title=f"`{arg}` needs vLLM {history.first} or newer",
            explanation=(
                f"{caller} refused `{arg}` (line {generic.line}). vLLM has taken this argument "
                f"since {history.first}{'; ' + this if this else ''}: the code that passed it "
                "(a training or serving framework, a script) was written for a newer vLLM "
                "than the installed one."
            ),
            fix=(
                f"Upgrade vLLM to {history.first} or newer (`pip install 'vllm>={history.first}'`)"
                ", or use a release of the calling framework written for the installed vLLM.",
                stale,
            ),
            priority=84,
            confidence=0.8,
        )
    return dataclasses.replace(
        generic,
        id="invalid-argument/engine-argument-removed",
        title=f"`{arg}` was removed from vLLM after {history.last}",
        explanation=(
            f"{caller} refused `{arg}` (line {generic.line}). Only vLLM releases {where} take "
            f"it{'; ' + this if this else ''}: the code that passed it (a training or serving "
            "framework, a script) was written for an older vLLM."
        ),
        fix=(
            f"Drop `{arg}` from the arguments (the release notes of the vLLM release after "
            f"{history.last} name what replaced it), upgrade the calling framework to a release "
            f"written for this vLLM, or pin `vllm<={history.last}`.",
            stale,
        ),
        priority=84,
        confidence=0.8,
    )


# FlashInfer names a JIT module after its dtypes: `..._dtype_kv_e4m3_...`.
_FP8_KV_KERNEL = re.compile(r"flashinfer\S*?dtype_kv_(?P<dtype>e4m3|e5m2)")


def fp8_kv_kernel_build(matches: Sequence[Match], facts: Facts) -> Finding | None:
    """A compile failure whose kernel is FlashInfer's fp8-KV attention kernel.

    The compiler error is real, but what the user must change is the KV-cache
    dtype: FlashInfer compiles one kernel per dtype combination on first use,
    and its fp8-KV variants do not build for every GPU generation.
    """
    for m in matches:
        if m.signature.category != "compile-failure":
            continue
        kernel = next(filter(None, map(_FP8_KV_KERNEL.search, m.event.texts)), None)
        if kernel is None:
            continue
        config = facts.get("kv_cache_dtype")
        in_force = f" (kv_cache_dtype={config.value}, line {config.line})" if config else ""
        return Finding(
            id="kv-cache-dtype-unsupported/flashinfer-fp8-kv-kernel-build",
            category="kv-cache-dtype-unsupported",
            severity=Severity.ERROR,
            title=f"FlashInfer could not build its fp8 ({kernel['dtype']}) KV-cache kernel",
            explanation=(
                f"The compile failure at line {m.line} is FlashInfer's just-in-time build of "
                f"an attention kernel for an fp8 {kernel['dtype']} KV cache{in_force}. FlashInfer "
                "builds one kernel per dtype combination when it is first used, and its fp8-KV "
                "variants do not compile for every GPU generation: the fp8 KV cache, not the "
                "toolchain, is what fails here."
            ),
            fix=(
                "Use `--kv-cache-dtype auto` (the model's dtype), or keep fp8 with another "
                "attention backend (`--attention-backend FLASH_ATTN`, or VLLM_ATTENTION_BACKEND "
                "on older versions).",
                "If fp8 KV with FlashInfer is required, upgrade flashinfer-python to a release "
                "that lists this GPU for fp8 KV, and clear ~/.cache/flashinfer.",
            ),
            evidence=(Evidence(m.line, m.text, m.event.process),),
            confidence=0.75,
            priority=82,
            processes=(m.event.process,) if m.event.process else (),
        )
    return None


# The op that writes new keys and values into the paged KV cache, by platform:
# `reshape_and_cache(_flash)` (CUDA/ROCm), `ReshapeAndCacheOperation` / `ReshapeCacheOperation`
# (Ascend's ATB and aclnn ops), `_npu_reshape_and_cache`.
_KV_CACHE_WRITE = re.compile(r"(?P<op>\w*(?:[Rr]eshape_?[Aa]nd_?[Cc]ache|ReshapeCache)\w*)")
_FAILURE = re.compile(r"fail|error|not support|unsupported", re.IGNORECASE)


def fp8_kv_cache_write(events: Sequence[Event], facts: Facts) -> Finding | None:
    """The KV-cache write op failed while an fp8 KV cache was in force.

    That op is where the cache's dtype meets the device: it quantises every new
    key and value into the cache.  Kernels for it exist per dtype and platform,
    and a platform without the fp8 variant fails there on the first request or
    the profiling run, with a message about the op rather than the dtype.
    """
    stated = next(
        (
            fact
            for name in ("kv_cache_dtype", "kv_cache_dtype_notice", "requested_kv_cache_dtype")
            if (fact := facts.get(name)) is not None and _is_fp8(fact.value)
        ),
        None,
    )
    if stated is None:
        return None
    for event in sorted(events, key=lambda e: e.line):
        for line, text in candidate_texts(event):
            op = _KV_CACHE_WRITE.search(text)
            if op is None or not _FAILURE.search(text):
                continue
            return Finding(
                id="kv-cache-dtype-unsupported/kv-cache-write-failed",
                category="kv-cache-dtype-unsupported",
                severity=Severity.ERROR,
                title=f"Writing the fp8 KV cache failed in {op['op']}",
                explanation=(
                    f"`{excerpt(text, op['op'])}` (line {line}): {op['op']} is the op that "
                    "stores each new key and value in the KV cache, converting them to the "
                    f"cache's dtype, and the KV cache is fp8 here ({stated.value}, line "
                    f"{stated.line}). Platforms and kernels that lack the fp8 variant of this op "
                    "fail at this point, on the profiling run or the first request."
                ),
                fix=(
                    "Serve with `--kv-cache-dtype auto` (the model's own dtype) on this device.",
                    "If fp8 KV is needed, check that this platform's release (vLLM plugin, "
                    "CANN/ROCm/CUDA build) lists fp8 KV caches for the attention backend in use.",
                ),
                evidence=(Evidence(line, text.partition("\n")[0], event.process),),
                confidence=0.65,
                priority=81,
                processes=(event.process,) if event.process else (),
            )
    return None


# V0's default KV-cache block size on CUDA, ROCm, CPU and XPU (HPU and Neuron differ).
DEFAULT_BLOCK_SIZE = 16
_OTHER_BLOCK_SIZES = re.compile(r"hpu|neuron|tpu", re.IGNORECASE)


def blocks_below_max_len(facts: Facts, findings: Sequence[Finding]) -> Finding | None:
    """V0 printed `# GPU blocks: N`; N blocks of 16 tokens hold fewer tokens than max_model_len.

    vLLM then refuses to start ("The model's max seq len ... is larger than the
    maximum number of tokens that can be stored in KV cache"), and a paste that
    stops before that line still shows both numbers.
    """
    blocks, max_len = facts.get("gpu_blocks"), facts.get("max_model_len")
    if (
        blocks is None
        or max_len is None
        or any(f.category in ("insufficient-kv-cache", "no-kv-cache-memory") for f in findings)
    ):
        return None
    if not isinstance(blocks.value, int) or blocks.value <= 0:
        return None
    try:
        longest = int(str(max_len.value))
    except ValueError:
        return None
    args = facts.value("requested_args")
    block_size = args.get("block_size") if isinstance(args, dict) else None
    if block_size is None and _OTHER_BLOCK_SIZES.search(str(facts.value("device", ""))):
        return None
    size = int(block_size) if isinstance(block_size, int | str) and str(block_size).isdigit() else 0
    size = size or DEFAULT_BLOCK_SIZE
    tokens = blocks.value * size
    if tokens >= longest:
        return None
    return Finding(
        id="insufficient-kv-cache/blocks-below-max-model-len",
        category="insufficient-kv-cache",
        severity=Severity.ERROR,
        title=f"The KV cache holds {tokens:,} tokens; max_model_len is {longest:,}",
        explanation=(
            f"Profiling left {blocks.value:,} KV-cache blocks (line {blocks.line}) of {size} "
            f"tokens each: {tokens:,} tokens, fewer than one request of max_model_len "
            f"{longest:,} (line {max_len.line}) needs. vLLM refuses to start in this case."
        ),
        fix=(
            f"Use `--max-model-len {tokens}` (or less), or raise `--gpu-memory-utilization`.",
            "Or free KV-cache room: more GPUs (`--tensor-parallel-size`), a quantized model, "
            "or `--enforce-eager` to save CUDA-graph memory.",
        ),
        evidence=tuple(
            sorted(
                (
                    Evidence(blocks.line, f"# GPU blocks: {blocks.value}"),
                    Evidence(max_len.line, f"max_model_len={longest}"),
                ),
                key=lambda e: e.line,
            )
        ),
        confidence=0.7,
        priority=60,
    )


def kv_dtype_from_checkpoint(
    facts: Facts, findings: Sequence[Finding], stopped_mid_startup: bool
) -> Finding | None:
    """The KV-cache dtype in force is fp8 although the user asked for another (or `auto`).

    From vLLM 0.14 `auto` means "whatever the checkpoint declares": ModelOpt's
    `kv_cache_quant_algo` is resolved before the engine config line is printed
    (so it shows `kv_cache_dtype=fp8`), and in 0.15-0.20 a compressed-tensors
    `kv_cache_scheme` forces fp8 even over an explicit flag, after that line.
    """
    requested = facts.get("requested_kv_cache_dtype")
    config = facts.get("kv_cache_dtype")
    selector = facts.get("selector_kv_cache_dtype")
    effective = selector or config
    if effective is None or not _is_fp8(effective.value) or requested is None:
        return None
    if _is_fp8(requested.value):
        return None  # fp8 was asked for: not an override
    explicit = bool(facts.value("requested_kv_cache_dtype_explicit"))
    version = release(facts.value("vllm_version"))
    unsupported = [f for f in findings if f.category == "kv-cache-dtype-unsupported"]
    consequence = ""
    if unsupported:
        cause = unsupported[0]
        ranks = f", {cause.ranks}" if cause.ranks else ""
        consequence = f" {cause.title} (evidence: line {cause.line}{ranks})."
    elif stopped_mid_startup and facts.value("uses_mla") and version and version < (0, 18, 0):
        consequence = (
            " The log stops during start-up; with an MLA model on vLLM < 0.18 an fp8 KV cache "
            "fails on every GPU except Hopper (SM90) and SM100, because TRITON_MLA lacks fp8."
        )
    explanation = (
        f"The KV cache is {effective.value} ({_shown_text(config, selector)}) although "
        f'{_requested_text(requested, explicit)}. From vLLM 0.14, `auto` means "whatever the '
        f'checkpoint declares": {_checkpoint_source(facts.value("quantization"))}, and that '
        f"puts fp8 in force.{consequence}"
    )
    evidence = [
        Evidence(f.line, excerpt(f.text, "kv_cache_dtype") or f"{f.name}={f.value}", note=note)
        for f, note in (
            (requested, "requested" if explicit else "requested: kv_cache_dtype absent, i.e. auto"),
            (config, f"effective: kv_cache_dtype={config.value}" if config else ""),
            (selector, f"in force at the attention layer: {selector.value}" if selector else ""),
        )
        if f is not None
    ]
    for cause in unsupported[:1]:
        evidence.extend(cause.evidence[:1])
    failing = bool(unsupported) or bool(consequence)
    return Finding(
        id="kv-dtype-override-ignored/checkpoint-quant-config",
        category="kv-dtype-override-ignored",
        severity=Severity.ERROR if failing else Severity.INFO,
        title=(
            f"The KV cache is {effective.value} because the checkpoint's quantization config "
            f"says so, not because it was asked for (requested: {requested.value})"
        ),
        explanation=explanation,
        fix=_fixes(facts, version),
        evidence=tuple(sorted(evidence, key=lambda e: e.line)),
        confidence=0.9 if unsupported else 0.6,
        priority=95,
        references=(
            "https://github.com/vllm-project/vllm/pull/30141",
            "https://github.com/vllm-project/vllm/pull/34597",
        ),
    )


_PHASE_REASONS = {
    "weight loading": (
        "host RAM exhausted while reading shards (the kernel's OOM killer leaves no Python "
        "error), slow storage hitting a supervisor's start-up timeout, or a truncated log"
    ),
    "CUDA graph capture": "GPU memory pressure during capture or a watchdog timeout",
    "torch.compile": "a compiler subprocess killed or a start-up timeout during compilation",
}


def engine_died_silently(facts: Facts, last_event: Event | None) -> Finding | None:
    """The log stops during start-up and no error record says why."""
    phase = facts.get("last_phase")
    if phase is None or facts.value("startup_complete") or last_event is None:
        return None
    if phase.value == "distributed set-up":
        return _stopped_in_distributed_setup(phase, last_event)
    reasons = _PHASE_REASONS.get(
        str(phase.value),
        "the process was killed (OOM killer, SIGKILL from a supervisor or orchestrator "
        "timeout) or the log was cut off",
    )
    return Finding(
        id="engine-died-silently/stopped-during-startup",
        category="engine-died-silently",
        severity=Severity.ERROR,
        title=f"The log stops during start-up ({phase.value}) with no error record",
        explanation=(
            f"Start-up reached `{phase.value}` (line {phase.line}) and the log ends at line "
            f"{last_event.line_numbers[-1]} without an error. Likely: {reasons}. Or the "
            "server was still starting when this log was copied: a log that ends here says "
            "only that nothing more was written."
        ),
        fix=(
            "If the process is still running, read the log again when start-up is over "
            "(`vlogscope watch` follows a growing log).",
            "Check the process's exit status and the kernel log (`dmesg | grep -i -E "
            "'killed process|out of memory'`) on the host.",
            "Check the supervisor's start-up timeout (Kubernetes probes, "
            "VLLM_ENGINE_READY_TIMEOUT_S) and whether the whole log was captured.",
        ),
        evidence=(
            Evidence(phase.line, f"last start-up phase reached: {phase.value}"),
            Evidence(last_event.line_numbers[-1], last_event.texts[-1]),
        ),
        confidence=0.5,
        role=Role.SYMPTOM,
        priority=5,
    )


def _stopped_in_distributed_setup(phase: Fact, last_event: Event) -> Finding:
    """A log that ends in NCCL/Gloo set-up: the ranks are waiting for each other.

    Before the weights load, a process holds little memory, so the OOM killer is
    an unlikely reason to stop here; a collective that never completes (a rank
    that cannot reach another over P2P, shared memory or the network) is the
    classic one, and it hangs without printing anything.
    """
    end = last_event.line_numbers[-1]
    return Finding(
        id="startup-hang/stopped-in-distributed-setup",
        category="startup-hang",
        severity=Severity.ERROR,
        title="Start-up stops in distributed set-up (NCCL/Gloo) with no error record",
        explanation=(
            f"Start-up reached `distributed set-up` (line {phase.line}) and the log ends at line "
            f"{end} without an error and before any weights load. The ranks were most likely "
            "waiting in a collective that never completed: one rank cannot reach another "
            "(GPU peer-to-peer, shared memory or the network), or a rank never started."
        ),
        fix=(
            "Rerun with NCCL_DEBUG=INFO (and VLLM_LOGGING_LEVEL=DEBUG) to see the last transport "
            "each rank set up; try NCCL_P2P_DISABLE=1 to rule out peer-to-peer over PCIe.",
            "In containers give shared memory (`--ipc=host` or a large `--shm-size`); across "
            "hosts set NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME to the right interface and open "
            "the ports between them.",
        ),
        evidence=(
            Evidence(phase.line, f"last start-up phase reached: {phase.value}"),
            Evidence(end, last_event.texts[-1]),
        ),
        confidence=0.5,
        role=Role.SYMPTOM,
        priority=5,
    )


# Start-up phases that come before the weights load: the model's shapes are checked
# against the parallel sizes while the engine is configured.
_BEFORE_WEIGHTS = ("argument parsing", "engine configuration", "distributed set-up")
# Findings that say "something failed" without naming it.
_VAGUE = ("engine-died-silently/", "other/", "startup-hang/stopped-in-distributed-setup")


def unusual_tensor_parallel_size(facts: Facts, findings: Sequence[Finding]) -> Finding | None:
    """A run that fails, unexplained, before its weights load, with TP 3, 5, 6, 7, ...

    vLLM checks that the attention heads (and experts, vocabulary) divide by the
    tensor-parallel size while it configures the engine; head counts are almost
    always powers of two, so an odd size is the likeliest cause when the excerpt
    stops before saying why.
    """
    size = facts.get("tensor_parallel_size")
    phase = facts.value("last_phase")
    if size is None or not isinstance(size.value, int) or size.value < 3:
        return None
    if size.value & (size.value - 1) == 0 or (phase is not None and phase not in _BEFORE_WEIGHTS):
        return None
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if not errors or not all(f.id.startswith(_VAGUE) for f in errors):
        return None
    return Finding(
        id="tp-pp-config-invalid/unusual-tensor-parallel-size",
        category="tp-pp-config-invalid",
        severity=Severity.ERROR,
        title=f"tensor_parallel_size={size.value} is not a power of two, and the run failed "
        "before loading weights",
        explanation=(
            f"The run asked for tensor_parallel_size={size.value} (line {size.line}) and failed "
            f"during start-up ({phase or 'before any milestone'}) without a recognised error. "
            "vLLM requires the number of attention heads (and KV heads, experts and often the "
            "vocabulary) to divide by the tensor-parallel size, and these are almost always "
            f"powers of two, so {size.value} is the likeliest reason."
        ),
        fix=(
            "Use a tensor-parallel size that divides the model's `num_attention_heads` and "
            "`num_key_value_heads` (config.json): 1, 2, 4 or 8 for most models.",
            "To use an odd number of GPUs, combine tensor and pipeline parallelism "
            "(`--pipeline-parallel-size`) or run several replicas.",
        ),
        evidence=(Evidence(size.line, f"tensor_parallel_size={size.value}"),),
        confidence=0.35,
        priority=7,
    )


# vLLM's API server says this every ~10 s while its engine core processes start.
_WAITING_FOR_ENGINES = re.compile(
    r"Waiting for (?P<local>\d+) local, (?P<remote>\d+) remote core engine proc\(s\) to start"
)
# Printed this many times in a row at the end of a log: start-up stalled (~1 minute).
STALL_MIN_REPEATS = 6


class WaitingStreak:
    """Consecutive "Waiting for N local, M remote core engine proc(s)" records.

    A start-up that progresses prints them a few times between other records;
    one that stalls prints nothing else until the log ends.  Any other record
    (not a routine run) breaks the streak.
    """

    def __init__(self) -> None:
        self.events: list[Event] = []  # the first and the latest of the streak
        self.count = 0

    def observe(self, event: Event) -> None:
        if event.kind is EventKind.ROUTINE:
            return
        if _WAITING_FOR_ENGINES.search(event.message):
            self.events = [self.events[0] if self.events else event, event]
            self.count += 1
        else:
            self.events, self.count = [], 0


# A stats line that reports work done: some throughput above zero.
_MOVING = re.compile(r"throughput: (?:[1-9]|0\.\d*[1-9])")


class Progress:
    """The last line at which a run visibly moved on: a stats line reporting
    throughput, or (from the facts) the latest start-up milestone.

    A stall warning ("no shared memory broadcast block found in 60 seconds")
    is a hang only if nothing moves afterwards; long compilations and idle
    servers print it too.
    """

    def __init__(self) -> None:
        self.line = 0
        self.second_to_last = 0  # the moving stats line before `line`

    def observe(self, event: Event, stats: Sequence[str]) -> None:
        moving = [message for message in stats if _MOVING.search(message)]
        if moving:  # a routine run may hold many: then both lines fall inside it
            last = event.line_numbers[-1]
            self.second_to_last = last if len(moving) > 1 else self.line
            self.line = last

    def last_line(self, facts: Facts) -> int:
        phase = facts.get("last_phase")
        return max(self.line, phase.line if phase is not None else 0)


def survived_errors(findings: Sequence[Finding], progress: Progress) -> list[Finding]:
    """Errors the engine went on generating after: caught and survived, kept as information.

    A failure stops a launch; a run whose stats report throughput twice after
    an error (a plugin or `sitecustomize` that failed to import, a kernel that
    fell back) was not stopped by it.  Twice, because a stats line reports the
    interval before it: the first one after a crash still counts the tokens
    generated before it.  Nothing is demoted in a run that reports an engine
    death or another symptom of failure.  `unrecognized_after_progress` does
    the same for errors no signature names.
    """
    generating = progress.second_to_last
    if not generating or any(
        f.severity is Severity.ERROR and f.role is Role.SYMPTOM for f in findings
    ):
        return list(findings)
    why = f"The engine generated tokens after it (line {progress.line}), so it was not fatal."
    return [
        _demoted(f, "the run went on serving", why)
        if f.severity is Severity.ERROR
        and f.role is Role.CAUSE
        and max((e.line for e in f.evidence), default=0) < generating
        else f
        for f in findings
    ]


def recovered_stalls(findings: Sequence[Finding], progress_line: int) -> list[Finding]:
    """Stall warnings the run moved on from, demoted to information."""
    why = f"The run made progress afterwards (line {progress_line}), so this was a slow step."
    return [
        _demoted(f, "the run moved on", why)
        if f.category == "startup-hang"
        and f.severity is Severity.WARNING
        and max((e.line for e in f.evidence), default=0) < progress_line
        else f
        for f in findings
    ]


def startup_stalled(streak: WaitingStreak, facts: Facts) -> Finding | None:
    """The log ends while the API server is still waiting for its engine cores."""
    if streak.count < STALL_MIN_REPEATS or facts.value("startup_complete"):
        return None
    first, last = streak.events
    m = _WAITING_FOR_ENGINES.search(last.message)
    waiting_for = f"{m['local']} local and {m['remote']} remote" if m else "its"
    since = f"from {first.time} to {last.time}" if first.time and last.time else ""
    return Finding(
        id="startup-hang/waiting-for-engine-cores",
        category="startup-hang",
        severity=Severity.ERROR,
        title=f"Start-up stalled: the API server waited for {waiting_for} engine core process(es)",
        explanation=(
            f"The API server printed `{last.message}` {streak.count} times in a row "
            f"{since} (lines {first.line}–{last.line_numbers[-1]}) and the log ends there: "
            "an engine core process never finished starting (stuck in distributed set-up, "
            "weight loading from slow storage, or a collective waiting for a peer)."
        ).replace("  ", " "),
        fix=(
            "Look at the engine core and worker processes' own output for their last step; "
            "with VLLM_LOGGING_LEVEL=DEBUG and NCCL_DEBUG=INFO they say where they stopped.",
            "Check that every GPU is visible and free (GPU sharing layers, other processes), "
            "and that NCCL can use the network or shared memory (`--ipc=host`, `--shm-size`).",
        ),
        evidence=(
            Evidence(first.line, first.texts[0]),
            Evidence(last.line_numbers[-1], last.texts[-1]),
        ),
        confidence=0.6,
        role=Role.CAUSE,
        priority=40,
    )


# An ERROR record that is an exception line on its own: a paste that starts after
# the traceback's frames (`RuntimeError: ...`, `torch.OutOfMemoryError: ...`).
_EXCEPTION_RECORD = re.compile(
    r"(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)): (?P<message>.*)"
)


def unrecognized_error(events: Sequence[Event]) -> Finding | None:
    """A traceback no signature explains still means the run failed: say so, plainly."""
    for event in events:  # a cut-off traceback that shows what it was doing comes first
        if event.cut_off and _IMPORT_LINE.fullmatch(_last_source_line(event)):
            return _cut_off_traceback(event)
    cut_off: Event | None = None
    for event in events:
        failed = event.kind is EventKind.TRACEBACK or event.level in ("ERROR", "CRITICAL")
        if event.cut_off and failed:
            # A traceback whose exception line is missing says less than one whose line
            # is there (a paste that cut one copy and kept the next): look on first.
            cut_off = cut_off or event
            continue
        if event.exceptions:
            exc = event.exceptions[-1]
            kind, text, line = exc.type, str(exc).splitlines()[0], exc.line
        elif failed and (m := _EXCEPTION_RECORD.fullmatch(event.message)):
            kind, text, line = m["type"], event.message, event.line
        elif event.level == "CRITICAL":
            return _unrecognized_critical(event)
        else:
            continue
        if _SHUTDOWN_EXCEPTIONS.search(kind):
            continue
        return Finding(
            id="other/unrecognized-exception",
            category="other",
            severity=Severity.ERROR,
            title=f"Unrecognized error: {excerpt(text, kind, 120)}",  # the message says most
            explanation=(
                f"A traceback ends in `{text[:300]}` (line {line}) and no signature explains "
                "it. Read the traceback's last frames; if this is a vLLM failure worth a "
                "signature, add one to a patterns folder."
            ),
            fix=("Read the traceback from its first line; search vLLM's issues for its message.",),
            evidence=(Evidence(line, text, event.process),),
            confidence=0.3,
            priority=1,
        )
    return None if cut_off is None else _cut_off_traceback(cut_off)


def _unrecognized_critical(event: Event) -> Finding:
    """A CRITICAL record no signature explains: vLLM logs at that level only when
    it is about to stop, so the run failed even without a traceback."""
    return Finding(
        id="other/unrecognized-critical",
        category="other",
        severity=Severity.ERROR,
        title="A CRITICAL record that no signature explains",
        explanation=(
            f"`{event.message[:300]}` (line {event.line}) was logged at CRITICAL level, which "
            "vLLM uses only when it is about to stop, and no signature knows it. The lines "
            "before it, in the same process and the ones it names, hold the cause."
        ),
        fix=("Read the log above this line; search vLLM's issues for its message.",),
        evidence=(Evidence(event.line, event.message, event.process),),
        confidence=0.3,
        priority=1,
    )


# Files of the ASGI server stack: a traceback through them was raised handling a request.
_REQUEST_PATH = re.compile(r"/(?:starlette|fastapi|uvicorn)/")


# Where installed packages and the standard library live; a frame elsewhere is the
# application's own code.
_INSTALLED = re.compile(r"site-packages|dist-packages|[/\\]lib[/\\]python\d|^<")


def _outside_vllm(event: Event) -> bool:
    """A traceback raised in the application's own code (an RL trainer's worker, a
    client script) beside the server: none of its frames is in vLLM or a vLLM plugin,
    and at least one is outside the installed packages (a traceback in Ray's or
    torch's code alone may still be vLLM's failure)."""
    files = [f.file for f in event.frames]
    return (
        len(files) >= 2
        and not any("vllm" in f.lower() for f in files)
        and any(not _INSTALLED.search(f) for f in files)
    )


def _application_error(events: Sequence[Event], serving_line: int) -> Finding | None:
    """An unrecognised traceback that never passes through vLLM, once vLLM was serving:
    a warning about the application, not a failure of the server."""
    found = unrecognized_error(events)
    if found is None:
        return None
    cause = found.evidence[0]
    where = f" ({cause.process})" if cause.process else ""
    return _as_warning(
        found,
        "other/application-error-outside-vllm",
        f"An error in the application beside vLLM{where}: {excerpt(cause.text, '', 100)}",
        "and none of its frames is in vLLM or a vLLM plugin: the code that raised it is the "
        "application's (a trainer, an agent loop, a client script). vLLM was serving (line "
        f"{serving_line}), so this does not say the server failed.",
        ("Read the traceback in the application's code; vLLM needs no change for it.",),
    )


def _as_warning(
    found: Finding, finding_id: str, title: str, what: str, fix: tuple[str, ...]
) -> Finding:
    """An unrecognised traceback that is no failure of the run, said as a warning:
    `what` goes on from "A traceback ends in `<its line>` (line N), ..."."""
    cause = found.evidence[0]
    return dataclasses.replace(
        found,
        id=finding_id,
        severity=Severity.WARNING,
        title=title,
        explanation=f"A traceback ends in `{cause.text[:300]}` (line {cause.line}), {what}",
        fix=fix,
    )


def unrecognized_after_progress(events: Sequence[Event], serving_line: int) -> Finding | None:
    """`unrecognized_error`, where a traceback the engine went on generating after was
    caught, not fatal.

    Plugins and kernels print a traceback and fall back ("falling back to the
    pytorch implementation"); stats lines with throughput after it show the
    engine kept working.  Only when every unexplained error is of that kind is
    the first one reported: as information, or as a warning when it was raised
    handling a request (the ASGI server's frames), since that request failed.
    """
    outside: list[Event] = []
    inside: list[Event] = []
    for event in events:
        (outside if serving_line and _outside_vllm(event) else inside).append(event)
    if outside:
        found = unrecognized_after_progress(inside, serving_line)
        return found if found is not None else _application_error(outside, serving_line)
    caught = [e for e in events if e.line_numbers[-1] < serving_line]
    found = unrecognized_error([e for e in events if e.line_numbers[-1] >= serving_line])
    if found is not None or not caught:
        return found
    survived = unrecognized_error(caught)
    if survived is None:
        return None
    raised_in = next((e for e in caught if survived.line in e.line_numbers), None)
    if raised_in is not None and any(_REQUEST_PATH.search(f.file) for f in raised_in.frames):
        cause = survived.evidence[0]
        kind = raised_in.exceptions[-1].type if raised_in.exceptions else cause.text.split(":")[0]
        return _as_warning(
            survived,
            "other/request-failed-in-api-server",
            f"A request failed in the API server with an unrecognised {kind}",
            "raised while the API server handled a request: that request got an error (HTTP "
            f"500). The engine kept generating afterwards (line {serving_line}), so the server "
            "went on serving; if every request fails this way, the front end is what is broken.",
            (
                "Read the traceback from its first line; search vLLM's issues for its message.",
                "If requests keep failing while the engine generates, try the front end in the "
                "engine's process (`--disable-frontend-multiprocessing` on V0 releases) or "
                "another vLLM release.",
            ),
        )
    why = (
        f"The engine kept generating afterwards (line {serving_line}), so this error was "
        "caught and did not stop the run."
    )
    return _demoted(survived, "the run went on serving", why)


# Engine deaths vLLM reports only for an engine that had started: the V0 engine's
# background loop and MQLLMEngine, and V1's fatal-error record (its EngineDeadError and
# output handler also report a death during start-up).
_SERVING_DEATH = re.compile(
    r"Engine background task failed|Background loop has errored already|AsyncEngineDeadError"
    r"|Engine loop has died|EngineCore encountered a fatal error|MQLLMEngine is already dead"
)
# Symptoms that say start-up failed: the run never served.
_STARTUP_FAILED = frozenset(
    {
        "engine-died-silently/engine-core-init-failed",
        "engine-died-silently/worker-init-failed",
        "engine-died-silently/enginecore-failed-to-start",
    }
)


def died_while_serving(
    unrecognized: Finding | None, findings: Sequence[Finding], facts: Facts
) -> Finding | None:
    """An unrecognised error that killed an engine which was serving is an engine death.

    The taxonomy's engine-dead-runtime is exactly this: the run served, then
    the engine loop died of an earlier error.  When no signature names that
    error, "the engine died while serving, of this exception" says more than
    "an unrecognised error", and still quotes the exception.  An excerpt that
    starts after start-up (no start-up line at all) counts as serving when the
    engine's death is reported after the error: vLLM reports those deaths only
    for an engine that had started.
    """
    if unrecognized is None or unrecognized.id != "other/unrecognized-exception":
        return unrecognized
    ready = facts.get("startup_complete")
    if ready is not None and ready.value:
        if unrecognized.line < ready.line:
            return unrecognized
        up, ready_line = f"The server was up (line {ready.line}), then", ready.line
    elif (
        ready is None
        and facts.get("last_phase") is None
        and not any(f.id in _STARTUP_FAILED for f in findings)
    ):
        up, ready_line = "The log starts with the engine running;", 0
    else:
        return unrecognized
    deaths = [
        f
        for f in findings
        if f.category == "engine-dead-runtime"
        and f.role is Role.SYMPTOM
        and f.severity is Severity.ERROR  # not the "death" of a requested shutdown
        and f.line >= ready_line
        # In an excerpt, only a death that vLLM reports for a started engine counts.
        and (ready_line or any(_SERVING_DEATH.search(e.text) for e in f.evidence))
    ]
    # The report of this error's death, or else the last one before it: other ranks, or
    # the record that opens the error's own traceback (`Engine background task failed`).
    death = next(
        (f for f in deaths if max(e.line for e in f.evidence) >= unrecognized.line),
        deaths[-1] if deaths else None,
    )
    if death is None:
        return unrecognized
    cause = unrecognized.evidence[0]
    raised = excerpt(cause.text, "", 120)
    return dataclasses.replace(
        unrecognized,
        id="engine-dead-runtime/unrecognized-error",
        category="engine-dead-runtime",
        title=f"The engine died while serving, of an error no signature names ({raised})",
        explanation=(
            f"{up} `{cause.text[:300]}` (line "
            f"{cause.line}) was raised and the engine stopped (line {death.line}: "
            f"{death.title[:1].lower()}{death.title[1:]}). Every request after that fails. "
            "No signature knows this exception: its traceback's last frames say where it "
            "came from."
        ),
        fix=(
            "Read that traceback from its first line; search vLLM's issues for its message.",
            "Restart the server to serve again; if the error comes back with the same "
            "requests, they trigger it.",
        ),
        confidence=0.4,
    )


# Files of the API server / engine client: a traceback running only through these
# is the front end reporting that the engine went away, not the engine's error.
_FRONT_END = re.compile(
    r"vllm/entrypoints/|vllm/v1/engine/(?:core_client|async_llm|utils)\.py"
    r"|vllm/engine/(?:async_llm_engine|multiprocessing/client)\.py"
)


def _is_front_end(event: Event) -> bool:
    return all("vllm/" not in f.file or _FRONT_END.search(f.file) for f in event.frames)


# The source line a cut-off traceback stops at is an import: that import raised.
_IMPORT_LINE = re.compile(r"from +(?P<module>[\w.]+) +import\b.*|import +(?P<module2>[\w.]+).*")


def _last_source_line(event: Event) -> str:
    for text in reversed(event.texts):
        stripped = text.strip()
        if stripped.strip("^~ "):
            return stripped
    return ""


def _cut_off_traceback(event: Event) -> Finding:
    """An ERROR traceback that stops before its exception line (a truncated paste)."""
    last, source = event.frames[-1], _last_source_line(event)
    if m := _IMPORT_LINE.fullmatch(source):
        module = m["module"] or m["module2"]
        return Finding(
            id="dependency-missing/import-cut-off",
            category="dependency-missing",
            severity=Severity.ERROR,
            title=f"The run failed importing {module} (the error line is not in the log)",
            explanation=(
                f"A traceback (line {event.line}) stops at `{source[:200]}` "
                f"in {last.function} ({last.file}): that import raised, and the log ends "
                f"before saying why. Usually {module.split('.')[0]} is not installed, or "
                "its installed version does not match what this vLLM expects."
            ),
            fix=(
                f"Run `python -c 'import {module}'` in the same environment to see the error; "
                f"install {module.split('.')[0]}, or the version this vLLM release pins.",
            ),
            evidence=(Evidence(event.line, event.message, event.process),),
            confidence=0.45,
            priority=13,
        )
    if _is_front_end(event):
        return Finding(
            id="engine-died-silently/front-end-traceback-cut-off",
            category="engine-died-silently",
            severity=Severity.ERROR,
            title="The API server's traceback is cut off and no engine error is in the log",
            explanation=(
                f"A traceback through the API server / engine client (line {event.line}, ends "
                f"in `{last.function}`) is the front end reacting to the engine going away; "
                "no engine-side error record is in the log, so the engine likely died without "
                "one (killed by a signal or the OOM killer) or its output was not captured."
            ),
            fix=(
                "Capture the EngineCore/Worker output too, and check `dmesg` for the OOM "
                "killer at that time.",
            ),
            evidence=(Evidence(event.line, event.message, event.process),),
            confidence=0.4,
            role=Role.SYMPTOM,
            priority=6,
        )
    return Finding(
        id="other/traceback-cut-off",
        category="other",
        severity=Severity.ERROR,
        title="An error traceback is cut off before its exception line",
        explanation=(
            f"The {event.process or 'process'} printed an error traceback (line {event.line}, "
            f"{event.lines} lines) that ends inside `{last.function}` ({last.file}) without the "
            "exception that was raised, so the cause cannot be named from this excerpt."
        ),
        fix=("Capture the complete log: the exception line follows the last frame shown.",),
        evidence=(Evidence(event.line, event.message, event.process),),
        confidence=0.2,
        priority=0,
    )


def is_residue_candidate(event: Event) -> bool:
    """ERROR records and tracebacks must be explained by a finding, or listed as unexplained."""
    return (
        event.level in ("ERROR", "CRITICAL")
        or event.kind is EventKind.TRACEBACK
        or bool(event.exceptions)
    )
