"""The GPU harness shared by the functional test and the benchmark: one *call* of an operator.

A call is (kernel, variant, shape): the kernel's ``tensors`` (else the operator's) give
reference.py's inputs and outputs, each in its ``dtype`` (default: the variant's) and made by its
``init`` generator (default for floats: seeded ``randn(shape) * scale``; integer tensors name
theirs: ``randint``, ``sorted``, ``range``, ``permutation``, ``offsets``, ``full``; see
:func:`int_values`; an output with ``copy`` starts as a copy of an input: the buffer of an
in-place kernel; ``derive`` computes a tensor with a reference.py function from the inputs
before it, see :func:`derive`), a tensor with ``count`` being a list; the kernel's ``bind`` maps its
parameters to tensors, views (``x[:, :N]``) and scalars (``1.0 / N``, cast to the scalar's
type); the kernel's ``grid`` expression gives the launch grid. The *same* grid, arguments and
input memory go to three sides (four where NVIDIA ported the kernel), each writing its own output
buffers (filled with the tensor's ``init`` when it has one, else NaN); the kernel sides launch on
one stream fetched once when the call is built (the current torch stream then), so their host
paths per call are alike:

* ``ref``  -- the cuTile Python kernel, ``ct.launch`` on the current torch stream;
* ``ref_matched`` -- the same kernel and launch, compiled under the port's launch facts about the
  call's tensors (:mod:`tileport.gpu.matched`; the benchmark's matched reading);
* ``port`` -- the cuTile Rust kernel through its C shim (:class:`tileport.host.ffi.HostLibrary`);
* ``torch`` -- ``reference.torch_impl`` (PyTorch's native-dtype ATen/cuBLAS path; falls back to
  ``reference.reference``);
* ``nv`` -- NVIDIA's shipped cuTile Rust port of the same TileGym kernel through its own C function
  (:class:`tileport.nvidia.ffi.NvSide`), bound from the reference launch's arguments; absent (None,
  with ``nv_note`` saying why) for kernels NVIDIA did not port or variants it does not implement.

``expected()`` is ``reference.reference`` (or the kernel's ``reference:`` function; the
PyTorch semantics, usually in fp32), the oracle
both kernels are compared against with the manifest's per-dtype rtol/atol (:class:`Expected`;
an output the kernel's ``error_scale`` names also carries the magnitude its error scales with,
which :func:`compare` uses in place of |expected| where it is larger). The reference and
torch functions take the inputs positionally and, as keyword-only parameters, any constexpr,
shape name, hint, ``num_sms`` or bound scalar of the call by name (:func:`keywords_for`:
dropout's ``P``/``SEED``, a norm's ``eps``, a mode flag). Expressions are
evaluated with Python's ``eval`` over shape names, constexprs, ``hints``, ``num_sms``,
``cdiv``/``min``/``max``/``sqrt`` and the tensors: a manifest is code, like kernel.py.
"""
from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tileport.core.source import kernel_py
from tileport.host import ffi as host_ffi
from tileport.model import manifest as tp_manifest
from tileport.model import torch_uses
from tileport.model.manifest import base_env
from tileport.nvidia.ffi import NvError

_TORCH_DTYPES = {code: torch_name for code, (_, torch_name, _) in tp_manifest.DTYPES.items()}


class HarnessError(ValueError):
    """A manifest expression or an operator module cannot be used (names file and cause)."""


class ManifestValueError(HarnessError):
    """A manifest expression fails or gives an unusable value (the manifest's to fix: owner
    ``manifest``)."""


class NoGpu(RuntimeError):
    """No usable CUDA device (torch missing, no driver, no device); the message says which."""


def probe_gpu() -> str:
    """Return the device name of CUDA device 0.

    Raises:
        NoGpu: torch cannot be imported, or torch sees no CUDA device.
    """
    try:
        import torch
    except ImportError:
        raise NoGpu("torch is not installed") from None
    if not torch.cuda.is_available():
        raise NoGpu("torch sees no CUDA device (torch.cuda.is_available() is False)")
    return torch.cuda.get_device_name(0)


def load_module(path: str | Path, name: str):
    """Import a Python file as a module (kernel.py / reference.py of an operator).

    Raises:
        HarnessError: the file is missing or raises on import (its traceback's last line).
    """
    path = Path(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or not path.is_file():
        raise HarnessError(f"{path}: no such file")
    mod = importlib.util.module_from_spec(spec)
    try:
        if path.name == "kernel.py":     # torch / cupy dtypes in kernel bodies as cuTile's own
            torch_uses.exec_kernel_module(mod, path)
        else:
            spec.loader.exec_module(mod)
    except Exception as exc:  # user code: any failure is a named error
        line = ""
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == str(path):
                line = f":{tb.tb_lineno}"
            tb = tb.tb_next
        raise HarnessError(f"{path}{line}: import failed: {type(exc).__name__}: {exc}") from None
    return mod


def operator_files(op_dir: str | Path) -> tuple[bytes, bytes, bytes]:
    """The bytes of an operator's own files: kernel.py (the one the stages read,
    :func:`tileport.core.source.kernel_py`: results/<op>/src/kernel.py for an imported source),
    reference.py, manifest.yaml; a missing one is empty."""
    op_dir = Path(op_dir)
    return tuple(p.read_bytes() if p.is_file() else b""
                 for p in (kernel_py(op_dir), op_dir / "reference.py", op_dir / "manifest.yaml"))


def inputs_sha_of(kernel: bytes, reference: bytes, manifest: bytes) -> str:
    """sha256 (hex) over the three files' bytes, each after its name (see :func:`inputs_sha`)."""
    import hashlib

    h = hashlib.sha256()
    for name, data in (("kernel.py", kernel), ("reference.py", reference), ("manifest.yaml", manifest)):
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def inputs_sha(op_dir: str | Path) -> str:
    """sha256 over an operator's own files (:func:`operator_files`): recorded by the GPU stages,
    compared by the summary to flag results of files that changed since."""
    return inputs_sha_of(*operator_files(op_dir))


def evaluate(expr, env: dict, where: str):
    """Value of a manifest expression (numbers pass through).

    Raises:
        HarnessError: naming ``where`` (manifest file and key), the expression and the cause.
    """
    if isinstance(expr, (int, float)):
        return expr
    try:
        return eval(compile(expr, where, "eval"), {"__builtins__": {}}, dict(env))
    except Exception as exc:
        hint = ""
        if isinstance(exc, NameError):
            names = sorted(k for k in env if isinstance(k, str) and not k.startswith("_"))
            hint = f"; an expression here may use {', '.join(names[:40])}{' ...' if len(names) > 40 else ''}"
        raise ManifestValueError(f"{where}: expression {expr!r}: {type(exc).__name__}: {exc}{hint}") from None


def fits(man: dict, shape: list[int], constexprs: dict, key: str = "fits", kernel: str | None = None) -> bool:
    """The manifest's ``fits`` (or ``perf_fits``) predicate, default True, for one shape and
    config: ``kernel``'s own predicate where it has one, else the operator's. For ``fits``, also
    every shape name that is also a constexpr name must equal the constexpr (a kernel compiled
    for ``N: 4096`` runs on shapes with N = 4096 only). Raises :class:`HarnessError` for a bad
    expression."""
    if key == "fits" and any(constexprs[n] != v for n, v in zip(man["shape_names"], shape) if n in constexprs):
        return False
    own = man["kernels"][kernel].get(key) if kernel is not None else None
    expr = own if own is not None else man.get(key, "True")
    where = f"{man['_path']}: {'kernels/' + kernel + '/' if own is not None else ''}{key}"
    return bool(evaluate(expr, base_env(man, shape, constexprs, 0), where))


def _at(man: dict, keypath: list) -> str:
    """``<manifest>:<line>: key 'a/b/c'`` (as :func:`tileport.model.manifest.load`'s errors) for an error
    found after loading (the line read again from the file; ``<manifest>`` alone when unreadable)."""
    path = man.get("_path", "manifest.yaml")
    try:
        line = tp_manifest._yaml_line(Path(path).read_text(), keypath)
    except (OSError, UnicodeDecodeError):
        line = None
    return f"{path}:{line or 1}: key '{'/'.join(map(str, keypath))}'"


def tolerance(man: dict, variant: tp_manifest.Variant, shape) -> dict:
    """``{"rtol", "atol"}`` (floats) of ``variant``'s dtype for one call of ``shape``: the
    manifest's ``tolerance.<dtype>`` numbers, or expressions over shape names, constexprs and
    hints (``atol: "2 ** -13 * 0.64 * K"`` for an accumulation whose error grows with K).

    Raises:
        ManifestValueError: an expression that fails, or a value below 0, naming the key.
    """
    tol = man["tolerance"][variant.dtype]
    if all(isinstance(tol[k], (int, float)) and not isinstance(tol[k], bool) and tp_manifest._finite(tol[k])
           and tol[k] >= 0 for k in ("rtol", "atol")):
        return {k: float(tol[k]) for k in ("rtol", "atol")}
    env = base_env(man, list(shape), variant.constexprs, 0)
    out = {}
    for key in ("rtol", "atol"):
        where = _at(man, ["tolerance", variant.dtype, key])
        v = evaluate(tol[key], env, where)
        try:
            f = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        except OverflowError:       # an int past float's range (10 ** 400)
            f = math.inf
        # an infinite or NaN allowance passes every element (compare): a test that cannot fail
        if f is None or not math.isfinite(f) or not f >= 0:
            raise ManifestValueError(f"{where}: {tol[key]!r} gives {repr(v)[:60]} for shape {tuple(shape)}; "
                                     f"a tolerance is a finite number >= 0")
        out[key] = f
    return out


def cases(man: dict, kind: str) -> list[tuple[str, tp_manifest.Variant, tuple[int, ...]]]:
    """(kernel, variant, shape) of every ``test_shapes`` (kind ``test``) or ``perf_shapes``
    (kind ``perf``: also ``perf_fits``) entry that fits the variant, over each kernel's own
    variants (:func:`tileport.model.manifest.variants`) and predicates (:func:`fits`), in manifest
    order."""
    shapes = man["test_shapes" if kind == "test" else "perf_shapes"]
    return [(k, v, tuple(s)) for k in man["kernels"] for v in tp_manifest.variants(man, k) for s in shapes
            if fits(man, s, v.constexprs, kernel=k)
            and (kind == "test" or fits(man, s, v.constexprs, "perf_fits", kernel=k))]


def tensor_free_binds(man: dict, kernel: str, env: dict) -> dict:
    """The kernel's ``bind`` entries that name no tensor, evaluated over ``env`` (:func:`base_env`)
    and kept where they are numbers: the bound scalars known before any tensor is made
    (``qk_scale: "D ** -0.5"``), which a ``derive`` function may take as keywords as reference.py's
    functions do (:func:`reference_names`). An entry reading a name ``env`` lacks (a tensor, a
    view) is left for the call. Raises :class:`ManifestValueError` for an entry over ``env``'s
    names that fails."""
    out = {}
    for name, expr in (man["kernels"][kernel].get("bind") or {}).items():
        if not isinstance(expr, (int, float, str)) or isinstance(expr, bool):
            continue
        if isinstance(expr, str):
            try:
                names = tp_manifest.free_names(expr)
            except SyntaxError:
                continue                 # the call's own evaluation names the manifest's error
            if not names <= set(env):
                continue
        val = evaluate(expr, env, f"{man['_path']}: kernels/{kernel}/bind/{name}")
        if isinstance(val, (int, float)):
            out[name] = val
    return out


def reference_names(env: dict, scalars: dict) -> tuple[dict, dict]:
    """The names reference.py's keyword-only parameters may take (:func:`keywords_for`), and the
    bound scalars they shadow. ``env``: :func:`base_env` (shape names, constexprs, hints,
    ``num_sms``); ``scalars``: the kernel's scalar arguments by parameter name, as ``bind`` gives
    them. The manifest's own names win: a kernel scalar that shares a shape name's name but is
    bound to another value (tg_mhc's finalize kernel takes ``N`` = ``N * N + 2 * N`` = 24 where
    the shape name N, the expansion rate, is 4) reaches reference.py as the shape name, which is
    the name reference.py is written against. Returns ``(names, shadowed)``, ``shadowed`` =
    ``{name: (manifest value, bound scalar value)}`` for each such collision."""
    shadowed = {k: (env[k], v) for k, v in scalars.items() if k in env and env[k] != v}
    return {**scalars, **env}, shadowed


def keywords_for(fn, names: dict, where: str) -> dict:
    """The keyword-only arguments of ``fn`` (a reference.py function) from ``names``: the call's
    constexprs, shape names, hints, ``num_sms`` and bound scalars (:func:`build_call`,
    :func:`reference_names`: a shape name, constexpr or hint wins over a bound scalar of the
    same name), so a
    reference can depend on a variant's constexprs (``def reference(x, *, P, SEED)``).
    Positional parameters are the tensors and get nothing here; a keyword-only parameter with a
    default keeps it when ``names`` lacks it.

    Raises:
        ManifestValueError: a keyword-only parameter without a default that ``names`` lacks
            (the message names ``where``, the function and the names it could use).
    """
    import inspect

    out = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind != inspect.Parameter.KEYWORD_ONLY:
            continue
        if p.name in names:
            out[p.name] = names[p.name]
        elif p.default is inspect.Parameter.empty:
            known = sorted(k for k, v in names.items() if isinstance(k, str) and not callable(v))
            raise ManifestValueError(
                f"{where}: reference.py's {fn.__name__}() takes the keyword-only parameter {p.name}, "
                f"which is no constexpr, shape name, hint or bound scalar of this call; it may take "
                f"{', '.join(known[:40])}")
    return out


def int_values(kind: str, args: list, numel: int, seed: int, where: str):
    """The values an integer generator makes for a tensor of ``numel`` elements (row-major),
    as a numpy int64 array; ``args`` are already evaluated. Deterministic in ``seed``.

    * ``randint [lo, hi]``: uniform in [lo, hi);  ``sorted [lo, hi]``: the same, ascending;
    * ``range`` / ``range start``: start, start + 1, ... (start 0 by default);
    * ``permutation`` / ``permutation n``: the first ``numel`` of a random permutation of
      0..n-1 (n = numel by default; distinct indices, e.g. for a scatter without collisions);
    * ``offsets total``: ascending from 0 to ``total`` inclusive, random steps (segment starts
      such as cu_seqlens; numel >= 2);
    * ``full v``: every element v.

    Raises:
        ManifestValueError: bounds that cannot hold ``numel`` values (naming ``where``).
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    ints = [int(a) for a in args]
    if kind in ("randint", "sorted"):
        lo, hi = ints
        if hi <= lo:
            raise ManifestValueError(f"{where}: init {kind}: [{lo}, {hi}) holds no value; the upper "
                                     f"bound must exceed the lower one")
        v = rng.integers(lo, hi, numel, dtype=np.int64)
        return np.sort(v) if kind == "sorted" else v
    if kind == "range":
        return np.arange(numel, dtype=np.int64) + (ints[0] if ints else 0)
    if kind == "permutation":
        n = ints[0] if ints else numel
        if n < numel:
            raise ManifestValueError(f"{where}: init permutation {n}: a permutation of {n} values cannot "
                                     f"fill {numel} elements; give n >= {numel}")
        return rng.permutation(n)[:numel].astype(np.int64)
    if kind == "offsets":
        total, = ints
        if numel < 2:
            raise ManifestValueError(f"{where}: init offsets needs at least 2 elements (0 and {total})")
        inner = np.sort(rng.integers(0, total + 1, numel - 2, dtype=np.int64))
        return np.concatenate([[0], inner, [total]]).astype(np.int64)
    if kind == "full":
        return np.full(numel, ints[0], dtype=np.int64)
    raise ManifestValueError(f"{where}: init {kind} makes floats, not integers")


def tensor_plan(man: dict, kernel: str, variant: tp_manifest.Variant, env: dict) -> list[dict]:
    """The tensors of one call of ``kernel``, without allocating them: per tensor its name,
    role, dtype code, generator and evaluated arguments, scale, and the shape of each element
    (one shape, or ``count`` shapes for a list; ``i`` in a shape expression is the element's
    index). Raises :class:`ManifestValueError` for a bad expression or a non-positive extent."""
    mpath = man["_path"]
    tensors = tp_manifest.kernel_tensors(man, kernel)
    base = f"kernels/{kernel}/tensors" if "tensors" in man["kernels"][kernel] else "tensors"
    plan = []
    for name, t in tensors.items():
        where = f"{mpath}: {base}/{name}"
        dtype = tp_manifest.resolve_dtype(t.get("dtype"), variant.dtype)
        count = int(evaluate(t["count"], env, f"{where}/count")) if "count" in t else None
        shapes = []
        for i in range(count if count is not None else 1):
            e = {**env, "i": i} if count is not None else env
            dims = tuple(int(evaluate(x, e, f"{where}/shape")) for x in t["shape"])
            if any(d < 0 for d in dims):
                raise ManifestValueError(f"{where}/shape: {list(dims)} has a negative extent")
            shapes.append(dims)
        kind, args = tp_manifest.init_spec(t)
        plan.append({"name": name, "role": t["role"], "dtype": dtype, "init": kind,
                     "init_given": "init" in t,
                     "args": args if kind in ("derive", "copy") else [evaluate(a, env, f"{where}/init")
                                                                   for a in args],
                     "scale": evaluate(t["scale"], env, f"{where}/scale") if "scale" in t else None,
                     "shapes": shapes, "list": count is not None, "where": where})
    return plan


@dataclass
class Call:
    """One (kernel, variant, shape) call, ready to run on the three sides (see module doc)."""

    op: str
    kernel: str
    variant: tp_manifest.Variant
    shape: tuple
    grid: tuple
    inputs: list                 # reference.py's positional inputs (torch tensors)
    outputs: dict                # side -> list of output tensors that side writes
    ref: callable
    port: callable
    torch: callable
    expected: callable           # -> Expected: the reference semantics (and error scales)
    symbol: str = ""
    notes: list = field(default_factory=list)
    nv: callable = None          # NVIDIA's port (None: not ported / not usable, see nv_note)
    nv_note: str = ""
    # puts the given first values back into every side's outputs that have them (init copy, full,
    # ...: reset_sources); a no-op for a call without them. The benchmark calls it before the
    # calls whose outputs it checks.
    reset: callable = lambda: None
    in_place: bool = False       # some output starts from given values (init copy / full ...: reset() matters)
    # what port() hands the host library: (arrays, scalars, constexprs, grid, device), for tools
    # that time the host path in parts (tileport.gpu.hostbench)
    port_args: tuple = ()
    # the reference under the port's launch facts (tileport.gpu.matched; the benchmark's matched
    # reading) and its kernel object (.notes: what could not be matched, .symbols: what compiled)
    ref_matched: callable = None
    matched: object = None


def copy_sources(plan: list[dict], tensors_in: dict) -> dict:
    """``{output name: [input tensor, ...]}`` for the outputs of ``plan`` made by ``init: {copy:
    src}`` (:func:`tensor_plan`): the input tensors (one per list element) whose values each
    starts with. Raises :class:`ManifestValueError` when an output's shape or dtype differs from
    its source's (the manifest's ``shape`` expressions evaluate differently)."""
    out = {}
    for spec in plan:
        if spec["init"] != "copy" or spec["role"] != "output":
            continue
        src = spec["args"][0]
        if src not in tensors_in:
            raise ManifestValueError(f"{spec['where']}/init: copy names '{src}', which is not an input "
                                     f"tensor of this call")
        xs = tensors_in[src] if isinstance(tensors_in[src], list) else [tensors_in[src]]
        got = [tuple(x.shape) for x in xs]
        if got != list(spec["shapes"]):
            raise ManifestValueError(f"{spec['where']}/init: copy of '{src}': its shape {got} differs from "
                                     f"this tensor's {list(spec['shapes'])}; give both the same shape")
        want = _TORCH_DTYPES[spec["dtype"]]
        if any(str(x.dtype) != f"torch.{want}" for x in xs):
            raise ManifestValueError(f"{spec['where']}/init: copy of '{src}': its dtype {xs[0].dtype} is not "
                                     f"this tensor's {spec['dtype']}; give both the same dtype")
        out[spec["name"]] = xs
    return out


def _make(spec: dict, dims: tuple, dev, gen, seed: int, k: int):
    """One tensor of ``spec`` (:func:`tensor_plan`) with shape ``dims`` on ``dev``."""
    import torch

    tdt = getattr(torch, _TORCH_DTYPES[spec["dtype"]])
    kind, args = spec["init"], spec["args"]
    if tp_manifest.DTYPES[spec["dtype"]][2] in ("int", "uint", "bool") or kind in ("randint", "sorted", "range",
                                                                         "permutation", "offsets"):
        n = math.prod(dims)
        vals = int_values(kind, args, n, seed * 1000003 + k, spec["where"] + "/init")
        return torch.as_tensor(vals).reshape(dims).to(device=dev, dtype=tdt)
    if kind == "full":          # made in fp32 and cast: torch has no fill for every dtype (fp8)
        return torch.full(dims, float(args[0]), device=dev, dtype=torch.float32).to(tdt)
    if kind == "uniform":
        lo, hi = (float(a) for a in args)
        x = torch.rand(dims, device=dev, dtype=torch.float32, generator=gen) * (hi - lo) + lo
        return x.to(tdt)
    x = torch.randn(dims, device=dev, dtype=torch.float32, generator=gen)
    if spec["scale"] is not None:
        x = x * float(spec["scale"])
    return x.to(tdt)


def derive(spec: dict, dims: tuple, rmod, inputs: list, env: dict | None = None):
    """The values of a tensor made by ``init: {derive: fn}``: reference.py's ``fn`` called with
    the input tensors made before this one, in the manifest's order (the arguments reference.py
    itself receives), and its keyword-only parameters from ``env`` as reference.py's functions
    get them (:func:`keyword_args`); e.g. a pipeline stage's input computed by the earlier
    stage's semantics, or routing index arrays that must agree with each other. Works on any
    array type with ``shape`` and ``dtype`` (torch tensors on the GPU, numpy arrays in the tests).

    Raises:
        ManifestValueError: reference.py lacks ``fn``, ``fn`` fails, or its result's shape or
            dtype differs from the tensor's in the manifest (naming the tensor's manifest key).
    """
    name, where = spec["args"][0], spec["where"] + "/init"
    fn = getattr(rmod, name, None)
    if not callable(fn):
        raise ManifestValueError(f"{where}: derive: reference.py has no function {name}(); write the "
                                 f"function that computes tensor '{spec['name']}' from the inputs before it")
    kwargs = keywords_for(fn, env, f"{where}: derive: reference.py {name}()") if env is not None else {}
    try:
        val = fn(*inputs, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the manifest names a function that cannot make it
        raise ManifestValueError(f"{where}: derive: {name}() failed: {type(exc).__name__}: {exc}") from None
    shape, dtype = tuple(getattr(val, "shape", ())), str(getattr(val, "dtype", "?")).rsplit(".", 1)[-1]
    if shape != tuple(dims) or dtype != _TORCH_DTYPES[spec["dtype"]]:
        raise ManifestValueError(f"{where}: derive: {name}() returned {dtype} {list(shape)}, but tensor "
                                 f"'{spec['name']}' is {_TORCH_DTYPES[spec['dtype']]} {list(dims)}; return "
                                 f"that shape and dtype (or correct the tensor's shape/dtype)")
    return val


def _flat(xs) -> list:
    out = []
    for x in xs:
        out.extend(x if isinstance(x, (list, tuple)) else [x])
    return out


@dataclass
class Expected:
    """What one call's outputs are checked against: reference.py's values, flattened as
    :attr:`Call.outputs` are (list elements in order), and per value its *error scale*: None
    (the allowance is ``atol + rtol * |expected|``) or a tensor of the value's shape, finite and
    >= 0, where the manifest's ``kernels.<k>.error_scale`` names the output (the allowance is
    ``atol + rtol * max(|expected|, scale)``: :func:`compare`). An output that is a sum whose terms
    cancel has an error that scales with its terms, not with the small sum (lg_modulated_rms_norm's
    ``y * (1 + scale) + shift``): its reference returns that magnitude. Built by
    :func:`split_expected`."""

    values: list
    scales: list

    def __post_init__(self):
        if len(self.scales) != len(self.values):
            raise ValueError(f"Expected: {len(self.values)} value(s) but {len(self.scales)} scale(s)")

    @classmethod
    def plain(cls, values) -> "Expected":
        """Values without error scales (the allowance relative to |expected| everywhere)."""
        values = list(values)
        return cls(values, [None] * len(values))


def split_expected(returned, outputs: list[tuple[str, int, bool]], scaled: list[str], fn: str,
                   where: str) -> Expected:
    """reference.py's return value as :class:`Expected`, checked against the manifest.

    ``outputs``: ``(name, elements, is_list)`` per output tensor of the call, in order (what
    :attr:`Call.outputs` flattens); ``scaled``: the kernel's ``error_scale`` (output names, in
    order; ``[]`` without the key). Without ``error_scale`` the return value is flattened as
    before (a tensor, or a tuple / list of tensors and lists of tensors), every scale None. With
    it, the function returns its outputs in order and then one error scale per name of
    ``error_scale``, in that order: each scale a tensor of its output's shape, finite, >= 0.
    ``fn``: the function's name, ``where``: ``<manifest>:<line>: key 'kernels/<k>/error_scale'``
    (:func:`_at`; both for messages).

    Raises:
        ManifestValueError: (naming reference.py's function and ``<where>/error_scale``) a
            return value without the scales the manifest declares (or with more values than
            outputs and scales), a scale that is no tensor, of another shape than its output's
            value, or holding NaN, an infinity or a negative element (its index and value).
    """
    flat = _flat(returned if isinstance(returned, (tuple, list)) else [returned])
    if not scaled:
        return Expected.plain(flat)
    key = where
    n_out = sum(n for _, n, _ in outputs)
    want = n_out + len(scaled)
    if len(flat) != want:
        names = ", ".join(n for n, _, _ in outputs)
        raise ManifestValueError(
            f"{key}: reference.py's {fn}() returned {len(flat)} tensor(s); the manifest declares an error "
            f"scale for {', '.join(scaled)}, so it returns its {n_out} output tensor(s) ({names}) and then "
            f"one error scale per name of error_scale, in that order: {want} tensor(s)"
            + (" (is an error scale missing?)" if len(flat) < want else ""))
    values, scales = flat[:n_out], [None] * n_out
    first = {}
    k = 0
    for name, n, _ in outputs:
        first[name] = k
        k += n
    for name, s in zip(scaled, flat[n_out:]):
        i = first[name]
        v = values[i]
        what = f"{key}: reference.py's {fn}() returned as the error scale of {name}"
        if not hasattr(s, "shape") or not hasattr(s, "double"):
            raise ManifestValueError(f"{what} {type(s).__name__}, not a tensor; return a tensor of {name}'s "
                                     f"shape {tuple(getattr(v, 'shape', ()))}")
        if tuple(s.shape) != tuple(v.shape):
            raise ManifestValueError(f"{what} a tensor of shape {tuple(s.shape)}, but {name}'s expected value "
                                     f"has shape {tuple(v.shape)}; an error scale has its output's shape")
        d = s.double()
        bad = ~d.isfinite() | (d < 0)
        if bool(bad.any()):
            j = int(bad.flatten().nonzero()[0][0])
            idx = []
            for ext in reversed(tuple(s.shape)):
                idx.insert(0, j % ext)
                j //= ext
            val = float(d[tuple(idx)])
            kind = "NaN" if math.isnan(val) else "an infinity" if math.isinf(val) else "a negative value"
            raise ManifestValueError(f"{what} {kind} ({val!r} at index {idx}, {int(bad.sum())} element(s) "
                                     f"like it); an error scale is finite and >= 0 (a magnitude, e.g. the "
                                     f"sum of the absolute values of the terms the output adds)")
        scales[i] = s
    return Expected(values, scales)


def reset_sources(plan: list[dict], outs_spec: list[tuple], copies: dict) -> list:
    """What :attr:`Call.reset` puts back into each output buffer (flattened as the outputs are,
    list elements in order): for an output whose first values the manifest gives, those values
    -- the input's for ``init: {copy: src}`` (an array updated in place, ``copies``:
    :func:`copy_sources`), the generated tensor for any other ``init`` (``{full: 0.0}``: one a
    kernel accumulates into with atomic adds) -- else None (an output the kernel overwrites).
    ``outs_spec``: ``(name, [initial tensor, ...], is_list)`` per output, in plan order. So a
    check after repeated calls (the benchmark's) sees one call's result, not the sum of all of
    them (tg_moe_actgrad_bwd's ``ds``, zeros that every call adds its routing-score gradient to)."""
    given = {spec["name"] for spec in plan if spec["role"] == "output" and spec["init_given"]}
    return [copies[name][e] if name in copies else made[e] if name in given else None
            for name, made, _ in outs_spec for e in range(len(made))]


def build_call(op_dir: str | Path, man: dict, kmod, rmod, kernel_params: list[dict], kernel: str,
               variant: tp_manifest.Variant, shape, lib, symbol: str, seed: int = 0, device: int = 0,
               nv=None) -> Call:
    """Allocate the tensors of one call and return its :class:`Call`.

    ``kernel_params``: the analysis' parameter list of ``kernel`` (order, kinds, dtypes). ``lib``:
    a :class:`tileport.host.ffi.HostLibrary` (or None: the port side then raises). ``nv``: the
    :class:`tileport.nvidia.ffi.NvSide` of this kernel, or None; a binding it refuses (a variant it
    does not implement, a tensor dtype its FFI would misread) leaves ``Call.nv`` None with the
    reason in ``Call.nv_note``, never an error of the call. Raises :class:`HarnessError` for a
    bad expression or binding (:class:`ManifestValueError` when the manifest is the cause: an
    expression, a generator's bounds, a bound tensor whose dtype is not the kernel's array dtype,
    a reference function reference.py lacks).
    """
    import torch

    mpath = man["_path"]
    kman = man["kernels"][kernel]
    dev = torch.device("cuda", device)
    num_sms = torch.cuda.get_device_properties(dev).multi_processor_count
    env = base_env(man, list(shape), variant.constexprs, num_sms)
    gen = torch.Generator(device=dev).manual_seed(seed)
    plan = tensor_plan(man, kernel, variant, env)
    # a derive function takes what reference.py's functions take, but the bound scalars that need
    # a tensor (those are made here)
    derive_env = reference_names(env, tensor_free_binds(man, kernel, env))[0]
    tensors_in, outs_spec, k = {}, [], 0
    for spec in plan:
        made = []
        for dims in spec["shapes"]:
            k += 1
            if spec["init"] == "derive":
                before = [tensors_in[sp["name"]] for sp in plan if sp["name"] in tensors_in]
                made.append(derive(spec, dims, rmod, before, derive_env).to(dev).contiguous())
            elif spec["init"] == "copy":
                made.append(None)       # the input's values, once every input is made (below)
            elif spec["role"] == "input" or spec["init_given"]:
                made.append(_make(spec, dims, dev, gen, seed, k))
            else:
                made.append(torch.full(dims, float("nan"), device=dev, dtype=torch.float32).to(
                    getattr(torch, _TORCH_DTYPES[spec["dtype"]])))
        if spec["role"] == "input":
            tensors_in[spec["name"]] = made if spec["list"] else made[0]
        else:
            outs_spec.append((spec["name"], made, spec["list"]))
    copies = copy_sources(plan, tensors_in)
    for name, made, _ in outs_spec:
        if name in copies:
            made[:] = [x.clone() for x in copies[name]]
    outputs = {s: [[m.clone() for m in made] if lst else made[0].clone() for _, made, lst in outs_spec]
               for s in ("ref", "port") + (("nv",) if nv is not None else ())}

    def array_dtype(p) -> str:
        return tp_manifest.resolve_dtype(p.get("dtype"), variant.dtype)

    def args_for(side: str) -> tuple[dict, dict]:
        space = {**env, **tensors_in, **{n: o for (n, _, _), o in zip(outs_spec, outputs[side])}}
        bind = kman.get("bind", {})
        arrays, scalars = {}, {}
        for p in kernel_params:
            where = f"{mpath}: kernels/{kernel}/bind/{p['name']}"
            if p["kind"] == "array":
                val = evaluate(bind.get(p["name"], p["name"]), space, where)
                want = getattr(torch, _TORCH_DTYPES[array_dtype(p)])
                for x in (val if isinstance(val, (list, tuple)) else [val]):
                    if getattr(x, "dtype", want) != want:
                        raise ManifestValueError(
                            f"{where}: the tensor bound to {p['name']} is {x.dtype}, but {kernel}'s array "
                            f"{p['name']} is {array_dtype(p)} in variant {variant.id}; give the tensor "
                            f"dtype: {array_dtype(p)} (or the array the tensor's dtype)")
                arrays[p["name"]] = list(val) if p.get("list") else val
            elif p["kind"].startswith("scalar"):
                expr = bind.get(p["name"])
                if expr is None:
                    raise ManifestValueError(f"{mpath}: kernels/{kernel}/bind: no value for scalar "
                                             f"{p['name']}; write {p['name']}: <expression> under bind")
                v = evaluate(expr, space, where)
                scalars[p["name"]] = float(v) if p.get("dtype", "f32").startswith("f") else int(v)
        return arrays, scalars

    g = evaluate(kman["grid"], env, f"{mpath}: kernels/{kernel}/grid")
    grid = tuple(int(x) for x in (tuple(g) + (1, 1, 1))[:3])
    kfn = getattr(kmod, kernel)
    if variant.hints:                   # as the launch code: kernel.replace_hints(...)
        kfn = kfn.replace_hints(**variant.hints)
    ra, rs = args_for("ref")
    ref_args = []
    for p in kernel_params:
        if p["kind"] == "array":
            ref_args.append(ra[p["name"]])
        elif p["kind"].startswith("scalar"):
            ref_args.append(rs[p["name"]])
        else:
            ref_args.append(variant.constexprs[p["name"]])
    ref_args = tuple(ref_args)
    import cuda.tile as ct

    # every side launches on this stream, fetched once here: no side pays a stream lookup per
    # call in a loop (torch.cuda.current_stream() costs ~4.8 µs on the H200: docs/gpu-stages.md)
    stream = torch.cuda.current_stream(dev)
    # imported here: the matched reference (launch facts, IR parsing) is needed only on a GPU, and
    # every GPU-side job imports this module (issue 32: 500 such jobs on a machine without one)
    from tileport.gpu.matched import matched_kernel

    mk = matched_kernel(kfn, ref_args, kernel_params)

    def ref():
        ct.launch(stream, grid, kfn, ref_args)

    def ref_matched():
        ct.launch(stream, grid, mk, ref_args)

    pa, ps = args_for("port")
    # the bound shim, looked up once (a loop of calls pays no lookup); an unknown symbol goes
    # through lib.call, which names it
    shim = getattr(lib, "shims", {}).get(symbol)
    cx = variant.constexprs

    def port():
        if shim is not None:
            shim(pa, ps, cx, grid, stream, device)
        elif lib is None:
            raise RuntimeError("no host library")
        else:
            lib.call(symbol, pa, ps, cx, grid, stream=stream, device=device)

    ins = [tensors_in[sp["name"]] for sp in plan if sp["role"] == "input"]
    ref_name = kman.get("reference", "reference")
    semantics = getattr(rmod, ref_name, None)
    if semantics is None:
        raise ManifestValueError(f"{mpath}: kernels/{kernel}/reference: reference.py has no function "
                                 f"{ref_name}(); write the name of the function that computes {kernel}'s "
                                 f"outputs")
    timed = kman.get("torch_impl") or ("torch_impl" if ref_name == "reference" else None)
    fast = getattr(rmod, timed, None) if timed else None
    box = {}
    names, shadowed = reference_names(env, rs)
    where = f"{mpath}: kernels/{kernel}"
    sem_kw = keywords_for(semantics, names, where)
    fast_kw = keywords_for(fast, names, where) if fast else sem_kw
    shadow_notes = [f"reference.py's keyword {k} is the manifest's {k} = {mine!r}, not {kernel}'s scalar "
                    f"{k} bound to {bound!r}" for k, (mine, bound) in shadowed.items()
                    if k in sem_kw or k in fast_kw]

    def torch_side():
        box["out"] = (fast or semantics)(*ins, **fast_kw)

    scaled = list(kman.get("error_scale") or [])
    out_shape = [(name, len(made), lst) for name, made, lst in outs_spec]

    scale_key = _at(man, ["kernels", kernel, "error_scale"]) if scaled else ""

    def expected() -> Expected:
        return split_expected(semantics(*ins, **sem_kw), out_shape, scaled, ref_name, scale_key)

    notes = [] if fast else [f"reference.py has no {timed or 'torch_impl'} for {kernel}: timed {ref_name}()"]
    notes += shadow_notes
    nv_fn, nv_note = None, ""
    if nv is not None:

        na, ns = args_for("nv")
        try:
            nv_fn = nv.bind({**na, **ns}, variant.constexprs, grid, variant.dtype, device=device,
                            stream=stream.cuda_stream)
        except NvError as exc:
            nv_note = f"NVIDIA's port not run: {exc}"[:600]
            outputs.pop("nv", None)
    flat_outputs = {s: _flat(o) for s, o in outputs.items()}
    srcs = reset_sources(plan, outs_spec, copies)
    restore = [(flat_outputs[s][j], src) for s in flat_outputs for j, src in enumerate(srcs)
               if src is not None]

    def reset():
        for out, src in restore:
            out.copy_(src)

    return Call(op=man["op"], kernel=kernel, variant=variant, shape=tuple(shape), grid=grid,
                inputs=ins, outputs=flat_outputs, ref=ref, port=port, torch=torch_side,
                expected=expected, symbol=symbol, notes=notes, nv=nv_fn, nv_note=nv_note,
                reset=reset, in_place=bool(restore),
                port_args=(pa, ps, variant.constexprs, grid, device),
                ref_matched=ref_matched, matched=mk)


def mismatch_text(res: dict, side: str = "port") -> str:
    """One line naming a failed :func:`compare` result of ``side``'s output: how many elements
    are outside tolerance and the worst one (index, actual, expected, allowed |diff|), or the
    shapes when they differ."""
    if res.get("shape"):
        return f"{side} output shape {res['shape'][0]} != expected {res['shape'][1]}"
    w = res.get("worst") or {}
    scale = (f" = atol + rtol * max(|expected|, error scale {w['scale']!r})" if w.get("scale") is not None
             else "")
    return (f"{side} output mismatch: {res.get('mismatches')} of {res.get('numel')} elements "
            f"outside tolerance, worst at index {w.get('index')}: {side} {w.get('actual')!r} vs "
            f"expected {w.get('expected')!r} (allowed |diff| {w.get('allowed')!r}{scale}); max |diff| "
            f"{res.get('max_abs')!r}")


def compare(actual, expected, rtol: float, atol: float, scale=None) -> dict:
    """Elementwise check ``|actual - expected| <= atol + rtol * |expected|`` (NaN equals NaN,
    and an infinity equals the same infinity: e.g. the -inf log-sum-exp of a split-KV decode
    split that holds no key). With ``scale`` (the output's error scale, :class:`Expected`: a
    tensor of ``expected``'s shape, finite, >= 0) the allowance is ``atol + rtol * max(|expected|,
    scale)``: an output whose terms cancel is judged against the magnitude of its terms.

    Returns ``{"ok", "max_abs", "mismatches", "numel", "worst": {"index", "actual", "expected",
    "allowed"}}`` (worst = largest excess over the allowance, ``allowed`` the allowance used
    there; with ``scale`` also ``"scale"``, its value there; None when every element is within).
    Shapes must match (a mismatch is reported as not ok with ``"shape"``).
    """
    import torch

    if tuple(actual.shape) != tuple(expected.shape):
        return {"ok": False, "shape": [list(actual.shape), list(expected.shape)], "max_abs": None,
                "mismatches": None, "numel": actual.numel(), "worst": None}
    a, e = actual.double(), expected.double()
    same = (torch.isnan(a) & torch.isnan(e)) | (torch.isinf(e) & (a == e))
    diff = torch.where(same, torch.zeros_like(a), (a - e).abs())
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    mag = e.abs().nan_to_num(0.0)
    if scale is not None:
        if tuple(scale.shape) != tuple(expected.shape):
            raise ValueError(f"compare: error scale of shape {tuple(scale.shape)} for an output of shape "
                             f"{tuple(expected.shape)}")
        scale = scale.to(device=a.device).double()
        mag = torch.maximum(mag, scale)
    allowed = atol + rtol * mag
    excess = diff - allowed
    bad = excess > 0
    n_bad = int(bad.sum())
    res = {"ok": n_bad == 0, "max_abs": float(diff.max()) if diff.numel() else 0.0,
           "mismatches": n_bad, "numel": a.numel(), "worst": None}
    if n_bad:
        flat = int(torch.argmax(excess.flatten()))
        idx = []
        for d in reversed(a.shape):
            idx.insert(0, flat % d)
            flat //= d
        idx = tuple(idx)
        res["worst"] = {"index": list(idx), "actual": float(a[idx]), "expected": float(e[idx]),
                        "allowed": float(allowed[idx])}
        if scale is not None:
            res["worst"]["scale"] = float(scale[idx])
    return res


def compare_outputs(actual: list, exp: Expected, tol: dict) -> list[dict]:
    """:func:`compare` of each output of one side (``actual``, flattened as :attr:`Call.outputs`)
    with its expected value and error scale (``exp``: :attr:`Call.expected`), under ``tol``
    (``{"rtol", "atol"}``: :func:`tolerance`). The one way every stage checks outputs against
    reference.py (gpu_test, bench, the mutation study, NVIDIA's side)."""
    return [compare(a, e, tol["rtol"], tol["atol"], s) for a, e, s in zip(actual, exp.values, exp.scales)]


def matches_ref(port: list, ref: list, exp: Expected, tol: dict) -> bool:
    """Whether every port output lies within tolerance of the cuTile Python reference's
    (``port_matches_ref``; NaN where it has NaN), the reference's output standing for the
    expected value. There is no PyTorch scale of the two kernels' difference: an output with an
    error scale takes the same call's (``exp``), so the port may differ from the reference by what
    either may differ from reference.py (lg_modulated_rms_norm at n_cols 5000, where the launchers
    specialise differently: one dtype ulp of x * rstd, times (1 + scale), at an output that cancels)."""
    return all(compare(a, b, tol["rtol"], tol["atol"], s)["ok"] for a, b, s in zip(port, ref, exp.scales))


def env_versions() -> dict:
    """Versions of what a GPU result depends on: device, driver, CUDA (torch's), torch,
    cuda-tile, tileiras (``tileiras --version``), ``host_marshal`` (``rust``: the library's
    tp_py_call_t marshals the port's calls, the default; ``python`` with ``TILEPORT_RUST_MARSHAL=0``)
    and, with ``rust``, ``host_reads`` (``dlpack``: it reads torch tensors through torch's DLPack
    exchange table, the default where torch has one; ``capi`` with ``TILEPORT_DLPACK=0`` or an older
    torch: ``tileport.host.ffi.exchange_api``), for test.json / bench.json."""
    import importlib.metadata as md
    import shutil
    import subprocess

    import torch

    out = {"device": torch.cuda.get_device_name(0),
           "capability": "sm_%d%d" % torch.cuda.get_device_capability(0),
           "torch": torch.__version__, "torch_cuda": torch.version.cuda,
           "python": sys.version.split()[0]}
    try:
        drv = torch.cuda.driver_version() if hasattr(torch.cuda, "driver_version") else None
    except Exception:
        drv = None
    if drv is None:
        try:
            import pynvml

            pynvml.nvmlInit()
            drv = pynvml.nvmlSystemGetDriverVersion()
        except Exception:
            drv = None
    out["driver"] = str(drv) if drv else "unknown"
    try:
        out["cuda_tile"] = md.version("cuda-tile")
    except md.PackageNotFoundError:
        out["cuda_tile"] = "unknown"
    import os

    # which marshalling timed the port's host path (tileport/host/ffi.py: the library's tp_py_call_t by
    # default, the Python fast path with TILEPORT_RUST_MARSHAL=0)

    try:
        out["host_marshal"] = "rust" if host_ffi.rust_marshal_env() else "python"
    except ValueError as exc:        # the library refuses to load with it (ffi.HostLibrary)
        out["host_marshal"] = f"invalid: {exc}"
    if out["host_marshal"] == "rust":
        try:
            out["host_reads"] = "dlpack" if host_ffi.dlpack_env() and host_ffi.exchange_api(torch.Tensor) else "capi"
        except ValueError as exc:
            out["host_reads"] = f"invalid: {exc}"
    tileiras = os.environ.get("CUTILE_TILEIRAS_PATH") or shutil.which("tileiras")
    if tileiras:
        try:
            v = subprocess.run([tileiras, "--version"], capture_output=True, text=True, timeout=30)
            text = v.stdout or v.stderr
            out["tileiras"] = next((ln.strip() for ln in text.splitlines() if "release" in ln),
                                   " ".join(text.split())[-120:])
        except (OSError, subprocess.TimeoutExpired):
            out["tileiras"] = "unknown"
    return out
