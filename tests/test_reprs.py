"""Tests for vlogscope.reprs: parsing the repr-like payloads of vLLM log lines."""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlogscope.reprs import (
    MAX_DEPTH,
    Call,
    EnumRepr,
    ReprError,
    parse_config_fields,
    parse_mapping,
    parse_reasons,
    parse_value,
)

NON_DEFAULT_ARGS = (
    "{'model_tag': '/shared/m', 'port': 8050, 'trust_remote_code': True, "
    "'max_model_len': 262144, 'served_model_name': ['kimi'], 'kv_cache_dtype': 'fp8_ds_mla', "
    "'speculative_config': {'method': 'eagle', 'num_speculative_tokens': 3}, 'api_key': '***'}"
)
NAMESPACE = (
    "Namespace(subparser='serve', model_tag='meta-llama/Llama-3.1-8B-Instruct', config='', "
    "host=None, port=8000, uvicorn_log_level='info', allowed_origins=['*'], api_key=None, "
    "lora_modules=[LoRAModulePath(name='sql', path='/adapters/sql', base_model_name=None)], "
    "ssl_cert_reqs=0, middleware=[], model='facebook/opt-125m', tokenizer_mode='auto', "
    "config_format=<ConfigFormat.AUTO: 'auto'>, dtype='auto', kv_cache_dtype='auto', "
    "gpu_memory_utilization=0.9, scheduler_delay_factor=0.0, ignore_patterns=[], "
    "dispatch_function=<function serve at 0x7f3c2a1b8e50>)"
)
SELECTOR_CONFIG = (
    "AttentionSelectorConfig(head_size=576, dtype=torch.bfloat16, kv_cache_dtype=fp8, "
    "block_size=None, use_mla=True, has_sink=False, use_sparse=False, use_mm_prefix=False, "
    "attn_type=AttentionType.DECODER)"
)
COMPILATION_DICT = (
    "{'level': None, 'mode': <CompilationMode.VLLM_COMPILE: 3>, 'debug_dump_path': None, "
    "'cache_dir': '', 'backend': 'inductor', 'custom_ops': ['none'], "
    "'splitting_ops': ['vllm::unified_attention', 'vllm::unified_attention_with_output'], "
    "'use_inductor': None, 'compile_sizes': [], 'inductor_compile_config': "
    "{'enable_auto_functionalized_v2': False, 'combo_kernels': True}, 'inductor_passes': {}, "
    "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, "
    "'cudagraph_capture_sizes': [512, 504, 496, 8, 4, 2, 1], 'pass_config': {}, "
    "'dynamic_shapes_config': {'type': <DynamicShapesType.BACKED: 'backed'>}, "
    "'local_cache_dir': None}"
)
CONFIG_V1_0_13 = (
    "model='/shared/kimi-k2.5-nvfp4', speculative_config=None, "
    "tokenizer='/shared/kimi-k2.5-nvfp4', skip_tokenizer_init=False, tokenizer_mode=auto, "
    "revision=None, tokenizer_revision=None, trust_remote_code=True, dtype=torch.bfloat16, "
    "max_seq_len=262144, download_dir=None, load_format=auto, tensor_parallel_size=8, "
    "pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, "
    "quantization=modelopt_fp4, enforce_eager=False, kv_cache_dtype=fp8, device_config=cuda, "
    "structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_fallback=False, "
    "disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='', "
    "reasoning_parser_plugin='', enable_in_reasoning=False), "
    "observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, "
    "otlp_traces_endpoint=None, collect_detailed_traces=None), seed=0, "
    "served_model_name=kimi-k2.5, enable_prefix_caching=True, enable_chunked_prefill=True, "
    f"pooler_config=None, compilation_config={COMPILATION_DICT}"
)
CONFIG_V0_0_7 = (
    "model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=None, "
    "tokenizer='meta-llama/Llama-3.1-8B-Instruct', skip_tokenizer_init=False, "
    "tokenizer_mode=auto, revision=None, override_neuron_config=None, "
    "tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=8192, "
    "download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=1, "
    "pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, "
    "enforce_eager=False, kv_cache_dtype=auto,  device_config=cuda, "
    "decoding_config=DecodingConfig(guided_decoding_backend='xgrammar', reasoning_backend=None), "
    "observability_config=ObservabilityConfig(otlp_traces_endpoint=None, "
    "collect_model_forward_time=False, collect_model_execute_time=False), seed=0, "
    "served_model_name=meta-llama/Llama-3.1-8B-Instruct, num_scheduler_steps=1, "
    "multi_step_stream_outputs=True, enable_prefix_caching=False, chunked_prefill_enabled=False, "
    "use_async_output_proc=True, disable_mm_preprocessor_cache=False, mm_processor_kwargs=None, "
    'pooler_config=None, compilation_config={"splitting_ops":[],"compile_sizes":[],'
    '"cudagraph_capture_sizes":[256,248,8,4,2,1],"max_capture_size":256}, '
    "use_cached_outputs=False, "
)
CONFIG_V0_0_6_3 = (
    "model='facebook/opt-125m', speculative_config=None, tokenizer='facebook/opt-125m', "
    "kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, "
    "decoding_config=DecodingConfig(guided_decoding_backend='outlines'), seed=0, "
    "served_model_name=facebook/opt-125m, use_v2_block_manager=True, num_scheduler_steps=1, "
    "chunked_prefill_enabled=False multi_step_stream_outputs=True, enable_prefix_caching=False, "
    "use_async_output_proc=True, use_cached_outputs=False, mm_processor_kwargs=None)"
)
CONFIG_V0_0_4_0 = (
    "model='facebook/opt-125m', tokenizer='facebook/opt-125m', tokenizer_mode=auto, "
    "revision=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.float16, "
    "max_seq_len=2048, download_dir=None, load_format=auto, tensor_parallel_size=1, "
    "disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
    "kv_cache_dtype=auto, device_config=cuda, seed=0)"
)
REASONS = (
    "{FLASH_ATTN_MLA: [kv_cache_dtype not supported, compute capability not supported], "
    "FLASHMLA: [compute capability not supported], TRITON_MLA: [kv_cache_dtype not supported], "
    "FLASHMLA_SPARSE: [kv_cache_dtype not supported, non-sparse not supported]}."
)


# --- parse_value / parse_mapping: the shapes vLLM prints -------------------------------------


def test_non_default_args_dict_repr_becomes_a_plain_dict() -> None:
    assert parse_value(NON_DEFAULT_ARGS) == {
        "model_tag": "/shared/m",
        "port": 8050,
        "trust_remote_code": True,
        "max_model_len": 262144,
        "served_model_name": ["kimi"],
        "kv_cache_dtype": "fp8_ds_mla",
        "speculative_config": {"method": "eagle", "num_speculative_tokens": 3},
        "api_key": "***",
    }


def test_namespace_repr_gives_its_kwargs_including_nested_calls_and_enums() -> None:
    args = parse_mapping(NAMESPACE)
    assert args["kv_cache_dtype"] == "auto"
    assert args["host"] is None and args["port"] == 8000
    assert args["allowed_origins"] == ["*"] and args["middleware"] == []
    assert args["gpu_memory_utilization"] == 0.9
    assert args["lora_modules"] == [
        Call(
            "LoRAModulePath", (), {"name": "sql", "path": "/adapters/sql", "base_model_name": None}
        )
    ]
    assert args["config_format"] == EnumRepr("ConfigFormat.AUTO", "auto")


def test_other_angle_bracket_reprs_are_kept_as_their_text() -> None:
    args = parse_mapping(NAMESPACE)
    assert args["dispatch_function"] == "<function serve at 0x7f3c2a1b8e50>"
    assert parse_value("<class 'int'>") == "<class 'int'>"


def test_dataclass_repr_keeps_unquoted_words_as_plain_strings() -> None:
    cfg = parse_value(SELECTOR_CONFIG)
    assert isinstance(cfg, Call) and cfg.name == "AttentionSelectorConfig" and cfg.args == ()
    assert cfg.kwargs["dtype"] == "torch.bfloat16"
    assert cfg.kwargs["kv_cache_dtype"] == "fp8"
    assert cfg.kwargs["attn_type"] == "AttentionType.DECODER"
    assert cfg.kwargs["head_size"] == 576 and cfg.kwargs["block_size"] is None


@pytest.mark.parametrize(
    ("text", "kwargs"),
    [
        (
            "DecodingConfig(guided_decoding_backend='xgrammar', reasoning_backend=None)",
            {"guided_decoding_backend": "xgrammar", "reasoning_backend": None},
        ),
        (
            "SpeculativeConfig(method='eagle', model='x', num_spec_tokens=3)",
            {"method": "eagle", "model": "x", "num_spec_tokens": 3},
        ),
        ("SpeculativeConfig(draft_model='[ngram]', num_spec_tokens=5)", None),
        ("ObservabilityConfig()", {}),
    ],
)
def test_config_dataclass_reprs_parse_to_calls(text: str, kwargs: dict[str, object]) -> None:
    value = parse_value(text)
    assert isinstance(value, Call)
    assert value.kwargs == (kwargs if kwargs is not None else parse_mapping(text))


def test_positional_call_arguments_such_as_posixpath_are_args() -> None:
    assert parse_value("PosixPath('/x')") == Call("PosixPath", ("/x",), {})
    assert parse_value("set()") == Call("set", (), {})


def test_enum_reprs_in_a_compilation_config_keep_name_and_value() -> None:
    value = parse_value(COMPILATION_DICT)
    assert isinstance(value, dict)
    assert value["mode"] == EnumRepr("CompilationMode.VLLM_COMPILE", 3)
    assert value["cudagraph_mode"] == EnumRepr("CUDAGraphMode.FULL_AND_PIECEWISE", (2, 1))
    assert value["dynamic_shapes_config"] == {
        "type": EnumRepr("DynamicShapesType.BACKED", "backed")
    }
    assert value["level"] is None and value["inductor_passes"] == {}


@pytest.mark.parametrize(
    "text",
    [
        '{"level":3,"custom_ops":["none"],"splitting_ops":["vllm.unified_attention"],'
        '"use_inductor":true,"cudagraph_capture_sizes":[],"backend":null}',
        '{"level": 3, "custom_ops": ["none"], "splitting_ops": ["vllm.unified_attention"], '
        '"use_inductor": true, "cudagraph_capture_sizes": [], "backend": null}',
    ],
)
def test_compilation_config_json_compact_and_spaced(text: str) -> None:
    assert parse_value(text) == json.loads(text)


def test_json_escapes_including_surrogate_pairs_are_decoded() -> None:
    assert parse_value(r'"a\/b \u00e9 \ud83d\ude00 \"q\" \\ \b\f"') == 'a/b é 😀 "q" \\ \b\f'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(1,)", (1,)),
        ("()", ()),
        ("(1, 'a', None)", (1, "a", None)),
        ("(1, 2,)", (1, 2)),
        ("((1, 2), [3])", ((1, 2), [3])),
        ("(7)", 7),  # parentheses without a comma only group
        ("[]", []),
        ("{}", {}),
        ("[[], {}, ()]", [[], {}, ()]),
        ("{1, 2}", [1, 2]),  # PyValue has no set type
        ("{'a': {'b': [1, {'c': (2,)}]}}", {"a": {"b": [1, {"c": (2,)}]}}),
        ("{1: 'a', None: 2, (1, 2): 3}", {"1": "a", "None": 2, "(1, 2)": 3}),
    ],
)
def test_containers(text: str, expected: object) -> None:
    value = parse_value(text)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-3", -3),
        ("0.9", 0.9),
        ("-2.5", -2.5),
        ("1e-05", 1e-05),
        ("1.5E+20", 1.5e20),
        (".5", 0.5),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ("Infinity", math.inf),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("True", True),
        ("false", False),
        ("null", None),
    ],
)
def test_numbers_and_constants(text: str, expected: object) -> None:
    value = parse_value(text)
    assert value == expected and type(value) is type(expected)


def test_nan_parses_as_a_float_nan() -> None:
    for text in ("nan", "NaN"):
        value = parse_value(text)
        assert isinstance(value, float) and math.isnan(value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"'it\'s'", "it's"),
        ('"it\'s"', "it's"),
        ("'say \"hi\"'", 'say "hi"'),
        (r'"say \"hi\""', 'say "hi"'),
        (r"'tab\there\nnewline \\ backslash'", "tab\there\nnewline \\ backslash"),
        (r"'\x00\u200b\U0001f600'", "\x00\u200b\U0001f600"),
        (r"'C:\dir'", "C:\\dir"),  # an unknown escape keeps its backslash, as in Python
        ("'a, b: [c]'", "a, b: [c]"),
        ("''", ""),
    ],
)
def test_strings_with_escapes_and_both_quote_styles(text: str, expected: str) -> None:
    assert parse_value(text) == expected


def test_bare_words_and_dotted_names_are_strings() -> None:
    assert parse_value("fp8") == "fp8"
    assert parse_value("torch.bfloat16") == "torch.bfloat16"
    assert parse_value("[auto, LoadFormat.AUTO]") == ["auto", "LoadFormat.AUTO"]


def test_parse_mapping_rejects_values_that_are_not_mappings() -> None:
    with pytest.raises(ReprError):
        parse_mapping("['kimi']")


# --- failures -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[1, 2",
        "[1, 2]]",
        "{'a': 1",
        "{'a': 1,",
        "(1, 2",
        "Foo(a=1",
        "<CompilationMode.VLLM_COMPILE: 3",
        "'abc",
        '"abc',
        "{'a': 1 'b': 2}",
        "{'a': 1, 'b'}",
        "[kv_cache_dtype not supported]",
        "meta-llama/Llama-3.1-8B",
        "0.6.4",
        "8B",
        "1" * 5000,  # int() refuses this many digits
    ],
)
def test_invalid_values_raise_repr_error(text: str) -> None:
    with pytest.raises(ReprError):
        parse_value(text)


def test_repr_error_is_a_value_error_with_the_failing_column() -> None:
    with pytest.raises(ValueError, match="column 4") as info:
        parse_value("[1 2]")
    assert isinstance(info.value, ReprError) and info.value.column == 4


def test_code_is_never_evaluated() -> None:
    with pytest.raises(ReprError):
        parse_value("__import__('os').system('false')")


# --- nesting depth ----------------------------------------------------------------------------


@pytest.mark.parametrize(("opener", "closer"), [("[", "]"), ("{'k': ", "}"), ("F(x=", ")")])
def test_twenty_thousand_nested_brackets_raise_repr_error_not_recursion_error(
    opener: str, closer: str
) -> None:
    text = opener * 20_000 + "1" + closer * 20_000
    with pytest.raises(ReprError, match="nesting deeper than 64") as info:
        parse_value(text)
    bracket = text[info.value.column - 1]  # the column points at the 65th opening bracket
    assert bracket in "([{" and text[: info.value.column].count(bracket) == MAX_DEPTH + 1


def test_deeply_nested_enums_are_capped_too() -> None:
    with pytest.raises(ReprError):
        parse_value("<E.A: " * 20_000 + "1" + ">" * 20_000)


def test_unclosed_deep_nesting_is_capped_too() -> None:
    with pytest.raises(ReprError):
        parse_value("[" * 20_000)


def test_max_depth_nesting_parses_with_a_third_of_the_stack_already_used() -> None:
    # In a fresh interpreter: other tests import matplotlib, which turns on
    # pyparsing's packrat cache for the whole process.
    code = """
import inspect, sys
from vlogscope.reprs import MAX_DEPTH, parse_value
text = "[{'k': (F(x=" * (MAX_DEPTH // 4) + "1" + "),)}]" * (MAX_DEPTH // 4)
sys.setrecursionlimit(len(inspect.stack(0)) + 650)  # leaves 350 of the default 1000
assert isinstance(parse_value(text), list)
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_stack_exhaustion_is_a_repr_error_never_a_crash() -> None:
    text = "[{'k': (F(x=" * (MAX_DEPTH // 4) + "1" + "),)}]" * (MAX_DEPTH // 4)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 60)
    try:
        with pytest.raises(ReprError, match="too deeply"):
            parse_value(text)
    finally:
        sys.setrecursionlimit(limit)


def test_closing_brackets_hidden_in_angle_text_cannot_defeat_the_depth_cap() -> None:
    # If "<x]]]>" were text, the depth scan would see the "]"s close levels the parser keeps.
    with pytest.raises(ReprError):
        parse_value(("[" * 30 + "<x" + "]" * 40 + ">, ") * 700)


def test_brackets_inside_strings_do_not_count_towards_depth() -> None:
    text = "['" + "[" * 1000 + "', \"" + "{" * 1000 + '"]'
    assert parse_value(text) == ["[" * 1000, "{" * 1000]


# --- parse_reasons ----------------------------------------------------------------------------


def test_reasons_dict_with_bare_backend_names_and_free_text_reasons() -> None:
    assert parse_reasons(REASONS) == {
        "FLASH_ATTN_MLA": ["kv_cache_dtype not supported", "compute capability not supported"],
        "FLASHMLA": ["compute capability not supported"],
        "TRITON_MLA": ["kv_cache_dtype not supported"],
        "FLASHMLA_SPARSE": ["kv_cache_dtype not supported", "non-sparse not supported"],
    }


def test_reasons_from_0_34_with_several_reasons_per_backend() -> None:
    text = (
        "{FLASH_ATTN: [kv_cache_dtype not supported], TURBOQUANT: [kv_cache_dtype not supported, "
        "non-causal attention not supported], TREE_ATTN: []}"
    )
    assert parse_reasons(text)["TURBOQUANT"][1] == "non-causal attention not supported"
    assert parse_reasons(text)["TREE_ATTN"] == []


def test_single_backend_reason_list_unquoted_import_error_form() -> None:
    assert parse_reasons("[ImportError: No module named 'x']", backend="FLASHMLA") == {
        "FLASHMLA": ["ImportError: No module named 'x'"]
    }


def test_single_backend_reason_list_quoted_repr_form() -> None:
    assert parse_reasons("['kv_cache_dtype not supported', 'block_size not supported']") == {
        "": ["kv_cache_dtype not supported", "block_size not supported"]
    }


@pytest.mark.parametrize(
    "text", ["{FLASH_ATTN: [x", "{FLASH_ATTN: x}", "FLASH_ATTN: [x]", "", "[a]]"]
)
def test_malformed_reasons_raise_repr_error(text: str) -> None:
    with pytest.raises(ReprError):
        parse_reasons(text)


# --- parse_config_fields ------------------------------------------------------------------


def test_config_line_from_0_13_mixes_reprs_and_free_text() -> None:
    fields = parse_config_fields(CONFIG_V1_0_13)
    assert fields["model"] == "/shared/kimi-k2.5-nvfp4"
    assert fields["kv_cache_dtype"] == "fp8"
    assert fields["quantization"] == "modelopt_fp4"
    assert fields["dtype"] == "torch.bfloat16"
    assert fields["served_model_name"] == "kimi-k2.5"
    assert fields["max_seq_len"] == 262144 and fields["seed"] == 0
    assert fields["speculative_config"] is None and fields["enable_prefix_caching"] is True
    structured = fields["structured_outputs_config"]
    assert isinstance(structured, Call) and structured.kwargs["backend"] == "auto"
    compilation = fields["compilation_config"]
    assert isinstance(compilation, dict)
    assert compilation["mode"] == EnumRepr("CompilationMode.VLLM_COMPILE", 3)
    assert list(fields)[-1] == "compilation_config" and len(fields) == 28


def test_config_line_from_0_7_v0_with_double_space_json_and_trailing_comma() -> None:
    fields = parse_config_fields(CONFIG_V0_0_7)
    assert fields["kv_cache_dtype"] == "auto" and fields["device_config"] == "cuda"
    assert fields["load_format"] == "LoadFormat.AUTO"
    assert fields["served_model_name"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert fields["compilation_config"] == {
        "splitting_ops": [],
        "compile_sizes": [],
        "cudagraph_capture_sizes": [256, 248, 8, 4, 2, 1],
        "max_capture_size": 256,
    }
    assert fields["use_cached_outputs"] is False


def test_config_line_from_0_6_3_with_a_missing_comma() -> None:
    fields = parse_config_fields(CONFIG_V0_0_6_3)
    assert fields["chunked_prefill_enabled"] is False
    assert fields["multi_step_stream_outputs"] is True
    assert fields["mm_processor_kwargs"] is None  # the closing ")" is not part of the value
    assert fields["served_model_name"] == "facebook/opt-125m"


def test_config_line_from_0_4_0_ends_with_an_unmatched_parenthesis() -> None:
    fields = parse_config_fields(CONFIG_V0_0_4_0)
    assert fields["seed"] == 0 and fields["dtype"] == "torch.float16"
    assert len(fields) == 17 and list(fields)[-1] == "seed"


def test_free_text_values_may_hold_commas_and_apostrophes() -> None:
    fields = parse_config_fields(
        "served_model_name=my model, v2, tokenizer_mode=auto, revision=Bob's-branch, seed=0"
    )
    assert fields == {
        "served_model_name": "my model, v2",
        "tokenizer_mode": "auto",
        "revision": "Bob's-branch",
        "seed": 0,
    }


def test_separators_inside_strings_and_brackets_do_not_split() -> None:
    fields = parse_config_fields(
        "model='a, seed=1', decoding_config=DecodingConfig(x='y', z=1), "
        'compilation_config={"a": "b, c=d"}, seed=0'
    )
    assert fields["model"] == "a, seed=1"
    assert fields["decoding_config"] == Call("DecodingConfig", (), {"x": "y", "z": 1})
    assert fields["compilation_config"] == {"a": "b, c=d"}
    assert fields["seed"] == 0


def test_unbalanced_values_are_kept_as_text_and_later_fields_still_parse() -> None:
    fields = parse_config_fields(
        "a=1, b={'x': [1, 2}, served_model_name=foo(bar, c=Foo(x=1, y=2), d=[1, 2], e=z"
    )
    assert fields == {
        "a": 1,
        "b": "{'x': [1, 2}",
        "served_model_name": "foo(bar",
        "c": Call("Foo", (), {"x": 1, "y": 2}),
        "d": [1, 2],
        "e": "z",
    }


def test_an_unterminated_quote_keeps_its_text_and_later_fields_still_parse() -> None:
    assert parse_config_fields("model='abc, seed=0, enforce_eager=True") == {
        "model": "'abc",
        "seed": 0,
        "enforce_eager": True,
    }


def test_truncated_config_line_keeps_the_fields_before_the_cut() -> None:
    fields = parse_config_fields(CONFIG_V1_0_13[:-200])
    assert fields["kv_cache_dtype"] == "fp8"
    assert isinstance(fields["compilation_config"], str)


def test_deep_nesting_in_a_config_value_is_kept_as_text() -> None:
    fields = parse_config_fields("seed=0, x=" + "[" * 20_000 + "]" * 20_000 + ", y=1")
    assert fields["seed"] == 0 and fields["y"] == 1
    assert fields["x"] == "[" * 20_000 + "]" * 20_000


@pytest.mark.parametrize("body", ["", "   ", "garbage", ", , ,", "=1", ")", "'"])
def test_config_body_without_fields_gives_an_empty_dict(body: str) -> None:
    assert parse_config_fields(body) == {}


def test_a_100_kb_config_line_parses_well_under_a_second() -> None:
    quantization_config = {
        f"model.layers.{i}.mlp.experts.{j}": {"group_size": 16, "scale": 1.5e-3, "ignore": None}
        for i in range(61)
        for j in range(20)
    }
    body = CONFIG_V1_0_13.replace(
        "quantization=modelopt_fp4,",
        f"quantization=modelopt_fp4, quantization_config={quantization_config!r},",
    )
    assert len(body) > 100_000
    start = time.perf_counter()
    fields = parse_config_fields(body)
    elapsed = time.perf_counter() - start
    assert fields["quantization_config"] == quantization_config
    assert elapsed < 1.0


# --- properties -------------------------------------------------------------------------------

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_LITERALS = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(deadline=None)
@given(_LITERALS)
def test_parse_value_inverts_repr_of_python_literals(value: object) -> None:
    # Comparing reprs checks types too (1 vs 1.0 vs True, tuple vs list) and handles nan.
    assert repr(parse_value(repr(value))) == repr(value)


@settings(deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_parse_value_reads_json_dumps_output(value: object) -> None:
    text = json.dumps(value)
    assert parse_value(text) == json.loads(text)


_SYNTAX = st.text(alphabet="'\"\\()[]{}<>,=: .-_ab1xk\n", max_size=60)


@settings(deadline=None)
@given(st.one_of(st.text(max_size=60), _SYNTAX))
def test_parsers_raise_nothing_but_repr_error_and_config_fields_never_raise(text: str) -> None:
    parse_config_fields(text)
    parse_config_fields("a=1, b=" + text + ", c=2")
    for parse in (parse_value, parse_reasons):
        with contextlib.suppress(ReprError):
            parse(text)
