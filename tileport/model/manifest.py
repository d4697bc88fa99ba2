"""Operator manifests (``operators/<op>/manifest.yaml``): schema, loading, variants.

A *variant* is one dtype x one constexpr configuration of one kernel, e.g. ``f16-TILE1024`` or
``bf16-BM128-BN128-BK64``; its id is stable and readable (dtype first, then the constexprs in
the order the manifest lists them). Which variants a kernel has:

* ``kernels.<k>.variants`` -- explicit ``{dtypes: [...], constexprs: {...}}`` pairs, else
* ``kernels.<k>.configs`` -- crossed with the operator's ``dtypes``, else
* the operator's ``variants`` (explicit pairs), else
* the operator's ``configs`` crossed with its ``dtypes`` (``[{}]`` when there are none).

Data types are named by the codes of :data:`DTYPES` (``f16``, ``bf16``, ``f32``, ``i32``, ...);
an array or tensor without a ``dtype`` takes its variant's. Every error names the file, the
line and the key, says in words what is wrong and what to write instead. The schema, and next to
each key the help those words come from, is ``schemas/manifest.schema.yaml`` (:func:`read_schema`).
"""
from __future__ import annotations

import difflib
import functools
import math
import re
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from tileport.core import schema as tp_schema
from tileport.core import yamlio
from tileport.core.wheels import checkout_pin
from tileport.model import defects, flashinfer
from tileport.model.constructs import RESERVED_KERNEL_NAMES

if TYPE_CHECKING:
    import jsonschema

#: dtype code -> (cuda.tile attribute, torch attribute, family). Codes are tileport's; the
#: attribute names are cuda-tile 1.7.0's ``ct.<name>`` and PyTorch's ``torch.<name>`` (the
#: spelling FlashInfer-Bench definitions use as well).
DTYPES: dict[str, tuple[str, str, str]] = {
    "f16": ("float16", "float16", "float"),
    "bf16": ("bfloat16", "bfloat16", "float"),
    "f32": ("float32", "float32", "float"),
    "f64": ("float64", "float64", "float"),
    "f8e4m3fn": ("float8_e4m3fn", "float8_e4m3fn", "float8"),
    "f8e5m2": ("float8_e5m2", "float8_e5m2", "float8"),
    # the block-scale format: an 8-bit exponent, no sign, no mantissa (a power of two, or NaN)
    "f8e8m0fnu": ("float8_e8m0fnu", "float8_e8m0fnu", "scale"),
    "i8": ("int8", "int8", "int"),
    "i16": ("int16", "int16", "int"),
    "i32": ("int32", "int32", "int"),
    "i64": ("int64", "int64", "int"),
    "u8": ("uint8", "uint8", "uint"),
    "u16": ("uint16", "uint16", "uint"),
    "u32": ("uint32", "uint32", "uint"),
    "u64": ("uint64", "uint64", "uint"),
    "bool": ("bool_", "bool", "bool"),
}
#: runtime scalar types: what ``ct.launch`` makes of a Python value (cuda-tile 1.7.0,
#: ``cuda/tile/_stub.py``: an int is int32 unless annotated ``ct.ScalarInt64``; a float is float32)
SCALAR_TYPES = ("i32", "i64", "f32")
#: other spellings of the codes (torch / numpy / FlashInfer-Bench names): only used to say what
#: to write instead, never accepted silently
_DTYPE_SPELLINGS = {"half": "f16", "float": "f32", "double": "f64", "long": "i64", "int": "i32",
                    "fp16": "f16", "fp32": "f32", "fp64": "f64", "fp8": "f8e4m3fn",
                    "fp8_e4m3": "f8e4m3fn", "float8_e4m3": "f8e4m3fn", "e4m3": "f8e4m3fn",
                    "fp8_e5m2": "f8e5m2", "e5m2": "f8e5m2", "bool_": "bool",
                    **{torch: code for code, (_, torch, _) in DTYPES.items()},
                    **{cute: code for code, (cute, _, _) in DTYPES.items()}}
#: input generators of ``tensors.<name>.init`` (see :func:`init_spec`)
INITS = ("randn", "uniform", "randint", "range", "sorted", "offsets", "permutation", "full", "derive",
         "copy")

# cuTile's compiler hints (``@ct.kernel(...)`` arguments that launch code changes with
# ``kernel.replace_hints(...)``; ranges from cuda-tile 1.7.0 ``ct.kernel``'s docstring)
HINT_KEYS = ("num_ctas", "occupancy", "num_worker_warps", "opt_level")
#: the manifest's JSON schema with the help of its error messages next to each key (``x-what``: what the key
#: is, ``x-write``: what to write); read at import by :func:`read_schema`
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "manifest.schema.yaml"


class ManifestError(ValueError):
    """A manifest cannot be read or breaks the schema; the message names file, line and cause.
    ``owner``: who must act (``manifest``; ``tool`` for :class:`ToolLimitError`)."""

    owner = "manifest"


class ToolLimitError(ManifestError):
    """A valid manifest of a valid kernel that tileport cannot carry through its later stages
    (a non-ASCII kernel name): owner ``tool``."""

    owner = "tool"


# ---- errors in words ----------------------------------------------------------------------
_TYPE_WORDS = {"string": "a text", "integer": "an integer", "number": "a number", "boolean": "true or false",
               "object": "a mapping (key: value)", "array": "a list [...]", "null": "empty"}


def _general(path: list) -> tuple:
    """A key path with names and indices generalised ('*', '#'), matching :data:`_KEYS`; the
    subtrees a kernel may override (``tensors``, ``configs``, ``variants``) share the
    operator-level descriptions."""
    named = ("kernels", "arrays", "scalars", "bind", "tensors", "tolerance", "constexprs")
    out: list = []
    for p in path:
        prev = out[-1] if out else None
        if isinstance(p, int):
            out.append("#")
        elif prev in named or (prev == "#" and out[-2:-1] == ["configs"]):
            out.append("*")
        else:
            out.append(p)
    t = tuple(out)
    if len(t) >= 2 and t[-2] == "compiler_hints":
        return ("kernels", "*", "compiler_hints", t[-1])
    if t[:3] in (("kernels", "*", "tensors"), ("kernels", "*", "configs"), ("kernels", "*", "variants")) \
            and len(t) > 3:
        return t[2:]
    return t


_HELP = ("x-what", "x-write")
_ANY_NAME = "\0"       # a name in a key path while the help is collected (the schema's '*')


def read_schema(path: str | Path = SCHEMA_FILE) -> tuple[dict[str, Any], dict[tuple, tuple[str, str]]]:
    """The manifest schema file at ``path`` as ``(JSON schema, help)``: the schema less its ``x-what`` /
    ``x-write`` keywords, and the generalised key path of each key (:func:`_general`) -> (what it is, what to
    write).

    Raises:
        OSError: the file cannot be read.
        tileport.core.yamlio.DuplicateKeyError: the file repeats a key (``<path>:<line>: duplicate key ...``).
        yaml.YAMLError: another YAML error.
        ValueError: ``<path>: ...``: a key with x-what but no x-write (or one not a text), two helps for one
            key path, help under a name no error message looks up, or ``$defs`` dtypes, scalar types or
            compiler hints other than :data:`DTYPES`, :data:`SCALAR_TYPES`, :data:`HINT_KEYS`.
    """
    helps: dict[tuple, tuple[str, str, dict]] = {}
    schema = _split_help(yamlio.load_file(path), (), helps, path)
    defs = schema.get("$defs", {})
    for name, got, want in (("dtype", defs.get("dtype", {}).get("enum"), list(DTYPES)),
                            ("scalar_type", defs.get("scalar_type", {}).get("enum"), list(SCALAR_TYPES)),
                            ("compiler_hints", list(defs.get("compiler_hints", {}).get("properties", {})),
                             list(HINT_KEYS))):
        if got != want:
            raise ValueError(f"{path}: $defs/{name} lists {got}, tileport.model.manifest {want}; write the same")
    return schema, {key: (what, write) for key, (what, write, _) in helps.items()}


def _split_help(node: Any, path: tuple | None, helps: dict, file: str | Path) -> Any:
    """A copy of the schema ``node`` without x-what / x-write; their texts go to ``helps`` under
    :func:`_general` of ``path``, the node's key path (names, '*' any name, '#' any index; None under
    ``$defs`` and ``propertyNames``, whose help counts where they are used, or nowhere)."""
    if not isinstance(node, dict):
        return node
    if path is not None and any(word in node for word in _HELP):
        _add_help(node, path, helps, file)
    out = {}
    for key, value in node.items():
        if key in _HELP:
            continue
        if key == "properties":
            out[key] = {name: _split_help(sub, None if path is None else path + (name,), helps, file)
                        for name, sub in value.items()}
        elif key == "$defs":
            out[key] = {name: _split_help(sub, None, helps, file) for name, sub in value.items()}
        elif key in ("additionalProperties", "items"):
            step = "*" if key == "additionalProperties" else "#"
            out[key] = _split_help(value, None if path is None else path + (step,), helps, file)
        elif key in ("anyOf", "allOf", "oneOf"):
            out[key] = [_split_help(sub, path, helps, file) for sub in value]
        elif key == "propertyNames":
            out[key] = _split_help(value, None, helps, file)
        else:
            out[key] = value
    return out


def _add_help(node: dict, path: tuple, helps: dict, file: str | Path) -> None:
    """Record ``node``'s x-what / x-write in ``helps`` (see :func:`_split_help`). Raises ValueError naming
    ``file`` and the key path: not both texts, a second help for the key path, or one under a name that
    :func:`_general` does not generalise."""
    where = "/".join(path) or "<root>"
    what, write = node.get("x-what"), node.get("x-write")
    if not (isinstance(what, str) and isinstance(write, str)):
        raise ValueError(f"{file}: key {where}: write both x-what and x-write, each a text")
    key = _general([0 if p == "#" else _ANY_NAME if p == "*" else p for p in path])
    if _ANY_NAME in key:
        raise ValueError(f"{file}: key {where}: no error message looks up help for a name here")
    seen = helps.get(key)
    if seen is not None and seen[2] is not node:
        raise ValueError(f"{file}: key {where}: a second help for key path {'/'.join(key) or '<root>'}; "
                         f"write it once")
    helps[key] = (what, write, node)


#: the JSON schema manifests are validated against; generalised key path (:func:`_general`) -> (what the
#: key is, what to write), the help of the error messages (:func:`_in_words`)
MANIFEST_SCHEMA, _KEYS = read_schema()


# a number in exponent form; YAML 1.1 (PyYAML) reads it as text unless it has a dot and a signed exponent
_EXP_NUMBER = re.compile(r"([-+]?)(\d+(?:\.\d*)?|\.\d+)([eE])([-+]?)(\d+)")


def _as_number(text: str, integer: bool) -> str | None:
    """``text`` (``1e4``, ``1.0e4``) spelled so that YAML reads the number it means: the int
    (``10000``) where an integer belongs, else a float with a dot and a signed exponent
    (``1.0e+4``). None when ``text`` is not a number in exponent form."""
    m = _EXP_NUMBER.fullmatch(text.strip())
    if not m:
        return None
    sign, mant, e, esign, exp = m.groups()
    if integer and int(exp) <= 30:
        d = Decimal(text.strip())
        if d == d.to_integral_value():
            return str(int(d))
    return f"{sign}{mant if '.' in mant else mant + '.0'}{e}{esign or '+'}{exp}"


def _describe(value, integer: bool = False) -> str:
    """``value`` in words; ``integer``: the key takes an integer only (for the advice on a number
    YAML reads as text)."""
    if value is None:
        return "nothing (an empty value)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        note = ""
        fixed = _as_number(value, integer)
        if fixed is not None:
            note = f" (YAML reads {value} as text: write {fixed} to give a number)"
        return f"the text {value!r}{note}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return f"a mapping with keys {', '.join(map(str, value)) or '(none)'}"
    return type(value).__name__


#: cuda.tile 1.7.0 dtypes that have no manifest code (yet): cuTile name -> the code they would
#: have. Each is a format of its own (an e8m0 scale is no e4m3 float): a manifest that names one
#: is never offered another format as a near miss (cuda/tile/__init__.py ``__all__``)
OTHER_CUTILE_DTYPES = {"float8_e5m3fnu": "f8e5m3fnu", "float4_e2m1fn": "f4e2m1fn", "tfloat32": "tf32"}
# a float format's code or cuTile name: f<bits>e<exponent bits>m<mantissa bits>[flags]
_FLOAT_FORMAT = re.compile(r"^(f|fp|float)(\d+)_?e(\d+)m(\d+)([a-z]*)$")


def _suggest(word: str, choices) -> str:
    """' (did you mean X?)' for a near miss, also for a torch / numpy spelling of a dtype.

    A float format spelled in full (``f8e8m0fnu``: bits, exponent and mantissa widths) is never
    "corrected" to another format that is merely spelled alike (``f8e4m3fn``): one of cuda.tile's
    dtypes without a manifest code is named as such (:data:`OTHER_CUTILE_DTYPES`), and another
    format gets no guess."""
    if isinstance(word, str) and word in _DTYPE_SPELLINGS and _DTYPE_SPELLINGS[word] in choices:
        return f" (tileport spells {word} as {_DTYPE_SPELLINGS[word]})"
    w = str(word)
    cute = next((c for c, code in OTHER_CUTILE_DTYPES.items() if w in (c, code)), None)
    if cute is not None:
        return (f" ({w} is cuda.tile's {cute}, a format of its own; the manifest has no dtype for it "
                f"yet: a limit of tileport, not a typo)")
    fmt = _FLOAT_FORMAT.match(w)
    near = difflib.get_close_matches(w, [str(c) for c in choices], n=1, cutoff=0.6)
    if fmt and near:
        other = _FLOAT_FORMAT.match(near[0])
        if other is None or other.group(2, 3, 4) != fmt.group(2, 3, 4):
            return ""        # e.g. f8e5m3 is no f8e4m3fn: another format is not a near miss
    return f" (did you mean {near[0]}?)" if near else ""


def _python_name(v) -> bool:
    """The schema's format python-name (kernel names): what Python takes as a name, non-ASCII
    letters too."""
    return not isinstance(v, str) or v.isidentifier()


_FORMATS = {"python-name": _python_name}


@functools.cache
def _strict_validator():
    """The jsonschema validator that words a manifest's errors: draft 2020-12 with the
    python-name format checked, and "integer" an int that is no bool. JSON Schema's "integer"
    admits 1.0 (a number with a zero fraction); a manifest's `ndim: 1.0` would then pass and be
    used as a float rank. YAML writes integers without a point, so a float where an integer
    belongs is an error, never silently taken as the integer it equals."""
    import jsonschema

    formats = jsonschema.FormatChecker(formats=())
    formats.checks("python-name")(_python_name)
    cls = jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
            "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool)))
    return cls(MANIFEST_SCHEMA, format_checker=formats)


def _in_words(err: jsonschema.ValidationError) -> tuple[list, str]:
    """(key path to report, message in words) for one schema violation."""
    path = list(err.absolute_path)
    key = _KEYS.get(_general(path))
    what = key[0] if key else "this value"
    write = f"; write {key[1]}" if key else ""
    v, val = err.validator, err.instance
    if v == "additionalProperties":
        allowed = list(err.schema.get("properties", {}))
        extra = [k for k in val if k not in allowed]
        bad = extra[0] if extra else "?"
        return path + [bad], (f"'{bad}' is not a key of {what}{_suggest(bad, allowed)}; the keys it takes "
                              f"are {', '.join(allowed)}")
    if v == "required":
        missing = re.match(r"'([^']+)'", err.message)
        name = missing.group(1) if missing else "?"
        sub = _KEYS.get(_general(path + [name]))
        return path, (f"{what} lacks the key '{name}'"
                      + (f" ({sub[0]}); write {sub[1]}" if sub else ""))
    if v == "pattern" and isinstance(val, str) and "propertyNames" in err.relative_schema_path:
        return path + [val], _name_rule(val, path)
    if v == "pattern" and isinstance(val, str) and "propertyNames" in list(err.schema_path):
        return path + [val], _name_rule(val, path)
    if v == "format" and isinstance(val, str) and "propertyNames" in list(err.schema_path):
        return path + [val], _name_rule(val, path)
    if v in ("pattern", "format"):
        return path, f"{val!r} is not usable as {what}{write}"
    if v == "propertyNames" or (v == "enum" and "propertyNames" in list(err.schema_path)):
        return path + [val], (f"'{val}' is not usable as a key here{_suggest(val, err.validator_value or [])}"
                              f"; {what} is keyed by one of {', '.join(map(str, err.validator_value or []))}")
    if v == "enum":
        return path, (f"{what} is {_describe(val)}{_suggest(val, err.validator_value)}; write one of "
                      f"{', '.join(map(str, err.validator_value))}")
    if v == "type":
        want = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        if "number" in want and "integer" in want:
            want = [w for w in want if w != "integer"]
        if want == ["integer"] and isinstance(val, float) and val.is_integer() and path:
            # 16.0 for 16: the integer it equals is not taken silently, but it is the fix
            return path, (f"{what} must be an integer, not the number {val!r}; write "
                          f"{path[-1]}: {int(val)}")
        return path, (f"{what} must be {' or '.join(_TYPE_WORDS.get(w, w) for w in want)}, not "
                      f"{_describe(val, integer=want == ['integer'])}{write}")
    if v in ("minimum", "exclusiveMinimum"):
        return path, f"{what} is {val}, below the least allowed value {err.validator_value}{write}"
    if v in ("maximum", "exclusiveMaximum"):
        return path, f"{what} is {val}, above the largest allowed value {err.validator_value}{write}"
    if v in ("minItems", "minProperties"):
        return path, f"{what} is empty (it needs at least {err.validator_value} entry){write}"
    if v in ("maxItems", "maxProperties"):
        return path, f"{what} has more than {err.validator_value} entries{write}"
    if v == "uniqueItems":
        dup = next((x for i, x in enumerate(val) if x in val[:i]), "?")
        return path, f"{what} lists {dup} twice; list each once"
    if v == "minLength":
        return path, f"{what} is empty{write}"
    if v == "anyOf":
        hint = _suggest(val, list(DTYPES)) if path and path[-1] == "dtype" else ""
        return path, f"{what} is {_describe(val)}{hint}, which is none of the accepted forms{write}"
    return path, f"{what} is {_describe(val)}, which is not accepted{write}"


def _name_rule(name: str, path: list) -> str:
    if path == ["op"] or (path and path[-1] == "op"):
        return f"'{name}' is not an operator name: use lower-case letters, digits and _, starting with a letter"
    return (f"'{name}' is not a name a Python parameter can have: write it as the kernel spells it "
            f"(letters, digits and _, not starting with a digit)")


#: longest variant id written out in full (ids name files; a file name has at most 255 bytes)
MAX_ID = 120


@dataclass(frozen=True)
class Variant:
    """One dtype x constexpr configuration of a kernel.

    ``dtype`` is a :data:`DTYPES` code (the dtype of every array the manifest gives no ``dtype``);
    ``constexprs`` maps constexpr name -> value (int of any sign, bool or float), e.g.
    ``{"TILE": 1024, "LOAD_LATENCY": -1, "eps": 1e-06}``; ``hints`` the cuTile compiler hints
    the kernel is compiled with (``kernel.replace_hints(**hints)``): the kernel's
    ``compiler_hints`` updated by the variant entry's. Hints an explicit variant entry sets are
    part of the id (``f16-TILE128-num_ctas2``): they compile another kernel.
    """

    dtype: str
    constexprs: dict
    hints: dict = field(default_factory=dict)
    own_hints: tuple = ()
    name: str | None = None

    @property
    def id(self) -> str:
        """``<dtype>-<name>`` for a named variant, else ``<dtype>-<NAME><value>...`` (``-1`` as
        ``m1``, ``1e-06`` as ``1em06``, ``true``/``false``); an id longer than
        :data:`MAX_ID` characters (it names files: results/<op>/ref/<kernel>/<id>.json) keeps
        its parts within the first 80 characters and ends in ``-h`` + 8 hex digits of
        its sha256."""
        if self.name:
            return f"{self.dtype}-{self.name}"

        def show(v):
            if isinstance(v, bool):
                return str(v).lower()
            return str(v).replace(".", "p").replace("-", "m").replace("+", "")
        parts = [self.dtype] + [f"{k}{show(v)}" for k, v in self.constexprs.items()]
        parts += [f"{k}{show(self.hints[k])}" for k in self.own_hints]
        full = "-".join(parts)
        if len(full) <= MAX_ID:
            return full
        import hashlib

        return f"{full[:80].rsplit('-', 1)[0]}-h{hashlib.sha256(full.encode()).hexdigest()[:8]}"


@functools.lru_cache(maxsize=8)
def _composed(text: str) -> yaml.Node | None:
    """``yaml.compose(text)``, once per text: the front end asks for the line of every kernel's
    keys in the same manifest, and composing the constructs manifest (52 kernels) took 28 ms a
    time, 1.5 s of each 1.9 s load (issue 32). The node tree is only read, never changed."""
    return yaml.compose(text)


def _yaml_line(text: str, path: list) -> int | None:
    """Best-effort 1-based line of a JSON path inside YAML ``text`` (None if unknown)."""
    try:
        node = _composed(text)
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for key in path:
        if node is None:
            break
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for k, v in node.value:
                if k.value == str(key):
                    nxt = v
                    line = k.start_mark.line + 1
                    break
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def line_of(manifest: dict, keypath: list) -> int:
    """1-based line of ``keypath`` (e.g. ``["kernels", "k", "arrays", "x"]``) in a loaded
    manifest's file (1 when unknown)."""
    try:
        text = Path(manifest["_path"]).read_text()
    except (OSError, KeyError):
        return 1
    return _yaml_line(text, keypath) or 1


class _Where:
    """Builds ``file:line: key 'a/b': ...`` messages for one manifest text."""

    def __init__(self, path: Path, text: str):
        self.path, self.text = path, text

    def __call__(self, keypath: list, msg: str, error: type = ManifestError) -> ManifestError:
        where = "/".join(str(p) for p in keypath) or "<root>"
        return error(f"{self.path}:{_yaml_line(self.text, keypath) or 1}: key '{where}': {msg}")


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative ints (the manifests' grid helper)."""
    return -(-a // b)


def base_env(man: dict, shape: list[int], constexprs: dict, num_sms: int) -> dict:
    """Names an expression may use: shape names, constexprs, hints, num_sms and helpers."""
    env = {"cdiv": cdiv, "min": min, "max": max, "sqrt": math.sqrt, "num_sms": num_sms}
    env.update({k: v for k, v in man.get("hints", {}).items() if isinstance(k, str)})
    env.update(dict(zip(man["shape_names"], shape)))
    env.update(constexprs)
    return env


def load(path: str | Path) -> dict:
    """Load and validate a manifest.

    Returns the manifest as a dict with an added ``_path``.

    Raises:
        ManifestError: YAML syntax error (with line); a schema violation, said in words with the
            key path, the line and what to write instead; an inconsistency the schema cannot
            express (configs of one list with different keys, configs and variants both given,
            dtypes missing where configs are crossed with them, a variant listed twice, a dtype
            mapping without one of its kernel's variant dtypes, a variant dtype without
            tolerance, an integer tensor without ``init``, an init that makes the other kind
            of number, an expression that is not Python, ``op`` not matching the folder name, a
            ``known_defects`` entry naming an unknown kernel or variant or a line outside the
            kernel's source: :func:`tileport.model.defects.check`).
        ToolLimitError: a valid kernel name tileport cannot carry (non-ASCII), owner ``tool``.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read manifest: {exc.strerror}") from None
    try:
        doc = yamlio.load(text, path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ManifestError(f"{path}{line}: YAML syntax error: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(doc, dict):
        raise ManifestError(f"{path}:1: the manifest must be a mapping (key: value lines), not "
                            f"{_describe(doc)}; start with `op: {path.parent.name}`")
    fib = _flashinfer_bench(doc, path, text)
    # jsonschema-rs decides; jsonschema words the errors of a manifest it does not pass
    ok = tp_schema.passes(MANIFEST_SCHEMA, doc, formats=_FORMATS, strict_integers=True, ascii_strings=True)
    errors = [] if ok else list(_strict_validator().iter_errors(doc))
    if errors:
        # the most specific complaint first: wrong values before missing keys, deep before shallow
        errors.sort(key=lambda e: (e.validator == "required", -len(e.absolute_path)))
        msgs = []
        for exc in errors[:5]:
            keypath, words = _in_words(exc)
            where = "/".join(str(p) for p in keypath) or "<root>"
            msgs.append(f"{path}:{_yaml_line(text, keypath) or 1}: key '{where}': {words}")
        raise ManifestError("\n".join(dict.fromkeys(msgs)))
    at = _Where(path, text)
    if doc["op"] != path.parent.name:
        raise at(["op"], f"op '{doc['op']}' does not match folder '{path.parent.name}'; write "
                         f"op: {path.parent.name}")
    _check_variant_sources(doc, at)
    if "kernels" in doc.get("source", {}):
        missing = [k for k in doc["kernels"] if k not in doc["source"]["kernels"]]
        if missing:
            raise at(["source", "kernels"], f"source.kernels {doc['source']['kernels']} lacks "
                                             f"{missing}, which 'kernels' describes; add them to "
                                             f"source.kernels or remove them from kernels")
    for k in doc["kernels"]:
        if k in RESERVED_KERNEL_NAMES or k.startswith("__"):
            raise at(["kernels", k], f"kernel name '{k}' is reserved (a Rust keyword or a file of the "
                                     f"generated crate); rename the kernel")
        py_name = unicodedata.normalize("NFKC", k)
        if py_name != k:
            raise at(["kernels", k], f"Python reads the name '{k}' as '{py_name}' (it normalises names to NFKC: "
                                     f"kernel.py's function has that name); write {py_name}")
    used = []
    kv = kernel_variants(doc)
    for k, vs in kv.items():
        seen = set()
        for v in vs:
            if v.id in seen:
                src = (["kernels", k] if "variants" in doc["kernels"][k] or "configs" in doc["kernels"][k]
                       else ["variants" if "variants" in doc else "configs"])
                raise at(src, f"variant '{v.id}' of {k} occurs twice (the same dtype and constexpr "
                              f"values); list it once")
            seen.add(v.id)
            if v.dtype not in used:
                used.append(v.dtype)
    for k, kman in doc["kernels"].items():
        vdts = list(dict.fromkeys(v.dtype for v in kv[k]))
        specs = [(["kernels", k, "arrays", a], sp.get("dtype")) for a, sp in kman["arrays"].items()]
        tens = kman.get("tensors") or doc.get("tensors") or {}
        base = ["kernels", k, "tensors"] if "tensors" in kman else ["tensors"]
        specs += [(base + [t], sp.get("dtype")) for t, sp in tens.items()]
        for kp, spec in specs:
            if isinstance(spec, dict):
                missing = [d for d in vdts if d not in spec]
                if missing:
                    raise at(kp + ["dtype"], f"the dtype mapping gives no dtype for variant dtype {missing[0]} "
                                             f"(variants of {k}: {', '.join(vdts)}); add {missing[0]}: <dtype>")
    for dt in used:
        if dt not in doc["tolerance"]:
            raise at(["tolerance"], f"no rtol/atol for listed dtype '{dt}'; write {dt}: {{rtol: ..., atol: ...}} "
                                    f"under tolerance")
    for dt, tol in doc["tolerance"].items():
        for key in ("rtol", "atol"):
            # YAML's .inf / .nan (and 1.0e999) pass the schema's minimum 0; an infinite or NaN
            # allowance passes every element (harness.compare), a test that cannot fail
            if isinstance(tol[key], (int, float)) and not isinstance(tol[key], bool) and not _finite(tol[key]):
                raise at(["tolerance", dt, key], f"{key} {str(tol[key])[:40]} is not a finite number; write a "
                                                 f"number >= 0 such as 1.0e-3")
            _check_expr(tol[key], ["tolerance", dt, key], at)
    _check_tolerance_names(doc, kv, at)
    for key in ("fits", "perf_fits"):
        if key in doc:
            _check_expr(doc[key], [key], at)
    for k, kman in doc["kernels"].items():
        _check_expr(kman["grid"], ["kernels", k, "grid"], at)
        for key in ("fits", "perf_fits"):
            if key in kman:
                _check_expr(kman[key], ["kernels", k, key], at)
    # a tensor without dtype takes its variant's: check it against the dtypes of the variants
    # that use it (an operator of integer variants, such as routing kernels, has integer tensors)
    if "tensors" in doc:
        shared = [v.dtype for k, vs in kv.items() if "tensors" not in doc["kernels"][k] for v in vs]
        _check_tensors(doc["tensors"], ["tensors"], at, list(dict.fromkeys(shared)))
    for k, kman in doc["kernels"].items():
        if "tensors" in kman:
            _check_tensors(kman["tensors"], ["kernels", k, "tensors"], at,
                           list(dict.fromkeys(v.dtype for v in kv[k])))
    _check_bindings(doc, at)
    _check_error_scale(doc, at)
    defects.check(doc, kv, at, path)
    for k in doc["kernels"]:
        if not k.isascii():
            raise at(["kernels", k], f"kernel name '{k}' is a Python name, but tileport cannot carry a non-ASCII "
                                     f"kernel name (a limit of tileport, not of the kernel): the workflow's "
                                     f"{{kernel}} wildcard (Snakefile wildcard_constraints) and the Rust it "
                                     f"generates (a file module per kernel, `pub mod {k};`, and the host shim's "
                                     f"#[no_mangle] extern \"C\" fn tp_{doc['op']}__{k}) take ASCII names only "
                                     f"(rustc error E0754)", ToolLimitError)
    if fib is not None:
        _check_flashinfer_tensors(doc, fib, at)
        doc["_flashinfer_bench"] = {"definition": fib.rel, "workloads": fib.workloads_rel, "wheel": fib.wheel,
                                    "files": dict(fib.files)}
    doc["_path"] = str(path)
    return doc


#: torch's dtype spelling (FlashInfer-Bench's) -> tileport's code
_TORCH_CODES = {torch: code for code, (_, torch, _) in DTYPES.items()}


def _flashinfer_bench(doc: Any, path: Path, text: str) -> flashinfer.Definition | None:
    """Fill ``doc`` from its ``flashinfer_bench`` definition and workloads (:mod:`tileport.model.flashinfer`:
    shape_names, perf_shapes, dtypes and tolerance, and test_shapes when the manifest gives none). A key
    the manifest also writes must equal the derived value (shape_names: the same var axes in any order,
    which then orders the shapes); otherwise a ManifestError at that key naming the wheel file and line.
    None (and ``doc`` unchanged) without the key, or with a malformed one (the schema then reports it).
    Several workloads' tolerances combine to the strictest: the smallest max_atol, the smallest max_rtol."""
    if not isinstance(doc, dict) or not isinstance(doc.get("flashinfer_bench"), dict):
        return None
    spec = doc["flashinfer_bench"]
    if not isinstance(spec.get("definition"), str) or not isinstance(spec.get("workloads", ""), str):
        return None
    at = _Where(path, text)
    try:
        d = flashinfer.read(spec["definition"], spec.get("workloads"), checkout_pin(path))
    except flashinfer.FlashInferError as exc:
        raise at(["flashinfer_bench", "definition"], str(exc)) from None
    names = doc.get("shape_names")
    if names is not None and (not isinstance(names, list) or sorted(map(str, names)) != sorted(d.var_axes)
                              or len(set(map(str, names))) != len(names)):
        raise at(["shape_names"], f"shape_names {names} are not the var axes {d.var_axes} of {d.rel} (in "
                                  f"{d.wheel}); write them in any order, or drop shape_names to take them")
    try:
        own = doc.get("dtypes") if isinstance(doc.get("dtypes"), list) else None
        derived = flashinfer.derive(d, names, _TORCH_CODES, own)
    except flashinfer.FlashInferError as exc:
        raise at(["flashinfer_bench", "definition"], str(exc)) from None
    lines = ", ".join(str(w[0]) for w in d.workloads)
    for key in ("perf_shapes", "dtypes", "tolerance"):
        if key not in derived:
            continue
        if key not in doc:
            doc[key] = derived[key]
            continue
        if doc[key] == derived[key]:
            continue
        if key == "perf_shapes":
            cause = (f"the workloads of {d.workloads_rel} (lines {lines}) give the perf shapes "
                     f"{derived[key]} over {derived['shape_names']}")
        elif key == "dtypes":
            cause = f"every tensor of {d.rel} has the dtype {derived[key][0]}"
        else:
            (code, tol), = derived[key].items()
            atol_ln = next(w[0] for w in d.workloads if w[2] == tol["atol"])
            rtol_ln = next(w[0] for w in d.workloads if w[3] == tol["rtol"])
            cause = (f"the strictest workload tolerance of {d.workloads_rel} is {code}: {{rtol: {tol['rtol']}, "
                     f"atol: {tol['atol']}}} (max_rtol of line {rtol_ln}, max_atol of line {atol_ln})")
        raise at([key], f"{key} {doc[key]} disagrees with the wheel's FlashInfer-Bench data ({d.wheel}): "
                        f"{cause}; write the same or drop {key} to take it from there")
    doc["shape_names"] = derived["shape_names"]
    doc.setdefault("test_shapes", derived["test_shapes"])
    return d


def _check_flashinfer_tensors(doc: dict, d: flashinfer.Definition, at: _Where) -> None:
    """A kernel's ``bind`` of a number to a parameter named as a scalar input of the definition (eps) equals
    the value every workload passes; the operator's ``tensors`` carry every tensor input and output of the
    definition by name, with its role, its shape (a ``const`` axis as its value) and dtype."""
    for k, km in doc["kernels"].items():
        for name, v in km.get("bind", {}).items():
            seen = d.scalars.get(name)
            if not seen or isinstance(v, str) or isinstance(v, bool):
                continue
            for ln, want in seen:
                if want != v:
                    raise at(["kernels", k, "bind", name],
                             f"{name} is bound to {v}, but workload line {ln} of {d.workloads_rel} passes the scalar "
                             f"{name} = {want}; bind the value the workloads pass")
    tensors = doc.get("tensors")
    if not tensors:
        return
    for name, (role, dt, shape) in d.tensors.items():
        if shape is None:
            continue
        t = tensors.get(name)
        if t is None:
            raise at(["tensors"], f"the definition {d.rel} has the {role} tensor '{name}', which tensors lacks"
                                  f"{_suggest(name, list(tensors))}; name reference.py's tensors as it does")
        want = [d.const_axes.get(a, a) for a in shape]
        got = [str(e) if isinstance(e, str) else e for e in t["shape"]]
        if got != want or t["role"] != role:
            raise at(["tensors", name], f"tensor '{name}' is {t['role']} {t['shape']}, the definition {d.rel} "
                                        f"has it as {role} {want}; write shape: {want}, role: {role}")
        code = _TORCH_CODES.get(dt)
        spec = t.get("dtype")
        have = {resolve_dtype(spec, v) for v in doc.get("dtypes", [])} if not isinstance(spec, str) else {spec}
        if code is not None and have and have != {code}:
            raise at(["tensors", name], f"tensor '{name}' has the dtype {', '.join(sorted(have))}, the "
                                        f"definition {d.rel} {code} ({dt})")


def _check_variant_sources(doc: dict, at: _Where) -> None:
    """configs XOR variants at each level, the same constexpr names throughout one list, and
    dtypes present wherever configs are crossed with them."""
    levels = [([], doc)] + [(["kernels", k], km) for k, km in doc["kernels"].items()]
    for base, node in levels:
        if "configs" in node and "variants" in node:
            raise at(base + ["variants"], "give either configs (crossed with dtypes) or variants "
                                          "(explicit dtype/constexpr pairs) here, not both")
        if "configs" in node:
            keys0 = list(node["configs"][0])
            for i, cfg in enumerate(node["configs"]):
                if list(cfg) != keys0:
                    raise at(base + ["configs", i], f"constexpr names {list(cfg)} differ from the first "
                                                    f"config's {keys0}; give every config the same "
                                                    f"names in the same order")
        if "variants" in node:
            keys0 = None
            for i, v in enumerate(node["variants"]):
                if ("dtype" in v) == ("dtypes" in v):
                    raise at(base + ["variants", i], "a variant names its dtype with either dtype: f16 or "
                                                     "dtypes: [f16, bf16] (exactly one of the two)")
                if "dtypes" in doc and not set(_vdtypes(v)) <= set(doc["dtypes"]):
                    extra = [d for d in _vdtypes(v) if d not in doc["dtypes"]]
                    raise at(base + ["variants", i], f"dtype {extra[0]} is not in the operator's dtypes "
                                                     f"{doc['dtypes']}; add it there or drop the top-level "
                                                     f"dtypes (explicit variants do not need it)")
                keys = list(v.get("constexprs", {}))
                if keys0 is None:
                    keys0 = keys
                elif keys != keys0:
                    raise at(base + ["variants", i, "constexprs"],
                             f"constexpr names {keys} differ from the first variant's {keys0}; give every "
                             f"variant the same names in the same order")
    crossing = [k for k, km in doc["kernels"].items()
                if "configs" in km or ("variants" not in km and "variants" not in doc)]
    if crossing and "dtypes" not in doc:
        raise at(["dtypes"], f"the manifest lacks the key 'dtypes': the configs of {', '.join(crossing)} are crossed "
                     f"with it; write dtypes: [f16, bf16] (or give explicit variants: [{{dtypes: [...], "
                     f"constexprs: {{...}}}}])")


def _vdtypes(v: dict) -> list[str]:
    return list(v["dtypes"]) if "dtypes" in v else [v["dtype"]]


def _finite(v) -> bool:
    """``v`` (an int or float) is a finite float (an int past float's range is not)."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def free_names(expr: str) -> set[str]:
    """The names an expression reads that it does not bind itself (lambda arguments,
    comprehension targets). Raises SyntaxError for text that is no expression."""
    import ast

    tree = ast.parse(expr, mode="eval")
    bound = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    bound |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def _check_tolerance_names(doc: dict, kv: dict, at: _Where) -> None:
    """Every name a tolerance expression reads is one that
    :func:`tileport.gpu.harness.tolerance` gives it for each variant of that dtype (shape names, the
    variant's constexprs, hints, the helpers): a typo, or a constexpr other kernels of the dtype
    lack, is refused here, at its line, not on the GPU node."""

    for dt, tol in doc["tolerance"].items():
        for key in ("rtol", "atol"):
            if not isinstance(tol[key], str):
                continue
            names = free_names(tol[key])
            for k, vs in kv.items():
                for v in vs:
                    if v.dtype != dt:
                        continue
                    env = base_env(doc, [1] * len(doc["shape_names"]), v.constexprs, 0)
                    missing = sorted(names - set(env))
                    if missing:
                        usable = sorted(n for n in env if isinstance(n, str))
                        raise at(["tolerance", dt, key],
                                 f"expression {tol[key]!r} reads {', '.join(map(repr, missing))}, which "
                                 f"{k} variant {v.id} does not have; a tolerance may use "
                                 f"{', '.join(usable)}")


def _check_expr(expr, keypath: list, at: _Where) -> None:
    if isinstance(expr, (int, float)):
        return
    import ast

    try:
        ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise at(keypath, f"expression {expr!r} is not valid Python: {exc.msg}; write a Python "
                          f"expression such as \"cdiv(N, TILE)\"") from None


def init_spec(t: dict) -> tuple[str, list]:
    """(generator, its argument expressions) of a tensor spec: ``init`` as written, else
    ``randn`` (the default of float tensors, scaled by ``scale``).
    See the README's manifest section for what each generator makes."""
    init = t.get("init", "randn")
    if isinstance(init, str):
        return init, []
    (kind, arg), = init.items()
    if arg is None:
        return kind, []
    return kind, list(arg) if isinstance(arg, list) else [arg]


def _check_tensors(tensors: dict, base: list, at: _Where, variant_dtypes: list | None = None) -> None:
    if not any(t["role"] == "output" for t in tensors.values()):
        raise at(base, "no tensor has role output (reference.py's result is compared against it); "
                       "mark what reference.py returns with role: output")
    for name, t in tensors.items():
        kp = base + [name]
        for e in t["shape"]:
            _check_expr(e, kp + ["shape"], at)
        for key in ("scale", "count"):
            if key in t:
                _check_expr(t[key], kp + [key], at)
        dts = (list(t["dtype"].values()) if isinstance(t.get("dtype"), dict) else [t["dtype"]] if "dtype" in t
               else variant_dtypes or ["f16"])
        fams = {DTYPES[d][2] for d in dts}
        fam = fams.pop() if len(fams) == 1 else "float" if fams <= {"float", "float8"} else "mixed"
        if fam == "mixed":
            raise at(kp + ["dtype"], f"the dtype mapping of tensor '{name}' mixes integer and float dtypes "
                                     f"({', '.join(dts)}); one init cannot make both: split the variants")
        kind, args = init_spec(t)
        if kind == "derive":
            if t["role"] != "input":
                raise at(kp + ["init"], f"init derive makes an input, but tensor '{name}' has role "
                                        f"{t['role']}; derive an input and start the output as "
                                        f"{{copy: <that input>}} (an array updated in place)")
            if "count" in t:
                raise at(kp + ["init"], f"init derive makes one tensor, but tensor '{name}' is a list "
                                        f"(count); derive each element as a tensor of its own, or make "
                                        f"the list with another init")
            if "scale" in t:
                raise at(kp + ["scale"], f"scale multiplies randn values, but tensor '{name}' is made by "
                                         f"derive; scale inside the reference.py function")
            continue
        if kind == "copy":
            _check_copy(tensors, name, args[0], kp, at)
            continue
        for a in args:
            _check_expr(a, kp + ["init"], at)
        if fam in ("int", "uint", "bool") and "init" not in t:
            raise at(kp, f"tensor '{name}' has the integer dtype {dts[0]} but no init; say how its "
                         f"values are made, e.g. init: {{randint: [0, N]}} for indices below N, "
                         f"{{sorted: [0, N]}}, permutation, range, {{offsets: N}} or {{full: 0}}")
        if fam in ("float", "float8") and kind in ("randint", "sorted", "offsets", "permutation"):
            raise at(kp + ["init"], f"init {kind} makes integers but tensor '{name}' has the float dtype "
                                    f"{t.get('dtype', 'of the variant')}; write dtype: i32 (or i64) for an "
                                    f"index tensor")
        if fam == "scale" and kind not in ("uniform", "full"):
            raise at(kp + ["init"], f"tensor '{name}' has the block-scale dtype {dts[0]} (an unsigned power of "
                                    f"two: randn's negative values have no e8m0 value); write init: "
                                    f"{{uniform: [0.25, 4.0]}} or {{full: 1.0}}")
        if fam not in ("float", "float8", "scale") and kind in ("randn", "uniform"):
            raise at(kp + ["init"], f"init {kind} makes floats but tensor '{name}' has the dtype "
                                    f"{dts[0]}; write init: {{randint: [low, high]}} or another integer "
                                    f"generator")
        if "scale" in t and kind != "randn":
            raise at(kp + ["scale"], f"scale multiplies randn values, but tensor '{name}' is made by "
                                     f"{kind}; drop scale or give the bounds in the init")


def _check_copy(tensors: dict, name: str, src: str, kp: list, at: _Where) -> None:
    """``init: {copy: src}``: ``name`` is an output that starts as a copy of the input ``src``
    (same shape, dtype and count; the GPU stages check the shapes once evaluated)."""
    t = tensors[name]
    if t["role"] != "output":
        raise at(kp + ["init"], f"init copy makes an output start as a copy of an input, but tensor "
                                f"'{name}' has role {t['role']}; give it role: output (reference.py "
                                f"returns its updated values) or another init")
    s = tensors.get(src)
    if s is None or s["role"] != "input":
        inputs = [n for n, x in tensors.items() if x["role"] == "input"]
        raise at(kp + ["init"], f"init copy names '{src}', which is not an input tensor of this call "
                                f"(inputs: {', '.join(inputs) or 'none'}){_suggest(src, inputs)}")
    for key in ("shape", "dtype", "count"):
        if s.get(key) != t.get(key):
            raise at(kp + [key if key in t else "init"],
                     f"tensor '{name}' starts as a copy of '{src}' but its {key} {t.get(key)!r} differs "
                     f"from {src}'s {s.get(key)!r}; give both the same {key}")
    if "scale" in t:
        raise at(kp + ["scale"], f"scale multiplies randn values, but tensor '{name}' is a copy of "
                                 f"'{src}'; drop scale")


def _check_error_scale(doc: dict, at: _Where) -> None:
    """Each kernel's ``error_scale`` names output tensors of its call (its ``tensors``, else the
    operator's), none a list (``count``): the reference function returns one error scale per name
    after its outputs (:func:`tileport.gpu.harness.split_expected`)."""
    for k, kman in doc["kernels"].items():
        names = kman.get("error_scale")
        if not names:
            continue
        tensors = kman.get("tensors", doc.get("tensors")) or {}
        where = "kernels/" + k + "/tensors" if "tensors" in kman else "tensors"
        outs = [t for t, sp in tensors.items() if sp.get("role") == "output"]
        for i, name in enumerate(names):
            kp = ["kernels", k, "error_scale", i]
            if name not in tensors:
                raise at(kp, f"'{name}' is no tensor of {k}'s call ({where}: "
                             f"{', '.join(tensors) or 'none'}){_suggest(name, outs)}; an error scale belongs to "
                             f"an output tensor: write one of {', '.join(outs) or '(no output tensor)'}")
            if tensors[name].get("role") != "output":
                raise at(kp, f"'{name}' is an input of {k}'s call ({where}/{name}); an error scale belongs to an "
                             f"output tensor: write one of {', '.join(outs) or '(no output tensor)'}")
            if "count" in tensors[name]:
                raise at(kp, f"'{name}' is a list of tensors ({where}/{name}/count); tileport takes an error "
                             f"scale for a single output tensor only")


def _check_bindings(doc: dict, at: _Where) -> None:
    """Every bind expression parses (that each names a parameter of its kernel is the analyser's
    check: only kernel.py knows the annotated scalars)."""
    for k, kman in doc["kernels"].items():
        for p, e in kman.get("bind", {}).items():
            _check_expr(e, ["kernels", k, "bind", p], at)


# ---- variants ------------------------------------------------------------------------------
def _crossed(dtypes: list, configs: list, hints: dict) -> list[Variant]:
    return [Variant(dt, dict(cfg), dict(hints)) for dt in dtypes for cfg in configs]


def _explicit(entries: list, hints: dict) -> list[Variant]:
    return [Variant(dt, dict(v.get("constexprs", {})), {**hints, **v.get("compiler_hints", {})},
                    tuple(k for k in HINT_KEYS if k in v.get("compiler_hints", {})), v.get("name"))
            for v in entries for dt in _vdtypes(v)]


def kernel_variants(manifest: dict) -> dict[str, list[Variant]]:
    """``{kernel: [Variant, ...]}`` in manifest order: the kernel's own ``variants`` or
    ``configs`` (crossed with ``dtypes``), else the operator's ``variants``, else the operator's
    ``configs`` crossed with ``dtypes`` (one empty config when there are none)."""
    out = {}
    for k, km in manifest["kernels"].items():
        hints = km.get("compiler_hints", {})
        if "variants" in km:
            out[k] = _explicit(km["variants"], hints)
        elif "configs" in km:
            out[k] = _crossed(manifest["dtypes"], km["configs"], hints)
        elif "variants" in manifest:
            out[k] = _explicit(manifest["variants"], hints)
        else:
            out[k] = _crossed(manifest.get("dtypes", []), manifest.get("configs", [{}]), hints)
    return out


def declared_defects(man: dict) -> list[defects.Defect]:
    """The loaded manifest's ``known_defects`` as :class:`tileport.model.defects.Defect` (``[]`` without the key)."""
    entries = man.get("known_defects") or []
    if not entries:
        return []
    path = Path(man.get("_path", "manifest.yaml"))
    src = man.get("source")
    file = (src["module"].replace(".", "/") + ".py") if src else str(path.parent / "kernel.py")
    kv = kernel_variants(man)
    out = []
    for i, e in enumerate(entries):
        ids = tuple(v.id for v in defects.selected(e["variants"], kv.get(e["kernel"], [])))
        out.append(defects.Defect(i, str(path), line_of(man, ["known_defects", i]), e["kernel"], file, int(e["line"]),
                          ids, str(e["effect"]).strip(), str(e["evidence"]).strip()))
    return out


def variants(manifest: dict, kernel: str | None = None) -> list[Variant]:
    """The variants of ``kernel`` or, without one, of every kernel (each id once, in manifest
    order). Only these are analysed, compiled, tested and counted: a manifest that pairs
    configs with dtypes means exactly those pairs.

    Raises:
        KeyError: ``kernel`` is not a kernel of the manifest.
    """
    per = kernel_variants(manifest)
    if kernel is not None:
        return per[kernel]
    seen, out = set(), []
    for vs in per.values():
        for v in vs:
            if v.id not in seen:
                seen.add(v.id)
                out.append(v)
    return out


def kernel_variant_ids(manifest: dict) -> list[tuple[str, str]]:
    """Every (kernel, variant id) of the operator: the rows of summary.csv."""
    return [(k, v.id) for k, vs in kernel_variants(manifest).items() for v in vs]


def variant_by_id(manifest: dict, variant_id: str, kernel: str | None = None) -> Variant:
    """Look up a variant by id (among ``kernel``'s, or any kernel's). Raises KeyError naming the
    known ids."""
    pool = variants(manifest, kernel)
    for v in pool:
        if v.id == variant_id:
            return v
    raise KeyError(f"unknown variant '{variant_id}' of {manifest['op']}"
                   f"{'/' + kernel if kernel else ''}; known: {[v.id for v in pool]}")


def constexpr_names(manifest: dict, kernel: str) -> list[str]:
    """The constexpr names the variants of ``kernel`` set (from its first variant)."""
    vs = variants(manifest, kernel)
    return list(vs[0].constexprs) if vs else []


def variant_source(manifest: dict, kernel: str) -> list:
    """Key path of the manifest list that makes ``kernel``'s variants (for line numbers)."""
    km = manifest["kernels"][kernel]
    for key in ("variants", "configs"):
        if key in km:
            return ["kernels", kernel, key]
    return ["variants"] if "variants" in manifest else ["configs"]


def resolve_dtype(spec, variant_dtype: str) -> str:
    """The dtype code an array's or tensor's ``dtype`` gives in a variant of dtype
    ``variant_dtype``: the code itself, the mapping's entry, or (None / ``{dtype}``) the
    variant's. Raises KeyError for a mapping without that variant dtype (:func:`load`
    rejects such manifests)."""
    if spec is None or spec == "{dtype}":
        return variant_dtype
    return spec[variant_dtype] if isinstance(spec, dict) else spec


def array_dtype(manifest: dict, kernel: str, array: str, variant: Variant) -> str:
    """The element type of one array parameter in one variant: its ``dtype`` (a code or a
    per-variant-dtype mapping), else the variant's."""
    return resolve_dtype(manifest["kernels"][kernel]["arrays"][array].get("dtype"), variant.dtype)


def kernel_tensors(manifest: dict, kernel: str) -> dict | None:
    """The tensors of one call of ``kernel`` (its own ``tensors``, else the operator's; None
    when neither exists)."""
    return manifest["kernels"][kernel].get("tensors", manifest.get("tensors"))
