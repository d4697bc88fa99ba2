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
    nd = t.dim()
    if nd > MAX_DIMS:
        raise ValueError(f"{nd}-D tensor: the descriptor holds at most {MAX_DIMS} dimensions")
    d = TpTensor()
    d.data = int(t.data_ptr())
    d.ndim = nd
    strides = t.stride()
    for i in range(nd):
        d.shape[i] = int(t.shape[i])
        d.strides[i] = int(strides[i])
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
        spec = self.functions[symbol]
        kernel = spec["kernel"]
        try:
            descs = [descriptor(arrays[a["name"]]) for a in spec["arrays"]]
            svals = [scalars[s["name"]] for s in spec["scalars"]]
            cvals = [int(constexprs[c]) for c in spec["constexprs"]]
        except KeyError as exc:
            raise FfiError(kernel, symbol, 0, f"missing argument {exc}") from None
        except ValueError as exc:
            raise FfiError(kernel, symbol, 0, str(exc)) from None
        if len(grid) != 3 or any(int(g) < 0 or int(g) >= 2 ** 32 for g in grid):
            raise FfiError(kernel, symbol, 0, f"launch grid {tuple(grid)} is not 3 dims of u32")
        if device is None:
            first = arrays[spec["arrays"][0]["name"]]
            device = getattr(getattr(first, "device", None), "index", None) or 0
        if stream is None:
            import torch

            stream = torch.cuda.current_stream()
        handle = getattr(stream, "cuda_stream", stream)
        rc = spec["fn"](*[ctypes.byref(d) for d in descs], *svals, *cvals,
                        *[int(g) for g in grid], int(device), ctypes.c_void_p(handle or None))
        if rc != 0:
            raise FfiError(kernel, symbol, rc, self.last_error())
