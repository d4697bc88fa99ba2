"""What each runtime's launcher tells the compiler at launch, derived from shapes and dtypes only.

A kernel launched on real tensors is not compiled free of facts: each launcher reads the
arguments of the call and hands the compiler divisibility, alignment and constant extents, and
each fact becomes an ``assume`` in the Tile IR. The two runtimes derive different facts from the
same tensors, so the program that runs differs from the hint-free one ``reference_ir`` /
``rust_ir`` compile. This module derives both, for one (kernel, variant, perf shape) of a
manifest, with no GPU and no torch:

* :class:`Shaped` stands in for a torch tensor (dtype, shape, element strides, storage offset)
  so the manifest's ``bind`` expressions (``x.view(-1)``, ``y[:, N:2 * N]``, ``A.t().contiguous()``)
  give the arrays a launch receives; :func:`call_arrays` evaluates them.
* :func:`reference_facts`: cuda-tile 1.7.0's ``ct.launch`` (:class:`ArrayFacts`, scalars none).
* :func:`port_facts` / :func:`port_scalar_hints`: cutile 0.5.0's generated launcher.
* :func:`matched_facts`: the port's facts in a form both sides can be compiled with.

Units: extents and strides in elements, base addresses in bytes (as both runtimes state them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from tileport.model import manifest

#: bytes per element of each dtype code (:data:`tileport.model.manifest.DTYPES`)
ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "f8e4m3fn": 1, "f8e5m2": 1, "i8": 1, "i16": 2,
            "i32": 4, "i64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8, "bool": 1}

#: alignment in bytes of a fresh CUDA allocation (cudaMalloc guarantees 256; torch's caching
#: allocator hands out blocks of 512). Only ``min(alignment, 16)`` reaches either launcher.
ALLOC_ALIGN = 256

#: ``num_sms`` for manifest expressions (tg_rms_norm sizes a partial-sums tensor by it): the H200
#: of docs/results/h200 has 132 SMs (NVIDIA's H200 datasheet; torch reports 132 there)
NUM_SMS = 132


class LaunchFactsError(ValueError):
    """A manifest binding this module cannot follow without a GPU (an operation :class:`Shaped`
    lacks, a view torch would refuse); the message names the manifest file, key and cause."""


@dataclass(frozen=True)
class Shaped:
    """A tensor's layout without its values: ``dtype`` (a code of ``manifest.DTYPES``), ``shape``,
    ``strides`` (elements) and ``offset`` (elements from the allocation's start). Supports what
    the operators' ``bind`` expressions call, as torch defines it: ``view`` / ``reshape``, ``t`` /
    ``transpose``, ``contiguous``, basic slicing and indexing, ``stride`` / ``size`` / ``dim``."""

    dtype: str
    shape: tuple
    strides: tuple
    offset: int = 0

    @staticmethod
    def fresh(dtype: str, shape) -> "Shaped":
        """A new contiguous (row-major) tensor of ``shape``, as the GPU harness allocates one."""
        shape = tuple(int(d) for d in shape)
        strides, acc = [], 1
        for d in reversed(shape):
            strides.append(acc)
            acc *= max(d, 1)
        return Shaped(dtype, shape, tuple(reversed(strides)))

    def dim(self) -> int:
        return len(self.shape)

    ndim = property(dim)

    def numel(self) -> int:
        return math.prod(self.shape)

    def size(self, i: int | None = None):
        return self.shape if i is None else self.shape[i]

    def stride(self, i: int | None = None):
        return self.strides if i is None else self.strides[i]

    def storage_offset(self) -> int:
        return self.offset

    def is_contiguous(self) -> bool:
        return self == Shaped(self.dtype, self.shape, Shaped.fresh(self.dtype, self.shape).strides, self.offset)

    def contiguous(self) -> "Shaped":
        return self if self.is_contiguous() else Shaped.fresh(self.dtype, self.shape)

    def _new_shape(self, dims) -> tuple:
        dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else tuple(dims)
        if sum(1 for d in dims if d == -1) > 1:
            raise LaunchFactsError(f"view {dims}: at most one -1")
        known = math.prod(d for d in dims if d != -1)
        if -1 in dims:
            if known == 0 or self.numel() % known:
                raise LaunchFactsError(f"view {dims} of shape {self.shape}: sizes do not divide")
            dims = tuple(self.numel() // known if d == -1 else d for d in dims)
        if math.prod(dims) != self.numel():
            raise LaunchFactsError(f"view {dims} of shape {self.shape}: another number of elements")
        return dims

    def view(self, *dims) -> "Shaped":
        """torch's ``view``: strides for the new shape where each group of new dimensions spans
        old dimensions that are contiguous with each other; else the error torch raises too."""
        new = self._new_shape(dims)
        strides = _view_strides(self.shape, self.strides, new)
        if strides is None:
            raise LaunchFactsError(f"view {new} of a tensor of shape {self.shape}, strides {self.strides}: "
                                   f"torch refuses it (use reshape)")
        return Shaped(self.dtype, new, strides, self.offset)

    def reshape(self, *dims) -> "Shaped":
        """torch's ``reshape``: a view where one exists, else a contiguous copy."""
        new = self._new_shape(dims)
        strides = _view_strides(self.shape, self.strides, new)
        return Shaped(self.dtype, new, strides, self.offset) if strides is not None else Shaped.fresh(self.dtype, new)

    def transpose(self, a: int, b: int) -> "Shaped":
        shape, strides = list(self.shape), list(self.strides)
        shape[a], shape[b] = shape[b], shape[a]
        strides[a], strides[b] = strides[b], strides[a]
        return Shaped(self.dtype, tuple(shape), tuple(strides), self.offset)

    def t(self) -> "Shaped":
        if self.dim() > 2:
            raise LaunchFactsError(f"t() of a {self.dim()}-d tensor")
        return self.transpose(0, 1) if self.dim() == 2 else self

    def __getitem__(self, key) -> "Shaped":
        key = key if isinstance(key, tuple) else (key,)
        if len(key) > self.dim():
            raise LaunchFactsError(f"index {key} of a {self.dim()}-d tensor")
        shape, strides, offset = [], [], self.offset
        for i, d in enumerate(self.shape):
            k = key[i] if i < len(key) else slice(None)
            if isinstance(k, int):
                kk = k + d if k < 0 else k
                if not 0 <= kk < d:
                    raise LaunchFactsError(f"index {k} out of range for extent {d}")
                offset += kk * self.strides[i]
            elif isinstance(k, slice):
                start, stop, step = k.indices(d)
                if step != 1:
                    raise LaunchFactsError(f"slice {k}: only step 1 is followed")
                offset += start * self.strides[i]
                shape.append(max(stop - start, 0))
                strides.append(self.strides[i])
            else:
                raise LaunchFactsError(f"index {k!r}: only ints and slices are followed")
        return Shaped(self.dtype, tuple(shape), tuple(strides), offset)


def _view_strides(shape: tuple, strides: tuple, new: tuple) -> tuple | None:
    """Strides of ``new`` as a view of (``shape``, ``strides``), or None where no view exists
    (the rule of torch's ``computeStride``: chunks of old dimensions that are contiguous with
    each other may be split and merged; extent-1 dimensions take any stride)."""
    if math.prod(shape) == 0:
        return Shaped.fresh("f32", new).strides
    out = [0] * len(new)
    view_d = len(new) - 1
    chunk_base = strides[-1] if strides else 1
    tensor_numel, view_numel = 1, 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = view_numel * chunk_base
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return tuple(out)


@dataclass(frozen=True)
class ArrayFacts:
    """The launch-time facts about one array parameter, per dimension: ``shape_div`` /
    ``stride_div`` (divisors in elements, 1 = nothing said), ``shape_const`` / ``stride_const``
    (a constant extent or stride, None = run-time) and ``base_div`` (bytes)."""

    shape_div: tuple
    stride_div: tuple
    shape_const: tuple
    stride_const: tuple
    base_div: int

    def as_dict(self) -> dict:
        return {"shape_div": list(self.shape_div), "stride_div": list(self.stride_div),
                "shape_const": list(self.shape_const), "stride_const": list(self.stride_const),
                "base_div": self.base_div}


def pow2_divisor(v: int, cap: int = 16) -> int:
    """Largest power of two dividing ``v``, at most ``cap``; 0 counts as divisible by ``cap``
    (cutile 0.5.0 ``cutile-compiler/src/specialization.rs`` ``max_pow2_divisor``)."""
    v = int(v)
    return cap if v == 0 else min(v & -v, cap)


def base_address(a: Shaped) -> int:
    """The byte address of ``a``'s first element relative to a fresh allocation (aligned to
    :data:`ALLOC_ALIGN`): ``offset * itemsize``."""
    return a.offset * ITEMSIZE[a.dtype]


def reference_facts(a: Shaped) -> ArrayFacts:
    """What cuda-tile 1.7.0's ``ct.launch`` tells the compiler about a torch tensor ``a``.

    Its rule (the C launcher; the same rule in Python for JAX arrays:
    ``cuda/tile/jax/_jax.py`` lines 505-514; every reference kernel name of docs/results/h200
    bench.json decodes to it with ``cuda/tile/compilation/_name_mangling.py``): an extent is
    divisible by 16 or nothing is said; an extent of 1 is a constant; a stride of 1 is a
    constant; a stride is divisible by 16 bytes' worth of elements (8 for f16, 4 for f32) or
    nothing is said; the base address is 16-byte aligned or nothing is said (``p16`` on every
    fresh tensor; none on tg_mhc's bf16 ``y[:, N:2 * N]``, 8 bytes in)."""
    per16 = 16 // ITEMSIZE[a.dtype] if 16 % ITEMSIZE[a.dtype] == 0 else 1
    return ArrayFacts(
        shape_div=tuple(16 if d % 16 == 0 and d != 0 and d != 1 else 1 for d in a.shape),
        stride_div=tuple(per16 if s != 1 and per16 > 1 and s % per16 == 0 else 1 for s in a.strides),
        shape_const=tuple(1 if d == 1 else None for d in a.shape),
        stride_const=tuple(1 if s == 1 else None for s in a.strides),
        base_div=16 if base_address(a) % 16 == 0 else 1)


def port_facts(a: Shaped) -> ArrayFacts:
    """What cutile 0.5.0's generated launcher tells the compiler about a tensor ``a``.

    ``cutile-compiler/src/specialization.rs`` ``compute_spec``: each extent and each stride gets
    its largest power-of-two divisor up to 16, in elements (``DivHint::from_value``; 1000 -> 8,
    37 -> 1); the base pointer its alignment up to 16 bytes (``DivHint::from_ptr``);
    ``stride_one`` marks unit strides, which the launcher (``cutile-macro``
    ``kernel_launcher_generator.rs``, ``spec().stride_one``) compiles as static strides of 1;
    extents are never constants. ``cutile-compiler/src/kernel_entry_generator.rs`` emits an
    ``assume div_by`` for each divisor above 1 on the dynamic extents, strides and pointer."""
    return port_facts_at(a.shape, a.strides, ALLOC_ALIGN + base_address(a))


def port_facts_at(shape, strides, address: int) -> ArrayFacts:
    """:func:`port_facts` of an array given by its extents, strides (elements) and the byte
    ``address`` of its first element (a real tensor's ``data_ptr()``: what the launcher reads)."""
    return ArrayFacts(
        shape_div=tuple(pow2_divisor(d) for d in shape),
        stride_div=tuple(1 if s == 1 else pow2_divisor(s) for s in strides),
        shape_const=tuple(None for _ in shape),
        stride_const=tuple(1 if s == 1 else None for s in strides),
        base_div=pow2_divisor(address))


def shim_strides(shape, strides) -> tuple[tuple, frozenset]:
    """The strides tileport's host shim hands cutile for an array whose strides the port reads
    by dimension (the translator's ``tensor_strides``), and the dimensions whose unit stride it
    keeps dynamic: a Python mirror of ``as_compiled_strides`` + ``cutile_strides``
    (rust/host/abi.rs; tests/test_ffi.py checks both against the real library).

    An extent-1 dimension's stride is free: 1 innermost, else the C-contiguous stride of the
    extents after it, at least 2; a unit stride on a non-innermost dimension of extent > 1 stays
    1 but dynamic. So the port always runs compiled for strides ``[-1, ..., -1, 1]``, the layout
    its Tile IR was checked in. Raises :class:`LaunchFactsError` for an innermost stride other
    than 1 on an extent > 1 (the shim refuses it; ``host.ffi.restage_strides`` copies it first)."""
    shape, out = tuple(int(d) for d in shape), [int(s) for s in strides]
    n = len(shape)
    if n == 0:
        return (), frozenset()
    if shape[-1] <= 1:
        out[-1] = 1
    if out[-1] != 1:
        raise LaunchFactsError(f"extents {shape}, strides {tuple(strides)}: innermost stride other than 1, "
                               "which the host shim refuses for an array the port reads by dimension")
    contiguous, dynamic = 1, set()
    for k in range(n - 2, -1, -1):
        contiguous *= max(shape[k + 1], 1)
        if out[k] == 1:
            if shape[k] == 1:
                out[k] = max(contiguous, 2)
            else:
                dynamic.add(k)
    return tuple(out), frozenset(dynamic)


def port_facts_shimmed(a: Shaped) -> ArrayFacts:
    """:func:`port_facts` of an array the port reads by dimension, as tileport's host shim launches
    it (:func:`shim_strides`): no unit stride but the innermost is static, so cutile's
    ``get_shape_dim(tensor_strides(t), k)`` reads dimension k's stride. Errors: as
    :func:`shim_strides`."""
    strides, dynamic = shim_strides(a.shape, a.strides)
    f = port_facts_at(a.shape, strides, ALLOC_ALIGN + base_address(a))
    return ArrayFacts(f.shape_div, f.stride_div, f.shape_const,
                      tuple(None if k in dynamic else c for k, c in enumerate(f.stride_const)), f.base_div)


def port_scalar_hint(value: int) -> int:
    """The divisor cutile 0.5.0's launcher hints on an integer scalar argument
    (``cutile-macro`` ``kernel_launcher_generator.rs``: ``DivHint::from_value(v as i32)`` for
    every integer scalar parameter). cuda-tile 1.7.0 hints none (``ScalarConstraint`` has only
    a dtype: ``cuda/tile/compilation/_signature.py``)."""
    return pow2_divisor(int(value) & 0xFFFFFFFF if int(value) >= 2 ** 31 else int(value))


def matched_facts(port: ArrayFacts, static_shape) -> ArrayFacts:
    """The port's facts about an array restated so that the reference can be compiled with
    exactly them: the same divisors, unit strides and pointer alignment, and constant extents
    only where the port has them too (an array the translator gives a static shape,
    ``static_shape``; cuda-tile's extent-1 constants have no counterpart in cutile)."""
    return ArrayFacts(port.shape_div, port.stride_div,
                      tuple(static_shape) if static_shape else tuple(None for _ in port.shape_div),
                      port.stride_const, port.base_div)


# -- one call's arrays, from the manifest ------------------------------------------------------

def _eval(expr, env: dict, where: str):
    """A manifest expression's value (numbers pass through); errors name ``where``."""
    if isinstance(expr, (int, float)):
        return expr
    try:
        return eval(compile(expr, where, "eval"), {"__builtins__": {}}, dict(env))  # noqa: S307
    except LaunchFactsError as exc:
        raise LaunchFactsError(f"{where}: expression {expr!r}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the manifest's expression: name it
        raise LaunchFactsError(f"{where}: expression {expr!r}: {type(exc).__name__}: {exc}") from None


def perf_cases(man: dict, kernel: str) -> list[tuple[manifest.Variant, tuple]]:
    """(variant, perf shape) pairs of ``kernel`` that the benchmark times: ``perf_shapes`` that
    fit the variant under the kernel's own (else the operator's) ``fits`` and ``perf_fits``, a
    shape name that is also a constexpr equal to it (the rule of ``tileport.gpu.harness.cases``,
    which a test keeps equal). Raises :class:`LaunchFactsError` for a bad predicate."""
    out = []
    kman = man["kernels"][kernel]
    for v in manifest.variants(man, kernel):
        for s in man["perf_shapes"]:
            if any(v.constexprs[n] != x for n, x in zip(man["shape_names"], s) if n in v.constexprs):
                continue
            env = manifest.base_env(man, list(s), v.constexprs, 0)
            ok = True
            for key in ("fits", "perf_fits"):
                own = kman.get(key)
                expr = own if own is not None else man.get(key, "True")
                where = f"{man['_path']}: {'kernels/' + kernel + '/' if own is not None else ''}{key}"
                ok = ok and bool(_eval(expr, env, where))
            if ok:
                out.append((v, tuple(s)))
    return out


def call_arrays(man: dict, kernel: str, params: list[dict], variant: manifest.Variant,
                shape) -> tuple[dict, dict]:
    """The arrays and scalars one call of ``kernel`` passes, as layouts: ``({array: Shaped or a
    list of Shaped}, {scalar: value})``. ``params``: ``analysis.json``'s parameter list.
    Tensors are fresh and contiguous (as ``tileport.gpu.harness.build_call`` makes them, on a
    GPU); ``bind`` expressions are evaluated over them with the shape names, constexprs and
    hints; ``num_sms`` is :data:`NUM_SMS` (the GPU of the published figures).

    Raises:
        LaunchFactsError: a binding or shape this module cannot evaluate (names file and key).
    """
    mpath = man["_path"]
    env = manifest.base_env(man, list(shape), variant.constexprs, NUM_SMS)
    tensors = manifest.kernel_tensors(man, kernel)
    base = f"kernels/{kernel}/tensors" if "tensors" in man["kernels"][kernel] else "tensors"
    space = dict(env)
    for name, t in tensors.items():
        where = f"{mpath}: {base}/{name}"
        dtype = manifest.resolve_dtype(t.get("dtype"), variant.dtype)
        if "count" in t:
            n = int(_eval(t["count"], env, f"{where}/count"))
            space[name] = [Shaped.fresh(dtype, [_eval(x, {**env, "i": i}, f"{where}/shape") for x in t["shape"]])
                           for i in range(n)]
        else:
            space[name] = Shaped.fresh(dtype, [_eval(x, env, f"{where}/shape") for x in t["shape"]])
    bind = man["kernels"][kernel].get("bind", {})
    arrays, scalars = {}, {}
    for p in params:
        where = f"{mpath}: kernels/{kernel}/bind/{p['name']}"
        if p["kind"] == "array":
            val = _eval(bind.get(p["name"], p["name"]), space, where)
            arrays[p["name"]] = list(val) if isinstance(val, (list, tuple)) else val
        elif p["kind"].startswith("scalar"):
            if p["name"] in bind:
                scalars[p["name"]] = _eval(bind[p["name"]], space, where)
    return arrays, scalars
