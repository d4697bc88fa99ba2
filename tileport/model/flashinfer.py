"""FlashInfer-Bench definitions and workloads of an installed wheel, read as data when a manifest loads.

A manifest's ``flashinfer_bench: {definition: <path inside the site directory>}`` names a definition JSON
that an installed, pinned distribution ships (``tilegym/transformers/qwen3_5/kernel_definitions/
qwen3_5_sigmoid_mul.json``); its workloads are ``kernel_workloads/<definition name>/workload.jsonl`` beside
the ``kernel_definitions`` folder (FlashInfer-Bench's layout), or the file ``workloads:`` names. Both are
read from the distribution that provides the path's top-level package (:func:`tileport.core.wheels.find_wheel`,
never imported), at the version the checkout's pin file names, and each must hash to its RECORD entry.

What a manifest takes from them (:func:`derive`):

* ``shape_names``: the definition's ``var`` axes, in the definition's order (``const`` axes are values, not
  shape names);
* ``perf_shapes``: every workload's axis values, in ``shape_names`` order, each shape once, in file order;
* ``test_shapes``: the smallest workload (fewest elements over its axes) when the manifest gives none;
* ``dtypes``: ``[code]`` when every tensor input and output of the definition (scalars aside) has the
  same dtype; none otherwise (the manifest then writes its own);
* ``tolerance``: for that dtype, the strictest of the workloads' (the smallest ``max_atol`` and the
  smallest ``max_rtol``, each over all workloads): a port tested at the strictest tolerance meets every
  workload's. A definition of mixed dtypes gives the same for each of the manifest's own ``dtypes``
  that one of its tensors has.

Every error names the wheel file, the line and the cause (:class:`FlashInferError`).
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from tileport.core import source
from tileport.core.wheels import ImportFailed, Wheel, find_wheel


class FlashInferError(ValueError):
    """A definition or workload file cannot be used: ``<file>:<line>: <cause>``."""


@dataclass
class Definition:
    """A definition and its workloads, as read: ``rel`` / ``workloads_rel`` (paths in the site directory),
    ``var_axes`` (in order), ``const_axes`` (``{name: value}``), ``tensors`` (``{name: (role, torch dtype,
    shape or None for a scalar)}``), ``workloads`` (``[(line, {axis: value}, max_atol, max_rtol)]``), and
    the wheel (``wheel``: name and version)."""

    rel: str
    workloads_rel: str
    name: str
    var_axes: list[str]
    const_axes: dict[str, int]
    tensors: dict[str, tuple[str, str, list | None]]
    workloads: list[tuple[int, dict[str, int], float, float]]
    wheel: str
    reference: str = ""
    files: dict[str, str] = field(default_factory=dict)
    #: scalar input -> [(workload line, value)] for each workload that gives it ({type: scalar, value: v})
    scalars: dict[str, list] = field(default_factory=dict)


def default_workloads(definition_rel: str) -> str:
    """``<pkg>/kernel_definitions/<name>.json`` -> ``<pkg>/kernel_workloads/<name>/workload.jsonl``."""
    p = Path(definition_rel)
    return str(p.parent.parent / "kernel_workloads" / p.stem / "workload.jsonl")


def _read(w: Wheel, rel: str) -> tuple[Path, str]:
    path, wheel = w.root / rel, f"{w.name} {w.version}"
    if rel not in w.record:
        raise FlashInferError(f"{path}:1: not a file of {wheel} (its RECORD does not list {rel}); name a file "
                              f"the wheel ships, relative to its site directory")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FlashInferError(f"{path}:1: cannot read it ({exc.strerror}): {wheel}'s RECORD lists it; "
                              f"reinstall the wheel (make install)") from None
    if w.modified(rel, data):
        raise FlashInferError(w.modified_message(f"{path}:1"))
    return path, data.decode()


def _line_of(text: str, key: str) -> int:
    """The 1-based line of the first ``"key":`` in a JSON text (1 when absent)."""
    needle = json.dumps(key) + ":"
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    return 1


def read(definition_rel: str, workloads_rel: str | None = None, pin_file: str | Path | None = None) -> Definition:
    """The definition at ``definition_rel`` (a path inside the site directory of the installed distribution
    that provides its first component) and its workloads.

    Raises:
        FlashInferError: ``<file>:<line>: <cause>``: no such distribution or another version than
            ``pin_file`` pins; a file the RECORD does not list, that is missing, or whose hash differs; not
            JSON; a definition without axes / inputs / outputs, an axis of another type than var / const, a
            tensor shape naming no axis; a workload line without a var axis's positive int value or
            without ``tolerance.max_atol`` / ``max_rtol``; no workload.
    """
    top = definition_rel.split("/", 1)[0]
    try:
        w = find_wheel(top, pin_file)
    except ImportFailed as exc:
        raise FlashInferError(f"{definition_rel}:1: {exc}") from None
    wheel = f"{w.name} {w.version}"
    workloads_rel = workloads_rel or default_workloads(definition_rel)
    dpath, dtext = _read(w, definition_rel)
    try:
        d = json.loads(dtext)
    except ValueError as exc:
        raise FlashInferError(f"{dpath}:{getattr(exc, 'lineno', 1)}: not JSON: {exc}") from None
    if not isinstance(d, dict) or not all(isinstance(d.get(k), dict) for k in ("axes", "inputs", "outputs")):
        raise FlashInferError(f"{dpath}:1: a FlashInfer-Bench definition is a mapping with axes, inputs and "
                              f"outputs (mappings); this one lacks one of them")
    var, const = [], {}
    for name, ax in d["axes"].items():
        kind = ax.get("type") if isinstance(ax, dict) else None
        if kind == "var":
            var.append(name)
        elif kind == "const" and isinstance(ax.get("value"), int) and not isinstance(ax.get("value"), bool):
            const[name] = ax["value"]
        else:
            raise FlashInferError(f"{dpath}:{_line_of(dtext, name)}: axis '{name}' is neither "
                                  f"{{type: var}} nor {{type: const, value: <int>}}")
    tensors = {}
    for role, group in (("input", d["inputs"]), ("output", d["outputs"])):
        for name, t in group.items():
            shape = t.get("shape") if isinstance(t, dict) else None
            dtype = t.get("dtype") if isinstance(t, dict) else None
            if not isinstance(dtype, str) or not (shape is None or isinstance(shape, list)):
                raise FlashInferError(f"{dpath}:{_line_of(dtext, name)}: {role} '{name}' needs a dtype (text) "
                                      f"and a shape (a list of axis names, or null for a scalar)")
            bad = [a for a in shape or [] if a not in d["axes"]]
            if bad:
                raise FlashInferError(f"{dpath}:{_line_of(dtext, name)}: {role} '{name}' has the shape entry "
                                      f"{bad[0]!r}, which is no axis of the definition ({', '.join(d['axes'])})")
            tensors[name] = (role, dtype, shape)
    wpath, wtext = _read(w, workloads_rel)
    workloads, scalars = [], {}
    for ln, line in enumerate(wtext.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise FlashInferError(f"{wpath}:{ln}: not a JSON line: {exc}") from None
        axes = rec.get("axes") if isinstance(rec, dict) else None
        tol = rec.get("tolerance") if isinstance(rec, dict) else None
        if not isinstance(axes, dict):
            raise FlashInferError(f"{wpath}:{ln}: a workload without axes (a mapping of axis values)")
        vals = {}
        for a in var:
            v = axes.get(a)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise FlashInferError(f"{wpath}:{ln}: var axis '{a}' of {dpath.name} has "
                                      f"{'no value' if v is None else repr(v)} here; a workload gives every "
                                      f"var axis a positive int")
            vals[a] = v
        extra = [a for a in axes if a not in var]
        if extra:
            raise FlashInferError(f"{wpath}:{ln}: axis '{extra[0]}' is no var axis of {dpath.name} "
                                  f"(var axes: {', '.join(var)})")
        got = []
        for key in ("max_atol", "max_rtol"):
            v = tol.get(key) if isinstance(tol, dict) else None
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not (0 <= v < float("inf")):
                raise FlashInferError(f"{wpath}:{ln}: tolerance.{key} is {v!r}; a workload gives a finite "
                                      f"number >= 0")
            got.append(float(v))
        workloads.append((ln, vals, got[0], got[1]))
        inputs = rec.get("inputs") if isinstance(rec.get("inputs"), dict) else {}
        for name, (_, _, shape) in tensors.items():
            v = inputs.get(name)
            if shape is None and isinstance(v, dict) and v.get("type") == "scalar" and "value" in v:
                scalars.setdefault(name, []).append((ln, v["value"]))
    if not workloads:
        raise FlashInferError(f"{wpath}:1: no workload (one JSON object a line)")
    return Definition(definition_rel, workloads_rel, str(d.get("name", dpath.stem)), var, const, tensors,
                      workloads, wheel, str(d.get("reference", "")),
                      {str(dpath): hashlib.sha256(dtext.encode()).hexdigest(),
                       str(wpath): hashlib.sha256(wtext.encode()).hexdigest()}, scalars)


def files(definition_rel: str, workloads_rel: str | None = None) -> list[str]:
    """The absolute paths of the definition and workload files (where the distribution is installed; ``[]``
    where it is not): a workflow input, so a new wheel reruns the operator."""
    try:
        root = find_wheel(definition_rel.split("/", 1)[0]).root
    except ImportFailed:
        return []
    return [str(root / definition_rel), str(root / (workloads_rel or default_workloads(definition_rel)))]


def manifest_files(op_dir: str | Path) -> list[str]:
    """:func:`files` of the ``flashinfer_bench`` key of ``op_dir``'s manifest (``[]`` without one, or when the
    manifest cannot be read: the manifest loader reports that)."""
    spec = source.manifest_key(op_dir, "flashinfer_bench")
    if not isinstance(spec, dict) or not isinstance(spec.get("definition"), str):
        return []
    w = spec.get("workloads")
    return files(spec["definition"], w if isinstance(w, str) else None)


def derive(d: Definition, shape_names: list[str] | None, dtype_codes: dict[str, str],
           dtypes: list[str] | None = None) -> dict:
    """What the manifest takes from ``d`` (see the module docstring): ``shape_names``, ``perf_shapes``,
    ``test_shapes`` (the smallest workload), and where every tensor shares one dtype ``dtypes`` and
    ``tolerance`` (keyed by that dtype); where the tensors' dtypes differ (bf16 data, f32 parameters),
    ``tolerance`` keyed by each of the manifest's own ``dtypes`` when every one is a dtype of a tensor.
    ``shape_names``: the order to use (the manifest's, a permutation of the var axes), else the
    definition's. ``dtype_codes``: torch spelling -> tileport code.

    Raises:
        FlashInferError: a tensor dtype tileport has no code for.
    """
    names = list(shape_names) if shape_names is not None else list(d.var_axes)
    shapes = []
    for _, vals, _, _ in d.workloads:
        s = [vals[a] for a in names]
        if s not in shapes:
            shapes.append(s)
    smallest = min(shapes, key=lambda s: (math.prod(s), s))
    out = {"shape_names": names, "perf_shapes": shapes, "test_shapes": [smallest]}
    codes = set()
    for name, (_, dt, shape) in d.tensors.items():
        if shape is None:
            continue        # a scalar argument (eps: float32) is passed by value, not a variant dtype
        if dt not in dtype_codes:
            raise FlashInferError(f"{d.rel}:1: tensor '{name}' has the dtype {dt!r}, which tileport has no "
                                  f"code for")
        codes.add(dtype_codes[dt])
    tol = {"rtol": min(w[3] for w in d.workloads), "atol": min(w[2] for w in d.workloads)}
    if len(codes) == 1:
        code = codes.pop()
        out["dtypes"] = [code]
        out["tolerance"] = {code: dict(tol)}
    elif dtypes and all(dt in codes for dt in dtypes):
        out["tolerance"] = {dt: dict(tol) for dt in dtypes}
    return out
