"""Python side of the host/FFI shims: ctypes bindings of ``results/host/libtileport_host.so``.

:func:`descriptor` turns a tensor (torch, or anything with ``data_ptr()``, ``dim()``, ``shape``,
``stride()`` and ``dtype``) into the C ``TpTensor`` of ``rust/host/abi.rs`` -- device pointer,
rank, extents and strides *in elements*, dtype code -- without touching its memory.
:class:`HostLibrary` binds every shim listed in the operators' ``ffi.json`` files and
:meth:`HostLibrary.call` launches one on the caller's stream (``torch.cuda.current_stream()``
by default), raising :class:`FfiError` -- naming the kernel, the status code and rustc-side
cause -- on any non-zero status. No torch import happens unless a stream must be looked up.

Host time per call is the price of a small kernel, so :class:`Shim` (one per symbol) marshals
a call of torch tensors in one pass: scalars, constexprs and the launch grid checked by type
and range, the current stream read as a raw handle (``torch._C._cuda_getCurrentRawStream``),
and every argument packed by one precompiled ``struct`` into a per-thread buffer laid out as
:func:`tileport.host.shim.call_block` (the kernel parameters' ranks are fixed, so the layout is
too), handed to the shim's ``__packed`` entry as one pointer (a library without that entry gets
the descriptors' addresses and the other arguments one by one). Anything that path does not
recognise (another tensor type, a rank that differs from the kernel's, a value of another
type or out of range, a tensor on another device) goes through the checked path, which names
the argument at fault or builds the descriptors one by one; both paths pass the shim the same
bytes.

Default (``HostLibrary(..., rust_marshal=False)`` or ``TILEPORT_RUST_MARSHAL=0`` turns it off):
the library's ``tp_py_call_t`` (``rust/host/abi.rs``) does the fast path's reads and packing
and calls the packed entry itself, with the GIL released around the launch. It reads a tensor
through its type's DLPack C exchange table (:func:`exchange_api`: one C call per array, torch >=
2.10; ``HostLibrary(..., dlpack=False)`` or ``TILEPORT_DLPACK=0`` turns it off) and otherwise, or
where that call fails, through the CPython C API (the fast path's five reads); it writes the same
bytes and declines (-1: the Python paths decide) whatever the fast path would not take, and a
shim's pre-launch refusal of a layout to restage is retried through the Python paths. An unread
array without memory gets its scratch slot from ``tp_py_call`` itself
once :meth:`HostLibrary.scratch` registered the device's scratch (the first such call declines,
and the Python fast path allocates and registers it). A written array whose elements may share memory
(:func:`shares_memory`) is refused before the launch by the checked path, naming it.
"""
from __future__ import annotations

import ctypes
import json
import operator
import os
import re
import struct
import sys
import threading
from pathlib import Path

from tileport.host.shim import ABI_VERSION, DTYPE_CODES, MAX_DIMS, STATUS, call_block, desc_format

#: torch dtype names (``str(t.dtype)`` without ``torch.``) -> tileport dtype names
TORCH_DTYPES = {"float16": "f16", "half": "f16", "bfloat16": "bf16", "float32": "f32", "float": "f32",
                "float64": "f64", "double": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
                "int": "i32", "int64": "i64", "long": "i64", "uint8": "u8", "uint16": "u16",
                "uint32": "u32", "uint64": "u64", "bool": "bool", "float8_e4m3fn": "f8e4m3fn",
                "float8_e5m2": "f8e5m2"}


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


#: shim refusals that are cutile 0.5.0's limits, not the kernel's, the port's nor the host's:
#: (pattern of abi.rs's message, evidence in cutile's source)
CUTILE_LIMITS = (
    (re.compile(r"bytes exceed cutile 0\.5's i32 byte count|is outside 0\.\.=i32::MAX"),
     "cutile 0.5.0 keeps a tensor's extents, strides and byte count in i32: src/tensor.rs "
     "checked_num_bytes_i32 (called by Tensor::borrow_raw_parts / assert_valid_metadata: "
     "\"i32-backed tensor metadata\") and src/tile_kernel.rs (the launcher pushes every extent "
     "and stride `as i32`); the shim refuses larger arrays (rust/host/abi.rs check)"),
)


def cutile_limit(exc: BaseException) -> str | None:
    """The evidence when ``exc`` is a shim's refusal of what cutile 0.5.0 cannot launch
    (:data:`CUTILE_LIMITS`: an array past its i32 metadata), else None. Owner ``tool``: the
    valid kernel would run at that size in cuTile Python; tileport's target cannot take it."""
    if isinstance(exc, FfiError) and exc.status == "TP_ERR_BAD_SHAPE":
        for pat, evidence in CUTILE_LIMITS:
            if pat.search(exc.cause or ""):
                return evidence
    return None


def dtype_name(dtype) -> str | None:
    """tileport dtype name (``f16``, ``bf16``, ``f32``, ``i32``... :data:`host.DTYPE_CODES`) of a
    torch dtype or a name; None if unknown."""
    s = str(dtype).removeprefix("torch.")
    return s if s in DTYPE_CODES else TORCH_DTYPES.get(s)


def descriptor(t) -> TpTensor:
    """The ``TpTensor`` of a tensor: ``data_ptr()``, ``dim()``, ``shape``, ``stride()`` (elements),
    dtype code (0 for a dtype the ABI does not know: the shim then returns TP_ERR_BAD_DTYPE).

    Raises:
        ValueError: more than 6 dimensions (the ABI's fixed arrays); a layout that cannot be read
            (no ``dim``/``data_ptr``/``stride``, or one raising: a sparse tensor) or is not made of
            64-bit integers.
    """
    try:
        nd, ptr, shape, strides = t.dim(), t.data_ptr(), tuple(t.shape), tuple(t.stride())
    except (AttributeError, TypeError) as exc:
        raise ValueError(f"not a tensor ({type(t).__name__}): {exc}") from None
    except Exception as exc:  # noqa: BLE001 - torch raises RuntimeError for a sparse tensor's strides, a
        # storage-less tensor's data pointer: the caller's array, named by the caller, not a traceback
        raise ValueError(f"a {type(t).__name__} whose data pointer, extents and strides cannot be read "
                         f"({type(exc).__name__}: {exc}); pass a dense (strided) tensor with storage") from None
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
_DESC_SIZE = ctypes.sizeof(TpTensor)
_I32_MAX = 2 ** 31 - 1
#: tensor types whose descriptors the fast path packs (torch.Tensor once torch is imported)
_FAST_TYPES: set = set()
#: dtype object -> ABI dtype code (0: unknown), filled as dtypes are first seen
_CODE_OF: dict = {}


def _code_of(dtype) -> int:
    code = _CODE_OF.get(dtype)
    if code is None:
        name = dtype_name(dtype)
        code = _CODE_OF[dtype] = DTYPE_CODES[name] if name else 0
    return code


def _register_fast(t) -> None:
    """Let the fast path pack tensors of ``type(t)`` when it is torch's own tensor class (and
    learn torch's dtype codes)."""
    torch = sys.modules.get("torch")
    if torch is not None and type(t) in (torch.Tensor, torch.nn.Parameter):
        _FAST_TYPES.add(type(t))
        for name in TORCH_DTYPES:
            dt = getattr(torch, name, None)
            if dt is not None:
                _code_of(dt)


class DLDevice(ctypes.Structure):
    """``DLDevice`` of dlpack.h 1.3: ``device_type`` (kDLCPU 1, kDLCUDA 2) and ``device_id``."""

    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    """``DLDataType`` of dlpack.h 1.3: type code (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4,
    kDLBool 6, ...), bits per lane, lanes."""

    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    """``DLTensor`` of dlpack.h 1.3 (48 bytes on x86-64): data, device, ndim, dtype, shape and
    strides (``int64_t *``, elements), byte_offset."""

    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLPackExchangeAPI(ctypes.Structure):
    """``DLPackExchangeAPI`` of dlpack.h 1.3: the header (``version`` {major, minor}, ``prev_api``),
    then five function pointers (as addresses); ``dltensor_from_py_object_no_sync`` may be null."""

    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev_api", ctypes.c_void_p),
                ("managed_tensor_allocator", ctypes.c_void_p),
                ("managed_tensor_from_py_object_no_sync", ctypes.c_void_p),
                ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
                ("dltensor_from_py_object_no_sync", ctypes.c_void_p),
                ("current_work_stream", ctypes.c_void_p)]


#: name of the capsule a tensor type's ``__dlpack_c_exchange_api__`` holds (dlpack.h 1.3)
EXCHANGE_CAPSULE = b"dlpack_exchange_api"
#: ``PyCapsule_IsValid`` / ``PyCapsule_GetPointer`` with prototypes of their own (the shared
#: ``ctypes.pythonapi`` functions' argtypes are left as other code set them)
_CAPSULE_VALID = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_CAPSULE_POINTER = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def exchange_api(tp) -> int:
    """Address of tensor type ``tp``'s DLPack C exchange table, which ``tp_py_call`` reads its
    tensors through (one C call per array instead of five Python-level reads); 0 where it has
    none: no ``__dlpack_c_exchange_api__`` on the type (torch < 2.10), not a capsule named
    ``dlpack_exchange_api``, a major version other than 1, or a null
    ``dltensor_from_py_object_no_sync``. Source: dlpack.h 1.3 (``DLPackExchangeAPI``: the
    attribute is set on the type, its table lives as long as the process); torch 2.11 gives
    version 1.3 with that function set. Never raises."""
    try:
        cap = getattr(tp, "__dlpack_c_exchange_api__", None)
        if cap is None or not _CAPSULE_VALID(cap, EXCHANGE_CAPSULE):
            return 0
        p = _CAPSULE_POINTER(cap, EXCHANGE_CAPSULE)
    except Exception:  # noqa: BLE001 - a type whose attribute lookup raises: read through the C API
        return 0
    if not p:
        return 0
    api = DLPackExchangeAPI.from_address(p)
    return p if api.major == 1 and api.dltensor_from_py_object_no_sync else 0


#: what ``tp_py_call`` accepts, as ``rust/host/abi.rs`` reads it, with DLPack exchange tables
#: (index 1) or without (0: every array read through the C API): [(ctypes array, its address),
#: the :data:`_FAST_TYPES` set and sizes of it and of :data:`_CODE_OF` it was built from]
_RS_OBJS: list = [[None, None, -1, -1], [None, None, -1, -1]]


def _rs_objs(dlpack: bool = True) -> int:
    """Address of the table of tensor types, exact float / int types, (dtype, code) pairs and,
    per tensor type, its :func:`exchange_api` address (0 for every type when ``dlpack`` is
    false) that ``tp_py_call`` accepts (rebuilt when a type or dtype is learnt; the objects are
    kept alive by the set and dict that hold them; the exchange tables live as long as the
    process, dlpack.h 1.3)."""
    c = _RS_OBJS[dlpack]
    if c[1] is not _FAST_TYPES or c[2] != len(_FAST_TYPES) or c[3] != len(_CODE_OF):
        types = list(_FAST_TYPES)
        dts = [(d, c) for d, c in _CODE_OF.items() if c]
        vals = [len(types), *map(id, types), id(float), id(int), len(dts),
                *[x for d, c in dts for x in (id(d), c)],
                *[exchange_api(t) if dlpack else 0 for t in types]]
        arr = (ctypes.c_size_t * len(vals))(*vals)
        c = _RS_OBJS[dlpack] = [(arr, ctypes.addressof(arr)), _FAST_TYPES, len(_FAST_TYPES), len(_CODE_OF)]
    return c[0][1]


def _getter(names: list[str]):
    """A function of a mapping that returns the values of ``names`` as a tuple (one C call;
    ``KeyError`` for a missing name); None for no names (nothing to read)."""
    if not names:
        return None
    if len(names) == 1:
        name = names[0]
        return lambda d: (d[name],)
    return operator.itemgetter(*names)


#: ``torch._C._cuda_getCurrentRawStream`` once resolved (device ordinal -> raw stream handle)
_RAW_STREAM: list = [None]


def _raw_stream_fn():
    """torch's current-stream lookup as a raw handle (resolved once per process).

    Raises:
        ImportError: torch is not installed.
    """
    if _RAW_STREAM[0] is None:
        import torch

        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _RAW_STREAM[0] = raw or (lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _RAW_STREAM[0]


def restage_strides(shape: tuple, strides: tuple) -> tuple | None:
    """The strides of a copy the port can read, for an array whose strides it reads by dimension
    and whose layout the shim refuses; None when the layout is accepted as it is.

    Mirrors ``as_compiled_strides`` (rust/host/abi.rs): the port multiplies the innermost index
    by a constant 1, so an innermost stride other than 1 on an extent > 1 (a column-major
    (4, 8) / (1, 4)) is refused and copied here, into the C-contiguous strides of ``shape`` with
    every non-innermost stride at least 2 (elements). Every other layout is passed as it is, with
    no copy: an extent-1 dimension's stride is free, and a unit stride on a non-innermost
    dimension (tg_flash_decode's LSE_Out, extents (1, 8, 4, 1), strides (32, 4, 1, 1)) is
    compiled as a dynamic stride by the shim's ``borrow`` (cutile 0.5.0 would specialise it as a
    static 1 and drop it from the strides the port reads: cutile-compiler-0.5.0
    src/specialization.rs ``compute_spec``, ``stride_one``; cutile-0.5.0 src/tensor.rs
    ``strides_hint``; see abi.rs ``keep_unit_strides_dynamic``).
    """
    n = len(shape)
    if n == 0 or strides[-1] == 1 or shape[-1] <= 1:
        return None
    out = [1] * n
    for k in range(n - 2, -1, -1):
        out[k] = max(out[k + 1] * max(shape[k + 1], 1), 2)
    return tuple(out)


#: the environment variable that turns the library's Rust marshalling off (module doc)
RUST_MARSHAL_ENV = "TILEPORT_RUST_MARSHAL"


def rust_marshal_env(environ=None) -> bool:
    """Whether :data:`RUST_MARSHAL_ENV` asks for Rust marshalling: unset, empty or ``1`` yes,
    ``0`` no.

    Raises:
        ValueError: any other value (``false``, ``off``, `` 0``): it would otherwise silently keep
            Rust marshalling on while the user meant to turn it off (or the reverse).
    """
    return _switch_env(RUST_MARSHAL_ENV, "Python marshalling", "Rust marshalling", environ)


#: the environment variable that has the Rust marshalling read every tensor through the CPython C
#: API instead of its type's DLPack exchange table (module doc)
DLPACK_ENV = "TILEPORT_DLPACK"


def dlpack_env(environ=None) -> bool:
    """Whether :data:`DLPACK_ENV` lets the Rust marshalling read tensors through their type's
    DLPack exchange table (:func:`exchange_api`): unset, empty or ``1`` yes, ``0`` no (the C-API
    reads of every tensor).

    Raises:
        ValueError: any other value (as :func:`rust_marshal_env`).
    """
    return _switch_env(DLPACK_ENV, "C-API reads", "DLPack reads", environ)


def _switch_env(name: str, off: str, on: str, environ=None) -> bool:
    """An on/off switch from the environment: unset, empty or ``1`` on, ``0`` off.

    Raises:
        ValueError: any other value, naming the variable and what 0 and 1 mean.
    """
    v = (os.environ if environ is None else environ).get(name, "")
    if v in ("", "1", "0"):
        return v != "0"
    raise ValueError(f"{name}={v!r}: write {name}=0 ({off}) or {name}=1 / leave it unset ({on}, the default)")


def shares_memory(shape: tuple, strides: tuple, exact_limit: int = 1 << 16) -> bool:
    """Whether two elements of an array of these extents and strides (elements) may lie at one
    address: a written array of that layout makes the kernel's stores race (which one lands is
    unspecified), so the host refuses it (torch refuses to write such a tensor for the same
    reason: ``has_internal_overlap``).

    Exact for a stride 0 on an extent > 1, and for every layout whose dimensions, sorted by
    stride, each step past all the earlier ones (C- and Fortran-contiguous, slices, padded rows:
    False). Any other layout is decided by listing its offsets when it has at most
    ``exact_limit`` elements, else counted as sharing (True: refused, never launched racing).
    """
    dims = sorted((abs(s), e) for e, s in zip(shape, strides) if e != 1)
    if any(e == 0 for _, e in dims):
        return False                    # no element at all
    reach = 0                           # largest offset the smaller-stride dimensions reach
    for s, e in dims:
        if s == 0:
            return True
        if s <= reach:
            break
        reach += s * (e - 1)
    else:
        return False
    n = 1
    for _, e in dims:
        n *= e
    if n > exact_limit:
        return True
    offs = {0}
    for s, e in dims:
        offs = {o + s * i for o in offs for i in range(e)}
    return len(offs) < n


#: (extents, strides) -> :func:`shares_memory`, for the fast path's written arrays (bounded)
_SHARES: dict = {}


def _shares_memo(shape, strides) -> bool:
    """:func:`shares_memory` remembered per layout (both paths ask it for every written array)."""
    key = (tuple(shape), tuple(strides))
    if key not in _SHARES:
        if len(_SHARES) >= 4096:
            _SHARES.clear()
        _SHARES[key] = shares_memory(*key)
    return _SHARES[key]


def _empty_strided(t, strides):
    """A tensor like ``t`` (shape, dtype, device) with the given strides (elements)."""
    import torch

    return torch.empty_strided(tuple(t.shape), strides, dtype=t.dtype, device=t.device)


def _on_stream(stream, handle, device):
    """Context in which torch work runs on the launch's stream (``stream`` or raw ``handle``)."""
    import contextlib

    import torch

    if stream is None:
        return contextlib.nullcontext()
    if isinstance(stream, torch.cuda.Stream):
        return torch.cuda.stream(stream)
    return torch.cuda.stream(torch.cuda.ExternalStream(handle, device=device)) if handle else \
        contextlib.nullcontext()


class _Slow(Exception):
    """The fast path met something it does not handle: take the checked path."""


class Shim:
    """One bound shim (an ``ffi.json`` entry): call it with arrays, scalars, constexprs, grid.

    ``spec``: the ``ffi.json`` entry; ``fn``: the ctypes function (arrays as ``void *``);
    ``packed``: its ``__packed`` entry (one ``void *``), or None when the library has none.
    See :meth:`__call__`.
    """

    def __init__(self, lib: "HostLibrary", spec: dict, fn, packed=None):
        self.lib, self.spec, self.fn, self.packed = lib, spec, fn, packed
        self.symbol, self.kernel = spec["symbol"], spec["kernel"]
        self._unread = frozenset(spec.get("unread", ()))    # host.unread_arrays; see unread
        #: arrays whose strides the port reads by dimension (abi.rs as_compiled_strides)
        self.strided = frozenset(spec.get("strided", ()))
        # (name, rank, strides read by dimension) per array, for the fast path
        self._arrays = [(a["name"], a["ndim"], a["name"] in self.strided) for a in spec["arrays"]]
        #: per array, whether the kernel writes it (``role`` other than ``input``)
        self._written = tuple(a.get("role", "input") != "input" for a in spec["arrays"])
        #: array -> what was restaged at the last call that needed it (see :func:`restage_strides`)
        self.restaged: dict[str, dict] = {}
        self._scalars = [(s["name"], s["type"] == "i32") for s in spec["scalars"]]
        self._constexprs = list(spec["constexprs"])
        ranks = [a["ndim"] for a in spec["arrays"]]
        self._fast = all(0 <= r <= MAX_DIMS for r in ranks) and bool(ranks)
        fmt, off = call_block(spec) if self._fast else ("=", {"size": 0})
        if packed is None:          # descriptors only; the rest goes as separate arguments
            fmt = "=" + desc_format(ranks)
            # ctypes would wrap an out-of-range int silently: struct refuses it, as in the block
            self._check_tail = struct.Struct("=" + "".join(
                "i" if is_int else "f" for _, is_int in self._scalars)
                + "i" * len(self._constexprs) + "III").pack
        self._pack = struct.Struct(fmt).pack_into
        self._size = off["size"]
        self._tls = threading.local()
        # per call, the fast path reads every argument with one C-level getter per group and
        # checks the exact types of scalars, constexprs and grid with one tuple comparison
        self._get_arrays = _getter([a[0] for a in self._arrays])
        self._flags()
        self._ranks = tuple(ranks)
        self._get_scalars = _getter([n for n, _ in self._scalars])
        self._get_constexprs = _getter(self._constexprs)
        self._tail_types = (tuple(int if is_int else float for _, is_int in self._scalars)
                            + (int,) * (len(self._constexprs) + 3))
        #: (tp_py_call, packed entry address, layout address, layout array, argument names,
        #: tp_py_call_t or None, DLPack reads on) when the library marshals in Rust (HostLibrary's
        #: rust_marshal and dlpack), else None
        self._rs = None
        #: the last call went to the Python paths after tp_py_call declined or the shim refused
        #: it, and no call since was taken by the Python fast path: skip tp_py_call (see __call__)
        self._rs_skip = False

    @property
    def unread(self) -> frozenset:
        """Arrays the entry never names (``ffi.json`` ``unread``): None or no memory is fine there."""
        return self._unread

    @unread.setter
    def unread(self, names) -> None:
        self._unread = frozenset(names)
        if hasattr(self, "_arrays"):
            self._flags()
        if getattr(self, "_rs", None) is not None:      # the layout's unread flags too
            lay = self._rs_layout()
            self._rs = (*self._rs[:2], ctypes.addressof(lay), lay, *self._rs[4:])
            self._tls = threading.local()               # the threads' (packed, block, layout) triples

    def _flags(self) -> None:
        """Per-array (unread, strided, written) flags for the fast path (None: no such array), and the
        shim statuses after which tp_py_call's refusal is retried by the Python paths (they
        substitute scratch for an unread array without memory and restage refused layouts)."""
        self._special = (tuple((a[0] in self._unread, a[2], w) for a, w in zip(self._arrays, self._written))
                         if self._unread or self.strided or any(self._written) else None)
        self._retry = (frozenset({"TP_ERR_NULL_POINTER"} if self._unread else set())
                       | frozenset({"TP_ERR_BAD_SHAPE"} if self.strided else set())) or None

    def _enable_rust_marshal(self, fn, fn_t=None, dlpack: bool = True) -> None:
        """Marshal fast calls with the library's ``tp_py_call`` (``fn``, bound through
        ``ctypes.PyDLL``), or its tuple form ``tp_py_call_t`` (``fn_t``, three arguments to
        convert instead of eleven) where the library has it: the layout of this shim's block, as
        ``rust/host/abi.rs`` reads it; ``dlpack``: read tensors through their type's DLPack
        exchange table where it has one (:func:`exchange_api`), else through the C API."""
        if self.packed is None or not self._fast:
            return
        # arrays that may be None or empty (unread) or need restaging (strided) need no refusal
        # here: tp_py_call declines a None, and the shim refuses a null pointer or a layout it
        # cannot read before any launch, which __call__ retries through the Python paths
        arr = self._rs_layout()
        names = (tuple(a[0] for a in self._arrays), tuple(n for n, _ in self._scalars), tuple(self._constexprs))
        self._rs = (fn, ctypes.cast(self.packed, ctypes.c_void_p).value, ctypes.addressof(arr), arr, names, fn_t,
                    bool(dlpack))

    def _rs_layout(self):
        """The ``layout`` array tp_py_call reads for this shim (``rust/host/abi.rs`` py_call)."""
        _, off = call_block(self.spec)
        kinds = [0 if not is_int else 1 for _, is_int in self._scalars] + [1] * len(self._constexprs) + [2] * 3
        first = (off["scalars"] + off["constexprs"] + off["grid"])[0]
        # rank, plus 0x100 for an array the kernel writes (tp_py_call declines one whose elements
        # may share memory: the Python paths name it, see shares_memory), plus 0x200 for an array
        # the entry never reads (without memory it gets the device's scratch slot, registered by
        # HostLibrary.scratch through tp_set_scratch; declined while none is registered)
        ranks = [r | (0x100 if w else 0) | (0x200 if a[0] in self._unread else 0)
                 for r, w, a in zip(self._ranks, self._written, self._arrays)]
        lay = [len(ranks), *ranks, len(kinds), *kinds, first, off["device"], off["stream"]]
        return (ctypes.c_int64 * len(lay))(*lay)

    def _rust_call(self, arrays, scalars, constexprs, grid, stream, device) -> int:
        """One call marshalled by ``tp_py_call``: the shim's status, or -1 when it declined
        (nothing launched: the Python paths decide)."""
        if type(device) is not int:
            return -1
        fn, packed, layout, _, names, fn_t, _ = self._rs
        if stream is None:
            handle = (_RAW_STREAM[0] or _raw_stream_fn())(device)
        else:
            handle = getattr(stream, "cuda_stream", stream)
        if fn_t is not None:        # device and handle: type and range checked by tp_py_call_t
            try:
                fixed = self._tls.rs
            except AttributeError:
                fixed = self._rs_fixed()
            return fn_t(fixed, _rs_objs(self._rs[6]), (names, arrays, scalars, constexprs, grid, device, handle))
        if not 0 <= device <= _I32_MAX or type(handle) is not int or not 0 <= handle < 2 ** 64:
            return -1
        try:
            buf, addr = self._tls.b
        except AttributeError:
            buf, addr = self._buffer()
        return fn(packed, addr, layout, _rs_objs(self._rs[6]), names, arrays, scalars, constexprs, grid, device,
                  handle)

    def _rs_fixed(self) -> int:
        """Address of this thread's (packed entry, block, layout) triple for ``tp_py_call_t``
        (kept with the thread's block, which it points to)."""
        buf, addr = self._buffer()
        _, packed, layout, *_ = self._rs
        fixed = (ctypes.c_size_t * 3)(packed, addr, layout)
        self._tls.rs_keep = (buf, fixed)
        self._tls.rs = ctypes.addressof(fixed)
        return self._tls.rs

    def _buffer(self) -> tuple:
        """This thread's argument block and its address (the shim reads it during the call)."""
        try:
            return self._tls.b
        except AttributeError:
            buf = ctypes.create_string_buffer(self._size)
            self._tls.b = (buf, ctypes.addressof(buf))
            return self._tls.b

    def __call__(self, arrays: dict, scalars: dict, constexprs: dict, grid, stream=None,
                 device: int | None = None) -> None:
        """Launch the shim (asynchronously, on ``stream``: a ``torch.cuda.Stream``, a raw handle,
        or None for the device's current torch stream).

        ``arrays``: kernel parameter name -> tensor; ``scalars``: name -> number; ``constexprs``:
        name -> int; ``grid``: launch grid (blocks per axis); ``device``: CUDA ordinal (default:
        the first array's device index, else 0).

        Raises:
            FfiError: a missing or unusable argument (not passed to the shim), or the shim's
            non-zero status with its message.
        """
        rs = self._rs
        if rs is not None and _FAST_TYPES and not self._rs_skip:
            try:
                if rs[5] is not None and type(device) is int:    # _rust_call's tuple form, inline
                    handle = ((_RAW_STREAM[0] or _raw_stream_fn())(device) if stream is None
                              else getattr(stream, "cuda_stream", stream))
                    try:
                        fixed = self._tls.rs
                    except AttributeError:
                        fixed = self._rs_fixed()
                    rc = rs[5](fixed, _rs_objs(rs[6]), (rs[4], arrays, scalars, constexprs, grid, device, handle))
                else:
                    rc = self._rust_call(arrays, scalars, constexprs, grid, stream, device)
            except Exception:  # noqa: BLE001 - anything unexpected: the Python paths decide
                rc = -1
            if rc == 0:
                return
            if rc != -1 and not (self._retry is not None and STATUS.get(rc, ("",))[0] in self._retry):
                raise FfiError(self.kernel, self.symbol, rc, self.lib.last_error())
            # declined, or refused before any launch for what the Python paths take care of (an
            # unread array passed empty or None: scratch; a layout to restage): they decide, and
            # the next calls start there until the Python fast path takes one (a loop of calls
            # the checked path restages pays no declined Rust attempt per call)
            self._rs_skip = True
        if self._fast:
            try:
                args = self._fast_args(arrays, scalars, constexprs, grid, stream, device)
            except Exception:  # noqa: BLE001 - anything unexpected: the checked path names it
                args = None
            if args is not None:
                self._rs_skip = False
                rc = self.packed(args) if self.packed is not None else self.fn(*args)
                if rc != 0:
                    raise FfiError(self.kernel, self.symbol, rc, self.lib.last_error())
                return
        self._checked_call(arrays, scalars, constexprs, grid, stream, device)

    def _fast_args(self, arrays, scalars, constexprs, grid, stream, device):
        """For a call of torch tensors on one device: the address of the packed argument block
        (a library with ``__packed`` entries), else the shim's argument list; or :class:`_Slow`
        (or any other exception: a missing name, a value ``struct`` cannot pack in its field,
        such as an i32 out of range or a negative grid dimension), and the checked path decides.

        Each array costs its five attribute reads and no other Python-level work beyond one
        loop step; scalars, constexprs and grid are checked as one tuple of exact types
        (``bool`` is not ``int``; an ``int`` for an f32 scalar is converted, as the checked
        path does); ``struct`` checks every integer's range as it packs the block.
        """
        vals: list = []
        dev = -1
        special = self._special       # (unread, strided) flags per array, or None: plain arrays
        for slot, (t, r) in enumerate(zip(self._get_arrays(arrays), self._ranks)):
            if type(t) not in _FAST_TYPES:
                raise _Slow
            sh = t.shape
            d = t.get_device()
            if len(sh) != r or d != dev:
                if len(sh) != r or dev != -1 or d < 0:
                    raise _Slow          # on the CPU, or on two devices: named by the checked path
                dev = d
            p, st = t.data_ptr(), t.stride()
            if special is not None:
                unread, strided, written = special[slot]
                if p == 0 and unread:
                    p = self.lib.scratch(d, slot)    # no memory for an array the entry never names
                if strided and restage_strides(tuple(sh), st) is not None:
                    raise _Slow              # restaged by the checked path
                if written:
                    shares = _SHARES.get((sh, st))
                    if shares or (shares is None and _shares_memo(sh, st)):
                        raise _Slow          # refused by the checked path, which names it
            vals += (p, r)
            vals += sh
            vals += st
            dt = t.dtype
            vals.append(_CODE_OF.get(dt) or _code_of(dt))
        if device is None:
            device = dev
        elif device != dev or type(device) is not int:
            raise _Slow
        gs, gc = self._get_scalars, self._get_constexprs
        tail = (*(gs(scalars) if gs else ()), *(gc(constexprs) if gc else ()), *grid)
        if tuple(map(type, tail)) != self._tail_types:
            tail = self._coerce(tail)
        if stream is None:
            handle = (_RAW_STREAM[0] or _raw_stream_fn())(device)
        else:
            handle = getattr(stream, "cuda_stream", stream)
            if type(handle) is not int:
                raise _Slow
        try:
            buf, addr = self._tls.b
        except AttributeError:
            buf, addr = self._buffer()
        if self.packed is not None:
            self._pack(buf, 0, *vals, *tail, device, handle)
            return addr
        self._pack(buf, 0, *vals)
        self._check_tail(*tail)
        return [addr + _DESC_SIZE * i for i in range(len(self._arrays))] + list(tail) + [
            device, handle or None]

    def _coerce(self, tail: tuple) -> tuple:
        """Scalars, constexprs and grid whose types are not exactly the packed ones: an ``int``
        for an f32 scalar becomes a float (as the checked path converts it); anything else
        (a bool, a numpy number, a grid that is not 3 values) raises :class:`_Slow`."""
        if len(tail) != len(self._tail_types):
            raise _Slow
        out = []
        for v, want in zip(tail, self._tail_types):
            tv = type(v)
            if tv is want:
                out.append(v)
            elif tv is int and want is float:
                out.append(float(v))
            else:
                raise _Slow
        return tuple(out)

    def _checked_call(self, arrays, scalars, constexprs, grid, stream, device) -> None:
        """The checked path: every argument validated in turn, the first bad one named."""
        spec, kernel, symbol = self.spec, self.kernel, self.symbol

        def bad(msg):
            return FfiError(kernel, symbol, 0, msg)

        def integer(v, lo, hi, what):
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise bad(f"{what} = {v!r} is not an integer in [{lo}, {hi}]")
            return v

        descs, devices, nones, restage = [], [], [], []
        for a in spec["arrays"]:
            if a["name"] not in arrays:
                raise bad(f"missing array '{a['name']}'")
            t = arrays[a["name"]]
            if t is None:
                if a["name"] not in self.unread:
                    raise bad(f"array '{a['name']}' is None, but entry {spec['entry']} reads it "
                              f"(only arrays the entry never names may be None: "
                              f"{sorted(self.unread) or 'none'})")
                nones.append(a)
                descs.append(None)
                continue
            if a.get("role", "input") != "input":
                try:
                    shape, strides = tuple(t.shape), tuple(t.stride())
                    sharing = _shares_memo(shape, strides)
                except Exception:  # noqa: BLE001 - unreadable or not integers: descriptor() names it below
                    pass
                else:
                    if sharing:
                        raise bad(f"array '{a['name']}' is written by the kernel ({a.get('role')}) but "
                                  f"its elements may share memory (extents {shape}, strides {strides}): "
                                  f"its stores would race; pass a tensor whose elements are distinct, "
                                  f"e.g. .contiguous()")
            if a["name"] in self.strided and callable(getattr(t, "copy_", None)):
                try:
                    descriptor(t)       # the caller's own layout, refused before a copy is made of it
                except ValueError as exc:
                    raise bad(f"array '{a['name']}': {exc}") from None
                new = restage_strides(tuple(t.shape), tuple(t.stride()))
                if new is not None:     # a copy the port can read: filled just before the launch
                    restage.append((a, t, _empty_strided(t, new)))
                    t = restage[-1][2]
            try:
                descs.append(descriptor(t))
            except ValueError as exc:
                raise bad(f"array '{a['name']}': {exc}") from None
            dv = getattr(t, "device", None)
            if getattr(dv, "type", "cuda") != "cuda":
                raise bad(f"array '{a['name']}' is on {dv}, not on a CUDA device")
            if descs[-1].data == 0 and a["name"] in self.unread:
                try:
                    descs[-1].data = self.lib.scratch(getattr(dv, "index", 0) or 0, len(descs) - 1)
                except ImportError:
                    raise bad(f"array '{a['name']}' has no memory and torch, which allocates its "
                              f"scratch, is not installed") from None
            if dv is not None and getattr(dv, "index", None) is not None:
                devices.append((a["name"], dv.index))
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
            cvals.append(integer(constexprs[c], -2 ** 31, 2 ** 31 - 1, f"constexpr {c}"))
        try:
            grid = tuple(grid)
        except TypeError:
            raise bad(f"launch grid {grid!r} is not a sequence") from None
        if len(grid) != 3:
            raise bad(f"launch grid {grid} does not have 3 dimensions")
        grid = tuple(integer(g, 0, 2 ** 32 - 1, "grid dimension") for g in grid)
        if device is None:
            device = devices[0][1] if devices else 0
        device = integer(device, 0, 2 ** 31 - 1, "device")
        for name, idx in devices:
            if idx != device:
                raise bad(f"array '{name}' is on CUDA device {idx}, the launch is on device {device}")
        if stream is None:
            try:
                handle = self.lib.current_stream(device)
            except ImportError:
                raise bad("no stream given and torch is not installed") from None
        else:
            handle = getattr(stream, "cuda_stream", stream)
        if handle is not None and (isinstance(handle, bool) or not isinstance(handle, int)):
            raise bad(f"stream {stream!r} is neither a CUDA stream object nor a raw handle")
        for a in nones:
            try:
                descs[spec["arrays"].index(a)] = self._none_descriptor(a, descs, device)
            except ImportError:
                raise bad(f"array '{a['name']}' is None and torch, which allocates its scratch, "
                          f"is not installed") from None
        for a in spec["arrays"]:
            _register_fast(arrays[a["name"]])
        staged = restage
        if staged:
            with _on_stream(stream, handle, device):
                for a, t, copy in staged:
                    copy.copy_(t)
        rc = self.fn(*[ctypes.byref(d) for d in descs], *svals, *cvals, *grid, device,
                     ctypes.c_void_p(handle or None))
        if rc != 0:
            raise FfiError(kernel, symbol, rc, self.lib.last_error())
        if staged:
            with _on_stream(stream, handle, device):
                for a, t, copy in staged:
                    if a.get("role", "input") != "input":
                        t.copy_(copy)
            for a, t, copy in staged:
                self.restaged[a["name"]] = {
                    "extents": list(t.shape), "strides": list(t.stride()), "staged_strides": list(copy.stride()),
                    "copies": 1 + (a.get("role", "input") != "input"),      # device copies per call
                    "why": "the port reads this array's strides by dimension and multiplies the innermost "
                           "index by 1 (abi.rs as_compiled_strides): copied in before the launch"
                           + (", back after it" if a.get("role", "input") != "input" else "")}

    def _none_descriptor(self, a: dict, descs: list, device: int) -> TpTensor:
        """Descriptor for an array passed as None that the entry never names: the device's
        scratch address (never read), zero extents, the dtype the shim expects there (its own
        dtype for the variant dtype of the other arrays, else the variant dtype).

        Raises:
            FfiError: no other array gives the variant dtype.
        """
        arrays = self.spec["arrays"]
        vd = None
        for b, d in zip(arrays, descs):
            if d is None:
                continue
            name = next((n for n, c in DTYPE_CODES.items() if c == d.dtype), None)
            if "dtype" not in b:
                vd = name
                break
            vd = vd or next((v for v, own in b["dtype"].items() if own == name), None)
        if vd is None:
            raise FfiError(self.kernel, self.symbol, 0,
                           f"array '{a['name']}' is None and no other array gives the variant dtype")
        dt = a.get("dtype", {}).get(vd, vd)
        d = TpTensor()
        d.data, d.ndim, d.dtype = self.lib.scratch(device, arrays.index(a)), a["ndim"], DTYPE_CODES[dt]
        for i in range(a["ndim"]):
            d.shape[i], d.strides[i] = 0, 1
        return d


def py_call_entry(path: str):
    """The library's ``tp_py_call`` bound through ``ctypes.PyDLL`` (the GIL stays held through
    the call: it reads Python objects, and releases the GIL itself around the launch), or None
    for a library built without it."""
    rs = getattr(ctypes.PyDLL(path), "tp_py_call", None)
    if rs is not None:
        rs.argtypes = [ctypes.c_void_p] * 4 + [ctypes.py_object] * 5 + [ctypes.c_int32, ctypes.c_uint64]
        rs.restype = ctypes.c_int32
    return rs


def py_call_t_entry(path: str):
    """The library's ``tp_py_call_t`` (``tp_py_call`` with its per-shim pointers in one array and
    the Python arguments in one tuple) bound as :func:`py_call_entry` binds ``tp_py_call``, or
    None for a library built without it."""
    rs = getattr(ctypes.PyDLL(path), "tp_py_call_t", None)
    if rs is not None:
        rs.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.py_object]
        rs.restype = ctypes.c_int32
    return rs


#: the environment variable that places cutile's JIT disk cache of cubins (:func:`jit_cache_env`)
JIT_CACHE_ENV = "TILEPORT_JIT_CACHE"


def jit_cache_env(environ=None) -> str | None:
    """Where :data:`JIT_CACHE_ENV` puts cutile's JIT disk cache: ``""`` (unset or empty) cutile's
    default directory (``~/.cache/cutile/kernels``), an absolute path that directory, ``off``
    None (every process compiles its kernels again, cutile 0.5.0's own default). On by default as
    cuTile Python's disk cache is (``CUDA_TILE_CACHE_DIR``): a bench process then reads the cubins
    ``python -m tileport.gpu.bench --compile-only`` compiled in parallel processes beforehand.

    Raises:
        ValueError: a relative path (it would move with each process's working directory).
    """
    value = (os.environ if environ is None else environ).get(JIT_CACHE_ENV, "")
    if value == "off":
        return None
    if value and not os.path.isabs(value):
        raise ValueError(f"{JIT_CACHE_ENV}={value!r}: want an absolute directory, 'off', or nothing "
                         f"(cutile's default directory)")
    return value


#: device -> scratch tensor (:meth:`HostLibrary.scratch`), for the process's life: a library
#: that registered an address with tp_set_scratch may pass it on any later call
_SCRATCH: dict = {}
_SCRATCH_OLD: list = []


class HostLibrary:
    """The built shim library plus the ``ffi.json`` signatures of the operators it holds.

    ``functions``: symbol -> its ``ffi.json`` entry plus ``fn`` (the ctypes function);
    ``shims``: symbol -> :class:`Shim`. ``rust_marshal`` (default: on unless ``TILEPORT_RUST_MARSHAL=0`` in
    the environment): fast calls marshalled by the library's ``tp_py_call_t`` (module doc);
    ``self.rust_marshal`` says whether the library has it. ``dlpack`` (default: on unless
    ``TILEPORT_DLPACK=0``): ``tp_py_call_t`` reads a tensor through its type's DLPack exchange table
    (:func:`exchange_api`) where it has one, else through the CPython C API. ``jit_cache``: where
    cutile's JIT disk cache of cubins is (``TILEPORT_JIT_CACHE``, :func:`jit_cache_env`).

    Raises (constructor):
        FfiError: the library cannot be loaded, has another ABI version, or lacks a listed symbol.
        ValueError: ``rust_marshal`` None and ``TILEPORT_RUST_MARSHAL`` neither 0 nor 1
            (:func:`rust_marshal_env`), or ``dlpack`` None and ``TILEPORT_DLPACK`` neither 0 nor 1
            (:func:`dlpack_env`), before the library is loaded; ``TILEPORT_JIT_CACHE`` a relative
            path (:func:`jit_cache_env`).
    """

    def __init__(self, library: str | Path, ffi_jsons: list[str | Path], rust_marshal: bool | None = None,
                 dlpack: bool | None = None):
        if rust_marshal is None:
            rust_marshal = rust_marshal_env()
        if dlpack is None:
            dlpack = dlpack_env()
        jit_cache = jit_cache_env()
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
        #: where cutile's JIT disk cache lives ("" its default directory), None: off
        #: (:func:`jit_cache_env`; a library built before tp_jit_disk_cache has none)
        self.jit_cache = self._enable_jit_cache(jit_cache)
        #: device -> the scratch base address registered with this library (see scratch)
        self._scratch: dict = {}
        self._set_scratch = getattr(self._lib, "tp_set_scratch", None)
        if self._set_scratch is not None:
            self._set_scratch.argtypes = [ctypes.c_int32, ctypes.c_uint64, ctypes.c_uint64]
            self._set_scratch.restype = ctypes.c_int32
        self.functions: dict[str, dict] = {}
        self.shims: dict[str, Shim] = {}
        for path in ffi_jsons:
            for spec in json.loads(Path(path).read_text())["functions"]:
                try:
                    fn = getattr(self._lib, spec["symbol"])
                except AttributeError:
                    raise FfiError(spec["kernel"], spec["symbol"], 0,
                                   f"{self.path} has no symbol {spec['symbol']} (listed in {path}); "
                                   f"rebuild the host library") from None
                # descriptors as void *: the fast path passes addresses, the checked one byref()
                fn.argtypes = ([ctypes.c_void_p] * len(spec["arrays"])
                               + [_SCALAR_CTYPES[s["type"]] for s in spec["scalars"]]
                               + [ctypes.c_int32] * len(spec["constexprs"])
                               + [ctypes.c_uint32] * 3 + [ctypes.c_int32, ctypes.c_void_p])
                fn.restype = ctypes.c_int32
                packed = getattr(self._lib, spec["symbol"] + "__packed", None)
                if packed is not None:
                    packed.argtypes, packed.restype = [ctypes.c_void_p], ctypes.c_int32
                self.functions[spec["symbol"]] = {**spec, "fn": fn}
                self.shims[spec["symbol"]] = Shim(self, spec, fn, packed)
        self.rust_marshal, self.dlpack = False, bool(dlpack)
        if rust_marshal:
            rs, rs_t = py_call_entry(self.path), py_call_t_entry(self.path)
            # a library without tp_py_call_t is older than the written-array flag of the layout
            # (it would decline every call): the Python paths marshal for it
            if rs is not None and rs_t is not None:
                for sh in self.shims.values():
                    sh._enable_rust_marshal(rs, rs_t, dlpack)
                self.rust_marshal = True

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

    def current_stream(self, device: int) -> int:
        """Raw handle of torch's current CUDA stream on ``device`` (0: the legacy default stream).

        Raises:
            ImportError: torch is not installed.
        """
        return _raw_stream_fn()(device)

    def _enable_jit_cache(self, where: str | None) -> str | None:
        """Turn on cutile's JIT disk cache at ``where`` (:func:`jit_cache_env`). Returns ``where``,
        or None: off, an older library, or a directory the library refused (then
        ``jit_cache_error`` says why: like cutile's own store errors, a cache that cannot be used
        never fails a launch)."""
        self.jit_cache_error = ""
        fn = getattr(self._lib, "tp_jit_disk_cache", None)
        if where is None or fn is None:
            return None
        fn.argtypes, fn.restype = [ctypes.c_char_p], ctypes.c_int32
        if fn(where.encode() if where else None) != 0:
            self.jit_cache_error = f"{JIT_CACHE_ENV}={where!r}: {self.last_error()}"
            return None
        return where

    def jit_cache_stats(self) -> dict | None:
        """cutile's JIT disk cache counters of this process: ``hits``, ``misses``, ``puts``,
        ``bytes_written`` (bytes), ``io_errors``; None for a library built before
        ``tp_jit_cache_stats``."""
        fn = getattr(self._lib, "tp_jit_cache_stats", None)
        if fn is None:
            return None
        out = (ctypes.c_uint64 * 5)()
        fn.argtypes, fn.restype = [ctypes.c_void_p], None
        fn(ctypes.cast(out, ctypes.c_void_p))
        return dict(zip(("hits", "misses", "puts", "bytes_written", "io_errors"), map(int, out)))

    def scratch(self, device: int, slot: int = 0) -> int:
        """Address of slot ``slot`` (an array's position in its shim: one slot per array, so
        that two arrays never share memory, which cutile forbids beside a written tensor) of a
        device allocation on ``device`` (256 bytes per slot, at least 32 slots, kept for the
        process's life and shared by every library), passed for an array an entry never names
        when the caller gives no memory (None, or an empty torch tensor, whose data pointer is
        0): the shim refuses a null data pointer. The allocation is registered with the library
        (``tp_set_scratch``), so that ``tp_py_call`` passes the slot itself instead of declining
        such a call to the Python paths on every call.

        Raises:
            ImportError: torch is not installed.
        """
        t = _SCRATCH.get(device)
        if t is None or t.numel() < 256 * (slot + 1):
            import torch

            if t is not None:       # a library may still have the old one registered: kept
                _SCRATCH_OLD.append(t)
            t = _SCRATCH[device] = torch.empty(256 * max(slot + 1, 32), dtype=torch.uint8,
                                               device=f"cuda:{device}")
        base = t.data_ptr()
        if self._scratch.get(device) != base and self._set_scratch is not None:
            # tp_py_call passes it itself from now on (abi.rs tp_set_scratch)
            if self._set_scratch(device, base, t.numel() // 256) == 0:
                self._scratch[device] = base
        return base + 256 * slot

    def shim(self, symbol: str) -> Shim:
        """The bound :class:`Shim` of ``symbol``.

        Raises:
            FfiError: the library binds no such shim.
        """
        s = self.shims.get(symbol)
        if s is None:
            raise FfiError("?", symbol, 0, f"{self.path} binds no shim {symbol} "
                                           f"(have {sorted(self.functions)})")
        return s

    def call(self, symbol: str, arrays: dict, scalars: dict, constexprs: dict,
             grid: tuple[int, int, int], stream=None, device: int | None = None) -> None:
        """Launch one shim: ``self.shim(symbol)(arrays, scalars, constexprs, grid, stream, device)``
        (see :meth:`Shim.__call__`).

        Raises:
            FfiError: an unknown symbol, a missing or unusable argument, or the shim's non-zero
            status with its message.
        """
        s = self.shims.get(symbol) or self.shim(symbol)
        s(arrays, scalars, constexprs, grid, stream, device)
