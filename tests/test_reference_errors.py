"""Common fatal errors, each named with its own numbers: those of the log-format
reference (§7), then frequent ones of vLLM's issues that the catalog names by what failed.

A finding is only as useful as what it tells the operator to type: these
cases check that the title and the fix carry the values of the message
(the sizes, the dtype, the GPU), not just its category.
"""

from __future__ import annotations

import pytest

from support import diagnose_text
from vlogscope.findings import Finding

_PREFIX = "(EngineCore_DP0 pid=1) ERROR 05-14 09:10:07 [core.py:936] "
_FRAMES = (
    "EngineCore failed to start.",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 927, in run_engine_core',
    "    engine_core = EngineCoreProc(*args, **kwargs)",
)
_VALUE_ERROR = (
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for {}\n  Value error, {}"
)


def _in_traceback(exception: str, frames: tuple[str, ...] = ()) -> str:
    """The exception line(s) at the end of an EngineCore start-up traceback, under
    `frames` (`File ...` and source lines) after the engine's own."""
    lines = [*_FRAMES, *frames, *exception.split("\n")]
    return "".join(f"{_PREFIX}{line}\n" for line in lines)


def _root(text: str) -> Finding:
    d = diagnose_text(text)
    assert d.root_cause is not None
    return d.root_cause


CASES = [
    (
        _VALUE_ERROR.format(
            "ModelConfig",
            "User-specified max_model_len (40000) is greater than the derived max_model_len "
            "(max_position_embeddings=32768 or model_max_length=None in model's config.json). "
            "To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses "
            "relative position encoding (RoPE), positions exceeding derived_max_model_len lead "
            "to nan. [type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]",
        ),
        "max-model-len-too-large/above-derived",
        "max_model_len 40000 is above the model's limit (max_position_embeddings=32768 or "
        "model_max_length=None in model's config.json)",
        "at or below the model's limit (32768)",
    ),
    (
        _VALUE_ERROR.format(
            "SchedulerConfig",
            "max_num_batched_tokens (2048) is smaller than max_model_len (8192). This "
            "effectively limits the maximum sequence length to max_num_batched_tokens and makes "
            "vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease "
            "max_model_len. [type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]",
        ),
        "invalid-argument/batched-tokens-below-max-model-len",
        "max_num_batched_tokens (2048) is below max_model_len (8192)",
        "Raise `--max-num-batched-tokens` to 8192 or more, or lower `--max-model-len` to 2048.",
    ),
    (
        "ValueError: Unknown kv cache dtype: fp9",
        "invalid-argument/unknown-kv-cache-dtype",
        "`fp9` is not a KV-cache dtype this vLLM accepts",
        "`--kv-cache-dtype auto`",
    ),
    (
        "AssertionError: Invalid kv_cache_dtype: 'fp8_e4m3fn'. Valid values are: ['auto', 'fp8']",
        "invalid-argument/unknown-kv-cache-dtype",
        "`fp8_e4m3fn` is not a KV-cache dtype this vLLM accepts",
        "`--kv-cache-dtype auto`",
    ),
    (
        "ValueError: No model architectures are specified",
        "unsupported-architecture/no-architectures",
        "The model's config.json names no architecture",
        "Point `--model` at the folder",
    ),
    (
        "ValueError: Quantization method specified in the model config (gptq) does not match the "
        "quantization method specified in the `quantization` argument (awq).",
        "quantization-unsupported/flag-disagrees-with-checkpoint",
        "The checkpoint is quantized with gptq, but `--quantization awq` was given",
        "Drop `--quantization`",
    ),
    (
        "ValueError: Unknown quantization method: awq2. Must be one of ['awq', 'fp8', 'gptq'].",
        "quantization-unsupported/unknown-method",
        "This vLLM (version not in the log) does not know the quantization method awq2",
        "typo",
    ),
    (
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
        "Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly "
        "setting the `dtype` flag in CLI, for example: --dtype=half.",
        "gpu-arch-unsupported/bfloat16",
        "bfloat16 needs compute capability 8.0; the Tesla T4 has 7.5",
        "--dtype half",
    ),
    (
        "ValueError: Total number of hidden layers (61) must be divisible by pipeline parallel "
        "size (2).",
        "tp-pp-config-invalid/not-divisible",
        "hidden layers (61) is not divisible by the pipeline parallel size (2)",
        "Choose a `--pipeline-parallel-size` that divides 61.",
    ),
    (
        _VALUE_ERROR.format(
            "ParallelConfig",
            "World size (8) is larger than the number of available GPUs (4) in this node.",
        ),
        "tp-pp-config-invalid/more-ranks-than-devices",
        "More ranks (8) were requested than there are GPUs (4)",
        "at most 4",
    ),
    (
        "AssertionError: Not enough allowed NUMA nodes to bind threads of 2 local CPUWorkers. "
        "Allowed NUMA nodes are [0]. Please try to bind threads manually or decrease DP/TP/PP.",
        "tp-pp-config-invalid/cpu-workers-exceed-numa-nodes",
        "2 CPU workers cannot each bind to a NUMA node (allowed nodes: [0])",
        "VLLM_CPU_OMP_THREADS_BIND",
    ),
    (
        "RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy "
        "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
        "initializing the engine.",
        "cuda-oom/sampler-warmup",
        "Out of GPU memory warming up the sampler with 256 dummy requests",
        "Lower `--max-num-seqs` below 256",
    ),
    (
        "ValueError: Torch SDPA backend does not support FP8 KV cache. Please use xFormers "
        "backend instead.",
        "kv-cache-dtype-unsupported/v0-backend-no-fp8",
        "Torch SDPA does not support an FP8 KV cache",
        "--kv-cache-dtype auto",
    ),
    (
        "ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints.",
        "kv-cache-dtype-unsupported/e5m2-with-fp8-checkpoint",
        "An fp8_e5m2 KV cache cannot be used with an FP8-quantized checkpoint",
        "--kv-cache-dtype fp8",
    ),
    (
        "ValueError: QuantizationStrategy.CHANNEL is not supported for fp8 MLA, please run with "
        "VLLM_MLA_DISABLE=1",
        "quantization-unsupported/mla-weight-quantization",
        "MLA attention in this vLLM cannot run the checkpoint's weight quantization",
        "VLLM_MLA_DISABLE=1",
    ),
    (
        "NotImplementedError: Currently fp8 requires matrix absorption",
        "quantization-unsupported/mla-fp8-needs-absorption",
        "FP8 weights with MLA need matrix absorption, which is turned off",
        "Unset VLLM_MLA_PERFORM_MATRIX_ABSORPTION",
    ),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a "
        "total capacity of 23.55 GiB of which 1.02 GiB is free. Including non-PyTorch memory, "
        "this process has 22.52 GiB memory in use.",
        "cuda-oom/allocation-failed",
        "GPU 0 out of memory: 1.50 GiB requested, 1.02 GiB free of 23.55 GiB",
        "--gpu-memory-utilization",
    ),
    (
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
        "distributed-init-failure/nccl-system-error",
        "NCCL failed in a system call (unhandled system error)",
        "--ipc=host",
    ),
    (
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:3356, remote process exited or there was a network error, NCCL "
        "version 2.26.2",
        "distributed-init-failure/nccl-remote-error",
        "Another rank went away during an NCCL operation",
        "Find the rank that exited first",
    ),
    (
        "ValueError: Insufficient devices for 2D mesh: found 1, expected 8 for mesh shape (1, 8).",
        "tp-pp-config-invalid/tpu-mesh-too-few-devices",
        "The TPU mesh needs 8 devices; JAX found 1",
        "so that their product is at most 1",
    ),
    (
        "ValueError: To serve at least one request with the model's max seq len (100000), (4.26 "
        "GiB KV cach",
        "insufficient-kv-cache/v1-needed-exceeds-available-cut",
        "The KV cache that fits cannot hold one 100000-token request",
        "--max-model-len",
    ),
    (
        "ValueError: `limit_mm_per_prompt` is only supported for multimodal models.",
        "unsupported-architecture/multimodal-option-on-text-model",
        "`limit_mm_per_prompt` was rejected: this vLLM does not see the model as multimodal",
        "supported-models list",
    ),
    (
        "NotImplementedError: Could not run '_C_cache_ops::reshape_and_cache' with arguments "
        "from the 'CPU' backend.",
        "dependency-missing/compiled-op-missing",
        "vLLM's compiled extension has no `_C_cache_ops::reshape_and_cache`: a build for another "
        "platform, or a broken one",
        "the CPU, ROCm or CUDA wheel",
    ),
    (
        "RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist",
        "compile-failure/nvcc-not-found",
        "A just-in-time kernel build needs nvcc, and no CUDA toolkit was found",
        "CUDA_HOME",
    ),
    (
        "subprocess.CalledProcessError: Command '['ninja', '-v', '-C', '/root/.cache/flashinfer/"
        "120f/cached_ops/sampling', '-f', '/root/.cache/flashinfer/120f/cached_ops/sampling/"
        "build.ninja']' returned non-zero exit status 1",
        "compile-failure/jit-extension-build-failed",
        "The just-in-time build of the `sampling` kernels failed",
        "VLLM_USE_FLASHINFER_SAMPLER=0",
    ),
    (
        "torch._inductor.exc.InductorError: RuntimeError: PTX .version 8.4 does not support "
        ".target sm_120a",
        "compile-failure/ptxas-target-unsupported",
        "ptxas cannot compile for sm_120a: the CUDA toolchain Triton uses is older than this GPU",
        "TRITON_PTXAS_PATH",
    ),
    (
        "torch._inductor.exc.InductorError: RuntimeError: Failed to run autotuning code block: "
        "[Errno 122] Disk quota exceeded: '/home/u/.cache/vllm/torch_compile_cache/x'",
        "compile-failure/compile-cache-disk-full",
        "torch.compile could not write its cache: Disk quota exceeded",
        "VLLM_CACHE_ROOT",
    ),
    (
        "torch._inductor.exc.InductorError: CalledProcessError: Command '['/usr/bin/gcc', "
        "'/tmp/tmp6415_gei/cuda_utils.c', '-O3', '-shared', '-fPIC', '-lcuda']' returned "
        "non-zero exit status 1.",
        "compile-failure/triton-launcher-build-failed",
        "Triton could not build its C launcher with /usr/bin/gcc",
        "python3.12-dev",
    ),
    (
        "ValueError: The supplied chat template string (/templates/chat.jinja) appears "
        "path-like, but doesn't exist!",
        "tokenizer-error/chat-template-path-missing",
        "The chat template file /templates/chat.jinja does not exist",
        "absolute path",
    ),
    (
        "AttributeError: 'MistralTokenizer' object has no attribute 'convert_tokens_to_ids'. "
        "Did you mean: 'convert_tokens_to_string'?",
        "tokenizer-error/mistral-tokenizer-attribute",
        "The Mistral tokenizer lacks `convert_tokens_to_ids`, which this code path needs",
        "--tokenizer-mode hf",
    ),
    (
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
        "'namespace/repo_name': '/models/llama-8b'. Use `repo_type` argument if needed.",
        "model-not-found-or-gated/local-path-missing",
        "/models/llama-8b is neither a model directory here nor a Hugging Face repository ID",
        "`ls /models/llama-8b` in the container",
    ),
    (
        "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find an appropriate cached "
        "snapshot folder for the specified revision on the local disk and outgoing traffic has "
        "been disabled.",
        "model-not-found-or-gated/offline-not-cached",
        "Offline, and the model is not in the Hugging Face cache",
        "huggingface-cli download",
    ),
    (
        "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported "
        "dtypes: [torch.float16]",
        "quantization-unsupported/dtype",
        "awq quantization does not run in bfloat16; it supports [torch.float16]",
        "--dtype float16",
    ),
    (
        "ValueError: Cannot find the config file for awq",
        "quantization-unsupported/flag-without-checkpoint-config",
        "`--quantization awq` was given, but the checkpoint has no awq configuration",
        "Drop `--quantization`",
    ),
    (
        "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
        "weights-load-error/safetensors-header",
        "A safetensors file is truncated or is not a safetensors file (HeaderTooLarge)",
        "git lfs pull",
    ),
    (
        "ImportError: /venv/lib/python3.12/site-packages/vllm/_C.abi3.so: undefined symbol: "
        "_ZN3c104cuda9SetDeviceEi",
        "dependency-missing/extension-torch-abi-mismatch",
        "_C.abi3.so was compiled against another PyTorch than the one installed (undefined symbol)",
        "without upgrading torch afterwards",
    ),
    (
        "AssertionError: Attempted to load weight (torch.Size([4096, 12288])) into parameter "
        "(torch.Size([4096, 8192]))",
        "weights-load-error/tensor-shape-mismatch",
        "A checkpoint tensor of shape torch.Size([4096, 12288]) does not fit the model's "
        "parameter of shape torch.Size([4096, 8192])",
        "--tensor-parallel-size 1",
    ),
    (
        "OSError: [Errno 24] Too many open files: '/dev/shm/psm_1a2b'",
        "other/too-many-open-files",
        "The process ran out of file descriptors (too many open files)",
        "ulimit -n 65536",
    ),
    (
        "openai_harmony.HarmonyError: invalid tiktoken vocab file: hash mismatch",
        "tokenizer-error/harmony-vocab-file",
        "gpt-oss's tokenizer vocabulary (the tiktoken file) could not be loaded",
        "TIKTOKEN_ENCODINGS_BASE",
    ),
]


@pytest.mark.parametrize(("exception", "finding", "title", "fix"), CASES, ids=[c[1] for c in CASES])
def test_a_common_fatal_error_is_named_with_the_values_of_its_message(
    exception: str, finding: str, title: str, fix: str
) -> None:
    root = _root(_in_traceback(exception))
    assert root.id == finding
    assert root.title == title
    assert fix in " ".join(root.fix)


def test_a_process_that_died_unexpectedly_shows_its_exit_code() -> None:
    text = (
        "ERROR 05-14 09:10:07 [multiproc_executor.py:1] Worker proc VllmWorker-0 died "
        "unexpectedly (exit code: -9), shutting down executor.\n"
    )
    root = _root(text)
    assert root.id == "engine-died-silently/process-died-unexpectedly"
    assert "VllmWorker-0 exited (exit code -9)" in root.explanation


def test_an_architecture_that_failed_inspection_is_blamed_on_the_import_under_it() -> None:
    """§7.3 #18: `failed to be inspected` points at the traceback logged before it."""
    r = "(APIServer pid=9) ERROR 10-08 13:20:44 [registry.py:428] "
    text = (
        f"{r}Error in loading model architecture 'Qwen3VLForConditionalGeneration'\n"
        f"{r}Traceback (most recent call last):\n"
        f'{r}  File "/v/vllm/model_executor/models/registry.py", line 426, in _try_inspect\n'
        f"{r}    return model.inspect_model_cls()\n"
        f"{r}ImportError: cannot import name 'Qwen3VLVideoProcessor' from "
        "'transformers.models.qwen3_vl' (/v/transformers/models/qwen3_vl/__init__.py)\n"
        "(APIServer pid=9) ValueError: Model architectures ['Qwen3VLForConditionalGeneration'] "
        "failed to be inspected. Please check the logs for more details.\n"
    )
    root = _root(text)
    assert root.id == "dependency-missing/import-error"
    assert root.title.endswith("missing or broken: transformers.models.qwen3_vl")


def test_a_fallback_with_a_decimal_point_is_filled_in() -> None:
    """§7.2 #10 explains with `{gpu_memory_utilization|... the default is 0.9}`;
    the `.` once made str.format print the whole explanation with its braces."""
    exception = (
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine."
    )
    root = _root(_in_traceback(exception))
    assert root.id == "no-kv-cache-memory/no-memory-for-cache-blocks"
    assert "budget (not in the log; the default is 0.9) is left" in root.explanation
    assert "{" not in root.explanation


def test_a_gpu_the_torch_build_lacks_is_named_with_its_architecture() -> None:
    text = (
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
        "PyTorch installation.\n"
        "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 "
        "sm_86 sm_90.\n"
    ) + _in_traceback(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    )
    root = _root(text)
    assert root.id == "gpu-arch-unsupported/torch-build-lacks-arch"
    assert (
        root.title
        == "The installed PyTorch has no kernels for the NVIDIA GeForce RTX 5090 (sm_120)"
    )


_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 23.55 GiB of which 1.02 GiB is free."
)


@pytest.mark.parametrize(
    ("function", "finding", "remedy"),
    [
        ("load_model", "cuda-oom/loading-weights", "--tensor-parallel-size"),
        ("profile_run", "cuda-oom/memory-profiling", "--max-num-batched-tokens"),
        ("capture_model", "cuda-oom/cuda-graph-capture", "--enforce-eager"),
        ("initialize_kv_cache", "cuda-oom/kv-cache-allocation", "one after another"),
        ("wake_up", "cuda-oom/sleep-mode-wake-up", "wake_up(tags="),
    ],
)
def test_out_of_memory_is_named_by_the_step_its_traceback_ran_in(
    function: str, finding: str, remedy: str
) -> None:
    frames = (
        f'  File "/usr/lib/python3.12/site-packages/vllm/worker.py", line 10, in {function}',
        "    self.step()",
    )
    root = _root(_in_traceback(_OOM, frames))
    assert root.id == finding
    assert "(2.00 GiB)" in root.explanation
    assert remedy in " ".join(root.fix)


def test_out_of_memory_outside_a_known_step_keeps_pytorchs_numbers() -> None:
    root = _root(_in_traceback(_OOM))
    assert root.id == "cuda-oom/allocation-failed"
    assert root.title == "GPU 0 out of memory: 2.00 GiB requested, 1.02 GiB free of 23.55 GiB"


def test_a_safetensors_lookup_vllm_survives_is_not_a_missing_model() -> None:
    """vLLM logs its failed safetensors-metadata look-up at ERROR and goes on loading
    the local directory; that line names no failure."""
    text = (
        "(APIServer pid=1) ERROR 03-02 07:08:46 [config.py:307] Error retrieving safetensors: "
        "Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/x'. Use "
        "`repo_type` argument if needed., retrying 1 of 2\n"
    )
    assert not any(f.category == "model-not-found-or-gated" for f in diagnose_text(text).findings)


def test_a_quoted_log_line_loses_its_padding_in_the_explanation() -> None:
    """Explanations quote the matched line inside a sentence: runs of spaces that align
    columns in the log would read as holes there; the evidence keeps the line as printed."""
    root = _root(
        _in_traceback("RuntimeError: Triton Error [CUDA]:     device kernel image is invalid")
    )
    assert "`RuntimeError: Triton Error [CUDA]: device kernel image is invalid`" in root.explanation
    assert any("[CUDA]:     device" in e.text for e in root.evidence)


def test_a_missing_header_in_a_runtime_build_is_the_cause_of_the_failed_launcher() -> None:
    """The compiler's own error comes before the exception that quotes its command."""
    text = (
        "/tmp/tmp6415_gei/cuda_utils.c:5:10: fatal error: Python.h: No such file or directory\n"
    ) + _in_traceback(
        "torch._inductor.exc.InductorError: CalledProcessError: Command '['/usr/bin/gcc', "
        "'/tmp/tmp6415_gei/cuda_utils.c', '-O3', '-shared', '-fPIC', '-lcuda']' returned "
        "non-zero exit status 1."
    )
    d = diagnose_text(text)
    assert d.root_cause is not None
    assert d.root_cause.title == "A just-in-time build could not find the header Python.h"
    assert any(f.id == "compile-failure/triton-launcher-build-failed" for f in d.findings)
