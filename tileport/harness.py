"""The GPU harness shared by the functional test and the benchmark: one *call* of an operator.

A call is (kernel, variant, shape): the manifest's ``tensors`` give reference.py's inputs
(seeded ``randn(shape) * scale`` in the variant dtype) and outputs; the kernel's ``bind`` maps
its parameters to tensors, views (``x[:, :N]``) and scalars (``1.0 / N``); the manifest's
``grid`` expression gives the launch grid. The *same* grid, arguments and input memory go to
three sides (four where NVIDIA ported the kernel), each writing its own output buffers:

* ``ref``  -- the cuTile Python kernel, ``ct.launch`` on the current torch stream;
* ``port`` -- the cuTile Rust kernel through its C shim (:class:`tileport.ffi.HostLibrary`);
* ``torch`` -- ``reference.torch_impl`` (PyTorch's native-dtype ATen/cuBLAS path; falls back to
  ``reference.reference``);
* ``nv`` -- NVIDIA's shipped cuTile Rust port of the same TileGym kernel through its own C function
  (:class:`tileport.nv_ffi.NvSide`), bound from the reference launch's arguments; absent (None,
  with ``nv_note`` saying why) for kernels NVIDIA did not port or variants it does not implement.

``expected()`` is ``reference.reference`` (the PyTorch semantics, usually in fp32), the oracle
both kernels are compared against with the manifest's per-dtype rtol/atol. Expressions are
evaluated with Python's ``eval`` over shape names, constexprs, ``hints``, ``num_sms``,
``cdiv``/``min``/``max``/``sqrt`` and the tensors: a manifest is code, like kernel.py.
"""
from __future__ import annotations

import importlib.util
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import manifest as M

_TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}


class HarnessError(ValueError):
    """A manifest expression or an operator module cannot be used (names file and cause)."""


class NoGpu(RuntimeError):
    """No usable CUDA device (torch missing, no driver, no device); the message says which."""


def probe_gpu() -> str:
    """Return the device name of CUDA device 0.

    Raises:
        NoGpu: torch cannot be imported, or torch sees no CUDA device.
    """
    try:
        import torch
    except ImportError as exc:
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


def inputs_sha(op_dir: str | Path) -> str:
    """sha256 over an operator's own files (kernel.py, reference.py, manifest.yaml; a missing
    one counts as empty): recorded by the GPU stages, compared by the summary to flag results
    of files that changed since."""
    import hashlib

    h = hashlib.sha256()
    for name in ("kernel.py", "reference.py", "manifest.yaml"):
        p = Path(op_dir) / name
        h.update(name.encode() + b"\0" + (p.read_bytes() if p.is_file() else b"") + b"\0")
    return h.hexdigest()


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
        raise HarnessError(f"{where}: expression {expr!r}: {type(exc).__name__}: {exc}") from None


def fits(man: dict, shape: list[int], constexprs: dict, key: str = "fits") -> bool:
    """The manifest's ``fits`` (or ``perf_fits``) predicate, default True, for one shape and
    config. Raises :class:`HarnessError` for a bad expression."""
    expr = man.get(key, "True")
    return bool(evaluate(expr, base_env(man, shape, constexprs, 0), f"{man['_path']}: {key}"))


def cases(man: dict, kind: str) -> list[tuple[str, M.Variant, tuple[int, ...]]]:
    """(kernel, variant, shape) of every ``test_shapes`` (kind ``test``) or ``perf_shapes``
    (kind ``perf``: also ``perf_fits``) entry that fits the variant, in manifest order."""
    shapes = man["test_shapes" if kind == "test" else "perf_shapes"]
    return [(k, v, tuple(s)) for k in man["kernels"] for v in M.variants(man) for s in shapes
            if fits(man, s, v.constexprs) and (kind == "test" or fits(man, s, v.constexprs, "perf_fits"))]


@dataclass
class Call:
    """One (kernel, variant, shape) call, ready to run on the three sides (see module doc)."""

    op: str
    kernel: str
    variant: M.Variant
    shape: tuple
    grid: tuple
    inputs: list                 # reference.py's positional inputs (torch tensors)
    outputs: dict                # side -> list of output tensors that side writes
    ref: callable
    port: callable
    torch: callable
    expected: callable           # -> list of tensors (reference semantics)
    symbol: str = ""
    notes: list = field(default_factory=list)
    nv: callable = None          # NVIDIA's port (None: not ported / not usable, see nv_note)
    nv_note: str = ""


def build_call(op_dir: str | Path, man: dict, kmod, rmod, kernel_params: list[dict], kernel: str,
               variant: M.Variant, shape, lib, symbol: str, seed: int = 0, device: int = 0,
               nv=None) -> Call:
    """Allocate the tensors of one call and return its :class:`Call`.

    ``kernel_params``: the analysis' parameter list of ``kernel`` (order, kinds). ``lib``: a
    :class:`tileport.ffi.HostLibrary` (or None: the port side then raises). ``nv``: the
    :class:`tileport.nv_ffi.NvSide` of this kernel, or None; a binding it refuses (a variant it
    does not implement, a tensor dtype its FFI would misread) leaves ``Call.nv`` None with the
    reason in ``Call.nv_note``, never an error of the call. Raises :class:`HarnessError` for a bad
    expression or binding.
    """
    import torch

    mpath = man["_path"]
    dev = torch.device("cuda", device)
    num_sms = torch.cuda.get_device_properties(dev).multi_processor_count
    env = base_env(man, list(shape), variant.constexprs, num_sms)
    dtype = getattr(torch, _TORCH_DTYPES[variant.dtype])
    gen = torch.Generator(device=dev).manual_seed(seed)
    tensors_in, outs_spec = {}, []
    for name, t in man["tensors"].items():
        dims = tuple(int(evaluate(e, env, f"{mpath}: tensors/{name}/shape")) for e in t["shape"])
        if t["role"] == "input":
            x = torch.randn(dims, device=dev, dtype=torch.float32, generator=gen)
            if "scale" in t:
                x = x * float(evaluate(t["scale"], env, f"{mpath}: tensors/{name}/scale"))
            tensors_in[name] = x.to(dtype)
        else:
            outs_spec.append((name, dims))
    outputs = {s: [torch.full(d, float("nan"), device=dev, dtype=dtype) for _, d in outs_spec]
               for s in ("ref", "port") + (("nv",) if nv is not None else ())}

    def args_for(side: str) -> tuple[dict, dict]:
        space = {**env, **tensors_in, **{n: o for (n, _), o in zip(outs_spec, outputs[side])}}
        kman = man["kernels"][kernel]
        bind = kman.get("bind", {})
        arrays, scalars = {}, {}
        for p in kernel_params:
            if p["kind"] == "array":
                expr = bind.get(p["name"], p["name"])
                arrays[p["name"]] = evaluate(expr, space, f"{mpath}: kernels/{kernel}/bind/{p['name']}")
            elif p["kind"].startswith("scalar"):
                expr = bind.get(p["name"])
                if expr is None:
                    raise HarnessError(f"{mpath}: kernels/{kernel}/bind: no value for scalar {p['name']}")
                scalars[p["name"]] = evaluate(expr, space, f"{mpath}: kernels/{kernel}/bind/{p['name']}")
        return arrays, scalars

    g = evaluate(man["kernels"][kernel]["grid"], env, f"{mpath}: kernels/{kernel}/grid")
    grid = tuple(int(x) for x in (tuple(g) + (1, 1, 1))[:3])
    kfn = getattr(kmod, kernel)
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

    def ref():
        ct.launch(torch.cuda.current_stream(), grid, kfn, ref_args)

    pa, ps = args_for("port")

    def port():
        if lib is None:
            raise RuntimeError("no host library")
        lib.call(symbol, pa, ps, variant.constexprs, grid, device=device)

    ins = [tensors_in[n] for n, t in man["tensors"].items() if t["role"] == "input"]
    fast = getattr(rmod, "torch_impl", None) or rmod.reference
    box = {}

    def torch_side():
        box["out"] = fast(*ins)

    def expected():
        r = rmod.reference(*ins)
        return list(r) if isinstance(r, (tuple, list)) else [r]

    notes = [] if hasattr(rmod, "torch_impl") else ["reference.py has no torch_impl: timed reference()"]
    nv_fn, nv_note = None, ""
    if nv is not None:
        from .nv_ffi import NvError

        na, ns = args_for("nv")
        try:
            nv_fn = nv.bind({**na, **ns}, variant.constexprs, grid, variant.dtype, device=device)
        except NvError as exc:
            nv_note = f"NVIDIA's port not run: {exc}"[:600]
            outputs.pop("nv", None)
    return Call(op=man["op"], kernel=kernel, variant=variant, shape=tuple(shape), grid=grid,
                inputs=ins, outputs=outputs, ref=ref, port=port, torch=torch_side,
                expected=expected, symbol=symbol, notes=notes, nv=nv_fn, nv_note=nv_note)


def compare(actual, expected, rtol: float, atol: float) -> dict:
    """Elementwise check ``|actual - expected| <= atol + rtol * |expected|`` (NaN equals NaN).

    Returns ``{"ok", "max_abs", "mismatches", "numel", "worst": {"index", "actual", "expected",
    "allowed"}}`` (worst = largest excess over the allowance; None when every element is
    within). Shapes must match (a mismatch is reported as not ok with ``"shape"``).
    """
    import torch

    if tuple(actual.shape) != tuple(expected.shape):
        return {"ok": False, "shape": [list(actual.shape), list(expected.shape)], "max_abs": None,
                "mismatches": None, "numel": actual.numel(), "worst": None}
    a, e = actual.double(), expected.double()
    both_nan = torch.isnan(a) & torch.isnan(e)
    diff = torch.where(both_nan, torch.zeros_like(a), (a - e).abs())
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    allowed = atol + rtol * e.abs().nan_to_num(0.0)
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
    return res


def env_versions() -> dict:
    """Versions of what a GPU result depends on: device, driver, CUDA (torch's), torch,
    cuda-tile, tileiras (``tileiras --version``), for test.json / bench.json."""
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
