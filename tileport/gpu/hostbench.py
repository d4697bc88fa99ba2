"""Host time per call, in parts, by number of arrays: the port's path against ``ct.launch``.

A benchmark, not a test: it prints figures and asserts nothing about speed. Needs a GPU, torch,
cuda-tile and a built host library (``results/host``), as the ``bench`` stage.

For each operator's first perf config (or every one, ``--all``), in rounds whose side order
rotates (:func:`tileport.gpu.bench.rotation`), ``n`` calls are enqueued back to back and the host
time of the loop (before the synchronisation) is divided by ``n``. ``n`` stays well under
CUDA's launch queue (about 1000 launches), so a kernel shorter than the host path does not
hide it and a longer one does not fill the queue. Medians over the rounds, µs per call:

* ``ref``: ``ct.launch(torch.cuda.current_stream(), grid, kernel, args)`` (what bench times);
* ``port``: the bound shim as the port calls it (the library's ``tp_py_call_t`` marshals,
  then the Rust shim; with ``TILEPORT_RUST_MARSHAL=0`` tileport/host/ffi.py's fast path marshals);
* ``pyport``: the same call marshalled by the Python fast path, whatever
  ``TILEPORT_RUST_MARSHAL`` says (the port's path before 2026-12-01);
* ``rs``: the same call marshalled by the library's ``tp_py_call_t`` (rust/host/abi.rs; NaN
  for a library without it, which HostLibrary marshals in Python), whatever
  ``TILEPORT_RUST_MARSHAL`` says, reading each tensor through its type's DLPack exchange table
  (``tileport.host.ffi.exchange_api``; torch >= 2.10) whatever ``TILEPORT_DLPACK`` says;
* ``capi``: as ``rs``, every tensor read through the CPython C API instead (``TILEPORT_DLPACK=0``:
  the port's path before the DLPack reads, issue 14); ``capi - rs`` is what the DLPack reads save;
* ``py``: the fast path's marshalling alone (``Shim._fast_args``: descriptors, scalars,
  constexprs, grid and stream packed into the argument block), nothing launched;
* ``native``: the shim's ``__packed`` entry called through ctypes on a block packed once
  (argument checks, context and stream, borrowed tensors, cutile's launcher, the driver);
* ``ctypes``: ``tp_abi_version()`` through ctypes, the floor of any call into the library.

``blocks``: whether ``tp_py_call`` writes the Python fast path's argument block byte for byte for
the measured call, with DLPack reads and with C-API reads (:func:`rust_blocks`: a recording
entry in place of the shim's, nothing launched): ``same``, else which reads differ or declined.

``port - ref`` is what the port's host path costs more than ``ct.launch``. The last lines fit
``native`` and ``ref`` as a + b * arrays (least squares over the operators): b is the cost of
one more array on each side.

Run (in the checkout, with the GPU bundle's results/): ``python -m tileport.gpu.hostbench
--ops tg_relu,tg_splitk_reduce,tg_flash_decode,tg_attention_sink,tg_attention_sink_decode,tg_mla_decoding_split_kv``.
"""
from __future__ import annotations

import argparse
import copy
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path

from tileport.gpu import harness
from tileport.gpu.bench import rotation
from tileport.gpu.test import OpContext, library_for
from tileport.host.ffi import _rs_objs, exchange_api, py_call_entry, py_call_t_entry
from tileport.host.shim import call_block

DEFAULT_OPS = ("tg_relu", "tg_gelu", "tg_dropout", "tg_matmul", "tg_geglu",
               "tg_attention_sink_decode", "tg_sparse_mla")


def per_call(fn, n: int, sync) -> float:
    """Host µs per call of ``n`` back-to-back calls of ``fn`` (``sync`` before and after, not timed)."""
    sync()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    sync()
    return (t1 - t0) * 1e6 / n


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """Least-squares ``(a, b)`` of ``y = a + b * x``; None with fewer than two distinct x."""
    if len(set(xs)) < 2:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def measure(c, lib, n: int, rounds: int, sync, rs: bool = True) -> dict:
    """The parts of one :class:`tileport.gpu.harness.Call` (module doc), medians in µs per call."""
    arrays, scalars, constexprs, grid, device = c.port_args
    shim = lib.shim(c.symbol)
    c.ref()
    c.port()
    sync()
    block = shim._fast_args(arrays, scalars, constexprs, grid, None, device)
    if shim.packed is None or not isinstance(block, int):
        raise RuntimeError(f"{c.symbol}: no packed fast path for this call (checked path taken)")
    rc = shim.packed(block)
    if rc != 0:
        raise RuntimeError(f"{c.symbol}: packed entry returned {rc}: {lib.last_error()}")
    abi = lib._lib.tp_abi_version
    blocks = rust_blocks(lib, shim, (arrays, scalars, constexprs, grid, device)) if rs else "-"
    rs_shim = _rust_marshalled(lib, shim) if rs else None
    capi_shim = _rust_marshalled(lib, shim, dlpack=False) if rs else None
    py_shim = _python_marshalled(shim)
    sides = {
        "ref": c.ref,
        "port": c.port,
        # the same call marshalled by the Python fast path (TILEPORT_RUST_MARSHAL=0)
        "pyport": lambda: py_shim(arrays, scalars, constexprs, grid, None, device),
        # the same call marshalled by the library's tp_py_call (NaN: the library has none)
        "rs": (lambda: rs_shim(arrays, scalars, constexprs, grid, None, device)) if rs_shim else None,
        # the same, every tensor read through the C API (TILEPORT_DLPACK=0)
        "capi": (lambda: capi_shim(arrays, scalars, constexprs, grid, None, device)) if capi_shim else None,
        "py": lambda: shim._fast_args(arrays, scalars, constexprs, grid, None, device),
        # the block stays valid: the same thread, and _fast_args wrote it last
        "native": lambda: shim.packed(block),
        "ctypes": abi,
    }
    sides = {k: f for k, f in sides.items() if f is not None}
    out: dict = {k: [] for k in sides}
    for r in range(rounds):
        for label in rotation(list(sides), r):
            if label == "native":      # re-pack: "py" rewrote the same buffer with equal bytes
                shim._fast_args(arrays, scalars, constexprs, grid, None, device)
            out[label].append(per_call(sides[label], n, sync))
    spec = shim.spec
    row = {"rs": float("nan"), "capi": float("nan"), **{k: statistics.median(v) for k, v in out.items()}}
    row.update(op=c.op, kernel=c.kernel, variant=c.variant.id, arrays=len(spec["arrays"]), blocks=blocks,
               scalars=len(spec["scalars"]), constexprs=len(spec["constexprs"]),
               dims=sum(a["ndim"] for a in spec["arrays"]))
    return row


def rust_blocks(lib, shim, args) -> str:
    """Whether the library's ``tp_py_call`` packs the Python fast path's block for ``args``
    (arrays, scalars, constexprs, grid, device; torch's current stream), with DLPack reads and
    with C-API reads: ``same``, else ``dlpack``/``capi`` followed by ``differs`` or ``declined``
    (comma-separated), or ``no tp_py_call``. Nothing is launched: a recording function stands in
    for the shim's packed entry."""
    arrays, scalars, constexprs, grid, device = args
    fn = py_call_entry(lib.path)
    twin = _rust_marshalled(lib, shim)
    if fn is None or twin is None:
        return "no tp_py_call"
    handle = lib.current_stream(device)
    size = call_block(shim.spec)[1]["size"]
    want = ctypes.string_at(shim._fast_args(arrays, scalars, constexprs, grid, handle, device), size)
    seen: list = []
    rec = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(lambda a: seen.append(ctypes.string_at(a, size)) or 0)
    buf = ctypes.create_string_buffer(size + 8)
    _, _, layout, _, names, _, _ = twin._rs
    out = []
    for label, dlpack in (("dlpack", True), ("capi", False)):
        del seen[:]
        rc = fn(ctypes.cast(rec, ctypes.c_void_p).value, ctypes.addressof(buf), layout, _rs_objs(dlpack), names,
                arrays, scalars, constexprs, grid, device, handle)
        if rc != 0 or not seen:
            out.append(f"{label} declined")
        elif seen[0] != want:
            out.append(f"{label} differs")
    return ", ".join(out) or "same"


def _rust_marshalled(lib, shim, dlpack: bool = True):
    """A copy of ``shim`` whose fast calls ``tp_py_call`` marshals, reading tensors through their
    type's DLPack exchange table (``dlpack``) or through the C API, or None when the library has
    no such entry (one built before it)."""
    rs, rs_t = py_call_entry(lib.path), py_call_t_entry(lib.path)
    if rs is None or rs_t is None:      # as HostLibrary: an older library is marshalled in Python
        return None
    twin = copy.copy(shim)
    twin._enable_rust_marshal(rs, rs_t, dlpack)
    return twin if twin._rs is not None else None


def _python_marshalled(shim):
    """A copy of ``shim`` whose calls the Python fast path marshals (``TILEPORT_RUST_MARSHAL=0``:
    the port's default before 2026-12-01)."""
    twin = copy.copy(shim)
    twin._rs = None
    return twin


HEAD = (f"{'op/kernel':58} {'arr':>3} {'dims':>4} {'sc':>3} {'cx':>3} {'ref':>6} {'port':>6} {'pyport':>6} "
        f"{'rs':>6} {'capi':>6} {'py':>6} {'native':>6} {'ctypes':>6} {'port-ref':>8} {'pyport-ref':>10} "
        f"{'rs-ref':>7} {'capi-ref':>8}  blocks")


def line(r: dict) -> str:
    """One row of the table (:data:`HEAD`)."""
    return (f"{(r['op'] + '/' + r['kernel'])[:58]:58} {r['arrays']:3d} {r['dims']:4d} {r['scalars']:3d} "
            f"{r['constexprs']:3d} {r['ref']:6.2f} {r['port']:6.2f} {r['pyport']:6.2f} {r['rs']:6.2f} "
            f"{r['capi']:6.2f} {r['py']:6.2f} {r['native']:6.2f} {r['ctypes']:6.2f} {r['port'] - r['ref']:8.2f} "
            f"{r['pyport'] - r['ref']:10.2f} {r['rs'] - r['ref']:7.2f} {r['capi'] - r['ref']:8.2f}  "
            f"{r.get('blocks', '-')}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", default=",".join(DEFAULT_OPS), help="comma-separated operators")
    ap.add_argument("--results", default="results")
    ap.add_argument("--operators", default="operators")
    ap.add_argument("--calls", type=int, default=300, help="calls per timed loop (< ~1000)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--all", action="store_true", help="every perf config, not the first")
    ap.add_argument("--no-rs", action="store_true", help="leave out the rs and capi sides (tp_py_call)")
    a = ap.parse_args(argv)
    import torch  # lazy: imported on the GPU node only (--help works without it)

    results = Path(a.results)
    sync = torch.cuda.synchronize
    rows = []
    marshal = ("python" if os.environ.get("TILEPORT_RUST_MARSHAL", "") == "0" else
               "rust (tp_py_call_t), " + ("C-API reads" if os.environ.get("TILEPORT_DLPACK", "") == "0"
                                         else "DLPack reads where torch has them"))
    head = (f"host µs per call, median of {a.rounds} rounds of {a.calls} calls "
            f"({torch.cuda.get_device_name()}, torch {torch.__version__}; port marshalling: {marshal}; "
            f"rs: the library's tp_py_call_t with DLPack reads; capi: with C-API reads; pyport: Python "
            f"marshalling; torch's DLPack exchange table: {'yes' if exchange_api(torch.Tensor) else 'none'})")
    print(head + "\n" + HEAD, flush=True)       # rows as they come: a cut run keeps them
    for op in [o for o in a.ops.split(",") if o]:
        library, why = library_for(op, results, results / "host" / "build.json")
        if why:
            print(f"{op}: skipped: {why[1]}", file=sys.stderr)
            continue
        try:
            ctx = OpContext(op, Path(a.operators) / op, results, library)
            cases = harness.cases(ctx.man, "perf")
            for kernel, variant, shape in (cases if a.all else cases[:1]):
                c = ctx.call(kernel, variant, shape, 0)
                rows.append(measure(c, ctx.lib, a.calls, a.rounds, sync, rs=not a.no_rs))
                print(line(rows[-1]), flush=True)
                del c
        except Exception as exc:  # noqa: BLE001 - one operator's failure is a line, not a stop
            print(f"{op}: {type(exc).__name__}: {exc}"[:400], file=sys.stderr)
    if not rows:
        print("no operator measured", file=sys.stderr)
        return 1
    print("\nsorted by arrays:\n" + HEAD)
    for r in sorted(rows, key=lambda r: (r["arrays"], r["op"])):
        print(line(r))
    for side in ("ref", "py", "native", "port", "pyport", "rs", "capi"):
        f = fit_line([r["arrays"] for r in rows], [r[side] for r in rows])
        if f:
            print(f"fit {side:6}: {f[0]:6.2f} µs + {f[1]:5.2f} µs per array")
    return 0


if __name__ == "__main__":
    sys.exit(main())
