"""The founding scenario and its relatives, diagnosed from fixture logs."""

from __future__ import annotations

import io
import re

import pytest

from support import diagnose_text, fixture
from vlogscope.findings import Finding
from vlogscope.pipeline import Diagnosis, Verdict, analyze
from vlogscope.signatures import Severity
from vlogscope.source import Source


def _diagnose(name: str) -> Diagnosis:
    return analyze(Source.from_path(fixture(name)))


def _root(d: Diagnosis) -> Finding:
    assert d.root_cause is not None, [f.id for f in d.findings]
    return d.root_cause


def _all_text(f: Finding) -> str:
    return " ".join([f.title, f.explanation, *f.fix])


def test_launch1_root_cause_is_the_checkpoint_forcing_fp8() -> None:
    d = _diagnose("v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log")
    root = _root(d)
    assert root.category == "kv-dtype-override-ignored"
    text = _all_text(root)
    for needle in (
        "whatever the checkpoint declares",
        "hf_quant_config.json",
        "kv_cache_quant_algo",
        "kv_cache_scheme",
        "--kv-cache-dtype bfloat16",
        "0.18",
        "8/8 ranks",
    ):
        assert needle in text, needle
    assert d.facts.value("requested_kv_cache_dtype") == "auto"
    assert d.facts.value("kv_cache_dtype") == "fp8"
    assert d.facts.value("vllm_version", "").startswith("0.16.0rc2")


def test_launch1_evidence_points_at_the_args_config_and_selector_lines() -> None:
    d = _diagnose("v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log")
    root = _root(d)
    lines = {e.line for e in root.evidence}
    assert d.facts.get("requested_kv_cache_dtype").line in lines  # type: ignore[union-attr]
    assert d.facts.get("kv_cache_dtype").line in lines  # type: ignore[union-attr]
    assert any("No valid attention backend" in e.text for e in root.evidence)


def test_launch1_symptoms_are_linked_under_the_root_cause_never_above() -> None:
    d = _diagnose("v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log")
    assert d.findings[0].root_cause
    assert sum(f.root_cause for f in d.findings) == 1
    symptoms = {f.id for f in d.findings if f.symptom_of == d.findings[0].id}
    assert "engine-died-silently/engine-core-init-failed" in symptoms
    assert "kv-cache-dtype-unsupported/no-mla-backend-for-kv-dtype" in symptoms
    unsupported = next(f for f in d.findings if f.category == "kv-cache-dtype-unsupported")
    assert unsupported.ranks == "8/8 ranks"


def test_launch2_stopping_mid_startup_is_still_diagnosed() -> None:
    d = _diagnose("v0.16-kimi-k25-tp8-launch2-kv-auto-stops-mid-startup.log")
    assert d.verdict is Verdict.FAILED
    root = _root(d)
    assert root.category == "kv-dtype-override-ignored"
    assert "whatever the checkpoint declares" in root.explanation
    silent = [f for f in d.findings if f.category == "engine-died-silently"]
    assert silent and silent[0].symptom_of == root.id
    assert d.facts.value("last_phase") == "weight loading"


def test_v010_triton_mla_fp8_explicit_flag_is_an_unsupported_dtype() -> None:
    d = _diagnose("v0.10.1-deepseek-v2-lite-triton-mla-fp8-notimplemented.log")
    root = _root(d)
    assert root.id == "kv-cache-dtype-unsupported/mla-backend-no-fp8"
    assert "TritonMLA" in root.title
    assert d.facts.value("requested_kv_cache_dtype") == "fp8"


def test_v017_compressed_tensors_overrides_an_explicit_bfloat16() -> None:
    d = _diagnose("v0.17-compressed-tensors-kv-scheme-overrides-bfloat16.log")
    root = _root(d)
    assert root.category == "kv-dtype-override-ignored"
    assert d.facts.value("requested_kv_cache_dtype") == "bfloat16"
    assert d.facts.value("kv_cache_dtype") == "bfloat16"
    assert d.facts.value("selector_kv_cache_dtype") == "fp8"
    assert "after the config line was printed" in root.explanation
    assert "does NOT help on this version" in " ".join(root.fix)


def test_healthy_startup_has_no_error_finding() -> None:
    d = _diagnose("v0.16-llama31-8b-healthy-startup.log")
    assert d.verdict is Verdict.HEALTHY
    assert not [f for f in d.findings if f.severity is Severity.ERROR]
    assert d.facts.value("startup_complete") is True


@pytest.mark.parametrize("name", ["not-a-vllm-log.txt"])
def test_foreign_input_is_never_called_healthy(name: str) -> None:
    assert _diagnose(name).verdict is Verdict.NOT_VLLM


def test_every_physical_line_is_accounted_for_once() -> None:
    path = fixture("v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log")
    d = analyze(Source.from_path(path))
    physical = path.read_bytes().count(b"\n") + (not path.read_bytes().endswith(b"\n"))
    numbers = sorted(n for e in d.events for n in e.line_numbers)
    assert numbers == list(range(1, physical + 1))
    assert d.lines == physical


def test_v085_oom_in_profile_run_is_one_cuda_oom_root_cause() -> None:
    d = _diagnose("v0.8.5-qwen-cuda-oom-profile.log")
    root = _root(d)
    assert root.id == "cuda-oom/memory-profiling"  # the traceback runs through profile_run
    requested = re.search(r"Tried to allocate ([\d.]+ [KMG]iB)", root.evidence[0].text)
    assert requested is not None and f"({requested[1]})" in root.explanation
    assert [f.category for f in d.findings].count("cuda-oom") == 1
    assert all(f.symptom_of == root.id for f in d.findings if f is not root)


def test_appended_launches_are_diagnosed_separately_latest_first(tmp_path) -> None:  # type: ignore[no-untyped-def]
    healthy = fixture("v0.16-llama31-8b-healthy-startup.log").read_bytes()
    failed = fixture("v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log").read_bytes()
    log = tmp_path / "appended.log"
    log.write_bytes(failed + healthy + failed)
    d = analyze(Source.from_path(log))
    assert [str(r.verdict) for r in d.runs] == ["failed", "healthy", "failed"]
    assert d.runs[1].facts.value("model") == "meta-llama/Llama-3.1-8B-Instruct"
    assert d.root_cause is not None and d.root_cause.category == "kv-dtype-override-ignored"
    # The healthy run's facts never leak into the failed runs and vice versa.
    assert d.runs[0].facts.value("kv_cache_dtype") == "fp8"
    assert d.runs[1].root_cause is None
    assert sum(r.lines for r in d.runs) == d.lines


def test_a_healthy_restart_after_a_failure_is_the_verdict(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from vlogscope.report import run_summary

    log = tmp_path / "restart.log"
    log.write_bytes(
        fixture("v0.16-kimi-k25-tp8-launch1-no-mla-backend-fp8.log").read_bytes()
        + fixture("v0.16-llama31-8b-healthy-startup.log").read_bytes()
    )
    d = analyze(Source.from_path(log))
    assert d.verdict is Verdict.HEALTHY
    assert run_summary(d) == (
        "run 1 of 2 failed with kv-dtype-override-ignored; the last run is healthy"
    )


def test_insufficient_kv_cache_fix_gives_the_numbers_to_type() -> None:
    import vlogscope

    d = vlogscope.diagnose(
        [
            "(EngineCore_DP0 pid=7) INFO 06-01 10:00:00 [gpu_worker.py:1] Available KV cache memory: 3.0 GiB",
            "(EngineCore_DP0 pid=7) ERROR 06-01 10:00:01 [core.py:1] EngineCore failed to start.",
            "(EngineCore_DP0 pid=7) ERROR 06-01 10:00:01 [core.py:1] Traceback (most recent call last):",
            '(EngineCore_DP0 pid=7) ERROR 06-01 10:00:01 [core.py:1]   File "/v/kv_cache_utils.py", line 1, in check_enough_kv_cache_memory',
            "(EngineCore_DP0 pid=7) ERROR 06-01 10:00:01 [core.py:1] ValueError: To serve at least one request with the models's max seq len (32768), (4.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.0 GiB). Based on the available memory, the estimated maximum model length is 24560. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
        ]
    )
    root = d.root_cause
    assert root is not None and root.category == "insufficient-kv-cache"
    assert "`--max-model-len 24560`" in " ".join(root.fix)
    assert not any("(unknown" in f for f in root.fix)


def test_error_finding_without_vllm_headers_is_still_a_failure() -> None:
    d = diagnose_text(
        "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
    )
    assert d.verdict is Verdict.FAILED
    assert "`--max-model-len 23648`" in " ".join(d.root_cause.fix)  # type: ignore[union-attr]


def test_a_new_api_server_pid_starts_a_new_run() -> None:
    from vlogscope.assemble import Event, EventKind
    from vlogscope.runs import RunSplitter

    splitter = RunSplitter()
    events = [
        Event(
            EventKind.RECORD,
            (1,),
            ("Starting vLLM API server 0 on http://0.0.0.0:8000",),
            process="APIServer",
            pid=10,
        ),
        Event(
            EventKind.RECORD,
            (2,),
            ("Engine 000: Avg prompt throughput: 1.0 tokens/s",),
            process="APIServer",
            pid=10,
        ),
        Event(
            EventKind.RECORD,
            (3,),
            ("Starting vLLM API server 0 on http://0.0.0.0:8000",),
            process="APIServer",
            pid=77,
        ),
    ]
    assert [splitter.starts_new_run(e) for e in events] == [False, False, True]


def test_a_warning_repeated_many_times_keeps_memory_flat() -> None:
    import io

    from vlogscope.pipeline import (
        MAX_MATCHES_PER_SIGNATURE,
        MAX_STATS_SAMPLES,
        RunBuilder,
        read_events,
    )
    from vlogscope.signatures import load_signatures

    lines = []
    for i in range(6000):
        lines.append(
            f"WARNING 10-28 11:16:{i % 60:02d} scheduler.py:1483] Sequence group chat-{i} is preempted by PreemptionMode.SWAP mode because there is not enough KV cache space."
        )
        lines.append(
            f"INFO 10-28 11:16:{i % 60:02d} metrics.py:349] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {i}.0 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 98 reqs, GPU KV cache usage: 73.8%, CPU KV cache usage: 0.0%."
        )
    builder = RunBuilder(1, list(load_signatures().values()))
    for event in read_events(Source.from_stream("<t>", io.BytesIO("\n".join(lines).encode()))):
        builder.add(event)
    assert len(builder.matches) <= MAX_MATCHES_PER_SIGNATURE + 1
    assert len(builder.stats) < MAX_STATS_SAMPLES
    run = builder.finish()
    assert run.lines == 12000 and run.stats_lines == 6000
    assert [f.category for f in run.findings] == ["preemption-kv-pressure"]
    assert run.stats[-1].startswith("Avg prompt throughput") and run.stats[0] != run.stats[-1]


def test_port_in_use_fix_names_the_requested_port() -> None:
    d = diagnose_text(
        "INFO 10-10 10:23:00 api_server.py:527] args: Namespace(host=None, port=19000, model='facebook/opt-125m', kv_cache_dtype='auto')\n"
        "Traceback (most recent call last):\n"
        '  File "/vllm/entrypoints/openai/api_server.py", line 530, in run_server\n'
        '    temp_socket.bind(("", args.port))\n'
        "OSError: [Errno 98] Address already in use\n"
    )
    root = d.root_cause
    assert root is not None and root.category == "port-in-use"
    assert "grep :19000" in root.fix[0]


_WAITING = (
    "(APIServer pid=1) DEBUG 08-09 20:55:{s:02d} [v1/engine/utils.py:1262] "
    "Waiting for 1 local, 0 remote core engine proc(s) to start."
)


def test_a_log_that_ends_waiting_for_engine_cores_is_a_startup_hang() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()[:12]
    text = "\n".join([*head, *(_WAITING.format(s=i * 5) for i in range(8))])
    d = diagnose_text(text)
    assert d.verdict is Verdict.FAILED
    assert d.root_cause is not None and d.root_cause.id == "startup-hang/waiting-for-engine-cores"
    assert "8 times in a row" in d.root_cause.explanation


def test_waiting_for_engine_cores_during_a_start_up_that_goes_on_is_not_a_hang() -> None:
    lines = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()
    text = "\n".join([*lines[:12], *(_WAITING.format(s=i * 5) for i in range(8)), *lines[12:]])
    d = diagnose_text(text)
    assert d.verdict is Verdict.HEALTHY
    assert all(f.category != "startup-hang" for f in d.findings)


def test_a_log_that_stops_while_weight_shards_load_is_not_healthy() -> None:
    d = diagnose_text(
        "\n".join(
            [
                "DEBUG 07-15 07:11:31 [diffusers_loader.py:346] Loading weights on npu:0 ...",
                "Multi-thread loading shards:   0% Completed | 0/32 [00:00<?, ?it/s]",
                _WAITING.format(s=34),
            ]
        )
    )
    assert d.verdict is Verdict.FAILED
    assert d.facts.value("last_phase") == "weight loading"
    assert d.root_cause is not None and d.root_cause.category == "engine-died-silently"
    # A log copied while the server was still starting ends the same way: say so.
    assert "still starting" in d.root_cause.explanation
    assert any("vlogscope watch" in fix for fix in d.root_cause.fix)


_STALL = (
    "(EngineCore_DP0 pid=243) INFO 03-04 09:17:25 [shm_broadcast.py:681] No available shared "
    "memory broadcast block found in 60 seconds. This typically happens when some processes are "
    "hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization)."
)
_STATS = (
    "(APIServer pid=1) INFO 03-04 09:17:33 [loggers.py:271] Engine 000: Avg prompt throughput: "
    "{prompt} tokens/s, Avg generation throughput: {gen} tokens/s, Running: 1 reqs, Waiting: 0 "
    "reqs, GPU KV cache usage: 0.7%, Prefix cache hit rate: 0.0%"
)


def _stall_finding(d: Diagnosis) -> Finding:
    [stall] = [f for f in d.findings if f.id == "startup-hang/shm-broadcast-stall"]
    return stall


def test_a_stall_warning_the_run_moves_on_from_is_information() -> None:
    lines = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()
    d = diagnose_text("\n".join([*lines, _STALL, _STATS.format(prompt="12.7", gen="0.1")]))
    stall = _stall_finding(d)
    assert stall.severity is Severity.INFO
    assert f"progress afterwards (line {len(lines) + 2})" in stall.explanation


def test_a_stall_warning_with_no_progress_after_it_stays_a_warning() -> None:
    lines = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()
    idle = _STATS.format(prompt="0.0", gen="0.0")  # an idle server's stats are not progress
    d = diagnose_text("\n".join([*lines, _STATS.format(prompt="9.1", gen="4.0"), _STALL, idle]))
    assert _stall_finding(d).severity is Severity.WARNING


def test_an_error_record_that_is_an_exception_line_on_its_own_fails_the_run() -> None:
    # A paste that starts after the traceback's frames: the exception line is all there is.
    d = diagnose_text(
        "(VllmWorker rank=1 pid=7) ERROR 09-03 03:02:37 [multiproc_executor.py:522]     "
        "pg.recv([tensor], src, tag).wait()\n"
        "(VllmWorker rank=1 pid=7) ERROR 09-03 03:02:37 [multiproc_executor.py:522] "
        "torch_npu.FrobnicateError: the frobnicator is out of order\n"
    )
    assert d.verdict is Verdict.FAILED
    root = _root(d)
    assert root.id == "other/unrecognized-exception"
    assert root.title == (
        "Unrecognized error: torch_npu.FrobnicateError: the frobnicator is out of order"
    )
    assert root.evidence[0].line == 2


def test_an_error_record_that_only_mentions_an_error_is_not_an_exception_line() -> None:
    d = diagnose_text(
        "(APIServer pid=1) ERROR 09-03 03:02:37 [serving.py:12] Error in request: "
        "RuntimeError: bad request body\n"
    )
    assert all(f.id != "other/unrecognized-exception" for f in d.findings)


def test_a_log_that_ends_in_distributed_set_up_is_a_startup_hang() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()[:14]
    d = diagnose_text("\n".join(head))
    assert d.verdict is Verdict.FAILED
    root = _root(d)
    assert root.id == "startup-hang/stopped-in-distributed-setup"
    assert "NCCL_DEBUG=INFO" in root.fix[0]
    assert [e.line for e in root.evidence] == [13, 14]


def test_a_log_that_ends_after_distributed_set_up_is_not_called_a_hang() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()[:18]
    root = _root(diagnose_text("\n".join(head)))
    assert root.id == "engine-died-silently/stopped-during-startup"
    assert "weight loading" in root.title


def _flashinfer_build_failure(kv: str) -> str:
    head = "(EngineCore_DP0 pid=9) ERROR 10-27 20:12:32 [core.py:708] "
    return "\n".join(
        head + line
        for line in (
            "EngineCore failed to start.",
            "Traceback (most recent call last):",
            '  File "/venv/lib/python3.12/site-packages/flashinfer/jit/core.py", line 160, '
            "in build_and_load",
            "    self.build(verbose)",
            "RuntimeError: Ninja build failed. Ninja output:",
            "FAILED: /root/.cache/flashinfer/90/generated/batch_prefill_with_kv_cache_dtype_q_bf16_"
            f"dtype_kv_{kv}_dtype_o_bf16_head_dim_qk_128_sm90/batch_prefill_ragged_sm90_kernel.cuda.o",
            "/venv/lib/python3.12/site-packages/flashinfer/data/include/flashinfer/attention/hopper/"
            'kernel_traits.cuh(74): error: no instance of overloaded function "cute::make_tiled_mma"'
            " matches the argument list",
        )
    )


def test_a_flashinfer_build_of_the_fp8_kv_kernel_is_an_unsupported_kv_dtype() -> None:
    d = diagnose_text(_flashinfer_build_failure("e4m3"))
    root = _root(d)
    assert root.id == "kv-cache-dtype-unsupported/flashinfer-fp8-kv-kernel-build"
    assert "(e4m3)" in root.title and "--kv-cache-dtype auto" in root.fix[0]
    [compile_failure] = [f for f in d.findings if f.category == "compile-failure"]
    assert not compile_failure.root_cause


def test_a_flashinfer_build_failure_of_another_kernel_stays_a_compile_failure() -> None:
    root = _root(diagnose_text(_flashinfer_build_failure("bf16")))
    assert root.category == "compile-failure"


_V02_CONFIG = (
    "INFO 01-11 15:51:02 llm_engine.py:70] Initializing an LLM engine with config: "
    "model='/models/alpaca-2', tokenizer='/models/alpaca-2', tokenizer_mode=auto, revision=None, "
    "trust_remote_code=False, dtype=torch.float16, max_seq_len=4096, download_dir=None, "
    "load_format=auto, tensor_parallel_size=1, quantization=None, seed=0)"
)


@pytest.mark.parametrize(("blocks", "fires"), [(229, True), (256, False), (0, False)])
def test_v0_gpu_blocks_that_hold_less_than_max_model_len_are_insufficient_kv_cache(
    blocks: int, fires: bool
) -> None:
    d = diagnose_text(
        f"{_V02_CONFIG}\nINFO 01-11 15:51:18 llm_engine.py:275] # GPU blocks: {blocks}, "
        "# CPU blocks: 512\n"
    )
    assert d.facts.value("max_model_len") == 4096  # the pre-0.4 config line, without a version
    found = [f for f in d.findings if f.id == "insufficient-kv-cache/blocks-below-max-model-len"]
    assert bool(found) is fires
    if fires:
        assert found[0].title == "The KV cache holds 3,664 tokens; max_model_len is 4,096"
        assert "--max-model-len 3664" in found[0].fix[0]
        assert d.root_cause is found[0]


def test_a_v0_frontend_that_started_its_engine_process_and_stops_is_not_healthy() -> None:
    d = diagnose_text(
        "vllm-1  | INFO 11-18 18:07:17 api_server.py:194] Started engine process with PID 76\n"
        "vllm-1  | INFO 11-18 18:07:21 config.py:350] This model supports multiple tasks: "
        "{'embedding', 'generate'}. Defaulting to 'generate'.\n"
    )
    assert d.facts.value("last_phase") == "engine configuration"
    assert d.verdict is Verdict.FAILED
    assert _root(d).category == "engine-died-silently"


def test_a_traceback_cut_off_at_an_import_is_a_failed_import() -> None:
    head = "(Worker_TP0 pid=187) ERROR 01-29 22:59:30 [multiproc_executor.py:852] "
    d = diagnose_text(
        "\n".join(
            head + line
            for line in (
                "WorkerProc failed to start.",
                "Traceback (most recent call last):",
                '  File "/opt/vllm/vllm/distributed/kv_transfer/kv_connector/v1/lmcache_connector.py"'
                ", line 97, in __init__",
                "    from lmcache.integration.vllm.vllm_v1_adapter import (",
            )
        )
    )
    root = _root(d)
    assert root.id == "dependency-missing/import-cut-off"
    assert root.title == (
        "The run failed importing lmcache.integration.vllm.vllm_v1_adapter "
        "(the error line is not in the log)"
    )


def test_a_traceback_cut_off_elsewhere_stays_a_cut_off_traceback() -> None:
    d = diagnose_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/vllm/vllm/v1/engine/core.py", line 97, in __init__\n'
        "    self.important = compute_something(importance)\n"
    )
    assert _root(d).id == "other/traceback-cut-off"


_GPUSTACK = (
    "2025-06-19T11:30:14+08:00 - gpustack.worker.backends.vllm - DEBUG - Run vllm with "
    "arguments: serve /models/gemma-3-27b-it --max-model-len 8192 --tensor-parallel-size {tp}\n"
    "INFO 06-19 11:30:25 [api_server.py:1043] vLLM API server version 0.8.5.post1\n"
)


def test_a_run_with_an_odd_tensor_parallel_size_that_fails_unexplained_names_it() -> None:
    d = diagnose_text(_GPUSTACK.format(tp=3))
    assert d.facts.get("tensor_parallel_size") is not None
    assert d.facts.get("tensor_parallel_size").source == "command line"  # type: ignore[union-attr]
    root = _root(d)
    assert root.id == "tp-pp-config-invalid/unusual-tensor-parallel-size"
    assert root.title.startswith("tensor_parallel_size=3 is not a power of two")


def test_a_power_of_two_tensor_parallel_size_is_not_blamed() -> None:
    assert _root(diagnose_text(_GPUSTACK.format(tp=4))).category == "engine-died-silently"


def test_an_odd_tensor_parallel_size_is_not_blamed_once_weights_load() -> None:
    text = _GPUSTACK.format(tp=3) + (
        "INFO 06-19 11:30:40 [gpu_model_runner.py:1329] Starting to load model /models/gemma\n"
    )
    d = diagnose_text(text)
    assert d.facts.value("last_phase") == "weight loading"
    assert _root(d).category == "engine-died-silently"


def test_a_driver_error_outranks_the_unspecified_platform_it_causes() -> None:
    d = diagnose_text(
        "INFO 07-30 15:32:48 [__init__.py:239] No platform detected, vLLM is running on "
        "UnspecifiedPlatform\n"
        "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:991: UserWarning: CUDA "
        "initialization: Unexpected error from cudaGetDeviceCount(). Error 803: system has "
        "unsupported display driver / cuda driver combination\n"
    )
    assert _root(d).category == "driver-cuda-mismatch"
    assert [f.category for f in d.findings if f.symptom_of] == ["platform-unsupported"]


_PORT_NOTE = (
    "(APIServer pid=4031182) WARNING 09-20 19:11:53 [launcher.py:98] port 8000 is used by "
    "process psutil.Process(pid={pid}, name='python', status='running') launched with command:"
)


def test_the_servers_own_pid_on_its_port_at_shutdown_is_not_a_port_conflict() -> None:
    d = diagnose_text(_PORT_NOTE.format(pid=4031182))
    assert all(f.category != "port-in-use" for f in d.findings)


def test_another_process_on_the_servers_port_is_a_port_conflict() -> None:
    assert _root(diagnose_text(_PORT_NOTE.format(pid=60914))).category == "port-in-use"


_ENGINE_DEAD = (
    "(APIServer pid=5) ERROR 08-21 10:24:34 [async_llm.py:704] AsyncLLM output_handler failed.\n"
    "(APIServer pid=5) ERROR 08-21 10:24:34 [async_llm.py:704] Traceback (most recent call last):\n"
    '(APIServer pid=5) ERROR 08-21 10:24:34 [async_llm.py:704]   File "/venv/lib/python3.12/'
    'site-packages/vllm/v1/engine/core_client.py", line 1061, in get_output_async\n'
    "(APIServer pid=5) ERROR 08-21 10:24:34 [async_llm.py:704]     raise self._format_exception"
    "(outputs) from None\n"
    "(APIServer pid=5) ERROR 08-21 10:24:34 [async_llm.py:704] vllm.v1.engine.exceptions."
    "EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
)


def test_an_engine_that_dies_after_a_requested_shutdown_was_stopped() -> None:
    lines = fixture("v0.16-llama31-8b-healthy-startup.log").read_text()
    d = diagnose_text(
        lines + "(APIServer pid=5) INFO 08-21 10:24:34 [launcher.py:100] [shutdown] API server: "
        "shutdown triggered\n" + _ENGINE_DEAD
    )
    assert d.verdict is Verdict.HEALTHY
    [dead] = [f for f in d.findings if f.category == "engine-dead-runtime"]
    assert dead.severity is Severity.INFO and "after a requested shutdown" in dead.title


def test_an_engine_that_dies_without_a_shutdown_request_is_a_failure() -> None:
    lines = fixture("v0.16-llama31-8b-healthy-startup.log").read_text()
    d = diagnose_text(lines + _ENGINE_DEAD)
    assert d.verdict is Verdict.FAILED and _root(d).category == "engine-dead-runtime"


def test_an_unrecognised_worker_error_outranks_the_engine_death_it_caused() -> None:
    worker = "(Worker_TP0 pid=300) ERROR 06-13 20:09:13 [multiproc_executor.py:962] "
    d = diagnose_text(
        worker + "WorkerProc hit an exception.\n"
        + worker + "Traceback (most recent call last):\n"
        + worker + '  File "/venv/vllm/v1/worker/gpu_model_runner.py", line 10, in execute_model\n'
        + worker + "    frobnicate()\n"
        + worker + "RuntimeError: the frobnicator jammed\n"
        + _ENGINE_DEAD
    )  # fmt: skip
    root = _root(d)
    assert root.id == "other/unrecognized-exception" and "RuntimeError" in root.title
    assert "engine-dead-runtime" in {f.category for f in d.findings if f.symptom_of}


def test_a_worker_that_died_without_a_word_while_serving_died_silently() -> None:
    d = diagnose_text(
        "(EngineCore_DP0 pid=9) ERROR 01-18 22:19:25 [multiproc_executor.py:231] Worker proc "
        "VllmWorker-0 died unexpectedly, shutting down executor.\n"
        "(EngineCore_DP0 pid=9) ERROR 01-18 22:19:26 [core.py:868] EngineCore encountered a fatal "
        "error.\n"
        "(EngineCore_DP0 pid=9) ERROR 01-18 22:19:26 [core.py:868] Traceback (most recent call "
        "last):\n"
        '(EngineCore_DP0 pid=9) ERROR 01-18 22:19:26 [core.py:868]   File "/venv/vllm/v1/engine/'
        'core.py", line 954, in _handle_client_request\n'
        '(EngineCore_DP0 pid=9) ERROR 01-18 22:19:26 [core.py:868]     raise RuntimeError("Executor '
        'failed.")\n'
        "(EngineCore_DP0 pid=9) ERROR 01-18 22:19:26 [core.py:868] RuntimeError: Executor failed.\n"
        + _ENGINE_DEAD
    )
    assert _root(d).id == "engine-died-silently/process-died-unexpectedly"
    assert all(f.id != "other/unrecognized-exception" for f in d.findings)


def test_a_cut_off_traceback_yields_to_a_symptom_that_names_what_happened() -> None:
    d = diagnose_text(
        "Traceback (most recent call last):\n"
        '  File "/venv/vllm/entrypoints/openai/serving_chat.py", line 97, in create\n'
        "    result = await self.compute(request)\n" + _ENGINE_DEAD
    )
    assert _root(d).category == "engine-dead-runtime"
    assert all(f.id != "other/traceback-cut-off" for f in d.findings)


def test_a_traceback_that_ends_in_a_shutdown_is_not_read_for_where_it_ran() -> None:
    d = diagnose_text(
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.12/site-packages/torch/_dynamo/utils.py", line 542, in <lambda>\n'
        "    self.refs[idx] = weakref.ref(key, lambda ref: self._remove_id(idx))\n"
        '  File "/venv/lib/python3.12/site-packages/vllm/engine/multiprocessing/engine.py", line '
        "374, in signal_handler\n"
        '    raise KeyboardInterrupt("MQLLMEngine terminated")\n'
        "KeyboardInterrupt: MQLLMEngine terminated\n"
    )
    assert not [f for f in d.findings if f.severity is Severity.ERROR]


def test_a_start_up_that_ends_in_keyboardinterrupt_was_interrupted() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()[:16]
    core = "(EngineCore_DP0 pid=243) "
    d = diagnose_text(
        "\n".join(
            [
                *head,
                core + "Traceback (most recent call last):",
                core + '  File "/venv/lib/python3.12/site-packages/torch/_inductor/codecache.py",'
                " line 900, in compiled_fx_graph_hash",
                core + "    return hashlib.sha256(data).hexdigest()",
                core + "KeyboardInterrupt",
                "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause "
                "above. Failed core proc(s): {}",
            ]
        )
    )
    root = _root(d)
    assert root.id == "other/startup-stopped-by-user"  # a bare KeyboardInterrupt: SIGINT
    assert root.title == "Start-up was stopped with Ctrl-C (SIGINT) during weight loading"


def test_a_start_up_that_stops_after_stall_warnings_hung() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()[:16]
    d = diagnose_text("\n".join([*head, _STALL, _STALL.replace("09:17:25", "09:18:25")]))
    root = _root(d)
    assert root.id == "startup-hang/stalled-until-log-end"
    assert root.title == "Start-up hung in weight loading: processes kept waiting and the log ends"


def test_a_start_up_that_stops_without_stall_warnings_died_silently() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()[:16]
    assert _root(diagnose_text("\n".join(head))).id == "engine-died-silently/stopped-during-startup"


def _interrupted_in(frame_file: str) -> Diagnosis:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()[:12]
    api = "(APIServer pid=1) "
    return diagnose_text(
        "\n".join(
            [
                *head,
                api + "Traceback (most recent call last):",
                api + f'  File "{frame_file}", line 1297, in recv',
                api + "    return self.read(buflen)",
                api + '  File "/venv/vllm/entrypoints/openai/api_server.py", line 579, in '
                "signal_handler",
                api + '    raise KeyboardInterrupt("terminated")',
                api + "KeyboardInterrupt: terminated",
            ]
        )
    )


def test_a_start_up_stopped_while_blocked_on_the_network_was_stuck() -> None:
    root = _root(_interrupted_in("/usr/lib/python3.14/ssl.py"))
    assert root.id == "startup-hang/stopped-while-waiting"
    assert root.title == "Start-up was stuck waiting on the network and was stopped"


def test_a_start_up_stopped_while_waiting_on_a_subprocess_was_stuck() -> None:
    """vLLM inspects the model class in a subprocess; a start-up stopped there waited."""
    root = _root(_interrupted_in("/usr/lib/python3.10/subprocess.py"))
    assert root.id == "startup-hang/stopped-while-waiting"
    assert root.title == "Start-up was stuck waiting on a subprocess and was stopped"


def test_a_start_up_stopped_by_sigterm_elsewhere_was_killed() -> None:
    """vLLM's server turns SIGTERM into `KeyboardInterrupt: terminated`: a supervisor."""
    root = _root(_interrupted_in("/venv/vllm/model_executor/model_loader/weight_utils.py"))
    assert root.id == "engine-died-silently/startup-interrupted"
    assert root.title == "Start-up was interrupted (KeyboardInterrupt) during engine configuration"


def _worker_error_then_engine_death(head: list[str], fatal_record: bool = True) -> Diagnosis:
    """`fatal_record`: with V1's "EngineCore encountered a fatal error." record, which
    vLLM logs only for an engine core that had started."""
    core = "(EngineCore_DP0 pid=243) "
    fatal = "ERROR 03-04 09:18:00 [core.py:946] EngineCore encountered a fatal error."
    return diagnose_text(
        "\n".join(
            [
                *head,
                *([core + fatal] if fatal_record else []),
                core + "ERROR 03-04 09:18:00 [core.py:946] Traceback (most recent call last):",
                core + '  File "/venv/vllm/v1/worker/gpu_model_runner.py", line 2200, in '
                "execute_model",
                core + "    self.kv_connector_workers.flush()",
                core + "AttributeError: 'GPUModelRunner' object has no attribute "
                "'kv_connector_workers'",
                "(APIServer pid=1) ERROR 03-04 09:18:01 [async_llm.py:480] AsyncLLM output_handler "
                "failed.",
                "(APIServer pid=1) vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
                "encountered an issue. See stack trace (above) for the root cause.",
            ]
        )
    )


def test_an_unrecognized_error_that_kills_a_serving_engine_is_an_engine_death() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()
    root = _root(_worker_error_then_engine_death(head))
    assert root.category == "engine-dead-runtime"
    assert root.id == "engine-dead-runtime/unrecognized-error"
    assert "AttributeError" in root.title
    assert "'kv_connector_workers'" in root.explanation


def test_the_same_error_before_the_server_was_up_stays_unrecognized() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()[:16]
    root = _root(_worker_error_then_engine_death(head, fatal_record=False))
    assert root.id == "other/unrecognized-exception"
    # "encountered a fatal error" itself says the engine core had started.
    root = _root(_worker_error_then_engine_death(head))
    assert root.id == "engine-dead-runtime/unrecognized-error"


_CAUGHT = [
    "(EngineCore_DP0 pid=243) Traceback (most recent call last):",
    '(EngineCore_DP0 pid=243)   File "/venv/vllm_plugin/sample/sampler.py", line 339, in top_k',
    "(EngineCore_DP0 pid=243)     return torch.ops._C_plugin.top_k_top_p(logits, k=k, p=p)",
    "(EngineCore_DP0 pid=243) RuntimeError: aclnnTopKTopP not in libopapi.so",
    "(EngineCore_DP0 pid=243) WARNING 03-04 09:17:30 [sampler.py:40] Custom op top_k_top_p is "
    "unavailable; falling back to the pytorch implementation.",
]
_GENERATING = (
    "(APIServer pid=1) INFO 03-04 09:17:40 [loggers.py:259] Engine 000: Avg prompt throughput: "
    "52.0 tokens/s, Avg generation throughput: 97.5 tokens/s, Running: 3 reqs, Waiting: 0 reqs, "
    "GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%"
)


def test_an_unrecognized_error_the_engine_went_on_generating_after_is_information() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()
    d = diagnose_text("\n".join([*head, *_CAUGHT, _GENERATING]))
    assert d.verdict is Verdict.HEALTHY
    (caught,) = [f for f in d.findings if f.id == "other/unrecognized-exception"]
    assert caught.severity is Severity.INFO
    assert "went on serving" in caught.title


def test_an_unrecognized_error_raised_handling_a_request_is_a_warning() -> None:
    """A traceback through the ASGI server failed one request (HTTP 500), not the run."""
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()
    request = [
        "(APIServer pid=1) ERROR:    Exception in ASGI application",
        "(APIServer pid=1) Traceback (most recent call last):",
        '(APIServer pid=1)   File "/venv/starlette/responses.py", line 265, in __call__',
        "(APIServer pid=1)     await wrap(partial(self.listen_for_disconnect, receive))",
        "(APIServer pid=1) exceptiongroup.ExceptionGroup: unhandled errors in a TaskGroup (1 "
        "sub-exception)",
    ]
    d = diagnose_text("\n".join([*head, *request, _GENERATING, _GENERATING]))
    assert d.verdict is Verdict.HEALTHY
    (failed,) = [f for f in d.findings if f.id == "other/request-failed-in-api-server"]
    assert failed.severity is Severity.WARNING
    assert failed.title.endswith("unrecognised exceptiongroup.ExceptionGroup")
    assert "HTTP 500" in failed.explanation


def test_a_fatal_error_after_a_caught_one_is_still_the_root_cause() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()
    root = _root(_worker_error_then_engine_death([*head, *_CAUGHT, _GENERATING]))
    assert root.id == "engine-dead-runtime/unrecognized-error"
    assert "'kv_connector_workers'" in root.explanation


def test_an_engine_death_during_a_requested_shutdown_is_not_what_an_error_killed() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()
    core = "(EngineCore_DP0 pid=243) "
    d = diagnose_text(
        "\n".join(
            [
                *head,
                *_CAUGHT,
                core + "INFO 03-04 09:18:11 [core.py:1219] [shutdown] EngineCore: trigger "
                "received signal=SIGTERM",
                "(APIServer pid=1) ERROR 03-04 09:18:11 [async_llm.py:707] "
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                "See stack trace (above) for the root cause.",
            ]
        )
    )
    assert _root(d).id == "other/unrecognized-exception"


def _mla_forward_crash(head: list[str]) -> Diagnosis:
    core = "(EngineCore_DP0 pid=243) "
    return diagnose_text(
        "\n".join(
            [
                *head,
                core + "Traceback (most recent call last):",
                core + '  File "/venv/vllm/v1/attention/backends/mla/flashmla.py", line 301, in '
                "forward_mqa",
                core + "    out = flash_mla_with_kvcache(q, kv_c_cache, block_table)",
                core + "RuntimeError: dispatcher call failed at ops.h, line 933",
            ]
        )
    )


def test_a_start_up_guess_from_where_a_traceback_ran_is_not_made_after_start_up() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_text().splitlines()
    assert _root(_mla_forward_crash(head[:16])).category == "mla-backend-unavailable"
    serving = _mla_forward_crash(head)
    assert all(f.category != "mla-backend-unavailable" for f in serving.findings)
    assert _root(serving).id == "other/unrecognized-exception"


_V0_SERVING = [
    "INFO 08-15 01:29:00 api_server.py:339] vLLM API server version 0.5.4",
    "INFO 08-15 01:29:05 llm_engine.py:174] Initializing an LLM engine (v0.5.4) with config: "
    "model='m', tokenizer='m', max_seq_len=4096",
    "INFO 08-15 01:29:40 gpu_executor.py:102] # GPU blocks: 2048, # CPU blocks: 512",
    "INFO:     Application startup complete.",
    "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
    "INFO 08-15 01:30:01 metrics.py:406] Avg prompt throughput: 12.0 tokens/s, Avg generation "
    "throughput: 30.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache "
    "usage: 1.0%, CPU KV cache usage: 0.0%.",
]
_ZMQ_GONE = [
    "Task exception was never retrieved",
    "future: <Task finished name='Task-4' coro=<lifespan.<locals>._force_log() done> "
    "exception=ZMQError('Operation not supported')>",
    "Traceback (most recent call last):",
    '  File "/venv/zmq/sugar/context.py", line 359, in socket',
    "    raise ZMQError(Errno.ENOTSUP)",
    "zmq.error.ZMQError: Operation not supported",
]


@pytest.mark.parametrize(
    "stop", ["vLLM ZMQ RPC Server was interrupted.", "Gracefully stopping http server"]
)
def test_a_v0_server_stopped_by_a_signal_leaves_no_error(stop: str) -> None:
    d = diagnose_text(
        "\n".join([*_V0_SERVING, f"INFO 08-15 01:50:29 launcher.py:45] {stop}", *_ZMQ_GONE])
    )
    assert d.verdict is Verdict.HEALTHY
    assert not [f for f in d.findings if f.severity is Severity.ERROR]


def test_a_lost_zmq_link_without_a_shutdown_is_a_symptom_of_a_silent_death() -> None:
    d = diagnose_text("\n".join([*_V0_SERVING, *_ZMQ_GONE]))
    assert _root(d).category == "engine-died-silently"


def test_the_api_servers_supported_tasks_line_means_the_engine_is_up() -> None:
    head = fixture("v0.16-llama31-8b-healthy-startup.log").read_bytes().decode().split("\n")
    without_init_line = [line for line in head[:39] if "init engine" not in line]
    assert without_init_line[-1].endswith("Supported tasks: ['generate']")
    d = diagnose_text("\n".join(without_init_line))
    assert d.verdict is Verdict.HEALTHY
    stopped = diagnose_text("\n".join(without_init_line[:-1]))
    assert _root(stopped).id == "engine-died-silently/stopped-during-startup"


def test_a_multi_line_exception_fills_text_with_its_first_line() -> None:
    d = diagnose_text(
        "(EngineCore pid=911) ERROR 08-01 10:00:00 [core.py:700] Traceback (most recent call last):\n"
        '(EngineCore pid=911) ERROR 08-01 10:00:00 [core.py:700]   File "/venv/vllm/worker.py", '
        "line 9, in capture\n"
        "(EngineCore pid=911) ERROR 08-01 10:00:00 [core.py:700]     graph.capture_end()\n"
        "(EngineCore pid=911) ERROR 08-01 10:00:00 [core.py:700] torch.AcceleratorError: CUDA "
        "error: operation not permitted\n"
        "(EngineCore pid=911) ERROR 08-01 10:00:00 [core.py:700] Search for `cudaErrorNotPermitted'"
        " in the CUDA docs for more information.\n"
    )
    root = _root(d)
    assert "CUDA error: operation not permitted` (line 4)" in root.explanation
    assert "Search for" not in root.explanation and "Search for" in root.evidence[0].text


@pytest.mark.parametrize(
    "command",
    [
        "+ /venv/bin/vllm serve /models/m --tensor-parallel-size 6",
        "launching: python -m vllm.entrypoints.openai.api_server --model m -tp 6",
    ],
)
def test_a_wrappers_printed_vllm_command_gives_the_parallel_size(command: str) -> None:
    d = diagnose_text(command + "\n")
    assert d.facts.value("tensor_parallel_size") == 6


def test_a_crash_dump_of_the_running_batch_shows_the_engine_was_serving() -> None:
    """V1 dumps the batch it was running only when a step fails: requests were scheduled."""
    dump = (
        "(EngineCore_DP0 pid=243) ERROR 03-04 09:18:00 [dump_input.py:79] Dumping scheduler "
        "stats: SchedulerStats(num_running_reqs=44, num_waiting_reqs=12)"
    )
    root = _root(_worker_error_then_engine_death([dump], fatal_record=False))
    assert root.id == "engine-dead-runtime/unrecognized-error"
    # Without the dump, the same lines do not show that start-up was over.
    without = _worker_error_then_engine_death([], fatal_record=False)
    assert _root(without).id == "other/unrecognized-exception"


def test_a_traceback_whose_exception_line_is_kept_speaks_before_a_cut_off_copy() -> None:
    """A paste that cut one copy of a traceback and kept the next: the kept exception counts."""
    d = diagnose_text(
        "ERROR 06-19 02:49:35 [core.py:515] EngineCore failed to start.\n"
        "ERROR 06-19 02:49:35 [core.py:515] Traceback (most recent call last):\n"
        'ERROR 06-19 02:49:35 [core.py:515]   File "/venv/vllm/v1/engine/core.py", line 506, in '
        "run_engine_core\n"
        "ERROR 06-19 02:49:35 [core.py:515]     engine_core = EngineCoreProc(*args, **kwargs)\n"
        '  File "/venv/vllm/plugins/frobnicate.py", line 12, in frob\n'
        "    return knob[0]\n"
        "IndexError: list index out of range\n"
    )
    root = _root(d)
    assert root.id == "other/unrecognized-exception"
    assert "IndexError" in root.title


def test_a_v0_error_record_keeps_the_exception_text_when_its_traceback_is_cut_off() -> None:
    """V0 logs `logger.exception(e)`: the record's message is the exception's own text."""
    d = diagnose_text(
        "ERROR 04-21 06:47:35 [engine.py:448] No module named 'vllm_ascend.lora'\n"
        "ERROR 04-21 06:47:35 [engine.py:448] Traceback (most recent call last):\n"
        'ERROR 04-21 06:47:35 [engine.py:448]   File "/venv/vllm/engine/multiprocessing/engine.py"'
        ", line 436, in run_mp_engine\n"
        "ERROR 04-21 06:47:35 [engine.py:448]     engine = MQLLMEngine.from_vllm_config(\n"
    )
    root = _root(d)
    assert root.id == "dependency-missing/import-error"
    assert root.evidence[0].line == 1
    # An INFO record above a traceback is not an exception's text.
    info = diagnose_text(
        "INFO 04-21 06:47:35 [engine.py:448] No module named 'vllm_ascend.lora'\n"
        "Traceback (most recent call last):\n"
        '  File "/venv/vllm/engine/multiprocessing/engine.py", line 436, in run_mp_engine\n'
        "    engine = MQLLMEngine.from_vllm_config(\n"
    )
    assert all(f.id != "dependency-missing/import-error" for f in info.findings)


def test_a_critical_record_no_signature_knows_fails_the_run() -> None:
    d = diagnose_text(
        "INFO 04-11 13:44:00 [api_server.py:1] vLLM API server version 0.8.4\n"
        "CRITICAL 04-11 13:45:00 [frobnicator.py:49] The frobnicator lost its marbles.\n"
    )
    assert d.verdict is Verdict.FAILED
    root = _root(d)
    assert root.id == "other/unrecognized-critical"
    assert "frobnicator" in root.explanation


def _refused(*lines: str) -> Finding:
    import vlogscope

    return _root(vlogscope.diagnose(list(lines)))


_FRAMES = (
    "Traceback (most recent call last):",
    '  File "/opt/app/framework/engine.py", line 58, in __init__',
    "    self.llm = vllm.LLM(*args, **kwargs)",
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/entrypoints/llm.py", line 212, in __init__',
    "    engine_args = EngineArgs(",
)


@pytest.mark.parametrize(
    ("arg", "finding_id", "title", "fix"),
    [
        # removed since: the caller was written for an older vLLM
        ("worker_use_ray", "invalid-argument/engine-argument-removed",
         "removed from vLLM after 0.6.6.post1", "vllm<=0.6.6.post1"),
        # added later: the installed vLLM is older than the caller expects
        ("worker_extension_cls", "dependency-missing/engine-argument-too-new",
         "needs vLLM 0.8.0 or newer", "vllm>=0.8.0"),
    ],
)  # fmt: skip
def test_a_refused_engine_argument_is_judged_by_its_history(
    arg: str, finding_id: str, title: str, fix: str
) -> None:
    refusal = f"TypeError: EngineArgs.__init__() got an unexpected keyword argument '{arg}'"
    root = _refused(*_FRAMES, refusal)
    assert (root.id, root.category) == (finding_id, finding_id.split("/")[0])
    assert title in root.title
    assert fix in " ".join(root.fix)


def test_the_logged_version_decides_between_removed_and_too_new() -> None:
    """`num_scheduler_steps` existed in 0.5.5 to 0.10.0: refused by 0.4.3 it is too new,
    by 0.11.0 removed, and by 0.6.3, which has it, a sign of a stale installation."""
    refusal = (
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'num_scheduler_steps'"
    )
    for version, expected in (
        ("0.4.3", "dependency-missing/engine-argument-too-new"),
        ("0.11.0", "invalid-argument/engine-argument-removed"),
        ("0.6.3", "dependency-missing/stale-vllm-installation"),
    ):
        banner = f"INFO 10-16 01:02:03 [api_server.py:585] vLLM API server version {version}"
        assert _refused(banner, *_FRAMES, refusal).id == expected, version


def test_a_keyword_no_vllm_release_knows_stays_an_invalid_argument() -> None:
    root = _refused(
        *_FRAMES,
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'tensor_paralel_size'",
    )
    assert root.id == "invalid-argument/unexpected-keyword"


def test_a_keyword_refused_by_another_class_is_not_judged_as_an_engine_argument() -> None:
    """`seed` is an engine argument too, but SamplingParams refused it here: an API
    mismatch between the caller and vLLM, not an engine argument."""
    root = _refused(
        "TypeError: SamplingParams.__init__() got an unexpected keyword argument 'seed'"
    )
    assert root.id == "dependency-missing/api-keyword-mismatch"


_SERVED = (
    "INFO 10-01 22:40:55 [api_server.py:1] vLLM API server version 0.30.0",
    "INFO 10-01 22:41:10 [launcher.py:1] Application startup complete.",
    "INFO 10-01 22:41:20 [loggers.py:1] Engine 000: Avg prompt throughput: 12.0 tokens/s, "
    "Avg generation throughput: 62.5 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
    "GPU KV cache usage: 0.1%, Prefix cache hit rate: 0.0%",
)


def test_an_error_the_engine_went_on_generating_after_is_information() -> None:
    import vlogscope

    lines = [
        "Error in sitecustomize; set PYTHONVERBOSE for traceback:",
        "ModuleNotFoundError: No module named 'wrapt'",
        *_SERVED,
        _SERVED[-1].replace("22:41:20", "22:41:30"),
    ]
    d = vlogscope.diagnose(lines)
    assert d.verdict is Verdict.HEALTHY, [f.id for f in d.findings]
    [found] = [f for f in d.findings if f.id == "dependency-missing/import-error"]
    assert found.severity is Severity.INFO and "went on serving" in found.title


def test_one_stats_line_after_an_error_does_not_prove_it_survived() -> None:
    """A stats line reports the interval before it: tokens from before a crash."""
    import vlogscope

    d = vlogscope.diagnose(["ModuleNotFoundError: No module named 'wrapt'", *_SERVED])
    assert d.verdict is Verdict.FAILED
    assert _root(d).id == "dependency-missing/import-error"


def test_an_engine_core_that_dies_of_an_unknown_error_had_started() -> None:
    """V1 says "encountered a fatal error" only for an engine core that had started, so
    an error no signature names that kills it is an engine death, not a start-up failure."""
    import vlogscope

    h = "(EngineCore_DP0 pid=3361) ERROR 01-30 06:07:45 [core.py:70] "
    d = vlogscope.diagnose(
        [
            h + "EngineCore encountered a fatal error.",
            h + "Traceback (most recent call last):",
            h + '  File "/v/vllm/v1/structured_output/__init__.py", line 288, in grammar_bitmask',
            h + "    assert accepted, (token, req_id, scheduled_spec_decode_tokens)",
            h + "AssertionError: (-1, 'chatcmpl-5c52', {'chatcmpl-5c52': [-1, -1, -1]})",
        ]
    )
    assert _root(d).category == "engine-dead-runtime"


def test_a_message_shape_seen_before_is_still_read_for_the_digits_a_signature_names() -> None:
    """Stats lines share one shape with their digits folded; `KV cache usage: 9\\d`
    must still fire on the first full line after many that were not."""
    import io

    stats = (
        "INFO 08-26 17:30:{s:02d} [loggers.py:122] Engine 000: Avg prompt throughput: 1.0 "
        "tokens/s, Avg generation throughput: 1.0 tokens/s, Running: {r} reqs, Waiting: 0 reqs, "
        "GPU KV cache usage: {u}%, Prefix cache hit rate: 0.0%"
    )
    lines = [stats.format(s=s, r=8, u=f"{10 + s}.5") for s in range(20)]
    lines.append(stats.format(s=40, r=128, u="96.2"))
    text = "\n".join(lines) + "\n"
    for skim_routine in (False, True):
        d = analyze(Source.from_stream("<t>", io.BytesIO(text.encode())), skim_routine=skim_routine)
        assert [f.id for f in d.findings] == ["preemption-kv-pressure/kv-usage-saturated"]
        assert d.findings[0].evidence[0].line == 21


def test_a_message_shape_seen_before_is_still_read_for_a_needle_with_digits() -> None:
    """`at least 2, got 1` and `at least 1, got 0` share a shape; the signature's
    needle `max_tokens must be at least 1, got ` must still be looked for in
    each message of that shape."""
    record = (
        "ERROR 05-14 09:10:{s:02d} [serving_chat.py:1] max_tokens must be at least {n}, got {g}."
    )
    lines = [record.format(s=s, n=2, g=1) for s in range(20)] + [record.format(s=30, n=1, g=0)]
    d = diagnose_text("\n".join(lines))
    assert [f.id for f in d.findings] == ["context-length-exceeded/negative-max-tokens"]
    assert d.findings[0].evidence[0].line == 21


def _weights_traceback(last: str) -> str:
    return "\n".join(
        [
            "ERROR 05-14 09:10:07 [core.py:1] EngineCore failed to start.",
            "Traceback (most recent call last):",
            '  File "/v/vllm/model_executor/models/llama.py", line 500, in load_weights',
            "    weight_loader(param, loaded_weight)",
            last,
        ]
    )


def test_a_guess_from_where_a_traceback_ran_says_how_the_traceback_ends() -> None:
    """Frame-based signatures speak for cut-off tracebacks and for unknown exceptions;
    their text must not claim the error line is missing when it is there."""
    cut = _root(diagnose_text(_weights_traceback("")))
    assert cut.id == "weights-load-error/traceback-in-weight-loading"
    assert cut.title.endswith("(the error line is not in the log)")
    assert "the log ends before its exception line" in cut.explanation
    raised = _root(diagnose_text(_weights_traceback("RuntimeError: a shard went odd")))
    assert raised.id == "weights-load-error/traceback-in-weight-loading"
    assert raised.title.endswith("(an unrecognised RuntimeError)")
    assert "ends in `RuntimeError: a shard went odd` (line 5)" in raised.explanation


def _kv_write_failure(notice: str) -> str:
    return "\n".join(
        [
            f"INFO 06-23 13:44:32 [config.py:1559] {notice}",
            "ERROR 06-23 13:46:28 [engine.py:165] RuntimeError: The Inner error is reported as "
            "above. The process exits for this inner error, and the current working operator "
            "name is ReshapeCacheOperation.",
        ]
    )


def test_the_kv_cache_write_op_failing_with_an_fp8_cache_is_the_kv_dtype() -> None:
    fp8 = _kv_write_failure("Using fp8 data type to store kv cache. It reduces the GPU memory.")
    root = _root(diagnose_text(fp8))
    assert root.id == "kv-cache-dtype-unsupported/kv-cache-write-failed"
    assert "ReshapeCacheOperation" in root.title and "(fp8, line 1)" in root.explanation
    plain = diagnose_text(_kv_write_failure("Chunked prefill is enabled."))
    assert all(f.category != "kv-cache-dtype-unsupported" for f in plain.findings)


_V0_OFFLINE = [
    "INFO 06-12 13:25:40 llm_engine.py:161] Initializing an LLM engine (v0.5.0) with config: "
    "model='Qwen/Qwen2-7B', dtype=torch.float16",
    "INFO 06-12 13:26:19 gpu_executor.py:83] # GPU blocks: 29985, # CPU blocks: 9362",
    "INFO 06-12 13:26:23 model_runner.py:878] Capturing the model for CUDA graphs.",
    "INFO 06-12 13:26:34 model_runner.py:954] Graph capturing finished in 11 secs.",
]


def test_a_v0_offline_engine_is_ready_once_graph_capture_finished() -> None:
    """V0 up to 0.6 prints nothing after capture; an `LLM(...)` run is then up."""
    d = diagnose_text("\n".join(_V0_OFFLINE))
    assert d.verdict is Verdict.HEALTHY and not d.findings
    assert d.facts.value("startup_complete") is True


def test_a_v0_server_that_stops_after_graph_capture_has_not_started() -> None:
    """A server goes on to start its API: stopping here is still mid-start-up."""
    server = ["INFO 06-12 13:25:30 api_server.py:177] vLLM API server version 0.5.0", *_V0_OFFLINE]
    root = _root(diagnose_text("\n".join(server)))
    assert root.category == "engine-died-silently"
    v1 = "\n".join(_V0_OFFLINE).replace(
        "Initializing an LLM engine", "Initializing a V1 LLM engine"
    )
    assert _root(diagnose_text(v1)).category == "engine-died-silently"


_NO_PLATFORM = (
    "INFO 04-08 14:01:28 [__init__.py:220] No platform detected, vLLM is running on "
    "UnspecifiedPlatform"
)


def test_a_platform_plugin_activated_after_no_platform_was_detected_is_no_failure() -> None:
    """Out-of-tree platforms (Kunlun, Ascend plugins) are looked for after vLLM's own."""
    plugin = "INFO 04-08 14:01:31 [__init__.py:207] Platform plugin kunlun is activated"
    text = f"{_NO_PLATFORM}\n{plugin}\n"
    for skim in (False, True):  # skimmed, the plugin line must not pass for routine
        d = analyze(Source.from_stream("<t>", io.BytesIO(text.encode())), skim_routine=skim)
        platform = d.facts.get("platform")
        assert platform is not None and (platform.value, platform.line) == ("kunlun", 2)
        assert not d.findings and d.verdict is not Verdict.FAILED
    alone = diagnose_text(_NO_PLATFORM + "\n")
    assert alone.facts.value("platform") == "unspecified"
    assert _root(alone).id == "platform-unsupported/unspecified-platform"
    detected = "INFO 04-08 14:01:28 [__init__.py:39] Automatically detected platform cuda."
    assert diagnose_text(detected + "\n").facts.value("platform") == "cuda"


_BACKGROUND_DEATH = [
    "ERROR 09-05 17:22:27 async_llm_engine.py:63] Engine background task failed",
    "ERROR 09-05 17:22:27 async_llm_engine.py:63] Traceback (most recent call last):",
    'ERROR 09-05 17:22:27 async_llm_engine.py:63]   File "/v/vllm/worker/model_runner.py", '
    "line 400, in build",
    "ERROR 09-05 17:22:27 async_llm_engine.py:63]     max_len = max(lens)",
    "ERROR 09-05 17:22:27 async_llm_engine.py:63] ValueError: max() arg is an empty sequence",
]


def test_an_excerpt_that_starts_with_the_engine_running_and_dying_is_an_engine_death() -> None:
    """vLLM reports `Engine background task failed` only for an engine that had started."""
    root = _root(diagnose_text("\n".join(_BACKGROUND_DEATH)))
    assert root.id == "engine-dead-runtime/unrecognized-error"
    assert root.explanation.startswith("The log starts with the engine running;")
    # The same error in an excerpt that says start-up failed stays unrecognised.
    failed = "ERROR 09-05 17:22:28 core.py:900] EngineCore failed to start."
    assert _root(diagnose_text("\n".join([*_BACKGROUND_DEATH, failed]))).category != (
        "engine-dead-runtime"
    )


def test_an_engine_core_exception_after_the_server_started_is_no_start_up_failure() -> None:
    """vLLM 0.8 logs `EngineCore hit an exception` for a failure while serving too."""
    h = "ERROR 03-18 14:46:40 [core.py:341] "
    d = diagnose_text(
        "\n".join(
            [
                "INFO:     Application startup complete.",
                'INFO:     127.0.0.1:56084 - "POST /v1/completions HTTP/1.1" 200 OK',
                h + "EngineCore hit an exception: Traceback (most recent call last):",
                h + '  File "/v/vllm/v1/engine/core.py", line 368, in run_busy_loop',
                h + "    outputs = step_fn()",
                h + "IndexError: index 1 is out of bounds for axis 0 with size 1",
                "CRITICAL 03-18 14:46:40 [core_client.py:269] Got fatal signal from worker "
                "processes, shutting down. See stack trace above for root cause issue.",
            ]
        )
    )
    assert _root(d).category == "engine-dead-runtime"
    assert all(f.id != "engine-died-silently/enginecore-failed-to-start" for f in d.findings)


def test_a_start_up_stopped_before_any_milestone_while_waiting_on_the_engine_was_stuck() -> None:
    """Only the platform line was printed, then Ctrl-C while the front end waited for the
    engine process's start-up report through a pipe."""
    d = diagnose_text(
        "\n".join(
            [
                "INFO 04-14 19:51:04 [__init__.py:239] Automatically detected platform cuda.",
                "^CTraceback (most recent call last):",
                '  File "/venv/vllm/v1/utils.py", line 127, in wait_for_startup',
                '    if self.reader.recv()["status"] != "READY":',
                '  File "/usr/lib/python3.12/multiprocessing/connection.py", line 395, in _recv',
                "    chunk = read(handle, remaining)",
                "KeyboardInterrupt",
            ]
        )
    )
    root = _root(d)
    assert root.id == "startup-hang/stopped-while-waiting"
    assert root.title == "Start-up was stuck waiting on another process and was stopped"
    # Without a single vLLM line, a KeyboardInterrupt says nothing about a start-up.
    bare = diagnose_text(
        'Traceback (most recent call last):\n  File "a.py", line 1, in f\nKeyboardInterrupt\n'
    )
    assert all(f.category != "startup-hang" for f in bare.findings)


def _serving_then(traceback_frames: list[str], exception: str) -> str:
    """A server that started and reported throughput, then a raw traceback."""
    stats = (
        "(APIServer pid=5) INFO 03-26 21:59:{s:02d} [loggers.py:127] Engine 000: Avg prompt "
        "throughput: 760.3 tokens/s, Avg generation throughput: {s}.0 tokens/s, Running: 1 reqs, "
        "Waiting: 0 reqs, GPU KV cache usage: 2.9%, Prefix cache hit rate: 0.0%\n"
    )
    head = (
        "(APIServer pid=5) INFO 03-26 21:59:00 [api_server.py:1] vLLM API server version 0.11.0\n"
    )
    lines = [stats.format(s=s) for s in (10, 20)]
    worker = "(CursorLoopWorker pid=57714) "
    tb = [f"{worker}Traceback (most recent call last):\n"]
    tb += [f"{worker}{line}\n" for line in traceback_frames]
    tb.append(f"{worker}{exception}\n")
    return head + "".join(lines) + "".join(tb) + stats.format(s=30)


def test_an_application_traceback_beside_a_serving_vllm_is_a_warning_not_a_failure() -> None:
    d = diagnose_text(
        _serving_then(
            [
                '  File "/srv/app/cursor/env_and_state.py", line 470, in update_state',
                "    self._extract_action(observation, output_text)",
                '  File "/srv/app/cursor/env_and_state.py", line 270, in _extract_action',
                "    action, x, y = extractor(output_text)",
            ],
            "TypeError: cannot unpack non-iterable NoneType object",
        )
    )
    assert d.verdict is Verdict.HEALTHY
    app = [f for f in d.findings if f.id == "other/application-error-outside-vllm"]
    assert len(app) == 1 and app[0].severity is Severity.WARNING
    assert "(CursorLoopWorker)" in app[0].title and "cannot unpack" in app[0].title


def test_a_traceback_through_vllm_beside_a_serving_vllm_is_still_reported() -> None:
    d = diagnose_text(
        _serving_then(
            [
                '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/async_llm.py", line 9, '
                "in generate",
                "    out = await self.engine_core.get_output_async()",
                '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core_client.py", '
                "line 7, in get_output_async",
                "    raise self._format_exception(outputs)",
            ],
            "TypeError: cannot unpack non-iterable NoneType object",
        )
    )
    assert not any(f.id == "other/application-error-outside-vllm" for f in d.findings)
    assert any("cannot unpack" in f.title for f in d.findings)


def test_a_traceback_in_installed_packages_alone_is_not_blamed_on_the_application() -> None:
    """Ray's or torch's frames without vLLM's may still be the server failing."""
    d = diagnose_text(
        _serving_then(
            [
                '  File "/usr/lib/python3.12/site-packages/ray/_private/worker.py", line 9, in get',
                "    raise value.as_instanceof_cause()",
                '  File "/usr/lib/python3.12/site-packages/ray/_private/serialization.py", line 7, '
                "in deserialize",
                "    return self._deserialize_object(data)",
            ],
            "TypeError: cannot unpack non-iterable NoneType object",
        )
    )
    assert not any(f.id == "other/application-error-outside-vllm" for f in d.findings)
