"""NVIDIA's shipped cuTile Rust ports on the GPU: their C functions through ctypes.

Each ``ffi.rs`` of tilegym's ``ops/cutile_rs/`` exports one ``extern "C"`` function ``cutile_<op>``
taking ``*const TensorDesc`` for each tensor (``ffi_util.rs``: u64 device pointer, i32 rank, i64
extents and i64 strides in elements for up to 5 dimensions, i32 dtype code -- 104 bytes), i32 /
f32 scalars, and last ``device_id: i32`` and ``raw_stream: u64``; it returns 0 or a negative code
(-2 dtype, -3 launch, -4 device, -5 null, -6 arguments) and launches with ``sync_on`` (the call
returns when the kernel is done). ``nv_build`` parsed every signature out of ffi.rs
(:func:`tileport.nvidia.port.parse_ffi`); :class:`NvLibrary` types the functions from them and
:class:`NvSide` binds one entry to a reference launch through ``rust/nvidia/ports.yaml``'s ``call``
mapping (every C argument named, checked), with the CGA size and occupancy the reference variant
compiles with (:func:`reference_options`, set per call by :meth:`NvSide.with_options`), as
NVIDIA's own wrappers (``tilegym/ops/cutile_rs/matmul.py``, ``bmm.py``) forward their configs'
``NUM_CTAS`` / ``OCCUPANCY`` to ``num_cta_in_cga`` / ``occupancy``. No cffi: ctypes is enough for
this ABI.
"""
from __future__ import annotations

import ctypes
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from tileport.core.verdict import VerdictError, read
from tileport.nvidia.port import PORTS, REPO, NvPortError, evaluate, links, load_ports, supported

#: the two C arguments tileport passes itself (every ffi.rs ends with them)
RUNTIME_ARGS = ("device_id", "raw_stream")

MAX_DIMS = 5
#: TensorDesc.dtype codes of ffi_util.rs (dtype_str)
DTYPE_CODES = {"f32": 0, "f16": 1, "bf16": 2, "i32": 3, "i64": 4, "f8e5m2": 5, "f4e2m1fnx2": 6,
               "f8e4m3fn": 7}
#: torch dtype name -> dtype name above
TORCH_NAMES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "int64": "i64",
               "float8_e5m2": "f8e5m2", "uint8": "f4e2m1fnx2", "float8_e4m3fn": "f8e4m3fn"}
#: the compiler options NVIDIA's C functions take as arguments (ffi.rs ``num_cta_in_cga``,
#: ``occupancy``), by cuda.tile's hint names: what ports.yaml's ``call`` expressions may name
LAUNCH_OPTIONS = ("num_ctas", "occupancy")
#: ffi_util.rs ``compile_options!``: a value <= 0 leaves cutile's default (the wrappers'
#: ``_AUTO_COMPILE_OPTION``); the value bound where the reference sets no such option
AUTO_OPTION = -1
#: ffi_util.rs rc codes
RETURN_CODES = {0: "ok", -2: "unsupported dtype", -3: "kernel launch failed", -4: "device init failed",
                -5: "null tensor pointer", -6: "invalid arguments"}


class TensorDesc(ctypes.Structure):
    """``#[repr(C)] struct TensorDesc`` of NVIDIA's ffi_util.rs: u64 pointer, i32 rank, i64 extents
    and i64 strides (elements) for up to 5 dimensions, i32 dtype code: 104 bytes on x86-64."""

    _fields_ = [("ptr", ctypes.c_uint64), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS),
                ("dtype", ctypes.c_int32)]


#: Rust parameter types of the C functions -> ctypes (``*const TensorDesc`` is a descriptor pointer)
C_TYPES = {"i32": ctypes.c_int32, "u64": ctypes.c_uint64, "f32": ctypes.c_float, "i64": ctypes.c_int64,
           "u32": ctypes.c_uint32, "f64": ctypes.c_double, "*const TensorDesc": ctypes.POINTER(TensorDesc)}


class NvError(RuntimeError):
    """NVIDIA's C function returned non-zero, or its arguments could not be built from the call."""


def dtype_of(t) -> str:
    """Dtype name (f16, bf16, f32, i32, ...) of a tensor's ``dtype``."""
    return TORCH_NAMES.get(str(t.dtype).removeprefix("torch."), str(t.dtype))


def tensor_desc(t) -> TensorDesc:
    """The ``TensorDesc`` of a tensor (``data_ptr()``, ``dim()``, ``shape``, ``stride()`` in elements,
    ``dtype``), as TileGym's ``make_tensor_desc`` packs it.

    Raises:
        NvError: more than 5 dimensions or a dtype the ABI has no code for.
    """
    nd = t.dim()
    if nd > MAX_DIMS:
        raise NvError(f"{nd}-D tensor: NVIDIA's TensorDesc holds at most {MAX_DIMS} dimensions")
    code = DTYPE_CODES.get(dtype_of(t))
    if code is None:
        raise NvError(f"dtype {t.dtype} has no TensorDesc code")
    d = TensorDesc()
    d.ptr, d.ndim, d.dtype = t.data_ptr(), nd, code
    for i, (n, s) in enumerate(zip(tuple(t.shape), tuple(t.stride()))):
        d.shape[i], d.strides[i] = int(n), int(s)
    return d


def signature(params: list[list[str]], symbol: str) -> list[tuple[str, object]]:
    """``[(name, ctypes type)]`` of a C function from its parsed Rust parameters.

    Raises:
        NvError: a parameter type tileport cannot pass, or the function does not end with
            ``device_id`` and ``raw_stream``.
    """
    out = []
    for name, ty in params:
        if ty not in C_TYPES:
            raise NvError(f"{symbol}: parameter {name}: Rust type {ty!r} has no ctypes equivalent")
        out.append((name, C_TYPES[ty]))
    if tuple(n for n, _ in out[-2:]) != RUNTIME_ARGS:
        raise NvError(f"{symbol}: expected the last parameters {RUNTIME_ARGS}, got "
                      f"{[n for n, _ in out[-2:]]}")
    return out


def call_values(spec: dict, sig: list[tuple[str, object]], env: dict, where: str) -> list:
    """The C arguments (without device_id, raw_stream) of one call, in the function's order, from
    the entry's ``call`` mapping evaluated over ``env`` (the reference launch's arguments by name,
    ``dtype``, ``grid``). A descriptor argument must be a tensor, a number argument a number.

    Raises:
        NvError: a C parameter without a value, a value for no parameter, or a wrong kind.
    """
    names = [n for n, _ in sig if n not in RUNTIME_ARGS]
    missing = [n for n in names if n not in spec["call"]]
    extra = [n for n in spec["call"] if n not in names]
    if missing or extra:
        raise NvError(f"{where}: call: " + "; ".join(
            ([f"no value for C parameter(s) {missing}"] if missing else [])
            + ([f"{extra} are not parameters of the C function"] if extra else [])))
    out = []
    for name, ctype in sig:
        if name in RUNTIME_ARGS:
            continue
        try:
            v = evaluate(spec["call"][name], env, f"{where}: call/{name}")
        except NvPortError as exc:
            raise NvError(str(exc)) from None
        is_desc = ctype is C_TYPES["*const TensorDesc"]
        if is_desc != hasattr(v, "data_ptr"):
            raise NvError(f"{where}: call/{name}: {'a tensor' if is_desc else 'a number'} expected, "
                          f"got {type(v).__name__}")
        if not is_desc and isinstance(v, bool):
            v = int(v)
        out.append((name, ctype, v))
    return out


def reference_options(kernel, hints: dict, target: str) -> dict[str, int]:
    """The CGA size and occupancy a cuTile Python kernel compiles with for ``target``:
    ``{"num_ctas": n, "occupancy": n}``, :data:`AUTO_OPTION` (-1) for one neither the kernel
    nor ``hints`` sets (the compiler's default on both sides).

    ``kernel``: the ``@ct.kernel`` object (its ``_compiler_options``, a ``CompilerOptions``:
    cuda-tile 1.7.0 ``_execution.py``); ``hints``: the variant's compiler hints
    (:attr:`tileport.model.manifest.Variant.hints`), applied over the decorator's as
    ``kernel.replace_hints(**hints)`` applies them (``dataclasses.replace``); ``target``:
    ``sm_<major><minor>`` of the device. A ``ct.ByTarget`` value gives its entry for ``target``,
    else its default, as ``CompilerOptions.hints_by_target`` keys it for tileiras.

    Raises:
        NvError: ``kernel`` has no compiler options (not a cuda-tile 1.7.0 kernel) or cuda-tile
            refuses ``hints``.
    """
    opts = getattr(kernel, "_compiler_options", None)
    if opts is None or not dataclasses.is_dataclass(opts):
        raise NvError(f"{kernel!r} has no cuTile compiler options (_compiler_options of cuda-tile 1.7.0)")
    try:
        by_target = dataclasses.replace(opts, **hints).hints_by_target()
    except (TypeError, ValueError) as exc:
        raise NvError(f"compiler hints {hints}: {exc}") from None
    merged = {**by_target.get("default", {}), **by_target.get(target, {})}
    return {k: AUTO_OPTION if merged.get(k) is None else int(merged[k]) for k in LAUNCH_OPTIONS}


def device_target(device: int = 0) -> str:
    """``sm_<major><minor>`` of a CUDA device (torch's compute capability; cuda-tile 1.7.0
    ``format_sm_arch`` names the target so)."""
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


class NvLibrary:
    """NVIDIA's ``libcutile_kernels.so`` loaded with ctypes, its C functions typed from the
    signatures ``nv_build`` parsed out of ffi.rs (``details.modules[op].symbols``).

    Raises:
        NvError: the build verdict is not a PASS with a library; OSError: the library cannot be
            loaded; NvError: a signature tileport cannot call.
    """

    def __init__(self, build_json: str | Path):
        b = read(build_json)
        if b["verdict"] != "PASS" or not (b["details"].get("cdylib") or {}).get("ok"):
            raise NvError(f"NVIDIA's crate is not built: nv_build {b['verdict']}: {b['summary']}")
        # next to the verdict (a results/ tree copied to a GPU node), else where it was built
        lib = Path(b["details"]["cdylib"]["library"])
        near = Path(build_json).parent / lib.name
        self.path = str(near if near.is_file() else lib)
        self.modules = b["details"]["modules"]
        self.lib = ctypes.CDLL(self.path)
        self.sigs = {}
        for m in self.modules.values():
            for sym, s in m["symbols"].items():
                sig = signature(s["params"], sym)
                fn = getattr(self.lib, sym)
                fn.argtypes = [t for _, t in sig]
                fn.restype = ctypes.c_int32
                self.sigs[sym] = sig

    def side(self, nv_op: str, entry: str, spec: dict, symbol: str) -> "NvSide":
        if symbol not in self.sigs:
            raise NvError(f"{self.path} has no C function {symbol} (ffi.rs of {nv_op})")
        return NvSide(self, nv_op, entry, spec, symbol)


@dataclass
class NvSide:
    """One NVIDIA entry as a side of a GPU call (:meth:`bind` gives the callable). ``options``:
    the reference variant's :func:`reference_options` (None until :meth:`with_options` set them;
    ``options_note`` then says why they are not known)."""

    lib: NvLibrary
    nv_op: str
    entry: str
    spec: dict
    symbol: str
    options: dict | None = None
    options_note: str = ""

    def with_options(self, options: dict | None, note: str = "") -> "NvSide":
        """This side for one reference variant: ``options`` (:func:`reference_options`) bound by
        name in the ``call`` expressions, or None with the ``note`` saying why they are unknown."""
        return dataclasses.replace(self, options=None if options is None else dict(options), options_note=note)

    def bind(self, args: dict, constexprs: dict, grid: tuple, dtype: str, device: int = 0,
             stream=None):
        """A zero-argument callable launching the C function for one reference launch.

        ``args``: the reference kernel's tensor and scalar arguments by parameter name (this side's
        own output tensors); ``constexprs``: the variant's; ``grid``: the launch grid. The ``call``
        expressions also see :data:`LAUNCH_OPTIONS` (``num_ctas``, ``occupancy``) from
        :attr:`options`, so NVIDIA's kernel compiles with the reference's CGA size and occupancy.
        Checks each tensor's dtype against what the FFI reads it as (the variant dtype, or
        ``tensor_dtypes``).
        The descriptors are packed per call, as TileGym's wrapper does; the call blocks until the
        kernel is done (NVIDIA's ffi.rs launches with ``sync_on``).

        Raises:
            NvError: the variant is not supported, the reference's options are not known (no
                :meth:`with_options`) or shadow an argument or constexpr of the same name, an
                argument is missing or of the wrong kind or dtype. The callable raises NvError
                with the return code's meaning.
        """
        where = f"{PORTS.relative_to(REPO)}: {self.nv_op}/{self.entry}"
        if not supported(self.spec, dtype, constexprs, where):
            raise NvError(f"NVIDIA's {self.entry} does not implement this variant "
                          f"(supports: {self.spec['supports']})")
        if self.options is None:
            raise NvError(f"{where}: the reference variant's {' / '.join(LAUNCH_OPTIONS)} are not known"
                          + (f": {self.options_note}" if self.options_note else
                             " (a side bound without NvSide.with_options)"))
        env = {**args, **constexprs, "dtype": dtype, "grid": tuple(grid)}
        clash = sorted(set(self.options) & set(env))
        if clash:
            raise NvError(f"{where}: {clash} name both a compiler option and an argument or constexpr")
        env.update(self.options)
        sig = self.lib.sigs[self.symbol]
        values = call_values(self.spec, sig, env, where)
        want = self.spec.get("tensor_dtypes", {})
        for name, ctype, v in values:
            if ctype is C_TYPES["*const TensorDesc"] and dtype_of(v) != want.get(name, dtype):
                raise NvError(f"{where}: call/{name}: tensor is {dtype_of(v)}, but {self.symbol} reads "
                              f"it as {want.get(name, dtype)}")
        fn = getattr(self.lib.lib, self.symbol)
        symbol = self.symbol

        def launch():
            if stream is None:
                import torch

                s = torch.cuda.current_stream(device).cuda_stream
            else:
                s = stream
            packed = [ctypes.byref(tensor_desc(v)) if c is C_TYPES["*const TensorDesc"] else v
                      for _, c, v in values]
            rc = fn(*packed, int(device), int(s))
            if rc != 0:
                raise NvError(f"{symbol} returned {rc}: {RETURN_CODES.get(rc, 'unknown error')}")

        return launch


def gpu_binding(op_dir: str | Path, results: str | Path, nv_build: str | Path | None = None):
    """``({kernel: NvSide}, note)`` for the GPU stages of one operator: its kernels NVIDIA ported,
    bound to the library ``nv_build`` built (default ``<results>/nvidia/shipped/build.json``).
    ``({}, "")`` when NVIDIA ported none of them; ``({}, reason)`` when the library cannot be
    used (the GPU stages record the reason and run without the fourth side)."""
    try:
        ports = load_ports()
        ln = links(Path(op_dir) / "manifest.yaml", ports)
        if not ln:
            return {}, ""
        lib = NvLibrary(nv_build or Path(results) / "nvidia" / "shipped" / "build.json")
        return {k: lib.side(o, e, ports[o]["entries"][e], ports[o]["symbol"])
                for k, (o, e) in ln.items()}, ""
    except (NvPortError, NvError, VerdictError, OSError, AttributeError) as exc:
        return {}, f"NVIDIA's port not run: {type(exc).__name__}: {exc}"[:600]
