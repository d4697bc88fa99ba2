"""Operator manifests (``operators/<op>/manifest.yaml``): schema, loading, variants.

A *variant* is one dtype x one constexpr configuration, e.g. ``f16-TILE1024`` or
``bf16-BM128-BN128-BK64``; its id is stable and readable (dtype first, then the
constexprs in the order the manifest's config lists them).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from . import yamlio

DTYPES = ("f16", "bf16", "f32")

_SHAPE = {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1}
_TOL = {
    "type": "object",
    "properties": {"rtol": {"type": "number", "minimum": 0}, "atol": {"type": "number", "minimum": 0}},
    "required": ["rtol", "atol"],
    "additionalProperties": False,
}

MANIFEST_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tileport operator manifest",
    "type": "object",
    "properties": {
        "op": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
        "description": {"type": "string"},
        # the kernels come from an installed wheel's module (rule import_source writes them to
        # results/<op>/src/kernel.py; tileport.source.kernel_py): `module` is its dotted name,
        # `kernels` the @ct.kernel functions to keep (default: the keys of `kernels` below)
        "source": {
            "type": "object",
            "properties": {
                "module": {"type": "string",
                           "pattern": "^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$"},
                "kernels": {"type": "array", "minItems": 1, "uniqueItems": True,
                            "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}},
            },
            "required": ["module"],
            "additionalProperties": False,
        },
        "kernels": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "arrays": {
                        "type": "object",
                        "minProperties": 1,
                        "additionalProperties": {
                            "type": "object",
                            "properties": {
                                "ndim": {"type": "integer", "minimum": 1, "maximum": 6},
                                "role": {"enum": ["input", "output", "inout"]},
                            },
                            "required": ["ndim", "role"],
                            "additionalProperties": False,
                        },
                    },
                    "scalars": {
                        "type": "object",
                        "additionalProperties": {"enum": ["f32", "i32"]},
                    },
                    "grid": {"type": "string", "minLength": 1},
                    # kernel parameter -> Python expression over the operator's tensors, shape
                    # names, constexprs (e.g. gate: "x[:, :N]", inv_n: "1.0 / N"); an array
                    # not listed binds to the tensor of its own name
                    "bind": {"type": "object", "additionalProperties": {"type": ["string", "number"]}},
                },
                "required": ["arrays", "grid"],
                "additionalProperties": False,
            },
        },
        "dtypes": {"type": "array", "items": {"enum": list(DTYPES)}, "minItems": 1, "uniqueItems": True},
        "configs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "minProperties": 1,
                "propertyNames": {"pattern": "^[A-Z][A-Z0-9_]*$"},
                # ct.Constant[int] tile sizes are positive ints; ct.Constant[bool/float]
                # switches and factors are allowed too (the analyser checks each against
                # the kernel's annotation)
                "additionalProperties": {"anyOf": [{"type": "integer", "minimum": 1},
                                                   {"type": "boolean"}, {"type": "number"}]},
            },
        },
        "shape_names": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "test_shapes": {"type": "array", "items": _SHAPE, "minItems": 1},
        "perf_shapes": {"type": "array", "items": _SHAPE, "minItems": 1},
        "fits": {"type": "string"},
        # extra predicate for perf_shapes only (e.g. skip configs whose tile mostly pads)
        "perf_fits": {"type": "string"},
        "tolerance": {"type": "object", "additionalProperties": _TOL},
        "hints": {"type": "object"},
        # the operator's tensors for the GPU stages: reference.py's arguments (role input, in
        # order) and the results it returns (role output, in order); shape entries are ints or
        # expressions over shape_names; inputs are seeded randn(shape) * scale
        "tensors": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "shape": {"type": "array", "minItems": 1, "maxItems": 6,
                              "items": {"type": ["string", "integer"]}},
                    "role": {"enum": ["input", "output"]},
                    "scale": {"type": ["string", "number"]},
                },
                "required": ["shape", "role"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["op", "kernels", "dtypes", "configs", "shape_names", "test_shapes",
                 "perf_shapes", "tolerance"],
    "additionalProperties": False,
}


class ManifestError(ValueError):
    """A manifest cannot be read or breaks the schema; the message names file, line and cause."""


@dataclass(frozen=True)
class Variant:
    """One dtype x constexpr configuration of an operator.

    ``constexprs`` maps constexpr name -> int value (e.g. ``{"TILE": 1024}``).
    """

    dtype: str
    constexprs: dict

    @property
    def id(self) -> str:
        def show(v):
            if isinstance(v, bool):
                return str(v).lower()
            return str(v).replace(".", "p").replace("-", "m")
        parts = [self.dtype] + [f"{k}{show(v)}" for k, v in self.constexprs.items()]
        return "-".join(parts)


def _yaml_line(text: str, path: list) -> int | None:
    """Best-effort 1-based line of a JSON path inside YAML ``text`` (None if unknown)."""
    try:
        node = yaml.compose(text)
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


def load(path: str | Path) -> dict:
    """Load and validate a manifest.

    Returns the manifest as a dict with an added ``_path``.

    Raises:
        ManifestError: YAML syntax error (with line), schema violation (with the key path,
            the offending value and line), a tolerance missing for a listed dtype, a config
            whose keys differ from the first config's, or ``op`` not matching the folder name.
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
        raise ManifestError(f"{path}:1: manifest must be a mapping, got {type(doc).__name__}")
    errors = list(jsonschema.Draft202012Validator(MANIFEST_SCHEMA).iter_errors(doc))
    if errors:
        # the most specific complaint first: wrong values before missing keys, deep before shallow
        errors.sort(key=lambda e: (e.validator == "required", -len(e.absolute_path)))
        msgs = []
        for exc in errors[:5]:
            keypath = list(exc.absolute_path)
            line = _yaml_line(text, keypath)
            where = "/".join(str(p) for p in keypath) or "<root>"
            msgs.append(f"{path}:{line or 1}: key '{where}': {exc.message}")
        raise ManifestError("\n".join(msgs))
    if doc["op"] != path.parent.name:
        raise ManifestError(
            f"{path}:{_yaml_line(text, ['op']) or 1}: op '{doc['op']}' does not match folder "
            f"'{path.parent.name}'")
    keys0 = list(doc["configs"][0])
    for i, cfg in enumerate(doc["configs"]):
        if list(cfg) != keys0:
            raise ManifestError(
                f"{path}:{_yaml_line(text, ['configs', i]) or 1}: key 'configs/{i}': constexpr "
                f"names {list(cfg)} differ from the first config's {keys0}")
    if "kernels" in doc.get("source", {}):
        missing = [k for k in doc["kernels"] if k not in doc["source"]["kernels"]]
        if missing:
            raise ManifestError(
                f"{path}:{_yaml_line(text, ['source', 'kernels']) or 1}: key 'source/kernels': "
                f"{doc['source']['kernels']} lacks {missing}, which 'kernels' describes")
    from .constructs import RESERVED_KERNEL_NAMES
    for k in doc["kernels"]:
        if k in RESERVED_KERNEL_NAMES or k.startswith("__"):
            raise ManifestError(
                f"{path}:{_yaml_line(text, ['kernels', k]) or 1}: key 'kernels/{k}': kernel name "
                f"'{k}' is reserved (a Rust keyword or a file of the generated crate)")
    seen = {}
    for i, v in enumerate(variants(doc)):
        if v.id in seen:
            raise ManifestError(
                f"{path}:{_yaml_line(text, ['configs']) or 1}: key 'configs': variant '{v.id}' "
                f"occurs twice (duplicate config)")
        seen[v.id] = i
    for dt in doc["dtypes"]:
        if dt not in doc["tolerance"]:
            raise ManifestError(
                f"{path}:{_yaml_line(text, ['tolerance']) or 1}: key 'tolerance': no rtol/atol "
                f"for listed dtype '{dt}'")
    for key in ("fits", "perf_fits"):
        if key in doc:
            _check_expr(doc[key], key, path, text, [key])
    for k, kman in doc["kernels"].items():
        _check_expr(kman["grid"], f"kernels/{k}/grid", path, text, ["kernels", k, "grid"])
    if "tensors" in doc:
        _check_bindings(doc, path, text)
    doc["_path"] = str(path)
    return doc


def _check_expr(expr, where: str, path: Path, text: str, keypath: list) -> None:
    if isinstance(expr, (int, float)):
        return
    import ast

    try:
        ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ManifestError(f"{path}:{_yaml_line(text, keypath) or 1}: key '{where}': expression "
                            f"{expr!r} is not valid Python: {exc.msg}") from None


def _check_bindings(doc: dict, path: Path, text: str) -> None:
    """Every expression parses and ``bind`` names only the kernel's parameters (a parameter with
    no value at all is reported by the GPU stages, which are the ones that need it)."""
    tensors = doc["tensors"]
    if not any(t["role"] == "output" for t in tensors.values()):
        raise ManifestError(f"{path}:{_yaml_line(text, ['tensors']) or 1}: key 'tensors': no tensor "
                            f"has role output (reference.py's result is compared against it)")
    for name, t in tensors.items():
        for i, e in enumerate(t["shape"]):
            _check_expr(e, f"tensors/{name}/shape/{i}", path, text, ["tensors", name, "shape"])
        if "scale" in t:
            _check_expr(t["scale"], f"tensors/{name}/scale", path, text, ["tensors", name, "scale"])
    for k, kman in doc["kernels"].items():
        bind = kman.get("bind", {})
        params = set(kman["arrays"]) | set(kman.get("scalars", {}))
        for p, e in bind.items():
            if p not in params:
                raise ManifestError(f"{path}:{_yaml_line(text, ['kernels', k, 'bind', p]) or 1}: key "
                                    f"'kernels/{k}/bind/{p}': '{p}' is not an array or scalar of {k}")
            _check_expr(e, f"kernels/{k}/bind/{p}", path, text, ["kernels", k, "bind", p])


def variants(manifest: dict) -> list[Variant]:
    """All variants of an operator: dtypes x configs, in manifest order."""
    return [Variant(dt, dict(cfg)) for dt in manifest["dtypes"] for cfg in manifest["configs"]]


def variant_by_id(manifest: dict, variant_id: str) -> Variant:
    """Look up a variant by id. Raises KeyError naming the known ids."""
    for v in variants(manifest):
        if v.id == variant_id:
            return v
    raise KeyError(f"unknown variant '{variant_id}' of {manifest['op']}; known: "
                   f"{[v.id for v in variants(manifest)]}")
