"""Python side of the host/FFI shims: ctypes bindings of ``results/host/libtileport_host.so``.

:func:`descriptor` turns a tensor (torch, or anything with ``data_ptr()``, ``dim()``, ``shape``,
``stride()`` and ``dtype``) into the C ``TpTensor`` of ``rust/host/abi.rs`` -- device pointer,
rank, extents and strides *in elements*, dtype code -- without touching its memory.
:class:`HostLibrary` binds every shim listed in the operators' ``ffi.json`` files and
:meth:`HostLibrary.call` launches one on the caller's stream (``torch.cuda.current_stream()``
by default), raising :class:`FfiError` -- naming the kernel, the status code and rustc-side
cause -- on any non-zero status. No torch import happens unless a stream must be looked up.
"""
from __future__ import annotations

import ctypes
import json
from pathlib import Path

from .host import ABI_VERSION, DTYPE_CODES, STATUS

MAX_DIMS = 6
#: torch dtype names (``str(t.dtype)`` without ``torch.``) -> tileport dtype names
TORCH_DTYPES = {"float16": "f16", "half": "f16", "bfloat16": "bf16", "float32": "f32", "float": "f32"}


class TpTensor(ctypes.Structure):
    """``#[repr(C)] struct TpTensor`` of ``rust/host/abi.rs`` (72 + 2*48 bytes on x86-64)."""

    _fields_ = [("data", ctypes.c_uint64), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS),
                ("dtype", ctypes.c_int32)]


class FfiError(RuntimeError):
    """A shim returned a non-zero status, or its arguments could not be marshalled.

    Attributes: ``kernel``, ``symbol``, ``code`` (``TP_*`` status, 0 for marshalling errors),
    ``status`` (its name), ``fail_class`` (``host`` / ``env`` / ``kernel``) and ``cause``.
    """

    def __init__(self, kernel: str, symbol: str, code: int, cause: str):
        if code == 0:   # raised on the Python side, before the shim was called
            name, fail_class, meaning = "bad arguments (not passed to the shim)", "host", ""
        else:
            name, fail_class, meaning = STATUS.get(code, (f"status {code}", "host", "unknown status"))
        self.kernel, self.symbol, self.code, self.status = kernel, symbol, code, name
        self.fail_class, self.cause = fail_class or "host", cause
        super().__init__(f"{kernel} ({symbol}): {name}: {cause or meaning}")


def dtype_name(dtype) -> str | None:
    """tileport dtype name (``f16``/``bf16``/``f32``) of a torch dtype or a name; None if unknown."""
    s = str(dtype).removeprefix("torch.")
    return s if s in DTYPE_CODES else TORCH_DTYPES.get(s)


def descriptor(t) -> TpTensor:
    """The ``TpTensor`` of a tensor: ``data_ptr()``, ``dim()``, ``shape``, ``stride()`` (elements),
    dtype code (0 for a dtype the ABI does not know: the shim then returns TP_ERR_BAD_DTYPE).

    Raises:
        ValueError: more than 6 dimensions (the ABI's fixed arrays).
    """
    try:
        nd, ptr, shape, strides = t.dim(), t.data_ptr(), tuple(t.shape), tuple(t.stride())
    except (AttributeError, TypeError) as exc:
        raise ValueError(f"not a tensor ({type(t).__name__}): {exc}") from None
    if not 0 <= nd <= MAX_DIMS:
        raise ValueError(f"{nd}-D tensor: the descriptor holds 0 to {MAX_DIMS} dimensions")
    if len(shape) != nd or len(strides) != nd:
        raise ValueError(f"shape {shape} / strides {strides} do not have {nd} entries")
    if not isinstance(ptr, int) or not 0 <= ptr < 2 ** 64:
        raise ValueError(f"data pointer {ptr!r} is not a 64-bit address")
    for what, vals in (("extent", shape), ("stride", strides)):
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, int) or not -2 ** 63 <= v < 2 ** 63:
                raise ValueError(f"{what} {v!r} is not a 64-bit integer")
    d = TpTensor()
    d.data = ptr
    d.ndim = nd
    for i in range(nd):
        d.shape[i] = shape[i]
        d.strides[i] = strides[i]
    name = dtype_name(t.dtype)
    d.dtype = DTYPE_CODES[name] if name else 0
    return d


_SCALAR_CTYPES = {"f32": ctypes.c_float, "i32": ctypes.c_int32}


class HostLibrary:
    """The built shim library plus the ``ffi.json`` signatures of the operators it holds.

    Raises (constructor):
        FfiError: the library cannot be loaded, has another ABI version, or lacks a listed symbol.
    """

    def __init__(self, library: str | Path, ffi_jsons: list[str | Path]):
        self.path = str(library)
        try:
            self._lib = ctypes.CDLL(self.path)
        except OSError as exc:
            raise FfiError("*", "dlopen", 0, f"cannot load {self.path}: {exc}") from None
        self._lib.tp_abi_version.restype = ctypes.c_int32
        got = self._lib.tp_abi_version()
        if got != ABI_VERSION:
            raise FfiError("*", "tp_abi_version", 0,
                           f"{self.path} has ABI version {got}, this wrapper speaks {ABI_VERSION}")
        self._lib.tp_last_error.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self._lib.tp_last_error.restype = ctypes.c_size_t
        self.functions: dict[str, dict] = {}
        for path in ffi_jsons:
            for spec in json.loads(Path(path).read_text())["functions"]:
                try:
                    fn = getattr(self._lib, spec["symbol"])
                except AttributeError:
                    raise FfiError(spec["kernel"], spec["symbol"], 0,
                                   f"{self.path} has no symbol {spec['symbol']} (listed in {path}); "
                                   f"rebuild the host library") from None
                fn.argtypes = ([ctypes.POINTER(TpTensor)] * len(spec["arrays"])
                               + [_SCALAR_CTYPES[s["type"]] for s in spec["scalars"]]
                               + [ctypes.c_int32] * len(spec["constexprs"])
                               + [ctypes.c_uint32] * 3 + [ctypes.c_int32, ctypes.c_void_p])
                fn.restype = ctypes.c_int32
                self.functions[spec["symbol"]] = {**spec, "fn": fn}

    def for_variant(self, kernel: str, variant: str) -> dict:
        """The shim spec (``ffi.json`` entry) whose family holds ``kernel``'s ``variant``.

        Raises:
            FfiError: no bound shim covers that variant.
        """
        for spec in self.functions.values():
            if spec["kernel"] == kernel and variant in spec["variants"]:
                return spec
        raise FfiError(kernel, "?", 0, f"no shim in {self.path} covers variant {variant}")

    def last_error(self) -> str:
        """This thread's last error message of the library (empty when the last call succeeded)."""
        buf = ctypes.create_string_buffer(2048)
        self._lib.tp_last_error(buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def call(self, symbol: str, arrays: dict, scalars: dict, constexprs: dict,
             grid: tuple[int, int, int], stream=None, device: int | None = None) -> None:
        """Launch one shim (asynchronously, on ``stream``: a ``torch.cuda.Stream``, a raw handle,
        or None for ``torch.cuda.current_stream()``).

        ``arrays``: kernel parameter name -> tensor; ``scalars``: name -> number; ``constexprs``:
        name -> int; ``grid``: launch grid (blocks per axis); ``device``: CUDA ordinal (default:
        the first array's ``device.index``, else 0).

        Raises:
            FfiError: a missing argument, or the shim's non-zero status with its message.
        """
        spec = self.functions.get(symbol)
        if spec is None:
            raise FfiError("?", symbol, 0, f"{self.path} binds no shim {symbol} "
                                           f"(have {sorted(self.functions)})")
        kernel = spec["kernel"]

        def bad(msg):
            return FfiError(kernel, symbol, 0, msg)

        def integer(v, lo, hi, what):
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise bad(f"{what} = {v!r} is not an integer in [{lo}, {hi}]")
            return v

        descs = []
        for a in spec["arrays"]:
            if a["name"] not in arrays:
                raise bad(f"missing array '{a['name']}'")
            try:
                descs.append(descriptor(arrays[a["name"]]))
            except ValueError as exc:
                raise bad(f"array '{a['name']}': {exc}") from None
        svals = []
        for sc in spec["scalars"]:
            if sc["name"] not in scalars:
                raise bad(f"missing scalar '{sc['name']}'")
            v = scalars[sc["name"]]
            if sc["type"] == "i32":
                svals.append(integer(v, -2 ** 31, 2 ** 31 - 1, f"scalar {sc['name']}"))
            elif isinstance(v, bool) or not isinstance(v, (int, float)):
                raise bad(f"scalar {sc['name']} = {v!r} is not a number")
            else:
                svals.append(float(v))
        cvals = []
        for c in spec["constexprs"]:
            if c not in constexprs:
                raise bad(f"missing constexpr '{c}'")
            cvals.append(integer(constexprs[c], 1, 2 ** 31 - 1, f"constexpr {c}"))
        try:
            grid = tuple(grid)
        except TypeError:
            raise bad(f"launch grid {grid!r} is not a sequence") from None
        if len(grid) != 3:
            raise bad(f"launch grid {grid} does not have 3 dimensions")
        grid = tuple(integer(g, 0, 2 ** 32 - 1, "grid dimension") for g in grid)
        if device is None:
            first = arrays[spec["arrays"][0]["name"]]
            device = getattr(getattr(first, "device", None), "index", None) or 0
        device = integer(device, 0, 2 ** 31 - 1, "device")
        if stream is None:
            try:
                import torch
            except ImportError:
                raise bad("no stream given and torch is not installed") from None
            stream = torch.cuda.current_stream()
        handle = getattr(stream, "cuda_stream", stream)
        if handle is not None and (isinstance(handle, bool) or not isinstance(handle, int)):
            raise bad(f"stream {stream!r} is neither a CUDA stream object nor a raw handle")
        rc = spec["fn"](*[ctypes.byref(d) for d in descs], *svals, *cvals, *grid, device,
                        ctypes.c_void_p(handle or None))
        if rc != 0:
            raise FfiError(kernel, symbol, rc, self.last_error())
