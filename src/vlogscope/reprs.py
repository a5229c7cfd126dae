"""Read back the Python-repr-like payloads (dict, Namespace, dataclass and enum reprs, JSON,
key=value config lines) that vLLM writes into its logs, without evaluating any code.

The grammar is pyparsing, built once at import with packrat parsing off. Its recursion is
bounded by ``MAX_DEPTH``, which a linear scan checks before parsing.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass
from typing import Any, TypeAlias

import pyparsing as pp

#: Deepest bracket nesting parsed. A level costs the parser 9 Python frames (4 for enums), so
#: this stays far below the default recursion limit of 1000 even when called from deep code.
MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Call:
    """A constructor-style repr: ``Namespace(port=8000)``, ``PosixPath('/x')``, dataclasses."""

    name: str
    args: tuple[PyValue, ...]
    kwargs: dict[str, PyValue]


@dataclass(frozen=True, slots=True)
class EnumRepr:
    """An enum member repr such as ``<CompilationMode.VLLM_COMPILE: 3>``."""

    name: str
    value: PyValue


_Leaf: TypeAlias = str | int | float | bool | Call | EnumRepr | None
PyValue: TypeAlias = _Leaf | list["PyValue"] | tuple["PyValue", ...] | dict[str, "PyValue"]


class ReprError(ValueError):
    """The text is not a value this module understands; ``column`` (1-based) says where."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(f"{message} (column {column})")
        self.column = column


# Quoted strings, Python-repr and JSON style. _check_depth treats quotes exactly this way, so
# its idea of "inside a string" never disagrees with the grammar's.
_STRING = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\""""
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)
# What Python's repr and json.dumps write; other escapes keep their backslash, as in Python.
_SIMPLE_ESCAPES = dict(zip("ntrbf\\'\"/", "\n\t\r\b\f\\'\"/", strict=True))
_CONSTANTS: dict[str, PyValue] = {
    "True": True, "true": True, "False": False, "false": False, "None": None, "null": None,
    "inf": math.inf, "-inf": -math.inf, "Infinity": math.inf, "-Infinity": -math.inf,
    "nan": math.nan, "NaN": math.nan,
}  # fmt: skip


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] in "xuU" and len(code) > 1:
        point = int(code[1:], 16)
        return chr(point) if point <= 0x10FFFF else match.group(0)
    return _SIMPLE_ESCAPES.get(code, match.group(0))


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    text = _ESCAPE.sub(_unescape_one, body)
    # json.dumps writes astral characters as surrogate pairs ("\ud83d\ude00"); join them.
    try:
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:  # a lone surrogate, kept as written
        return text


def _scalar(text: str, loc: int, toks: pp.ParseResults) -> list[PyValue]:
    token: str = toks[0]
    if token[0] in "'\"":
        return [_unescape(token[1:-1])]
    if token in _CONSTANTS:
        return [_CONSTANTS[token]]
    if token[0].isalpha() or token[0] == "_":
        return [token]  # bare word: torch.bfloat16, fp8, AttentionType.DECODER
    try:
        return [float(token) if any(c in token for c in ".eE") else int(token)]
    except ValueError:  # int() refuses more than 4300 digits
        raise pp.ParseException(text, loc, "number out of range") from None


class _Punct(str):
    """A separator kept in the token stream; its type tells it apart from parsed strings."""


class _Keyword(str):
    """The name in a ``name=value`` argument of a :class:`Call`."""


def _brace(text: str, loc: int, toks: pp.ParseResults) -> list[PyValue]:
    values = [t for t in toks if type(t) is not _Punct]
    seps = "".join(t for t in toks if type(t) is _Punct)
    if ":" not in seps:  # "{}" is a dict; a set becomes a list, as PyValue has no set type
        return [values if values else {}]
    if len(values) % 2 == 0 and set(seps[::2]) == {":"} and set(seps[1::2]) <= {","}:
        return [{str(k): v for k, v in zip(values[::2], values[1::2], strict=True)}]
    # Fatal: no other alternative can parse a complete "{...}" either.
    raise pp.ParseFatalException(text, loc, "expected set items or 'key: value' pairs")


def _paren(toks: pp.ParseResults) -> list[PyValue]:
    values = [t for t in toks if type(t) is not _Punct]
    if len(toks) == 1:  # "(x)" only groups; a 1-tuple is always written "(x,)"
        return [values[0]]
    return [tuple(values)]


def _call(toks: pp.ParseResults) -> list[PyValue]:
    name, *rest = toks
    args: list[PyValue] = []
    kwargs: dict[str, PyValue] = {}
    key = None
    for token in rest:
        if type(token) is _Keyword:
            key = str(token)
        elif key is None:
            args.append(token)
        else:
            kwargs[key], key = token, None
    return [Call(name, tuple(args), kwargs)]


def _container(open_: str, item: pp.ParserElement, close: str, keep: str = "") -> pp.ParserElement:
    # A flat ZeroOrMore of "item separator", not Optional/DelimitedList/Group wrappers that
    # each cost 2-3 Python frames per nesting level. The separator is one regex (hot path).
    # "-" stops backtracking once the bracket is open (no other rule could match from there),
    # so errors point at the bad spot rather than at the outermost bracket.
    after = pp.Regex(rf"[,{keep}]|(?=\{close})").set_name(f"',' or {close!r}")
    if keep:  # the parse action needs these separators, as _Punct tokens
        after.set_parse_action(lambda toks: [_Punct(toks[0])] if toks[0] else [])
    else:
        after = pp.Suppress(after)
    return pp.Suppress(open_) - pp.ZeroOrMore(item - after) + pp.Suppress(close)


_NAME = r"[A-Za-z_][\w.]*"
# Not a Forward: a MatchFirst filled in below saves the three frames per nesting level that a
# Forward adds (12 -> 9 frames per level, so MAX_DEPTH needs under 600 of the default 1000).
_VALUE = pp.MatchFirst([])
_VALUE.set_name("a value")  # now: a default name for a self-containing rule never ends
# One regex for every scalar keeps the common case to a single match attempt.
_SCALAR = pp.Regex(
    rf"""{_STRING}
    | -?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])
    | (?:True|False|None|true|false|null|-?inf|nan|-?Infinity|NaN)(?![\w.])
    | {_NAME}(?![\w.]|\s*\()""",
    flags=re.X | re.S,
).set_parse_action(_scalar)
_LIST = _container("[", _VALUE, "]").set_parse_action(lambda toks: [list(toks)])
# Dicts and sets share one rule so that "{" is never parsed twice (that would be exponential).
_BRACE = _container("{", _VALUE, "}", keep=",:").set_parse_action(_brace)
_PAREN = _container("(", _VALUE, ")", keep=",").set_parse_action(_paren)
_KEYWORD = pp.Regex(r"[A-Za-z_]\w*\s*=(?!=)").set_parse_action(
    lambda toks: _Keyword(toks[0][:-1].rstrip())
)
_CALL = (
    pp.Regex(rf"{_NAME}(?=\s*\()") + _container("(", pp.Optional(_KEYWORD) + _VALUE, ")")
).set_parse_action(_call)
_ENUM = (
    pp.Suppress("<") + pp.Regex(_NAME) + pp.Suppress(":") + _VALUE + pp.Suppress(">")
).set_parse_action(lambda toks: [EnumRepr(toks[0], toks[1])])
# Other angle reprs (<function serve at 0x7f...>, <class 'int'>) are kept as text. Brackets
# are not allowed in that text: _check_depth would count them but the grammar would not.
_ANGLE = pp.Regex(rf"""<(?:[^<>'"\\()[\]{{}}]|{_STRING})*>""", flags=re.S)
for _alternative in (_SCALAR, _LIST, _BRACE, _PAREN, _CALL, _ENUM, _ANGLE):
    _VALUE.append(_alternative)

_QUOTED = pp.Regex(_STRING, flags=re.S).set_parse_action(lambda toks: _unescape(toks[0][1:-1]))
# Reasons are free text up to the next "," or "]", unless the whole reason is quoted.
_REASON = (_QUOTED + pp.FollowedBy(pp.Char(",]"))) | pp.Regex(r"[^,\]]+").set_parse_action(
    lambda toks: toks[0].strip()
)
_REASON_LIST = _container("[", _REASON, "]").set_parse_action(lambda toks: [list(toks)])
_REASON_DICT = _container(
    "{", pp.Group((_QUOTED | pp.Regex(_NAME)) + pp.Suppress(":") + _REASON_LIST), "}"
).set_parse_action(lambda toks: [{item[0]: item[1] for item in toks}])
# The "Reasons: {...}." message ends with a full stop that callers may leave attached.
_REASONS = (_REASON_DICT | _REASON_LIST) + pp.Optional(pp.Suppress("."))

_DEPTH_TOKEN = re.compile(r"""\\.|['"]|[][(){}<>]""", re.S)
_FIELD_TOKEN = re.compile(
    r"""\\.|['"]|[][(){}]|,\s*(?=[a-z_][a-z0-9_]*=)|(?<![\s,])\s+(?=[a-z_][a-z0-9_]*=)""", re.S
)
_FIELD_KEY = re.compile(r"([a-z_][a-z0-9_]*)=\s*")


def _check_depth(text: str) -> None:
    depth, quote = 0, ""
    for match in _DEPTH_TOKEN.finditer(text):
        token = match.group()
        if quote:
            quote = "" if token == quote else quote
        elif token in ("'", '"'):
            quote = token
        elif token in ("(", "[", "{", "<"):
            depth += 1
            if depth > MAX_DEPTH:
                raise ReprError(f"nesting deeper than {MAX_DEPTH}", pp.col(match.start(), text))
        elif token in (")", "]", "}", ">"):
            depth = max(depth - 1, 0)


def _parse(expr: pp.ParserElement, text: str) -> Any:
    try:
        return expr.parse_string(text, parse_all=True)[0]
    except pp.ParseBaseException as exc:
        raise ReprError(f"{exc.msg}, found {exc.found or 'end of text'}", exc.column) from None
    except RecursionError:
        # Another library (matplotlib does) may switch on pyparsing's packrat cache
        # globally, which costs more stack per level than the depth cap assumes.
        raise ReprError("nested too deeply for the available stack", 1) from None


def parse_value(text: str) -> PyValue:
    """Parse one complete repr/JSON value, so log payloads can be read without ``eval``.

    Unquoted words (``torch.bfloat16``, ``fp8``) come back as ``str``, ``Name(...)`` as
    :class:`Call`, ``<Enum.NAME: value>`` as :class:`EnumRepr`, sets as lists, and other
    ``<...>`` reprs as their text. Raises :class:`ReprError` on anything else.

    Examples:
        >>> parse_value("{'model_tag': '/shared/m', 'port': 8050, 'served_model_name': ['kimi']}")
        {'model_tag': '/shared/m', 'port': 8050, 'served_model_name': ['kimi']}
        >>> parse_value("{'mode': <CompilationMode.VLLM_COMPILE: 3>, 'level': None}")
        {'mode': EnumRepr(name='CompilationMode.VLLM_COMPILE', value=3), 'level': None}
        >>> parse_value('{"level":3,"custom_ops":["none"],"use_inductor":true}')
        {'level': 3, 'custom_ops': ['none'], 'use_inductor': True}
        >>> parse_value("SpeculativeConfig(method='eagle', num_spec_tokens=3)")
        Call(name='SpeculativeConfig', args=(), kwargs={'method': 'eagle', 'num_spec_tokens': 3})
        >>> parse_value("[kv_cache_dtype not supported]")
        Traceback (most recent call last):
        ...
        vlogscope.reprs.ReprError: Expected ',' or ']', found 'not' (column 17)
    """
    _check_depth(text)
    value: PyValue = _parse(_VALUE, text)
    return value


def parse_mapping(text: str) -> dict[str, PyValue]:
    """Parse a dict repr or a ``Name(k=v, ...)`` repr into a dict, for key lookups.

    This is the shape of ``non-default args: {...}``, ``args: Namespace(...)`` and the
    ``AttentionSelectorConfig(...)`` in attention-backend errors. Raises :class:`ReprError`.

    Examples:
        >>> parse_mapping("Namespace(host=None, port=8000, model='facebook/opt-125m')")
        {'host': None, 'port': 8000, 'model': 'facebook/opt-125m'}
        >>> cfg = parse_mapping("AttentionSelectorConfig(head_size=576, dtype=torch.bfloat16, "
        ...                     "kv_cache_dtype=fp8, block_size=None, use_mla=True)")
        >>> cfg["kv_cache_dtype"], cfg["dtype"], cfg["block_size"]
        ('fp8', 'torch.bfloat16', None)
        >>> parse_mapping("{'kv_cache_dtype': 'fp8_ds_mla', 'api_key': '***'}")
        {'kv_cache_dtype': 'fp8_ds_mla', 'api_key': '***'}
    """
    value = parse_value(text)
    if isinstance(value, dict):
        return value
    if isinstance(value, Call):
        return value.kwargs
    raise ReprError(f"expected a dict or Name(...), got {type(value).__name__}", 1)


def parse_reasons(text: str, *, backend: str = "") -> dict[str, list[str]]:
    """Parse the attention selector's per-backend rejection reasons, which are not valid reprs.

    ``No valid attention backend found ... Reasons: {BACKEND: [reason, ...], ...}.`` prints
    names and reasons unquoted. ``Selected backend X is not valid ... Reason: [...]`` prints one
    list, quoted or not, returned under ``backend``. Raises :class:`ReprError`.

    Examples:
        >>> reasons = parse_reasons("{FLASH_ATTN_MLA: [kv_cache_dtype not supported, compute "
        ...     "capability not supported], TRITON_MLA: [kv_cache_dtype not supported]}.")
        >>> reasons["FLASH_ATTN_MLA"]
        ['kv_cache_dtype not supported', 'compute capability not supported']
        >>> reasons["TRITON_MLA"]
        ['kv_cache_dtype not supported']
        >>> parse_reasons("['kv_cache_dtype not supported']", backend="TRITON_MLA")
        {'TRITON_MLA': ['kv_cache_dtype not supported']}
        >>> parse_reasons("[ImportError: No module named 'x']")
        {'': ["ImportError: No module named 'x'"]}
    """
    value = _parse(_REASONS, text)
    reasons: dict[str, list[str]] = {backend: value} if isinstance(value, list) else value
    return reasons


def _split_fields(body: str) -> list[tuple[str, str]]:
    # V0 lines end with ", use_cached_outputs=False, ".
    text = body.strip().rstrip(", \t")
    first = _FIELD_KEY.match(text)
    if first is None:
        return []
    value_start, opened, quote, quote_at, stray_close = first.end(), list[int](), "", 0, -1
    separators: list[tuple[int, int, bool, re.Match[str]]] = []  # where, depth, quoted, next key
    for match in _FIELD_TOKEN.finditer(text, value_start):
        token, start = match.group(), match.start()
        if start < value_start or (len(token) == 2 and token[0] == "\\"):
            continue
        if token[0] == "," or token[0].isspace():  # ", key=" (0.6.3-0.6.4 drop one comma)
            next_key = _FIELD_KEY.match(text, match.end())
            assert next_key is not None  # the separator's lookahead guarantees it
            separators.append((start, len(opened), bool(quote), next_key))
            value_start = value_start if opened or quote else next_key.end()
        elif quote:
            quote = "" if token == quote else quote
        elif token in ("'", '"'):
            # At depth 0 only a value's first character opens a string: free text such as
            # served_model_name=Bob's-model may hold a lone apostrophe.
            quote, quote_at = (token, start) if opened or start == value_start else ("", 0)
        elif token in ("(", "[", "{"):
            opened.append(start)
        elif opened:
            opened.pop()
        else:
            stray_close = start
    # Brackets never closed and a quote never closed (free text, a truncated line) count as
    # text, so that the fields after them are still found.
    unclosed_quote = quote_at if quote else len(text)
    fields, key, value_start = [], first.group(1), first.end()
    for start, depth, quoted, next_key in separators:
        if depth == bisect.bisect(opened, start) and (not quoted or start > unclosed_quote):
            fields.append((key, text[value_start:start]))
            key, value_start = next_key.group(1), next_key.end()
    # 0.4.x ends "..., seed=0)" with a ")" that was never opened.
    end = len(text) - 1 if stray_close == len(text) - 1 else len(text)
    fields.append((key, text[value_start:end]))
    return fields


def parse_config_fields(body: str) -> dict[str, PyValue]:
    """Parse the body of ``Initializing a V1 LLM engine (v...) with config: <body>``.

    The line is ``key=value`` pairs, where values are reprs or unquoted free text that can hold
    commas. It splits at ``, key=`` outside brackets and quotes, parses each value, and keeps
    the stripped text of any value that is not a valid repr. It never raises.

    Examples:
        >>> body = ("model='/shared/kimi-k2.5-nvfp4', speculative_config=None, "
        ...         "dtype=torch.bfloat16, max_seq_len=262144, kv_cache_dtype=fp8, "
        ...         "served_model_name=meta-llama/Llama-3.1-8B, "
        ...         "decoding_config=DecodingConfig(guided_decoding_backend='xgrammar'), "
        ...         "compilation_config={'level': None, 'mode': <CompilationMode.VLLM_COMPILE: 3>}")
        >>> fields = parse_config_fields(body)
        >>> fields["model"], fields["kv_cache_dtype"], fields["served_model_name"]
        ('/shared/kimi-k2.5-nvfp4', 'fp8', 'meta-llama/Llama-3.1-8B')
        >>> fields["decoding_config"].kwargs, fields["compilation_config"]["mode"].value
        ({'guided_decoding_backend': 'xgrammar'}, 3)
        >>> parse_config_fields("seed=0, use_cached_outputs=False, ")
        {'seed': 0, 'use_cached_outputs': False}
    """
    fields: dict[str, PyValue] = {}
    for key, raw in _split_fields(body):
        try:
            fields[key] = parse_value(raw)
        except ReprError:
            fields[key] = raw.strip()
    return fields
