"""The failure taxonomy: the categories every finding must carry.

Copied by id from the project's taxonomy (shared/taxonomy.md); ids are
stable and never renamed.  A category names the root cause a user acts on,
never the symptom line.  `healthy` is not a category: it is a verdict.

Examples:
    >>> "kv-dtype-override-ignored" in CATEGORIES
    True
    >>> len(CATEGORIES)
    30
"""

from __future__ import annotations

CATEGORIES: dict[str, str] = {
    "kv-cache-dtype-unsupported": (
        "the KV-cache dtype in force (fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla, ...) is not supported by the chosen attention backend, by any usable backend, or by a kernel on this GPU"
    ),
    "kv-dtype-override-ignored": (
        "the user asked for one KV-cache dtype (e.g. `--kv-cache-dtype auto`) but the checkpoint's quantization config (`hf_quant_config.json` `kv_cache_quant_algo`, `config.json` `quantization_config.kv_cache_scheme`) put another in force"
    ),
    "no-valid-attention-backend": (
        "no attention backend fits the model/config for a reason other than the KV dtype (head size, sinks, sparse attention, block size, dtype, forced backend invalid)"
    ),
    "mla-backend-unavailable": (
        "an MLA model (DeepSeek V2/V3, Kimi K2, GLM-5, ...) and no MLA backend supports this GPU or configuration"
    ),
    "gpu-arch-unsupported": (
        'a kernel or feature needs another compute capability: "no kernel image is available", bf16 on GPUs below 8.0, FP8/FP4 kernels missing for this architecture'
    ),
    "quantization-unsupported": (
        "the quantization method or its parameters are not supported for this GPU, model or backend, or the quantization config is malformed"
    ),
    "cuda-oom": (
        "GPU out of memory while loading weights, profiling, warming up, capturing CUDA graphs or serving"
    ),
    "insufficient-kv-cache": (
        "the KV cache that fits is too small for max_model_len (the model's max seq len is larger than the tokens the KV cache can hold)"
    ),
    "no-kv-cache-memory": (
        "no memory left for KV-cache blocks at all (zero/negative available KV memory, gpu_memory_utilization too low, memory held by another process)"
    ),
    "max-model-len-too-large": (
        "the requested max_model_len exceeds what the model's config allows"
    ),
    "context-length-exceeded": (
        "at serving time a request was rejected because prompt plus max_tokens exceed the context length"
    ),
    "unsupported-architecture": (
        "the model architecture or model type is not supported by this vLLM/transformers"
    ),
    "trust-remote-code-required": (
        "the checkpoint needs `--trust-remote-code` (or a wrapper failed to pass it)"
    ),
    "model-not-found-or-gated": (
        "the model path or repository is missing, gated (401/403), or unreachable offline"
    ),
    "weights-load-error": (
        "a weight file is missing, corrupt or does not match the model (shapes, keys, scales)"
    ),
    "tokenizer-error": ("the tokenizer or chat template cannot be loaded or applied"),
    "tp-pp-config-invalid": (
        "parallel sizes do not fit the model or the machine (heads/experts/hidden size not divisible, more ranks than GPUs)"
    ),
    "distributed-init-failure": (
        "NCCL/Gloo/torch.distributed/Ray set-up or collective failure, NCCL watchdog timeouts, shared-memory/IPC limits"
    ),
    "cuda-runtime-error": (
        "CUDA errors while running: illegal memory access, device-side assert, cuBLAS/cuDNN failures, Xid"
    ),
    "driver-cuda-mismatch": (
        "the NVIDIA driver, CUDA runtime and the build of torch/vLLM disagree (driver too old, forward-compatibility errors, NVML errors)"
    ),
    "platform-unsupported": (
        "no supported accelerator or OS: device type cannot be inferred, no GPU visible, native Windows/macOS where unsupported"
    ),
    "compile-failure": (
        "torch.compile/Inductor/Triton/FlashInfer JIT compilation fails, or CUDA-graph capture fails for a reason other than memory"
    ),
    "engine-died-silently": (
        "the log stops during start-up or serving with no error record (killed by a signal, the OOM killer or a supervisor's timeout; log truncated)"
    ),
    "startup-hang": (
        "the process is alive but start-up or serving never progresses (stuck waiting on workers or collectives, port never answers)"
    ),
    "port-in-use": ("the API server or a distributed port cannot bind: address already in use"),
    "invalid-argument": (
        "a CLI or engine argument is rejected: unknown, removed, wrong type, conflicting options"
    ),
    "dependency-missing": (
        "a required or optional package is missing, broken or of an incompatible version (ImportError, missing compiled extension, version conflicts)"
    ),
    "engine-dead-runtime": (
        "serving was running, then the engine loop died (EngineDeadError, background loop errored); the cause is the earlier record that killed it"
    ),
    "preemption-kv-pressure": (
        "not fatal: requests are preempted or swapped for lack of KV-cache space; throughput suffers"
    ),
    "other": ("none of the above; the finding's title says what"),
}
