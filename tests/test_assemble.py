"""Lines become events: tracebacks per process stream, nothing lost."""

from __future__ import annotations

from vlogscope.assemble import Event, EventKind, assemble
from vlogscope.records import Record, classify


def _events(*texts: str) -> list[Event]:
    return list(assemble(Record(i, classify(t)) for i, t in enumerate(texts, 1)))


H = "(EngineCore_DP0 pid=975) ERROR 11-14 08:06:26 [core.py:708] "


def test_logged_traceback_is_one_event_with_its_exception() -> None:
    [event] = _events(
        H + "EngineCore failed to start.",
        H + "Traceback (most recent call last):",
        H + '  File "/v/multiproc_executor.py", line 509, in wait_for_ready',
        H + "    raise e from None",
        H + "Exception: WorkerProc initialization failed due to an exception.",
    )
    assert event.kind is EventKind.RECORD
    assert event.lines == 5
    assert event.frames[0].function == "wait_for_ready"
    assert event.exception == "Exception: WorkerProc initialization failed due to an exception."


def test_interleaved_ranks_are_untangled_per_process() -> None:
    lines = []
    for step in (
        "WorkerProc failed to start.",
        "Traceback (most recent call last):",
        '  File "/v/layer.py", line 1, in get_attn_backend',
        "ValueError: rank says no",
    ):
        for rank in range(8):
            lines.append(f"(Worker_TP{rank} pid={100 + rank}) ERROR 01-01 00:00:00 [m.py:9] {step}")
    events = _events(*lines)
    assert len(events) == 8
    assert {e.process for e in events} == {f"Worker_TP{r}" for r in range(8)}
    assert all(e.exception == "ValueError: rank says no" and e.lines == 4 for e in events)


def test_raw_traceback_after_process_banner_and_chained_exceptions() -> None:
    p = "(EngineCore_DP0 pid=975) "
    events = _events(
        p + "Process EngineCore_DP0:",
        p + "Traceback (most recent call last):",
        p + '  File "/x.py", line 1, in f',
        p + "KeyError: 'a'",
        p + "",
        p + "The above exception was the direct cause of the following exception:",
        p + "",
        p + "Traceback (most recent call last):",
        p + '  File "/x.py", line 2, in g',
        p + "RuntimeError: wrapped",
        "unrelated line",
    )
    assert [e.kind for e in events] == [EventKind.TRACEBACK, EventKind.UNPARSED]
    assert [str(x) for x in events[0].exceptions] == ["KeyError: 'a'", "RuntimeError: wrapped"]


def test_pydantic_details_belong_to_the_exception() -> None:
    [event] = _events(
        "Traceback (most recent call last):",
        '  File "/x.py", line 1, in f',
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        "  Value error, User-specified max_model_len (513) is greater than the derived max_model_len",
        "    For further information visit https://errors.pydantic.dev/2.11/v/value_error",
    )
    assert "Value error, User-specified max_model_len (513)" in event.exceptions[-1].message


def test_excerpt_starting_mid_traceback_is_a_fragment() -> None:
    [event] = _events(
        '  File "/v/core_client.py", line 484, in _wait_for_engine_startup',
        '    raise RuntimeError("Engine core initialization failed. "',
        "RuntimeError: Engine core initialization failed. See root cause above.",
    )
    assert event.kind is EventKind.TRACEBACK
    assert event.exceptions[-1].type == "RuntimeError"


def test_banner_lines_join_but_route_lines_stay_separate() -> None:
    a = "(APIServer pid=1) INFO 07-16 12:51:58 [api_utils.py:339] "
    r = "(APIServer pid=1) INFO 07-16 12:51:59 [launcher.py:46] "
    events = _events(
        a,
        a + "       █     █     █▄   ▄█",
        a + "  ▄▄ ▄█ █  version 0.23.1",
        a,
        r + "Route: /docs, Methods: GET",
        r + "Route: /health, Methods: GET",
    )
    assert [e.lines for e in events] == [4, 1, 1]


def test_every_line_lands_in_exactly_one_event_in_order() -> None:
    texts = [
        "noise",
        H + "EngineCore failed to start.",
        "(Worker_TP0 pid=1) ERROR 01-01 00:00:00 [m.py:9] WorkerProc failed to start.",
        H + "Traceback (most recent call last):",
        "INFO:     Started server process [1]",
        H + "ValueError: x",
        '  File "/frag.py", line 1, in f',
    ]
    events = _events(*texts)
    numbers = sorted(n for e in events for n in e.line_numbers)
    assert numbers == list(range(1, len(texts) + 1))
    assert [e.line for e in events] == sorted(e.line for e in events)


def test_unindented_frames_from_stripping_wrappers_still_parse() -> None:
    [event] = _events(
        "Traceback (most recent call last):",
        'File "/swift/deploy.py", line 5, in <module>',
        "deploy_main()",
        'File "/vllm/engine/async_llm_engine.py", line 471, in from_engine_args',
        "engine = cls(",
        "ValueError: The model's max seq len (163840) is larger than the maximum number of tokens",
    )
    assert [f.function for f in event.frames] == ["<module>", "from_engine_args"]
    assert event.exceptions[-1].type == "ValueError"


def test_ray_task_error_is_unwrapped_to_the_inner_exception_type() -> None:
    [event] = _events(
        "Traceback (most recent call last):",
        '  File "/lighteval/main.py", line 1, in run',
        "ray.exceptions.RayTaskError(TypeError): ray::run_inference() (pid=1, ip=10.0.0.1)",
    )
    assert event.exceptions[-1].type == "TypeError"


def test_a_frame_remembers_the_call_on_its_source_line() -> None:
    [event] = _events(
        H + "Traceback (most recent call last):",
        H + '  File "/v/gpu_worker.py", line 588, in compile_or_warm_up_model',
        H + "    cuda_graph_memory_bytes = self.model_runner.capture_model()",
        H + "                              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        H + '  File "/v/deepseek_v2.py", line 1080, in __init__',
        H + "    self.mla_attn = MultiHeadLatentAttentionWrapper(",
    )
    assert [(f.function, f.calls) for f in event.frames] == [
        ("compile_or_warm_up_model", "capture_model"),
        ("__init__", "MultiHeadLatentAttentionWrapper"),
    ]


def _raised(code: str, exception: str) -> str:
    """The message of the exception of a one-frame traceback."""
    [event] = _events(
        "Traceback (most recent call last):",
        '  File "/x/vllm/model_executor/layers/linear.py", line 812, in __init__',
        f"    {code}",
        "           ^^^^^^^^^^^^^^^^^^^^",
        exception,
    )
    return event.exceptions[-1].message


def test_a_bare_assertion_error_takes_its_assert_line_as_message() -> None:
    """`AssertionError` alone says nothing; the `assert` line above it says what failed."""
    assert_line = "assert self.total_num_kv_heads % tp_size == 0"
    assert _raised(assert_line, "AssertionError") == assert_line
    assert _raised("assert ok, 'why'", "AssertionError: why") == "why"
    assert _raised("raise AssertionError()", "AssertionError") == ""


_IPYTHON = """\
---------------------------------------------------------------------------
KeyError                                  Traceback (most recent call last)
Cell In[13], line 43
     40 else:
     41     raise ValueError(model)
---> 43 llm = LLM(
     44     model=model_path,
     45     dtype="float16",

File ~/envs/py39/lib/python3.9/site-packages/vllm/entrypoints/llm.py:123, in LLM.__init__(self, model)
    121     **kwargs,
    122 )
--> 123 self.llm_engine = LLMEngine.from_engine_args(
    124     engine_args, usage_context=UsageContext.LLM_CLASS)

File ~/envs/py39/lib/python3.9/site-packages/vllm/model_executor/models/llama.py:412, in LlamaForCausalLM.load_weights(self, weights)
    410         continue
--> 412     param = params_dict[name]

KeyError: 'layers.0.attention.wk.weight'
"""


def test_an_ipython_traceback_is_one_event_with_its_frames_and_exception() -> None:
    [_, event] = _events(*_IPYTHON.splitlines())
    assert event.kind is EventKind.TRACEBACK and event.lines == _IPYTHON.count("\n") - 1
    assert [f.function for f in event.frames] == ["<module>", "__init__", "load_weights"]
    assert [f.calls for f in event.frames] == ["LLM", "from_engine_args", ""]
    assert event.frames[1].line == 123 and event.frames[1].file.endswith("entrypoints/llm.py")
    assert event.exception == "KeyError: 'layers.0.attention.wk.weight'"


def test_a_cut_off_ipython_traceback_still_names_its_exception_type() -> None:
    cut = "\n".join(_IPYTHON.splitlines()[:13]) + "\n"
    [_, event] = _events(*cut.splitlines())
    assert [e.type for e in event.exceptions] == ["KeyError"]
    assert event.exceptions[0].line == 2


# rich's pretty traceback in a narrow (30-column) console: the frame location is
# wrapped over box lines, and so is the exception message after the box.
_RICH = """\
INFO 07-14 12:16:01 [llm_engine.py:234] Initializing an LLM engine (v0.6.4)
╭─ Traceback (most recent call last) ─╮
│ /venv/lib/python3.10/site-packages/ │
│ vllm/worker/model_runner.py:1047 in │
│ load_model                          │
│                                     │
│   1046 │   with DeviceMemoryProfile │
│ ❱ 1047 │   │   model = get_model(   │
│        │   │   │   vllm_config=self │
│                                     │
│ /venv/lib/python3.10/site-packages/ │
│ torch/utils/_device.py:106 in       │
│ __torch_function__                  │
│                                     │
│ ❱  106 │   return func(*args, **kwa │
╰─────────────────────────────────────╯
RuntimeError: NVML_SUCCESS == r
INTERNAL ASSERT FAILED at
"../c10/cuda/CUDACachingAllocator.cpp":995,
please report a bug to PyTorch.
[W714 12:16:47.832395491 ProcessGroupNCCL.cpp:1250] Warning: process group not destroyed
"""


def test_a_rich_traceback_is_one_event_with_its_wrapped_frames_and_exception() -> None:
    [_, event, after] = _events(*_RICH.splitlines())
    assert event.kind is EventKind.TRACEBACK and event.line_numbers == tuple(range(2, 21))
    assert [(f.file, f.line, f.function) for f in event.frames] == [
        ("/venv/lib/python3.10/site-packages/vllm/worker/model_runner.py", 1047, "load_model"),
        ("/venv/lib/python3.10/site-packages/torch/utils/_device.py", 106, "__torch_function__"),
    ]
    assert [f.calls for f in event.frames] == ["get_model", "func"]
    assert event.exception == (
        'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/'
        'CUDACachingAllocator.cpp":995, please report a bug to PyTorch.'
    )
    assert after.line_numbers == (21,)


# faulthandler's dump of a native crash: most recent call first, other threads too.
_FAULT = """\
INFO 04-05 23:50:40 llm_engine.py:87] Initializing an LLM engine (v0.4.0.post1)
Fatal Python error: Segmentation fault

Thread 0x00007f2e1bfff640 (most recent call first):
  File "/usr/lib/python3.9/threading.py", line 312 in wait

Current thread 0x00007f2f4a9b4740 (most recent call first):
  File "/venv/triton/compiler/compiler.py", line 114 in ttgir_to_llir
  File "/venv/triton/compiler/compiler.py", line 417 in <lambda>
  File "/venv/vllm/executor/ray_gpu_executor.py", line 224 in _init_cache

Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)
INFO 04-05 23:51:00 api_server.py:10] Restarting
"""


def test_a_faulthandler_dump_is_one_event_with_the_crashed_threads_frames() -> None:
    [_, event, after] = _events(*_FAULT.splitlines())
    assert event.kind is EventKind.TRACEBACK and event.line_numbers == tuple(range(2, 13))
    assert [f.function for f in event.frames] == ["_init_cache", "<lambda>", "ttgir_to_llir"]
    assert (
        event.frames[-1].line == 114
        and event.frames[-1].file == "/venv/triton/compiler/compiler.py"
    )
    assert event.exception == "Fatal Python error: Segmentation fault"
    assert after.line_numbers == (13,)


def test_a_ray_task_errors_remote_traceback_and_real_exception_join_its_event() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/venv/ray/_private/worker.py", line 861, in get_objects',
        "    raise value.as_instanceof_cause()",
        "ray.exceptions.RayTaskError(ModuleNotFoundError): ray::Actor.fit() (pid=5, ip=10.0.0.1)",
        '  File "/venv/openrlhf/trainer/ray/ppo_actor.py", line 85, in __init__',
        "    import vllm",
        "ModuleNotFoundError: No module named 'vllm'",
    ]
    [event] = _events(*lines)
    assert [f.function for f in event.frames] == ["get_objects", "__init__"]
    assert [e.type for e in event.exceptions] == ["ModuleNotFoundError", "ModuleNotFoundError"]
    assert event.exception == "ModuleNotFoundError: No module named 'vllm'"


def test_caret_lines_a_prefix_left_unindented_are_not_exceptions() -> None:
    p = "(ActorModelRayActor pid=7) "
    lines = [
        p + "Traceback (most recent call last):",
        p + 'File "/venv/vllm/entrypoints/llm.py", line 495, in collective_rpc',
        p + "executor = self.llm_engine.model_executor",
        p + "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        p + "AttributeError: 'LLMEngine' object has no attribute 'model_executor'",
    ]
    [event] = _events(*lines)
    assert event.exception == "AttributeError: 'LLMEngine' object has no attribute 'model_executor'"
    assert [e.type for e in event.exceptions] == ["AttributeError"]


def test_a_quoted_message_continues_until_its_quote_closes() -> None:
    """V1 quotes a worker's error (`Worker failed with error '...'`); a Triton
    compile error inside it spans unindented lines, which belong to the exception."""
    p = "(EngineCore pid=259) "
    events = _events(
        p + "Traceback (most recent call last):",
        p + '  File "/v/multiproc_executor.py", line 434, in get_response',
        p + "    raise RuntimeError(",
        p + "RuntimeError: Worker failed with error 'at 1:0:",
        p + "def fused_moe_kernel(",
        p + "^",
        p + 'ValueError("type fp8e4nv not supported in this architecture. The supported fp8 '
        "dtypes are ('fp8e4b15', 'fp8e5')\")', please check the stack trace above",
        p + "unrelated output after the quote closed",
    )
    assert [e.lines for e in events] == [7, 1]
    message = events[0].exceptions[-1].message
    assert message.splitlines()[1] == "def fused_moe_kernel("
    assert "type fp8e4nv not supported" in message


def test_an_apostrophe_does_not_open_a_quote() -> None:
    events = _events(
        "Traceback (most recent call last):",
        '  File "/x.py", line 1, in f',
        "ValueError: the model's config doesn't say",
        "next line of other output",
    )
    assert [e.lines for e in events] == [3, 1]


def test_an_open_quote_stops_at_a_new_traceback() -> None:
    events = _events(
        "Traceback (most recent call last):",
        '  File "/x.py", line 1, in f',
        "RuntimeError: failed with error 'at 1:0:",
        "Traceback (most recent call last):",
        '  File "/x.py", line 2, in g',
        "KeyError: 'b'",
    )
    assert [e.lines for e in events] == [3, 3]


def test_a_lone_exception_line_names_its_exception() -> None:
    """Excerpts often keep only a traceback's last line, raw or as a record."""
    raw, record = _events(
        "ModuleNotFoundError: No module named 'wrapt'",
        H + "RuntimeError: NIXL is not available",
    )
    assert raw.kind is EventKind.TRACEBACK and raw.exception == (
        "ModuleNotFoundError: No module named 'wrapt'"
    )
    assert record.kind is EventKind.RECORD and record.exception == (
        "RuntimeError: NIXL is not available"
    )


def test_frames_pasted_below_a_lone_exception_join_it() -> None:
    [event] = _events(
        "KeyError: <PlatformEnum.HPU: 4>",
        '  File "vllm/model_executor/layers/quantization/kernels/__init__.py", line 57, in choose',
        "    for kernel in _POSSIBLE_KERNELS[current_platform._enum]:",
    )
    assert event.exception == "KeyError: <PlatformEnum.HPU: 4>"
    assert event.frames[0].function == "choose"


def test_a_line_that_only_looks_like_a_name_and_colon_is_no_exception() -> None:
    for text in ("Note: this is fine", "error: linker failed", "Hint: UserError: no"):
        [event] = _events(text)
        assert event.kind is EventKind.UNPARSED and not event.exceptions, text


def test_a_traceback_cut_off_after_a_raise_statement_names_what_it_raised() -> None:
    """The last source line shown is the `raise`: its type and the start of its message."""
    frame = '  File "/v/vllm/v1/engine/core_client.py", line 496, in __init__'
    [cut] = _events(
        "Traceback (most recent call last):",
        frame,
        '    raise TimeoutError("Timed out waiting for engines to send"',
    )
    assert not cut.cut_off and cut.exceptions[-1].line == 3
    assert cut.exception == "TimeoutError: Timed out waiting for engines to send"
    [f_string] = _events(
        frame, "    raise ValueError(f'Free memory on device ({free}/{total}) on startup'"
    )
    assert f_string.exception == "ValueError: Free memory on device ({free}/{total}) on startup"


def test_a_raise_statement_without_a_message_leaves_the_traceback_cut_off() -> None:
    frame = '  File "/v/vllm/v1/core/kv_cache_utils.py", line 758, in _check'
    for last in ("    raise ValueError(", "    raise", "    return func(*args)"):
        [cut] = _events("Traceback (most recent call last):", frame, last)
        assert cut.cut_off and cut.exception is None, last


def test_an_ipython_frame_in_a_function_defined_in_a_cell_is_a_frame() -> None:
    """IPython 8 names the function for cell frames: `Cell In[1], line 21, in run(n)`;
    a blank source line in the context is just its number."""
    [_, event] = _events(
        "---------------------------------------------------------------------------",
        "KeyboardInterrupt                         Traceback (most recent call last)",
        "Cell In[1], line 76",
        "---> 76 res = run_vllm(batch_size)",
        "",
        "Cell In[1], line 21, in run_vllm(batch_size)",
        "     20     from vllm import LLM",
        "     21",
        "---> 21     llm = LLM(",
        "",
        "File ~/venv/lib/python3.10/site-packages/vllm/entrypoints/llm.py:144, in LLM.__init__(self)",
        "--> 144 self.llm_engine = LLMEngine.from_engine_args(engine_args)",
        "",
        "KeyboardInterrupt: ",
    )
    assert [(f.function, f.line) for f in event.frames] == [
        ("<module>", 76),
        ("run_vllm", 21),
        ("__init__", 144),
    ]
    assert event.exceptions[-1].type == "KeyboardInterrupt"


def test_an_ipython_code_line_after_skipped_lines_is_code_not_the_exception() -> None:
    """IPython 8.x prints `(...)` before the first line shown after skipped ones."""
    [_, event] = _events(
        "---------------------------------------------------------------------------",
        "OutOfResources                            Traceback (most recent call last)",
        "Cell In[21], line 13",
        "      1 trainer = GRPOTrainer(",
        "   (...)     11     train_dataset=dataset,",
        "     12 )",
        "---> 13 trainer.train()",
        "",
        "File ~/venv/lib/python3.12/site-packages/triton/compiler/compiler.py:483, in "
        "CompiledKernel._init_handles(self)",
        '--> 483     raise OutOfResources(self.metadata.shared, max_shared, "shared memory")',
        "",
        "OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: 65536.",
    )
    assert [(f.function, f.line) for f in event.frames] == [
        ("<module>", 13),
        ("_init_handles", 483),
    ]
    [exc] = event.exceptions
    assert exc.type == "OutOfResources" and exc.message.startswith("out of resource: shared")


def test_blank_lines_pasted_inside_a_logged_traceback_do_not_split_it() -> None:
    """Copied from a terminal that wrapped long lines, a paste has blank lines between
    a traceback's records; the records after them still belong to it."""
    h = "ERROR 06-04 11:39:38 [serving_chat.py:199] "
    [event] = _events(
        h + "Error in preprocessing prompt inputs",
        h + "Traceback (most recent call last):",
        h + '  File "/v/vllm/entrypoints/chat_utils.py", line 583, in add',
        h + "    mm_processor = mm_registry.create_processor(model_config)",
        "",
        h + '  File "/v/vllm/multimodal/registry.py", line 268, in create_processor',
        "",
        h + "ValueError: /models/x is not a multimodal model",
    )
    assert event.line_numbers == (1, 2, 3, 4, 5, 6, 7, 8)
    assert [f.function for f in event.frames] == ["add", "create_processor"]
    assert event.exception == "ValueError: /models/x is not a multimodal model"
    # A blank line after a record that is no traceback still ends it.
    first, blank = _events(h + "Error in preprocessing prompt inputs", "")
    assert (first.line_numbers, blank.line_numbers) == ((1,), (2,))


def test_a_traceback_printed_indented_inside_other_output_is_read_as_one() -> None:
    """pip prints a build subprocess's output indented: the traceback's own indentation
    is what is left after the common one."""
    events = _events(
        "      running build_ext",
        "      Traceback (most recent call last):",
        '        File "C:\\Python311\\Lib\\site-packages\\torch\\utils\\cpp_extension.py", '
        "line 407, in _check_cuda_version",
        "          torch_cuda_version = packaging.version.parse(torch.version.cuda)",
        "      TypeError: expected string or bytes-like object, got 'NoneType'",
        "      [end of output]",
        "  ERROR: Failed building wheel for vllm",
        "Successfully built quantile-python",
    )
    traceback = events[1]
    assert traceback.line_numbers == (2, 3, 4, 5)
    assert [f.function for f in traceback.frames] == ["_check_cuda_version"]
    assert traceback.exception == "TypeError: expected string or bytes-like object, got 'NoneType'"
    assert all(e.exception is None for e in events if e is not traceback)


def test_a_line_after_the_frames_that_names_no_type_is_no_exception() -> None:
    """torch.compile logs an `Original traceback:` of frames and then a hint; a paste
    can stop inside a frame's file name.  Neither line is what was raised."""
    w = "(Worker_TP2 pid=8) WARNING 07-17 15:08:02 [decorators.py:321] "
    *_, compile_warning = _events(
        w + "Compiling model again due to a load failure",
        w + "Original traceback:",
        w + '  File "/v/vllm/model_executor/layers/mla.py", line 170, in forward',
        w + "    self.indexer(hidden_states, q_c, positions)",
        w + "",
        w + "Use tlparse to see full graph. (https://github.com/pytorch/tlparse)",
    )
    assert compile_warning.frames[0].function == "forward"
    assert compile_warning.cut_off and compile_warning.exception is None
    [cut] = _events(
        "Traceback (most recent call last):",
        'File "/home/user/envs/vllm/lib/python3.10/site-packages/vllm/engine/llm_engine.py", '
        "line 471, in from_engine_args",
        "engine = cls(",
        'File "/home/user/mambaforge/envs/vllm',
    )
    assert cut.cut_off and cut.exception is None
