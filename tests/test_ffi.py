"""The C ABI through ctypes, on the real built library, without a GPU: descriptor building and
every status code that is decided before the CUDA driver is touched (plus the driver-less one)."""
import ctypes
import sys

import pytest

from tileport.host import ffi
from tileport.host import shim as host
from tileport.host.ffi import FfiError, HostLibrary, descriptor
from tileport.model import launch_facts


class FakeTensor:
    """Duck-typed tensor: what descriptor() reads from a torch.Tensor."""

    def __init__(self, shape, dtype="torch.float16", ptr=0x7F0000001000, strides=None):
        self.shape, self.dtype, self.ptr = tuple(shape), dtype, ptr
        st, acc = [], 1
        for e in reversed(shape):
            st.insert(0, acc)
            acc *= e
        self._strides = tuple(strides) if strides is not None else tuple(st)

    def data_ptr(self):
        return self.ptr

    def dim(self):
        return len(self.shape)

    def stride(self):
        return self._strides


def test_descriptor_copies_pointer_shape_strides_dtype():
    # the upper half of x (M, 2N) as a strided view: stride 2N on dim 0, data offset by N elements
    t = FakeTensor((3, 5), "torch.bfloat16", ptr=0x1000 + 5 * 2, strides=(10, 1))
    d = descriptor(t)
    assert d.data == 0x100A and d.ndim == 2
    assert list(d.shape[:2]) == [3, 5] and list(d.strides[:2]) == [10, 1]
    assert d.dtype == host.DTYPE_CODES["bf16"]
    assert descriptor(FakeTensor((4,), "torch.float32")).dtype == 3
    assert descriptor(FakeTensor((4,), "torch.int32")).dtype == host.DTYPE_CODES["i32"] == 7
    assert descriptor(FakeTensor((4,), "torch.complex64")).dtype == 0     # unknown -> 0
    with pytest.raises(ValueError, match="0 to 6 dimensions"):
        descriptor(FakeTensor((1,) * 7))


def test_struct_layout_matches_rust():
    # #[repr(C)] { u64, i32, [i64; 6], [i64; 6], i32 }: 8 + 4(+4 pad) + 48 + 48 + 4(+4 pad)
    assert ctypes.sizeof(ffi.TpTensor) == 120
    assert ffi.TpTensor.shape.offset == 16 and ffi.TpTensor.dtype.offset == 112


def test_dtype_names():
    assert ffi.dtype_name("torch.float16") == "f16" and ffi.dtype_name("torch.half") == "f16"
    assert ffi.dtype_name("bf16") == "bf16" and ffi.dtype_name("torch.int32") == "i32"
    assert ffi.dtype_name("torch.complex64") is None


@pytest.fixture(scope="module")
def lib(built):
    results, v = built
    assert v["verdict"] == "PASS", v["summary"]
    return HostLibrary(results / "host" / host.LIB_NAME,
                       [results / op / "host" / "ffi.json" for op in ("relu", "rms_norm")])


RMS = "tp_rms_norm__rms_norm_kernel"


def call(lib, arrays=None, scalars=None, cx=None, grid=(1, 1, 1), device=0):
    arrays = arrays if arrays is not None else {"x": FakeTensor((4, 8)), "w": FakeTensor((8,)),
                                                "y": FakeTensor((4, 8))}
    lib.call(RMS, arrays, scalars if scalars is not None else {"inv_n": 0.125, "eps": 1e-6},
             cx or {"BM": 4, "TILE": 8}, grid, stream=0, device=device)


def code_of(lib, **kw):
    with pytest.raises(FfiError) as e:
        call(lib, **kw)
    return e.value


def test_null_data_pointer(lib):
    e = code_of(lib, arrays={"x": FakeTensor((4, 8)), "w": FakeTensor((8,), ptr=0), "y": FakeTensor((4, 8))})
    assert (e.code, e.status, e.fail_class) == (1, "TP_ERR_NULL_POINTER", "host")
    assert "array 'w'" in str(e) and "rms_norm_kernel" in str(e) and RMS in str(e)


def test_bad_rank(lib):
    e = code_of(lib, arrays={"x": FakeTensor((32,)), "w": FakeTensor((8,)), "y": FakeTensor((4, 8))})
    assert e.code == 2 and "array 'x': rank 1 but the kernel takes rank 2" in e.cause


def test_unknown_and_mixed_dtypes(lib):
    e = code_of(lib, arrays={"x": FakeTensor((4, 8), "torch.complex64"), "w": FakeTensor((8,)),
                             "y": FakeTensor((4, 8))})
    assert e.code == 3 and "unknown dtype code 0" in e.cause
    e = code_of(lib, arrays={"x": FakeTensor((4, 8), "torch.int8"), "w": FakeTensor((8,)), "y": FakeTensor((4, 8))})
    assert e.code == 3 and "'w' is f16 but 'x' is i8" in e.cause
    e = code_of(lib, arrays={"x": FakeTensor((4, 8)), "w": FakeTensor((8,), "torch.float32"), "y": FakeTensor((4, 8))})
    assert e.code == 3 and "'w' is f32 but 'x' is f16" in e.cause


def test_extent_beyond_i32_and_byte_count(lib):
    e = code_of(lib, arrays={"x": FakeTensor((2 ** 31, 8)), "w": FakeTensor((8,)), "y": FakeTensor((4, 8))})
    assert e.code == 4 and "extent 2147483648 of dim 0" in e.cause
    # 2^30 f16 elements = 2 GiB: each extent fits i32, the byte count does not
    e = code_of(lib, arrays={"x": FakeTensor((2 ** 15, 2 ** 15)), "w": FakeTensor((8,)), "y": FakeTensor((4, 8))})
    assert e.code == 4 and "bytes exceed" in e.cause


def test_zero_grid_and_bad_constexpr_and_device(lib):
    assert code_of(lib, grid=(0, 1, 1)).code == 8
    e = code_of(lib, cx={"BM": 2 ** 31, "TILE": 8})       # outside i32: refused before the shim
    assert e.code == 0 and "constexpr BM = 2147483648" in e.cause
    # zero for a constexpr every manifest variant gives a positive value (a tile size): the
    # shim refuses it, whether Python or a C caller passes it
    e = code_of(lib, cx={"BM": 0, "TILE": 8})
    assert e.code == 8 and "constexpr BM = 0 is not positive" in e.cause
    d = [descriptor(FakeTensor((4, 8))), descriptor(FakeTensor((8,))), descriptor(FakeTensor((4, 8)))]
    rc = lib.functions[RMS]["fn"](*[ctypes.byref(x) for x in d], 0.1, 1e-6, 0, 8, 1, 1, 1, 0, None)
    assert rc == 8 and "constexpr BM = 0 is not positive" in lib.last_error()
    assert code_of(lib, device=-1).code == 0                # Python refuses a negative ordinal


def test_missing_argument_is_named(lib):
    e = code_of(lib, scalars={"inv_n": 0.1})
    assert e.code == 0 and "eps" in e.cause


GATHER = "tp_constructs__gather_kernel"


@pytest.mark.parametrize("shape,strides,ok", [
    ((4, 8), None, True),
    ((1, 8), (1, 1), True),      # an extent-1 dim's unit stride is free: made 8
    ((4, 1), (1, 7), True),      # the innermost of extent 1 made 1; dim 0's unit stride kept dynamic
    ((4, 1), (1, 1), True),      # contiguous (N, 1): dim 0's unit stride kept dynamic
    ((4, 8), (1, 4), False),     # column-major: innermost stride 4
])
def test_strides_read_by_dimension_in_the_compiled_layout(built, shape, strides, ok):
    """A port reading an array's strides by dimension (gather_kernel) gets them in the layout it
    was compiled for, innermost 1 and every other stride dynamic (test_compiled_strides_address_
    what_the_caller_s_layout_does checks the arithmetic). Only an innermost stride other than 1
    on an extent > 1 is refused with TP_ERR_BAD_SHAPE before the driver (without a driver, a
    good layout gets TP_ERR_CUDA_CONTEXT)."""
    results, _ = built
    glib = HostLibrary(results / "host" / host.LIB_NAME, [results / "constructs" / "host" / "ffi.json"])
    arrays = {"a": FakeTensor(shape, strides=strides), "b": FakeTensor((4, 8))}
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a CUDA driver is present: a good layout would launch")
    except OSError:
        pass
    with pytest.raises(FfiError) as e:
        glib.call(GATHER, arrays, {}, {"TILE": 8}, (1, 1, 1), stream=0, device=0)
    if ok:
        assert e.value.code == 5, e.value.cause
    else:
        assert e.value.code == 4 and "array 'a'" in e.value.cause and "strides" in e.value.cause


def test_valid_call_reaches_the_driver(lib):
    """Descriptors pass every check; without a CUDA driver the shim reports TP_ERR_CUDA_CONTEXT
    (fail_class env) instead of crashing -- on a GPU machine this would launch, so skip there."""
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a CUDA driver is present: a valid call would launch")
    except OSError:
        pass
    e = code_of(lib)
    assert (e.code, e.fail_class) == (5, "env") and "CUDA device 0" in e.cause
    # the last error is per call: a following bad call reports its own cause
    assert code_of(lib, grid=(1, 0, 1)).cause.endswith("has a zero dimension")


def test_library_lacking_a_listed_symbol(built, tmp_path):
    results, _ = built
    spec = (results / "relu" / "host" / "ffi.json").read_text().replace("tp_relu__relu_kernel", "tp_relu__gone")
    (tmp_path / "ffi.json").write_text(spec)
    with pytest.raises(FfiError, match="no symbol tp_relu__gone"):
        HostLibrary(results / "host" / host.LIB_NAME, [tmp_path / "ffi.json"])
    with pytest.raises(FfiError, match="cannot load"):
        HostLibrary(tmp_path / "missing.so", [])


def test_variant_lookup(lib):
    assert lib.for_variant("rms_norm_kernel", "bf16-BM16-TILE1024")["symbol"] == RMS
    with pytest.raises(FfiError, match="no shim"):
        lib.for_variant("rms_norm_kernel", "f64-BM1-TILE1")


def test_python_side_range_checks_never_reach_the_shim(lib):
    """ctypes would wrap or truncate these silently: each must be an FfiError naming the value."""
    big = FakeTensor((4, 8))
    big.shape = (2 ** 64 + 4, 8)
    cases = [
        (dict(arrays={"x": big, "w": FakeTensor((8,)), "y": FakeTensor((4, 8))}), "extent"),
        (dict(arrays={"x": FakeTensor((4, 8), ptr=2 ** 64 + 5), "w": FakeTensor((8,)),
                      "y": FakeTensor((4, 8))}), "data pointer"),
        (dict(arrays={"x": None, "w": FakeTensor((8,)), "y": FakeTensor((4, 8))}), "array 'x' is None, but"),
        (dict(arrays={"x": "abc", "w": FakeTensor((8,)), "y": FakeTensor((4, 8))}), "array 'x': not a tensor"),
        (dict(cx={"BM": 2 ** 32 + 16, "TILE": 8}), "constexpr BM"),
        (dict(cx={"BM": 1.7, "TILE": 8}), "constexpr BM"),
        (dict(scalars={"inv_n": "x", "eps": 1e-6}), "scalar inv_n"),
        (dict(grid=None), "launch grid None"),
        (dict(grid=("a", 1, 1)), "grid dimension"),
        (dict(device="cuda"), "device"),
    ]
    for kw, needle in cases:
        e = code_of(lib, **kw)
        assert e.code == 0 and needle in e.cause, (kw, e)
        assert "not passed to the shim" in str(e) and "TP_OK" not in str(e)
    with pytest.raises(FfiError, match="binds no shim tp_nope"):
        lib.call("tp_nope", {}, {}, {}, (1, 1, 1), stream=0)
    with pytest.raises(FfiError, match="neither a CUDA stream"):
        lib.call(RMS, {"x": FakeTensor((4, 8)), "w": FakeTensor((8,)), "y": FakeTensor((4, 8))},
                 {"inv_n": 0.1, "eps": 1e-6}, {"BM": 4, "TILE": 8}, (1, 1, 1), stream="s", device=0)


def test_huge_device_ordinal_is_refused_not_allocated(lib):
    # the shim's context cache is indexed by ordinal: a huge one must be refused up front
    e = code_of(lib, device=2 ** 31 - 1)
    assert e.code == 8 and "outside 0..=255" in e.cause


# -- the fast path (torch tensors): one struct pack per call, same bytes as the checked path ------

class FastTensor(FakeTensor):
    """A tensor type the fast path accepts (as it accepts torch.Tensor), on CUDA device ``dev``."""

    def __init__(self, *a, dev=0, **kw):
        super().__init__(*a, **kw)
        self.dev = dev

    def get_device(self):
        return self.dev

    @property
    def device(self):
        class D:
            type, index = ("cuda", self.dev) if self.dev >= 0 else ("cpu", None)

            def __str__(d):
                return f"{d.type}:{d.index}" if d.index is not None else d.type
        return D()


@pytest.fixture
def fast(monkeypatch):
    monkeypatch.setattr(ffi, "_FAST_TYPES", {FastTensor})


def test_desc_format_packs_the_ctypes_layout():
    import struct

    for shape, strides in (((7,), (1,)), ((3, 5), (10, 1)), ((2, 3, 4), (12, 4, 1))):
        t = FakeTensor(shape, "torch.bfloat16", ptr=0x7F00_0000_2000, strides=strides)
        d = descriptor(t)
        buf = bytearray(ctypes.sizeof(ffi.TpTensor))
        struct.pack_into("=" + host.desc_format([len(shape)]), buf, 0, t.ptr, len(shape), *shape, *strides, 2)
        assert bytes(buf) == ctypes.string_at(ctypes.addressof(d), ctypes.sizeof(d))
    assert struct.calcsize("=" + host.desc_format([1, 2, 6])) == 3 * host.DESC_BYTES == 3 * ctypes.sizeof(d)


def test_call_block_layout():
    import struct

    spec = {"arrays": [{"ndim": 2}, {"ndim": 1}], "scalars": [{"type": "f32"}, {"type": "i32"}],
            "constexprs": ["BM"]}
    fmt, off = host.call_block(spec)
    assert off == {"arrays": [0, 120], "scalars": [240, 244], "constexprs": [248], "grid": [252, 256, 260],
                   "device": 264, "stream": 272, "size": 280}
    assert struct.calcsize(fmt) == off["size"]
    vals = [1, 2, 3, 4, 5, 6, 1, 7, 1, 8, 1, 1, 0.5, -3, 16, 9, 10, 11, 0, 2 ** 64 - 1]
    raw = struct.pack(fmt, *vals)
    assert struct.unpack_from("=fiiIIIi", raw, 240) == (0.5, -3, 16, 9, 10, 11, 0)
    assert struct.unpack_from("=Q", raw, 272) == (2 ** 64 - 1,)
    # no constexprs and no scalars: the stream still lands 8-byte aligned
    assert host.call_block({"arrays": [{"ndim": 1}], "scalars": [], "constexprs": []})[1]["stream"] == 136


def _decode(shim, addr):
    """The arguments a packed call carries: descriptor bytes, then the other values."""
    import struct

    fmt, off = host.call_block(shim.spec)
    raw = ctypes.string_at(addr, off["size"])
    k = len(shim.spec["arrays"])
    rest = struct.unpack_from("=" + fmt[1:].split("xi4x")[-1], raw, off["arrays"][-1] + host.DESC_BYTES) \
        if k else ()
    return [raw[o:o + host.DESC_BYTES] for o in off["arrays"]] + list(rest)


def _recorder(calls, shim=None):
    def fn(*args):
        if shim is not None:                                   # the packed entry: one block address
            calls.append(_decode(shim, args[0]))
            return 0
        out = []
        for x in args:
            if hasattr(x, "_obj"):                             # byref(descriptor) (checked path)
                out.append(ctypes.string_at(ctypes.addressof(x._obj), 120))
            elif isinstance(x, ctypes.c_void_p):
                out.append(x.value or 0)
            else:
                out.append(x)
        calls.append(out)
        return 0
    return fn


def test_fast_and_checked_paths_pass_the_shim_the_same_bytes(lib, fast, monkeypatch):
    shim = lib.shim(RMS)
    assert shim.packed is not None                             # the generated shim has its packed entry
    calls = []
    monkeypatch.setattr(shim, "packed", _recorder(calls, shim))
    monkeypatch.setattr(shim, "fn", _recorder(calls))
    mk = lambda cls: {"x": cls((4, 8), "torch.bfloat16", ptr=0x7F00_0000_1000),   # noqa: E731
                      "w": cls((8,), "torch.bfloat16", ptr=0x7F00_0000_9000),
                      "y": cls((4, 8), "torch.bfloat16", ptr=0x7F00_0001_0000, strides=(16, 1))}
    for cls in (FastTensor, FakeTensor):
        lib.call(RMS, mk(cls), {"inv_n": 0.125, "eps": 1e-6}, {"BM": 4, "TILE": 8}, (3, 1, 1), stream=0, device=0)
    fast_args, checked_args = calls
    assert fast_args[:3] == checked_args[:3]                   # the three descriptors, byte for byte
    assert fast_args[3:] == pytest.approx(checked_args[3:])    # scalars, constexprs, grid, device, stream
    assert fast_args[5:] == [4, 8, 3, 1, 1, 0, 0]


def test_packed_entry_reads_its_block_like_the_shim(lib):
    """The generated ``__packed`` entry, on the real library: the shim's own checks answer the
    values read at call_block's offsets (no driver needed for these statuses)."""
    import struct

    shim = lib.shim(RMS)
    fmt, off = host.call_block(shim.spec)
    buf = ctypes.create_string_buffer(off["size"] + 8)
    addr = ctypes.addressof(buf)

    def run(w_ptr=0x7F00_0000_9000, tile=8, grid=(1, 1, 1), device=0, at=addr):
        vals = []
        for (shape, ptr) in (((4, 8), 0x7F00_0000_1000), ((8,), w_ptr), ((4, 8), 0x7F00_0001_0000)):
            strides = (8, 1) if len(shape) == 2 else (1,)
            vals += [ptr, len(shape), *shape, *strides, 1]
        struct.pack_into(fmt, buf, at - addr, *vals, 0.125, 1e-6, 4, tile, *grid, device, 0)
        rc = shim.packed(at)
        return rc, lib.last_error()

    rc, msg = run(w_ptr=0)
    assert rc == 1 and "array 'w': data pointer is null" in msg
    assert run(tile=0)[1].endswith("constexpr TILE = 0 is not positive")
    assert run(grid=(1, 0, 1))[1].endswith("launch grid (1, 0, 1) has a zero dimension")
    rc, msg = run(device=300)
    assert rc == 8 and "device ordinal 300" in msg
    assert shim.packed(None) == 1 and "argument block pointer is null" in lib.last_error()
    assert shim.packed(addr + 4) == 8 and "not 8-byte aligned" in lib.last_error()


def skip_with_a_driver() -> None:
    """Skip the calling test where a CUDA driver loads: a valid call would really launch."""
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a CUDA driver is present: a valid call would launch")
    except OSError:
        pass


def rms_arrays(**kw) -> dict:
    """The RMS entry's arrays as fast-path tensors (x, y: (4, 8) f16; w: (8,)), ``kw`` replacing some."""
    return {"x": FastTensor((4, 8)), "w": FastTensor((8,)), "y": FastTensor((4, 8)), **kw}


def test_fast_path_reaches_the_shim_and_its_errors(lib, fast):
    """Without a driver a valid fast call gets the shim's TP_ERR_CUDA_CONTEXT; the shim's own
    checks answer a null pointer and mixed dtypes on the fast path too."""
    skip_with_a_driver()
    arrays = rms_arrays
    e = code_of(lib, arrays=arrays())
    assert (e.code, e.fail_class) == (5, "env")
    assert code_of(lib, arrays=arrays(w=FastTensor((8,), ptr=0))).code == 1
    e = code_of(lib, arrays=arrays(w=FastTensor((8,), "torch.float32")))
    assert e.code == 3 and "'w' is f32 but 'x' is f16" in e.cause


def test_fast_path_hands_unusual_calls_to_the_checked_path(lib, fast):
    arrays = lambda **kw: {"x": FastTensor((4, 8)), "w": FastTensor((8,)), "y": FastTensor((4, 8)), **kw}  # noqa: E731
    # a rank the kernel does not take: the shim names it
    e = code_of(lib, arrays=arrays(x=FastTensor((32,))))
    assert e.code == 2 and "array 'x': rank 1 but the kernel takes rank 2" in e.cause
    # values the fast path will not pass: refused before the shim, named
    assert "constexpr BM = 0" in code_of(lib, arrays=arrays(), cx={"BM": 0, "TILE": 8}).cause
    assert "constexpr BM = True" in code_of(lib, arrays=arrays(), cx={"BM": True, "TILE": 8}).cause
    assert "scalar inv_n" in code_of(lib, arrays=arrays(), scalars={"inv_n": "x", "eps": 1e-6}).cause
    assert "grid dimension" in code_of(lib, arrays=arrays(), grid=(2 ** 32, 1, 1)).cause
    # a tensor on the CPU, or on another device than the launch
    e = code_of(lib, arrays=arrays(w=FastTensor((8,), dev=-1)))
    assert e.code == 0 and "array 'w' is on cpu, not on a CUDA device" in e.cause
    e = code_of(lib, arrays=arrays(y=FastTensor((4, 8), dev=1)))
    assert e.code == 0 and "array 'y' is on CUDA device 1, the launch is on device 0" in e.cause


# -- arrays an entry never names; layouts restaged through a copy --------------------------------

def test_restage_strides_mirrors_the_shims_layout_rule():
    """Only an innermost stride other than 1 on an extent > 1 is copied (column-major (4, 8)
    gets (8, 1)); tg_flash_decode's LSE_Out (1, 8, 4, 1) / (32, 4, 1, 1) and every other layout
    the shim accepts are passed as they are (no copy)."""
    assert ffi.restage_strides((4, 8), (1, 4)) == (8, 1)
    assert ffi.restage_strides((2, 3, 4), (12, 1, 3)) == (12, 4, 1)
    for shape, strides in (((1, 8, 4, 1), (32, 4, 1, 1)), ((4, 1), (1, 1)), ((4, 8), (8, 1)),
                           ((1, 8), (1, 1)), ((4, 1), (9, 7)), ((), ())):
        assert ffi.restage_strides(shape, strides) is None


def _compiled_strides(lib, shape, strides):
    """``tp_compiled_strides`` of the real library: (status, strides cutile gets, dims whose unit
    stride stays dynamic)."""
    fn = lib._lib.tp_compiled_strides
    fn.argtypes, fn.restype = [ctypes.c_void_p] * 3, ctypes.c_int32
    d = descriptor(FakeTensor(shape, "torch.float32", strides=strides))
    out, units = (ctypes.c_int32 * 6)(), ctypes.c_uint32()
    rc = fn(ctypes.addressof(d), out, ctypes.byref(units))
    return rc, tuple(out[:len(shape)]), {k for k in range(len(shape)) if units.value >> k & 1}


@pytest.mark.parametrize("shape,strides", [
    ((1, 8, 4, 1), (32, 4, 1, 1)),       # tg_flash_decode's LSE_Out at NUM_KV_SPLITS=1 (test)
    ((64, 8, 4, 1), (32, 4, 1, 1)),      # the same at the perf shape 64x32x8x119x128 (bench)
    ((1, 8, 4, 1), (1, 4, 1, 9)),        # the same memory, extent-1 strides set otherwise
    ((2, 8, 4, 3), (96, 12, 3, 1)),      # contiguous (LSE_Out at NUM_KV_SPLITS=3)
    ((4, 1), (1, 7)), ((4, 1), (1, 1)), ((1, 8), (1, 1)), ((3, 5), (10, 1)),
    ((3, 4, 5), (20, 1, 1)),             # two unit strides (rows overlap: an input may)
])
def test_compiled_strides_address_what_the_caller_s_layout_does(lib, shape, strides):
    """The shim's arithmetic on the real library, against cutile 0.5.0's rules read from its
    source: a stride the tensor's ``SpecializationBits.stride_one`` marks (value 1, not kept
    dynamic) is compiled as a static 1 and dropped from the strides the kernel holds
    (kernel_entry_generator.rs ``get_dynamic_elements``); the port reads stride k as element k
    of that list and multiplies the innermost index by 1. For every index in the extents, the
    port's element offset must equal the caller's: the same elements as the reference, no copy."""
    import itertools

    rc, st, dynamic = _compiled_strides(lib, shape, strides)
    assert rc == 0, lib.last_error()
    # runtime_ir compiles the port as the shim launches it: its Python mirror agrees
    assert launch_facts.shim_strides(shape, strides) == (st, frozenset(dynamic))
    hint = [1 if s == 1 and k not in dynamic else -1 for k, s in enumerate(st)]
    held = [s for s, h in zip(st, hint) if h == -1]          # the kernel's strides metadata
    n = len(shape)
    assert hint[-1] == 1 and all(h == -1 for h in hint[:-1])  # the IR-checked [-1, ..., -1, 1]
    for idx in itertools.product(*(range(e) for e in shape)):
        port = sum(i * held[k] for k, i in enumerate(idx[:-1])) + idx[-1]
        assert port == sum(i * s for i, s in zip(idx, strides)), (idx, st, hint)
    assert n == len(st)


def test_compiled_strides_refuse_a_non_unit_innermost_stride(lib):
    rc, _, _ = _compiled_strides(lib, (4, 8), (1, 4))
    assert rc == 4 and "innermost stride 1" in lib.last_error()
    assert _compiled_strides(lib, (4, 0), (1, 4)) == (0, (1, 1), {0})     # an empty innermost: free


class CopyTensor(FakeTensor):
    """A tensor the host can copy into (restaging needs ``copy_``): records the copies."""
    copies: list = []

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.device = type("D", (), {"type": "cuda", "index": 0})()

    def copy_(self, src):
        CopyTensor.copies.append((src.stride(), self.stride()))


def test_refused_layout_is_restaged_through_a_copy_the_shim_accepts(built, monkeypatch):
    """On the real library: a layout the shim refuses (TP_ERR_BAD_SHAPE, see above) is copied into
    :func:`ffi.restage_strides`' layout before the launch, which the shim's own check then passes
    (without a driver: TP_ERR_CUDA_CONTEXT, the next check). A tensor without ``copy_`` (no torch)
    still meets the shim's refusal."""
    results, _ = built
    glib = HostLibrary(results / "host" / host.LIB_NAME, [results / "constructs" / "host" / "ffi.json"])
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("a CUDA driver is present: a good layout would launch")
    except OSError:
        pass
    monkeypatch.setattr(ffi, "_empty_strided", lambda t, st: CopyTensor(t.shape, ptr=0x7F00_0002_0000, strides=st))
    monkeypatch.setattr(ffi, "_on_stream", lambda *a: __import__("contextlib").nullcontext())
    CopyTensor.copies.clear()
    arrays = {"a": CopyTensor((4, 8), strides=(1, 4)), "b": FakeTensor((4, 8))}
    with pytest.raises(FfiError) as e:
        glib.call(GATHER, arrays, {}, {"TILE": 8}, (1, 1, 1), stream=0, device=0)
    assert e.value.code == 5, e.value.cause
    assert CopyTensor.copies == [((1, 4), (8, 1))]             # copied in; an input is not copied back
    arrays["a"] = FakeTensor((4, 8), strides=(1, 4))
    with pytest.raises(FfiError) as e:
        glib.call(GATHER, arrays, {}, {"TILE": 8}, (1, 1, 1), stream=0, device=0)
    assert e.value.code == 4


def test_unread_array_may_have_no_memory_read_array_may_not(lib, monkeypatch):
    """An array ``ffi.json`` lists as ``unread`` (the entry never names it: host.unread_arrays)
    may be None or an empty tensor (data pointer 0): the shim gets the library's scratch address,
    with None's dtype taken from the variant dtype. A read array stays refused: None by the Python
    side, a null data pointer by the shim (TP_ERR_NULL_POINTER)."""
    shim = lib.shim(RMS)
    calls = []
    monkeypatch.setattr(shim, "fn", _recorder(calls))
    monkeypatch.setattr(lib, "scratch", lambda device, slot=0: 0x7F00_00AB_C000 + 256 * slot)
    x, y = FakeTensor((4, 8), "torch.bfloat16"), FakeTensor((4, 8), "torch.bfloat16")
    with pytest.raises(FfiError) as e:
        lib.call(RMS, {"x": x, "w": None, "y": y}, {"inv_n": 0.125, "eps": 1e-6}, {"BM": 4, "TILE": 8},
                 (1, 1, 1), stream=0, device=0)
    assert "array 'w' is None, but entry" in e.value.cause and "reads it" in e.value.cause
    monkeypatch.setattr(shim, "unread", frozenset({"w"}))
    for w in (None, FakeTensor((0,), "torch.bfloat16", ptr=0)):
        lib.call(RMS, {"x": x, "w": w, "y": y}, {"inv_n": 0.125, "eps": 1e-6}, {"BM": 4, "TILE": 8},
                 (1, 1, 1), stream=0, device=0)
        d = ffi.TpTensor.from_buffer_copy(calls[-1][1])
        assert (d.data, d.ndim, d.shape[0], d.dtype) == (0x7F00_00AB_C100, 1, 0, host.DTYPE_CODES["bf16"])


def test_fast_path_passes_the_scratch_slot_for_an_unread_empty_tensor(lib, fast, monkeypatch):
    """The fast path (torch tensors) gives an unread array with data pointer 0 its scratch slot,
    the same bytes as the checked path would."""
    shim = lib.shim(RMS)
    calls = []
    monkeypatch.setattr(shim, "packed", _recorder(calls, shim))
    monkeypatch.setattr(shim, "unread", frozenset({"w"}))
    monkeypatch.setattr(lib, "scratch", lambda device, slot=0: 0x7F00_00AB_C000 + 256 * slot)
    lib.call(RMS, {"x": FastTensor((4, 8)), "w": FastTensor((0,), ptr=0), "y": FastTensor((4, 8))},
             {"inv_n": 0.125, "eps": 1e-6}, {"BM": 4, "TILE": 8}, (1, 1, 1), stream=0, device=0)
    assert ffi.TpTensor.from_buffer_copy(calls[-1][1]).data == 0x7F00_00AB_C100
# -- the fast path's scalars, constexprs and grid: one tuple of exact types, struct's ranges ---------

SPEC_MIXED = {"symbol": "tp_mixed", "kernel": "mixed_kernel", "variants": [], "dtypes": ["f16"],
              "arrays": [{"name": "x", "ndim": 2}, {"name": "y", "ndim": 1}],
              "scalars": [{"name": "alpha", "type": "f32"}, {"name": "n", "type": "i32"}],
              "constexprs": ["BM"]}


class _NoLib:
    def last_error(self):
        return "recorded"


def _shim(spec, calls):
    """A Shim of ``spec`` with a packed entry and a plain one that record the bytes passed
    (tagged "packed" / "checked")."""
    box = {}
    shim = ffi.Shim(_NoLib(), spec, fn=lambda *a: box["fn"](*a), packed=lambda a: box["packed"](a))
    rec_p, rec_f = _recorder(calls, shim), _recorder(calls)
    box["packed"] = lambda a: (rec_p(a), calls.append("packed"))[0]
    box["fn"] = lambda *a: (rec_f(*a), calls.append("checked"))[0]
    return shim


def test_fast_path_scalars_constexprs_grid(fast):
    """Exact types go into the block as given; an int for an f32 scalar is converted as the
    checked path converts it; a bool, a float for an i32, an i32 or grid value out of range, a
    grid of two values or a missing name never reach the packed entry: the checked path names
    them (calls only through the recorder: no library, no driver)."""
    calls = []
    shim = _shim(SPEC_MIXED, calls)
    arrays = {"x": FastTensor((4, 8)), "y": FastTensor((8,))}
    shim(arrays, {"alpha": 0.5, "n": -7}, {"BM": 16}, (3, 2, 1), stream=0, device=0)
    shim(arrays, {"alpha": 2, "n": 2 ** 31 - 1}, {"BM": 16}, [3, 2, 1], stream=0, device=0)
    assert calls[1::2] == ["packed", "packed"]
    assert [c[2:] for c in calls[::2]] == [[0.5, -7, 16, 3, 2, 1, 0, 0],
                                           [2.0, 2 ** 31 - 1, 16, 3, 2, 1, 0, 0]]
    assert len(calls[0][0]) == len(calls[0][1]) == host.DESC_BYTES      # the two descriptors
    # the checked path passes the shim the same values (FakeTensor: not a fast type)
    shim({"x": FakeTensor((4, 8)), "y": FakeTensor((8,))}, {"alpha": 2, "n": 2 ** 31 - 1}, {"BM": 16},
         [3, 2, 1], stream=0, device=0)
    assert calls[5] == "checked" and calls[4][:2] == calls[2][:2]
    assert calls[4][2:] == [2.0, 2 ** 31 - 1, 16, 3, 2, 1, 0, 0]
    del calls[:]
    bad = [({"alpha": True, "n": 1}, {"BM": 16}, (1, 1, 1), "scalar alpha = True"),
           ({"alpha": 0.5, "n": 1.0}, {"BM": 16}, (1, 1, 1), "scalar n = 1.0"),
           ({"alpha": 0.5, "n": 2 ** 31}, {"BM": 16}, (1, 1, 1), "scalar n = 2147483648"),
           ({"alpha": 0.5, "n": 1}, {"BM": -2 ** 31 - 1}, (1, 1, 1), "constexpr BM"),
           ({"alpha": 0.5, "n": 1}, {"BM": 16}, (1, -1, 1), "grid dimension = -1"),
           ({"alpha": 0.5, "n": 1}, {"BM": 16}, (1, 1), "does not have 3 dimensions"),
           ({"alpha": 0.5}, {"BM": 16}, (1, 1, 1), "missing scalar 'n'"),
           ({"alpha": 0.5, "n": 1}, {}, (1, 1, 1), "missing constexpr 'BM'")]
    for sc, cx, grid, needle in bad:
        with pytest.raises(FfiError) as e:
            shim(arrays, sc, cx, grid, stream=0, device=0)
        assert e.value.code == 0 and needle in e.value.cause, (sc, cx, grid, e.value)
    assert calls == []                                         # none of them was launched


def test_fast_path_takes_one_array_and_no_scalars(fast):
    """The getters of one name and of none: a kernel of one array, no scalars, no constexprs."""
    spec = {**SPEC_MIXED, "arrays": [{"name": "x", "ndim": 1}], "scalars": [], "constexprs": []}
    calls = []
    shim = _shim(spec, calls)
    shim({"x": FastTensor((8,))}, {}, {}, (5, 1, 1), stream=0, device=0)
    assert calls[1] == "packed" and calls[0][1:] == [5, 1, 1, 0, 0]
    one = {**spec, "scalars": [{"name": "n", "type": "i32"}], "constexprs": ["BM"]}
    del calls[:]
    _shim(one, calls)({"x": FastTensor((8,))}, {"n": 3}, {"BM": 4}, (5, 1, 1), stream=0, device=0)
    assert calls[1] == "packed" and calls[0][1:] == [3, 4, 5, 1, 1, 0, 0]


# -- the opt-in Rust marshaller (tp_py_call): the Python fast path's bytes, and its refusals -------

@pytest.fixture
def rlib(built, fast):
    results, _ = built
    lib = HostLibrary(results / "host" / host.LIB_NAME,
                      [results / op / "host" / "ffi.json" for op in ("relu", "rms_norm")], rust_marshal=True)
    assert lib.rust_marshal and lib.shim(RMS)._rs is not None
    return lib


def _rs_block(shim, arrays, scalars, cx, grid, device=0, stream=0):
    """(status, block bytes) of tp_py_call with a recording packed entry (no driver involved)."""
    fn, _, layout, _, names, _, _ = shim._rs
    seen = []
    size = host.call_block(shim.spec)[1]["size"]
    cb = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(lambda a: seen.append(ctypes.string_at(a, size)) or 0)
    buf = ctypes.create_string_buffer(size + 8)
    rc = fn(ctypes.cast(cb, ctypes.c_void_p).value, ctypes.addressof(buf), layout, ffi._rs_objs(), names,
            arrays, scalars, cx, grid, device, stream)
    return rc, (seen[0] if seen else None)


def test_rust_marshal_packs_the_python_fast_paths_bytes(rlib):
    shim = rlib.shim(RMS)
    arrays = {"x": FastTensor((4, 8), "torch.bfloat16", ptr=0x7F00_0000_1000),
              "w": FastTensor((8,), "torch.bfloat16", ptr=0x7F00_0000_9000),
              "y": FastTensor((4, 8), "torch.bfloat16", ptr=0x7F00_0001_0000, strides=(16, 1))}
    sc, cx = {"inv_n": 0.125, "eps": 1e-6}, {"BM": 4, "TILE": 8}
    addr = shim._fast_args(arrays, sc, cx, (3, 1, 1), 0x1234, 0)     # learns the dtype's code too
    want = ctypes.string_at(addr, host.call_block(shim.spec)[1]["size"])
    rc, got = _rs_block(shim, arrays, sc, cx, (3, 1, 1), stream=0x1234)
    assert rc == 0 and got == want
    # declined (-1, nothing launched, no Python error left): the Python paths decide
    declined = [dict(scalars={"inv_n": 1, "eps": 1e-6}),                      # int for f32: Python converts
                dict(scalars={"inv_n": True, "eps": 1e-6}), dict(cx={"BM": 2 ** 31, "TILE": 8}),
                dict(cx={"BM": False, "TILE": 8}), dict(grid=(1, -1, 1)), dict(grid=(2 ** 32, 1, 1)),
                dict(scalars={"inv_n": 1e39, "eps": 1e-6}), dict(device=1),
                dict(arrays={**arrays, "w": FastTensor((8, 1), "torch.bfloat16")}),
                dict(arrays={**arrays, "w": FastTensor((8,), "torch.bfloat16", dev=-1)}),
                dict(arrays={**arrays, "w": FastTensor((8,), "torch.complex64")}),
                dict(arrays={**arrays, "w": FakeTensor((8,), "torch.bfloat16")}),
                dict(arrays={"x": arrays["x"], "y": arrays["y"]}), dict(scalars={"eps": 1e-6}),
                dict(cx={"BM": 4}), dict(grid=[3, 1, 1]), dict(grid=(3, 1)),
                # an output whose elements may share memory (y is written; x is read)
                dict(arrays={**arrays, "y": FastTensor((4, 8), "torch.bfloat16", strides=(0, 1))}),
                dict(arrays={**arrays, "y": FastTensor((4, 8), "torch.bfloat16", strides=(4, 1))})]
    for kw in declined:
        a = kw.get("arrays", arrays)
        rc, got = _rs_block(shim, a, kw.get("scalars", sc), kw.get("cx", cx), kw.get("grid", (3, 1, 1)),
                            device=kw.get("device", 0))
        assert (rc, got) == (-1, None), kw


def test_tuple_form_packs_the_same_bytes_and_checks_device_and_stream(rlib):
    """tp_py_call_t (what a shim calls by default): tp_py_call's bytes from one pointer triple and
    one tuple; a device or stream that is not an int in range is declined (-1, no error left)."""
    shim = rlib.shim(RMS)
    fn_t = shim._rs[5]
    assert fn_t is not None
    arrays = {"x": FastTensor((4, 8), "torch.bfloat16", ptr=0x7F00_0000_1000),
              "w": FastTensor((8,), "torch.bfloat16", ptr=0x7F00_0000_9000),
              "y": FastTensor((4, 8), "torch.bfloat16", ptr=0x7F00_0001_0000)}
    sc, cx = {"inv_n": 0.125, "eps": 1e-6}, {"BM": 4, "TILE": 8}
    rc, want = _rs_block(shim, arrays, sc, cx, (3, 1, 1), device=0, stream=0x1234)
    assert rc == 0
    size = host.call_block(shim.spec)[1]["size"]
    seen = []
    cb = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(lambda a: seen.append(ctypes.string_at(a, size)) or 0)
    buf = ctypes.create_string_buffer(size + 8)
    fixed = (ctypes.c_size_t * 3)(ctypes.cast(cb, ctypes.c_void_p).value, ctypes.addressof(buf), shim._rs[2])
    names = shim._rs[4]
    assert fn_t(fixed, ffi._rs_objs(), (names, arrays, sc, cx, (3, 1, 1), 0, 0x1234)) == 0 and seen == [want]
    for dev, stream in ((-1, 0), (2 ** 31, 0), (True, 0), (0, -1), (0, 2 ** 64), (0, None), (None, 0)):
        assert fn_t(fixed, ffi._rs_objs(), (names, arrays, sc, cx, (3, 1, 1), dev, stream)) == -1
    assert fn_t(fixed, ffi._rs_objs(), (names, arrays, sc, cx, (3, 1, 1), 0)) == -1 and len(seen) == 1


def test_rust_marshal_passes_registered_scratch_for_an_unread_array_without_memory(rlib, monkeypatch):
    """An unread array without memory (an empty tensor: data pointer 0): tp_py_call passes the
    device's registered scratch slot itself, the Python fast path's bytes (tg_moe's empty scale
    tensors used to cost a declined Rust call plus the Python fast path on every call); with no
    registration, on another device, or past the registered slots it declines; a read array
    without memory gets no scratch (the shim refuses it)."""
    shim = rlib.shim(RMS)
    monkeypatch.setattr(shim, "unread", frozenset({"w"}))
    monkeypatch.setattr(rlib, "scratch", lambda device, slot=0: 0x7F00_00AB_C000 + 256 * slot)
    arrays = {"x": FastTensor((4, 8), "torch.bfloat16", ptr=0x7F00_0000_1000),
              "w": FastTensor((0,), "torch.bfloat16", ptr=0),
              "y": FastTensor((4, 8), "torch.bfloat16", ptr=0x7F00_0001_0000)}
    sc, cx = {"inv_n": 0.125, "eps": 1e-6}, {"BM": 4, "TILE": 8}
    addr = shim._fast_args(arrays, sc, cx, (3, 1, 1), 0x1234, 0)
    want = ctypes.string_at(addr, host.call_block(shim.spec)[1]["size"])
    assert ffi.TpTensor.from_buffer_copy(want[ffi._DESC_SIZE:]).data == 0x7F00_00AB_C100
    assert _rs_block(shim, arrays, sc, cx, (3, 1, 1), stream=0x1234) == (-1, None)    # none registered
    set_scratch = rlib._set_scratch
    try:
        assert set_scratch(0, 0x7F00_00AB_C000, 32) == 0
        assert _rs_block(shim, arrays, sc, cx, (3, 1, 1), stream=0x1234) == (0, want)
        assert _rs_block(shim, arrays, sc, cx, (3, 1, 1), device=1) == (-1, None)      # device 1: none
        assert set_scratch(0, 0x7F00_00AB_C000, 1) == 0                                  # w is slot 1
        assert _rs_block(shim, arrays, sc, cx, (3, 1, 1), stream=0x1234) == (-1, None)
        assert set_scratch(0, 0x7F00_00AB_C000, 32) == 0
        monkeypatch.setattr(shim, "unread", frozenset())     # read: passed as it is, the shim refuses it
        rc, got = _rs_block(shim, arrays, sc, cx, (3, 1, 1), stream=0x1234)
        assert rc == 0 and ffi.TpTensor.from_buffer_copy(got[ffi._DESC_SIZE:]).data == 0
    finally:
        set_scratch(0, 0, 0)        # the library stays loaded for the other tests


def test_scratch_is_registered_once_per_library_and_device(rlib, monkeypatch):
    """HostLibrary.scratch allocates once per device for the process (at least 32 slots of 256
    bytes), grows it for a higher slot and keeps the old allocation (a library may still pass
    it), and registers each new base address with the library (tp_set_scratch)."""
    made, registered = [], []

    class Mem:
        def __init__(self, n, base):
            self.n, self.base = n, base

        def numel(self):
            return self.n

        def data_ptr(self):
            return self.base

    def empty(n, dtype=None, device=None):
        made.append((n, device))
        return Mem(n, 0x7F00_0000_0000 + 0x100_0000 * len(made))

    monkeypatch.setitem(sys.modules, "torch", type(sys)("torch"))
    sys.modules["torch"].empty, sys.modules["torch"].uint8 = empty, "uint8"
    monkeypatch.setattr(ffi, "_SCRATCH", {})
    monkeypatch.setattr(ffi, "_SCRATCH_OLD", [])
    monkeypatch.setattr(rlib, "_scratch", {})
    monkeypatch.setattr(rlib, "_set_scratch", lambda d, a, n: registered.append((d, a, n)) or 0)
    assert rlib.scratch(0, 2) == 0x7F00_0100_0000 + 512
    assert rlib.scratch(0, 31) == 0x7F00_0100_0000 + 31 * 256 and rlib.scratch(1) == 0x7F00_0200_0000
    assert made == [(8192, "cuda:0"), (8192, "cuda:1")]
    assert registered == [(0, 0x7F00_0100_0000, 32), (1, 0x7F00_0200_0000, 32)]
    assert rlib.scratch(0, 40) == 0x7F00_0300_0000 + 40 * 256     # grown; the old one kept
    assert made[-1] == (41 * 256, "cuda:0") and registered[-1] == (0, 0x7F00_0300_0000, 41)
    assert [m.base for m in ffi._SCRATCH_OLD] == [0x7F00_0100_0000]


def test_rust_marshal_reaches_the_shim_and_falls_back(rlib):
    """A whole call through HostLibrary: the shim's own status (no driver: TP_ERR_CUDA_CONTEXT,
    or its checks), and the Python paths for what tp_py_call declines."""
    skip_with_a_driver()
    arrays = rms_arrays
    e = code_of(rlib, arrays=arrays())
    assert (e.code, e.fail_class) == (5, "env")
    assert code_of(rlib, arrays=arrays(w=FastTensor((8,), ptr=0))).code == 1
    assert "constexpr BM = True" in code_of(rlib, arrays=arrays(), cx={"BM": True, "TILE": 8}).cause
    e = code_of(rlib, arrays=arrays(y=FastTensor((4, 8), dev=1)))
    assert e.code == 0 and "array 'y' is on CUDA device 1, the launch is on device 0" in e.cause


# -- hostile layouts of outputs: refused before the launch, naming the array -----------------------

_SPEC_OUT = {"symbol": "tp_w", "kernel": "w_kernel", "variants": [], "dtypes": ["f16"], "entry": "w_kernel",
             "arrays": [{"name": "x", "ndim": 2, "role": "input"}, {"name": "y", "ndim": 2, "role": "output"}],
             "scalars": [], "constexprs": [], "strided": ["y"]}


class _Expanded(CopyTensor):
    """An output whose elements share memory: torch's copy_ into it raises, as torch does."""

    def copy_(self, src):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor "
                           "refers to a single memory location")


@pytest.mark.parametrize("fast_type", [False, True], ids=["checked", "fast"])
@pytest.mark.parametrize("strides", [(0, 1), (4, 1), (8, 0)], ids=["row-broadcast", "rows-overlap", "col-broadcast"])
def test_an_output_whose_elements_share_memory_is_refused_before_the_launch(monkeypatch, strides, fast_type):
    """The caller's output is at fault (code 0: not passed to the shim), named with its layout;
    the fast path leaves it to the checked path, which refuses it; an input of that layout (a
    broadcast read) is launched."""
    import contextlib

    monkeypatch.setattr(ffi, "_FAST_TYPES", {FastTensor} if fast_type else set())
    monkeypatch.setattr(ffi, "_empty_strided", lambda t, st: CopyTensor(t.shape, ptr=0x7F00_0002_0000, strides=st))
    monkeypatch.setattr(ffi, "_on_stream", lambda *a: contextlib.nullcontext())
    calls = []
    shim = _shim(_SPEC_OUT, calls)
    shim.packed = None
    kind, plain = (FastTensor, FastTensor) if fast_type else (_Expanded, CopyTensor)
    with pytest.raises(FfiError, match=r"array 'y' is written .* may share memory .*strides \(") as e:
        shim({"x": plain((4, 8)), "y": kind((4, 8), strides=strides)}, {}, {}, (1, 1, 1),
             stream=0, device=0)
    assert e.value.code == 0 and str(tuple(strides)) in e.value.cause
    assert calls == []          # nothing launched
    if strides != (8, 0):       # a layout the shim reads as it is: an input of it is launched
        shim({"x": kind((4, 8), strides=strides), "y": plain((4, 8))}, {}, {}, (1, 1, 1),
             stream=0, device=0)
        assert calls[-1] == "checked"       # the plain entry (this shim has no packed one)


def test_shares_memory_is_exact_where_it_decides():
    """Brute force over small layouts: shares_memory is never False where two elements meet, and
    exact below its listing limit (layouts the sorted-stride test does not clear included)."""
    import itertools

    for shape in ((3, 2), (2, 2, 2), (4,), (1, 5), (0, 3)):
        for strides in itertools.product(range(0, 5), repeat=len(shape)):
            offs = [sum(i * s for i, s in zip(idx, strides)) for idx in itertools.product(*map(range, shape))]
            assert ffi.shares_memory(shape, strides) == (len(set(offs)) < len(offs)), (shape, strides)
    assert not ffi.shares_memory((3, 2), (2, 3))           # interleaved, yet distinct
    assert ffi.shares_memory((3, 2), (2, 3), exact_limit=1)  # past the limit: counted as sharing
    assert not ffi.shares_memory((4096, 4096), (4096, 1))


def test_rust_marshal_hands_restaging_and_scratch_to_the_python_paths(built, fast, monkeypatch):
    """tp_py_call now marshals shims with strided / unread arrays too: a layout the shim refuses
    (TP_ERR_BAD_SHAPE) is restaged by the checked path, an unread array without memory
    (TP_ERR_NULL_POINTER) gets scratch from the fast path, both before any launch; a layout the
    shim reads goes through tp_py_call to the shim (no driver: TP_ERR_CUDA_CONTEXT)."""
    skip_with_a_driver()
    results, _ = built
    glib = HostLibrary(results / "host" / host.LIB_NAME, [results / "constructs" / "host" / "ffi.json",
                                                          results / "rms_norm" / "host" / "ffi.json"],
                       rust_marshal=True)
    gather, rms = glib.shim(GATHER), glib.shim(RMS)
    assert gather.strided and gather._rs is not None and rms._rs is not None
    seen = []
    real_fast = ffi.Shim._fast_args
    monkeypatch.setattr(ffi.Shim, "_fast_args", lambda self, *a: (seen.append(self.symbol), real_fast(self, *a))[1])

    class FastCopy(FastTensor):
        def copy_(self, src):
            seen.append(("copy", src.stride(), self.stride()))
    monkeypatch.setattr(ffi, "_empty_strided", lambda t, st: FastCopy(t.shape, ptr=0x7F00_0002_0000, strides=st))
    monkeypatch.setattr(ffi, "_on_stream", lambda *a: __import__("contextlib").nullcontext())
    monkeypatch.setattr(ffi, "_FAST_TYPES", {FastTensor, FastCopy})
    good = {"a": FastTensor((4, 8)), "b": FastTensor((4, 8))}
    ffi._code_of(good["a"].dtype)       # the dtype table tp_py_call reads (torch's dtypes are learnt)
    with pytest.raises(FfiError) as e:
        glib.call(GATHER, good, {}, {"TILE": 8}, (1, 1, 1), stream=0, device=0)
    assert e.value.code == 5 and seen == []            # tp_py_call reached the shim itself
    with pytest.raises(FfiError) as e:                  # a non-innermost unit stride: no copy (issue 14)
        glib.call(GATHER, {**good, "a": FastCopy((4, 1), strides=(1, 1))}, {}, {"TILE": 8}, (1, 1, 1),
                  stream=0, device=0)
    assert e.value.code == 5 and seen == []
    with pytest.raises(FfiError) as e:
        glib.call(GATHER, {**good, "a": FastCopy((4, 8), strides=(1, 4))}, {}, {"TILE": 8}, (1, 1, 1),
                  stream=0, device=0)
    assert e.value.code == 5 and seen == [GATHER, ("copy", (1, 4), (8, 1))]   # refused, then restaged
    # the next call of that layout starts in the Python paths (no second Rust attempt: the shim's
    # refusal would set no copy apart, so the sequence is the same); a layout the fast path takes
    # sends the calls after it back to tp_py_call
    assert gather._rs_skip
    with pytest.raises(FfiError):
        glib.call(GATHER, {**good, "a": FastCopy((4, 8), strides=(1, 4))}, {}, {"TILE": 8}, (1, 1, 1),
                  stream=0, device=0)
    with pytest.raises(FfiError):
        glib.call(GATHER, good, {}, {"TILE": 8}, (1, 1, 1), stream=0, device=0)
    assert not gather._rs_skip
    with pytest.raises(FfiError):
        glib.call(GATHER, good, {}, {"TILE": 8}, (1, 1, 1), stream=0, device=0)
    assert seen[2:] == [GATHER, ("copy", (1, 4), (8, 1)), GATHER]      # the last call: Rust only
    del seen[:]
    monkeypatch.setattr(rms, "unread", frozenset({"w"}))
    monkeypatch.setattr(glib, "scratch", lambda device, slot=0: 0x7F00_00AB_C000 + 256 * slot)
    with pytest.raises(FfiError) as e:
        glib.call(RMS, rms_arrays(w=FastTensor((0,), ptr=0)), {"inv_n": 0.125, "eps": 1e-6},
                         {"BM": 4, "TILE": 8}, (1, 1, 1), stream=0, device=0)
    assert e.value.code == 5 and seen == [RMS]         # the null pointer retried with scratch


@pytest.mark.parametrize("value", ["false", "off", "no", " 0", "2", "0 "])
def test_a_rust_marshal_setting_other_than_0_or_1_is_refused_not_read_as_on(value, monkeypatch, tmp_path):
    # `TILEPORT_RUST_MARSHAL=false` meant "off"; read as "not 0" it silently kept Rust marshalling on
    monkeypatch.setenv("TILEPORT_RUST_MARSHAL", value)
    with pytest.raises(ValueError, match=r"TILEPORT_RUST_MARSHAL=.*write TILEPORT_RUST_MARSHAL=0"):
        HostLibrary(tmp_path / "missing.so", [])         # before any load: no library needed
    for ok, on in (("0", False), ("1", True), ("", True)):
        monkeypatch.setenv("TILEPORT_RUST_MARSHAL", ok)
        assert ffi.rust_marshal_env() is on


class _Sparse(CopyTensor):
    def stride(self):                   # torch: a sparse COO tensor
        raise RuntimeError("sparse tensors do not have strides")


class _NoStorage(CopyTensor):
    def data_ptr(self):                 # torch: a tensor without storage (fake / functional)
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")


class _TextStrides(CopyTensor):
    def stride(self):                   # a torch-like object lying about its layout
        return tuple(str(s) for s in self._strides)


@pytest.mark.parametrize("fast_type", [False, True], ids=["checked", "fast"])
@pytest.mark.parametrize("name", ["x", "y"])
@pytest.mark.parametrize("kind,cause", [
    (_Sparse, r"a _Sparse whose data pointer, extents and strides cannot be read \(RuntimeError: sparse"),
    (_NoStorage, r"a _NoStorage whose .* cannot be read \(RuntimeError: Cannot access data pointer"),
    (_TextStrides, r"stride '8' is not a 64-bit integer"),
])
def test_an_array_whose_layout_cannot_be_read_is_named_not_a_traceback(monkeypatch, kind, cause, name, fast_type):
    """A sparse tensor, one without storage, or a torch-like object with text strides, as an input
    or a (restaged) output: an FfiError naming the array before any launch or copy, not a raw
    RuntimeError / TypeError out of shares_memory, restage_strides or descriptor."""
    import contextlib

    monkeypatch.setattr(ffi, "_FAST_TYPES", {kind} if fast_type else set())
    monkeypatch.setattr(ffi, "_empty_strided", lambda t, st: CopyTensor(t.shape, ptr=0x7F00_0002_0000, strides=st))
    monkeypatch.setattr(ffi, "_on_stream", lambda *a: contextlib.nullcontext())
    calls = []
    args = {"x": CopyTensor((4, 8)), "y": CopyTensor((4, 8)), name: kind((4, 8))}
    with pytest.raises(FfiError, match=rf"array '{name}': {cause}") as e:
        _shim(_SPEC_OUT, calls)(args, {}, {}, (1, 1, 1), stream=0, device=0)
    assert e.value.code == 0 and calls == []


# -- tp_py_call's DLPack reads (dlpack.h 1.3 exchange API): fake tensor types whose
# __dlpack_c_exchange_api__ is a real capsule over a ctypes-built table -----------------------------

#: torch dtype name -> DLPack (code, bits, lanes), from dlpack.h 1.3's DLDataTypeCode
_DL_DTYPES = {"torch.float16": (2, 16, 1), "torch.bfloat16": (4, 16, 1), "torch.float32": (2, 32, 1),
              "torch.float64": (2, 64, 1), "torch.int8": (0, 8, 1), "torch.int16": (0, 16, 1),
              "torch.int32": (0, 32, 1), "torch.int64": (0, 64, 1), "torch.uint8": (1, 8, 1),
              "torch.uint16": (1, 16, 1), "torch.uint32": (1, 32, 1), "torch.uint64": (1, 64, 1),
              "torch.bool": (6, 8, 1), "torch.float8_e4m3fn": (10, 8, 1), "torch.float8_e5m2": (12, 8, 1)}
_DL_FILL = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(ffi.DLTensor))
_CAPSULE_NEW = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))


def _exchange_capsule(fill, major=1, name=ffi.EXCHANGE_CAPSULE, with_fn=True):
    """(capsule, what it points into) over a DLPackExchangeAPI whose dltensor_from_py_object_no_sync
    is ``fill`` (a ``_DL_FILL`` callback, or a C function's address)."""
    fn = fill if isinstance(fill, int) else ctypes.cast(fill, ctypes.c_void_p).value
    api = ffi.DLPackExchangeAPI(major=major, minor=3, dltensor_from_py_object_no_sync=fn if with_fn else None)
    nm = ctypes.create_string_buffer(name)         # the capsule keeps this pointer, not a copy
    return _CAPSULE_NEW(ctypes.addressof(api), nm, None), (fill, api, nm)


def _fill(obj, out):
    """dltensor_from_py_object_no_sync of a _DlTensor: its fields, as torch fills them (an
    override in ``obj.dl`` replaces one)."""
    d = out.contents
    n = len(obj.shape)
    obj._dl_keep = ((ctypes.c_int64 * n)(*obj.shape), (ctypes.c_int64 * n)(*obj._strides))
    d.data, d.ndim, d.byte_offset = obj.ptr, n, 0
    d.device.device_type, d.device.device_id = (2, obj.dev) if obj.dev >= 0 else (1, 0)
    d.dtype.code, d.dtype.bits, d.dtype.lanes = _DL_DTYPES.get(obj.dtype, (5, 64, 1))
    d.shape, d.strides = (ctypes.cast(a, ctypes.POINTER(ctypes.c_int64)) for a in obj._dl_keep)
    for k, v in obj.dl.items():
        if k in ("device_type", "device_id"):
            setattr(d.device, k, v)
        elif k in ("code", "bits", "lanes"):
            setattr(d.dtype, k, v)
        else:
            setattr(d, k, v)
    _DlTensor.filled += 1
    return 0


_FILL_CB = _DL_FILL(_fill)
_CAPSULE, _CAPSULE_KEEP = _exchange_capsule(_FILL_CB)


class _DlTensor(FastTensor):
    """A fast-path tensor type with a DLPack exchange table (as torch.Tensor >= 2.10); its C-API
    reads count themselves (``capi``), its exchange calls too (``filled``)."""

    __dlpack_c_exchange_api__ = _CAPSULE
    filled = capi = 0

    def __init__(self, *a, dl=None, **kw):
        super().__init__(*a, **kw)
        self.dl = dl or {}

    def data_ptr(self):
        _DlTensor.capi += 1
        return self.ptr


@pytest.fixture
def dl(monkeypatch):
    """The fast path takes _DlTensor; its counters start at 0."""
    monkeypatch.setattr(ffi, "_FAST_TYPES", {_DlTensor})
    _DlTensor.filled = _DlTensor.capi = 0
    return _DlTensor


def _dl_rms(**kw):
    return {"x": _DlTensor((4, 8), "torch.bfloat16", ptr=0x7F00_0000_1000),
            "w": _DlTensor((8,), "torch.bfloat16", ptr=0x7F00_0000_9000),
            "y": _DlTensor((4, 8), "torch.bfloat16", ptr=0x7F00_0001_0000, strides=(16, 1)), **kw}


_RMS_SC, _RMS_CX = {"inv_n": 0.125, "eps": 1e-6}, {"BM": 4, "TILE": 8}


def _fast_block(shim, arrays, grid=(3, 1, 1), stream=0x1234):
    """The Python fast path's block for these arrays (it reads them through the C API)."""
    addr = shim._fast_args(arrays, _RMS_SC, _RMS_CX, grid, stream, 0)
    return ctypes.string_at(addr, host.call_block(shim.spec)[1]["size"])


def test_exchange_api_is_resolved_from_the_type_or_is_0():
    assert ffi.exchange_api(_DlTensor) == ctypes.addressof(_CAPSULE_KEEP[1]) != 0
    assert ffi.exchange_api(FastTensor) == 0                           # no attribute (torch < 2.10)
    for kw in (dict(major=2), dict(name=b"dltensor"), dict(with_fn=False)):
        cap, keep = _exchange_capsule(_FILL_CB, **kw)
        assert ffi.exchange_api(type("T", (), {"__dlpack_c_exchange_api__": cap})) == 0, kw
    assert ffi.exchange_api(type("T", (), {"__dlpack_c_exchange_api__": 7})) == 0      # not a capsule


def test_dlpack_reads_pack_the_python_fast_paths_bytes(rlib, dl):
    """Every dtype of the table, strided and offset views: tp_py_call's DLPack reads (one exchange
    call per array, no C-API read) write the bytes the Python fast path packs."""
    shim = rlib.shim(RMS)
    for name in _DL_DTYPES:
        arrays = _dl_rms(x=_DlTensor((4, 8), name, ptr=0x7F00_0000_1000, strides=(32, 2)))
        want = _fast_block(shim, arrays)
        dl.filled = dl.capi = 0
        rc, got = _rs_block(shim, arrays, _RMS_SC, _RMS_CX, (3, 1, 1), stream=0x1234)
        assert (rc, got, dl.filled, dl.capi) == (0, want, 3, 0), name
    # a byte_offset of whole elements: data + byte_offset, as torch's data_ptr() gives it
    arrays = _dl_rms(w=_DlTensor((8,), "torch.bfloat16", ptr=0x7F00_0000_9000, dl={"byte_offset": 6}))
    want = _fast_block(shim, _dl_rms(w=_DlTensor((8,), "torch.bfloat16", ptr=0x7F00_0000_9006)))
    assert _rs_block(shim, arrays, _RMS_SC, _RMS_CX, (3, 1, 1), stream=0x1234) == (0, want)
    # TILEPORT_DLPACK=0's table: every array read through the C API, the same bytes
    fn, _, layout, _, names, _, _ = shim._rs
    seen, size = [], host.call_block(shim.spec)[1]["size"]
    cb = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(lambda a: seen.append(ctypes.string_at(a, size)) or 0)
    buf = ctypes.create_string_buffer(size + 8)
    dl.filled = dl.capi = 0
    assert fn(ctypes.cast(cb, ctypes.c_void_p).value, ctypes.addressof(buf), layout, ffi._rs_objs(False), names,
              _dl_rms(), _RMS_SC, _RMS_CX, (3, 1, 1), 0, 0x1234) == 0
    assert seen == [_fast_block(shim, _dl_rms())] and (dl.filled, dl.capi) == (0, 6)


@pytest.mark.parametrize("dl_kw", [{"lanes": 2}, {"code": 5, "bits": 64}, {"bits": 12}, {"device_type": 1},
                                   {"device_type": 13}, {"device_id": 1}, {"byte_offset": 3}, {"ndim": 2}],
                         ids=["lanes", "complex", "bits", "cpu", "managed", "other-device", "half-element",
                              "rank"])
def test_dlpack_reads_decline_what_the_fast_path_would_not_take(rlib, dl, dl_kw):
    """-1, nothing launched, no Python error left, no C-API read: the Python paths decide."""
    rc_got = _rs_block(rlib.shim(RMS), _dl_rms(w=_DlTensor((8,), "torch.bfloat16", dl=dl_kw)), _RMS_SC, _RMS_CX,
                       (3, 1, 1))
    assert rc_got == (-1, None) and dl.capi == 0


def test_dlpack_reads_keep_the_written_array_check(rlib, dl):
    y = _DlTensor((4, 8), "torch.bfloat16", strides=(0, 1))       # an output whose rows share memory
    assert _rs_block(rlib.shim(RMS), _dl_rms(y=y), _RMS_SC, _RMS_CX, (3, 1, 1)) == (-1, None)


_PYLIST_APPEND = ctypes.cast(ctypes.pythonapi.PyList_Append, ctypes.c_void_p).value


@pytest.mark.parametrize("how", ["raises", "null-data", "null-strides"])
def test_dlpack_reads_fall_back_to_the_c_api_for_one_array(rlib, dl, monkeypatch, how):
    """An exchange call that fails (-1 with a Python error set: PyList_Append of a non-list is a
    real C function of that contract), a null data pointer (an empty tensor: the C-API reads
    decide, as today) or no strides (a producer before DLPack 1.2): that array is read through
    the C API, its error cleared, and the block is the fast path's."""
    shim = rlib.shim(RMS)
    if how == "raises":
        cap, keep = _exchange_capsule(_PYLIST_APPEND)
        kind = type("_Failing", (_DlTensor,), {"__dlpack_c_exchange_api__": cap})
        monkeypatch.setattr(ffi, "_FAST_TYPES", {_DlTensor, kind})
        w = kind((8,), "torch.bfloat16", ptr=0x7F00_0000_9000)
    else:
        w = _DlTensor((8,), "torch.bfloat16", ptr=0x7F00_0000_9000, dl={how.split("-")[1]: None})
    arrays = _dl_rms(w=w)
    want = _fast_block(shim, arrays)
    dl.filled = dl.capi = 0
    assert _rs_block(shim, arrays, _RMS_SC, _RMS_CX, (3, 1, 1), stream=0x1234) == (0, want)
    assert (dl.filled, dl.capi) == (2 + (how != "raises"), 1)
    assert _fast_block(shim, _dl_rms(w=_DlTensor((8,), "torch.bfloat16", ptr=0))) == \
        _rs_block(shim, _dl_rms(w=_DlTensor((8,), "torch.bfloat16", ptr=0)), _RMS_SC, _RMS_CX, (3, 1, 1),
                  stream=0x1234)[1]


def test_a_dlpack_setting_other_than_0_or_1_is_refused(monkeypatch):
    assert ffi.dlpack_env({}) and ffi.dlpack_env({"TILEPORT_DLPACK": "1"}) and not ffi.dlpack_env(
        {"TILEPORT_DLPACK": "0"})
    with pytest.raises(ValueError, match="TILEPORT_DLPACK='off'"):
        ffi.dlpack_env({"TILEPORT_DLPACK": "off"})


@pytest.mark.parametrize("dlpack", [True, False])
def test_a_whole_call_reads_through_dlpack_unless_turned_off(built, dl, dlpack):
    """HostLibrary(dlpack=...) reaches the shim through tp_py_call_t (no driver: TP_ERR_CUDA_CONTEXT),
    reading the arrays through the exchange table or, turned off, through the C API."""
    skip_with_a_driver()
    results, _ = built
    glib = HostLibrary(results / "host" / host.LIB_NAME, [results / "rms_norm" / "host" / "ffi.json"],
                       rust_marshal=True, dlpack=dlpack)
    assert glib.dlpack is dlpack and glib.shim(RMS)._rs[6] is dlpack
    ffi._code_of("torch.bfloat16")
    with pytest.raises(FfiError) as e:
        glib.call(RMS, _dl_rms(), _RMS_SC, _RMS_CX, (1, 1, 1), stream=0, device=0)
    assert e.value.code == 5 and (dl.filled, dl.capi) == ((3, 0) if dlpack else (0, 3))


def test_hostbench_checks_the_rust_blocks_against_the_python_fast_path(rlib, dl, monkeypatch):
    """hostbench's ``blocks`` column: same bytes with both reads, else which reads differ or declined."""
    from tileport.gpu import hostbench

    monkeypatch.setattr(ffi, "_RAW_STREAM", [lambda device: 0x1234])     # torch's current stream
    shim = rlib.shim(RMS)
    args = lambda **kw: (_dl_rms(**kw), _RMS_SC, _RMS_CX, (3, 1, 1), 0)     # noqa: E731
    assert hostbench.rust_blocks(rlib, shim, args()) == "same"
    lying = _DlTensor((8,), "torch.bfloat16", ptr=0x7F00_0000_9000, dl={"byte_offset": 2})
    assert hostbench.rust_blocks(rlib, shim, args(w=lying)) == "dlpack differs"
    lanes = _DlTensor((8,), "torch.bfloat16", dl={"lanes": 2})
    assert hostbench.rust_blocks(rlib, shim, args(w=lanes)) == "dlpack declined"


def test_jit_cache_setting():
    assert ffi.jit_cache_env({}) == "" and ffi.jit_cache_env({"TILEPORT_JIT_CACHE": ""}) == ""
    assert ffi.jit_cache_env({"TILEPORT_JIT_CACHE": "off"}) is None
    assert ffi.jit_cache_env({"TILEPORT_JIT_CACHE": "/scratch/cubins"}) == "/scratch/cubins"
    with pytest.raises(ValueError, match="TILEPORT_JIT_CACHE='cubins': want an absolute directory"):
        ffi.jit_cache_env({"TILEPORT_JIT_CACHE": "cubins"})


def test_jit_disk_cache_is_placed_by_the_environment_and_never_fails_the_load(built, tmp_path, monkeypatch):
    """The library turns cutile's disk cache on where TILEPORT_JIT_CACHE says (the directory made),
    reports its counters, and loads without it where the directory cannot be made."""
    results, _ = built
    path, jsons = results / "host" / host.LIB_NAME, [results / "relu" / "host" / "ffi.json"]
    where = tmp_path / "cubins"
    monkeypatch.setenv("TILEPORT_JIT_CACHE", str(where))
    lib = HostLibrary(path, jsons)
    assert (lib.jit_cache, lib.jit_cache_error) == (str(where), "") and where.is_dir()
    counters = lib.jit_cache_stats()
    assert set(counters) == {"hits", "misses", "puts", "bytes_written", "io_errors"}
    assert all(isinstance(v, int) and v >= 0 for v in counters.values())
    (tmp_path / "a-file").write_text("not a directory")
    monkeypatch.setenv("TILEPORT_JIT_CACHE", str(tmp_path / "a-file" / "cubins"))
    refused = HostLibrary(path, jsons)
    assert refused.jit_cache is None
    assert refused.jit_cache_error.startswith(f"TILEPORT_JIT_CACHE='{tmp_path / 'a-file' / 'cubins'}': "
                                              f"tp_jit_disk_cache: ")
    monkeypatch.setenv("TILEPORT_JIT_CACHE", "off")
    off = HostLibrary(path, jsons)
    assert (off.jit_cache, off.jit_cache_error) == (None, "")
