"""Memory: arrays, partition views, ``ct.load`` / ``ct.store``, ``ct.num_tiles``, ``a.shape[i]``, ``a.slice``.

``ct.load``/``ct.store`` become partition views (``make_partition_view`` with the same padding
marker / ``make_partition_view_mut``, each made from the memory token its op waits for:
:mod:`.tokens`) read by cutile's raw ``load_view_tko`` and written by its
raw ``store_view_tko_mut`` (what ``store_unchecked`` calls), so both sides emit ``load_view_tko`` /
``store_view_tko`` on the same ``partition_view`` type, with the reference's latency and TMA
hints (:mod:`.hints`). Neither is cutile's *checked* ``Partition::load`` / ``store``: cuTile
Python emits both ops with no bounds assert (a tile index outside the view is undefined
behaviour there), while cutile's checked methods add an ``assert`` that the compiler cannot
discharge when the tile index comes from a persistent loop bounded by another array's tiles.
The IR diff showed those as extra asserts and the H200 benchmark as a slower port (stores:
4-12 % on softmax, rms_norm, layer_norm, 2026-11-29; with raw loads too, softmax 0.952 ->
1.000, layer_norm 0.943 -> 0.998, rms_norm 0.978 -> 0.999, issue 14); the raw ops are the
reference's own operations.
"""
from __future__ import annotations

import ast
import math
import re

from tileport.core import floats
from tileport.model import constructs, frontend

from .core import CONSTEXPR, DTYPE_KEY, INDEX_TUPLE, JIT_INT, Member, NeedConst, Ty, Unsupported, Var

# a module-level helper reading a tensor's strides (see MemoryRules.gather_scatter)
STRIDES_HELPER = """    /// The element strides of a tensor, from its type metadata (cutile 0.5.0 keeps them there
    /// beside base, shape and token but has no accessor for them: this is its own
    /// return_type_meta_field compiler op, as core uses for get_tensor_shape_meta).
    #[cuda_tile::variadic_op(N = 6)]
    #[cuda_tile::compiler_op(name = "return_type_meta_field", type_meta_field = "strides")]
    pub fn tensor_strides<'s, E: ElementType, const S: [i32; N]>(tensor: &Tensor<E, S>) -> Shape<'s, S> {
        unreachable!()
    }

"""


def strided_arrays(rust: str) -> list[str]:
    """The Rust names of the arrays a port reads the strides of by dimension (its calls of
    :data:`STRIDES_HELPER`'s ``tensor_strides``), sorted: the host shim launches them in the
    layout the port was compiled for (rust/host/abi.rs ``as_compiled_strides``) and
    ``runtime_ir`` compiles them so (``launch_facts.port_facts_shimmed``)."""
    return sorted(set(re.findall(r"\btensor_strides\((\w+)\)", rust)))


# a module-level declaration of Tile IR's load_ptr_tko whose padding operand is a tile of the
# result's shape (see MemoryRules.gather)
PADDED_GATHER_HELPER = """    /// Tile IR's load_ptr_tko with its padding operand a tile of the result's shape. cutile
    /// 0.5.0's own declaration takes a scalar padding and promotes it by a reshape to [1] and a
    /// broadcast, which is invalid IR for a result of rank >= 2; a padding of the result's shape
    /// goes into the op unchanged, as cuTile Python writes it.
    #[cuda_tile::op(name = "cuda_tile.load_ptr_tko", since = "V13_2", params = ["source"])]
    #[cuda_tile::variadic_op(N = 6)]
    pub unsafe fn load_ptr_tko_padded<E: ElementType, P: PointerTo<E>, const S: [i32; N], O: ordering::LoadMode, Sc: scope::Mode, const CYCLES: i32>(
        source: PointerTile<P, S>,
        memory_ordering: O,
        memory_scope: Option<Sc>,
        mask: Option<Tile<bool, S>>,
        padding_value: Option<Tile<E, S>>,
        token: Option<Token>,
        latency: Latency<CYCLES>,
    ) -> (Tile<E, S>, Token) {
        unreachable!()
    }

"""  # noqa: E501 (Rust emitted verbatim: load_ptr_tko_padded's signature is one line)


# A list element's extents and strides are int64 words of the list's table truncated to int32:
# cuTile Python's Tile IR has ``trunci`` without an overflow flag. cutile 0.5.0 writes no such
# trunci: its ``trunci`` maps ``overflow::None`` to no attribute (cutile-0.5.0 src/_core.rs:2415,
# ``static_params = ["overflow={None: , ...``), which its bytecode writer requires
# (cutile-ir-0.5.0 src/bytecode/op_writer.rs:158-160, ``TruncI`` -> ``write_inline_attr(op,
# "overflow", ...)``: "missing attribute 'overflow' on op TruncI"), ``convert_tile`` of an i64
# tile to i32 is "not yet implemented" (cutile-compiler-0.5.0 src/compiler/compile_intrinsic.rs:2106)
# and a scalar ``as`` cast allows no i64 -> i32. A flag it can write (``no_signed_wrap``) is a
# different Tile IR op. So list parameters are BLOCKED (translate.driver.manifest_forms_without_rule)
# while this is None; tests/test_language.py sets it to show the rest of the lowering equal to
# cuTile Python's and the block's cause real.
LIST_TRUNCI_OVERFLOW: str | None = None


class MemoryRules:
    """Rules for arrays, partition views and pointer tiles (mixed into the driver's translator)."""

    CALLS = {"load": "load", "load_advanced_indexing": "load_advanced_indexing", "num_tiles": "num_tiles",
             "gather": "gather",
             **{n: "atomic" for n in constructs.ATOMICS}}

    def array_arg(self, node) -> Var:
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and self.lookup(node.value.id) is not None and self.lookup(node.value.id).ty.kind == "list"):
            e, ty = self.list_element(node)              # As[g] named in the call itself
            return Var(e, ty, None, len(self.scopes) - 1, alias=True)
        if not isinstance(node, ast.Name) or self.lookup(node.id) is None or self.lookup(node.id).ty.kind != "arr":
            self.fail(node, ast.unparse(node), "expected an array parameter")
        return self.lookup(node.id)

    def shape_of(self, node) -> tuple:
        """A tile shape: each entry an int literal, a constexpr (its const generic) or
        arithmetic on those (evaluated: its constexprs are specialised per entry); a single
        entry not in a tuple is a 1-D shape, as cuTile Python 1.7.0 takes ``shape=TILE``
        (FlashInfer's rope_quantize_fp8 loads ``shape=TOKENS_PER_BLOCK``)."""
        if isinstance(node, (ast.List, ast.Starred, ast.GeneratorExp, ast.ListComp)):
            self.fail(node, ast.unparse(node), "tile shape must be a tuple literal or one entry")
        dims = []
        for e in node.elts if isinstance(node, ast.Tuple) else [node]:
            if isinstance(e, ast.Name) and any(p["name"] == e.id and p["kind"] == "constexpr"
                                               and e.id not in self.spec for p in self.params):
                dims.append(self.rname(e.id))
                continue
            _, ty = self.expr(e)
            self.need_constexpr_value(ty, e)
            if ty.kind == "lit" and type(ty.value) is int and ty.value > 0:
                dims.append(str(ty.value))
            else:
                self.fail(e, ast.unparse(e), "a tile shape entry must be a positive int known at "
                                             "compile time (literal, constexpr, arithmetic on those)")
        return tuple(dims)

    def static_int(self, node, what: str) -> int:
        """An int argument known at compile time (literal, constexpr of the entry, module
        constant, arithmetic on those)."""
        _, ty = self.expr(node)
        self.need_constexpr_value(ty, node)
        if ty.kind != "lit" or type(ty.value) is not int:
            self.fail(node, ast.unparse(node), f"{what} must be an int known at compile time")
        return ty.value

    def need_constexpr_value(self, ty: Ty, node) -> None:
        """An int constexpr kept as a const generic reached here under another name (a helper's
        parameter bound to it): the rule needs its value, so the entries are specialised on it
        (:class:`NeedConst`)."""
        if ty.kind == "i32" and isinstance(ty.value, str) and ty.value.startswith(CONSTEXPR + ":"):
            raise NeedConst(self.file, getattr(node, "lineno", self.line), ty.value.split(":", 1)[1],
                            "a compile-time int read through a helper's parameter")
        if ty.kind == "i32" and isinstance(ty.value, str) and ty.value.startswith(JIT_INT + ":"):
            # arithmetic of const generics (``NUM_PAGES = BLOCK_N // LOAD_BLOCK_N`` in a helper,
            # FlashInfer's page loads): specialise on its constexprs, one at a time, until it folds
            for name in ty.value.split(":", 1)[1].split(","):
                if name and name not in self.spec:
                    raise NeedConst(self.file, getattr(node, "lineno", self.line), name,
                                    "a compile-time int computed from constexprs")

    def index_elems(self, node, ndim: int) -> list[str]:
        """The Rust int32 expressions of a tile index (one per array axis)."""
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        if len(elts) != ndim:
            self.fail(node, ast.unparse(node), f"index has {len(elts)} entries, array rank is {ndim}")
        return [self.int_expr(e) for e in elts]

    def index_of(self, node, ndim: int) -> str:
        return "[" + ", ".join(self.index_elems(node, ndim)) + "]"

    def view(self, arr: Var, shape: tuple, padding: str, node, token: str | None = None,
             dim_map: str = "dim_map::Identity") -> str:
        """A partition view of ``arr`` whose accesses wait for ``token`` (default: the tensor's
        own token, for a view only queried, e.g. by ``ct.num_tiles``)."""
        name = self.fresh("view")
        self.out.emit(
            f"let {name}: Partition<{arr.ty.dtype}, {{[{', '.join(shape)}]}}> = make_partition_view("
            f"{arr.rust}, shape![{', '.join(shape)}], {padding}, {dim_map}, "
            f"{token or f'get_tensor_token({arr.rust})'});", self.line)
        return name

    def padding_of(self, call) -> str:
        """``padding_mode=``: a ``ct.PaddingMode`` member, written out or held in a name (a local
        ``zero_pad = ct.PaddingMode.ZERO``, a module-level constant, a helper's parameter)."""
        pm = self._kw(call, "padding_mode")
        if pm is None:
            return constructs.PADDING["UNDETERMINED"]
        member = self.enum_of(pm)
        if member is not None and member.enum == "PaddingMode":
            return constructs.PADDING[member.name]
        self.fail(pm, ast.unparse(pm), "padding_mode must be a ct.PaddingMode member (or a name "
                                       "bound to one in the kernel or at module level)")

    # ---- ct.load / ct.store ------------------------------------------------------------
    VIEW_KWARGS = {"index", "latency", "allow_tma", "order", "check_bounds", "memory_order",
                   "memory_scope"}

    def order_of(self, call, ndim: int) -> list | None:
        """``order=`` of a load/store: "C" (the default), "F" or a permutation of the array's
        axes, known at compile time; None for the identity (no ``dim_map``), else the
        partition view's ``dim_map`` (cuTile Python's ``PartitionViewTy`` order)."""
        node = self._kw(call, "order")
        if node is None:
            return None
        if isinstance(node, ast.Constant) and node.value in ("C", "F"):
            axes = list(range(ndim)) if node.value == "C" else list(range(ndim - 1, -1, -1))
        elif isinstance(node, ast.Tuple):
            axes = [self.static_int(e, "an order entry") for e in node.elts]
            axes = [a % ndim if -ndim <= a < ndim else a for a in axes]
        else:
            self.fail(node, ast.unparse(node), "order must be 'C', 'F' or a tuple of axes")
        if sorted(axes) != list(range(ndim)):
            self.fail(node, ast.unparse(node), f"order {axes} is not a permutation of {ndim} axes")
        return None if axes == list(range(ndim)) else axes

    def view_options(self, call, ndim: int, load: bool) -> dict:
        """The compile-time options of a load/store: dim_map, inbounds (``check_bounds=False``:
        every axis in bounds, Tile IR's ``inbounds``), ordering / scope markers."""
        cb = self._kw(call, "check_bounds")
        check = True if cb is None else self.const_value(cb)
        if not isinstance(check, bool):
            self.fail(call, ast.unparse(cb), "check_bounds must be True, False or a bool constexpr")
        allowed = {"WEAK", "RELAXED", "ACQUIRE"} if load else {"WEAK", "RELAXED", "RELEASE"}
        order, scope, acquire, release = self.memory_semantics(call, "WEAK", "NONE", allowed)
        axes = self.order_of(call, ndim)
        return {"dim_map": "dim_map::Identity" if axes is None else f"const_array![{', '.join(map(str, axes))}]",
                "permuted": axes is not None, "inbounds": None if check else f"[{', '.join(['true'] * ndim)}]",
                "ordering": order, "scope": scope, "acquire": acquire, "release": release}

    def load(self, call) -> tuple[str, Ty]:
        """``ct.load(array, index, shape, order=, padding_mode=, check_bounds=, latency=,
        allow_tma=, memory_order=, memory_scope=)``: a partition view (``dim_map`` for a
        permuted order) read by cutile's ``load_view_tko``, or by ``load_view_raw`` when
        ``check_bounds=False`` (Tile IR's ``inbounds``, which only the raw op takes)."""
        self.check_kwargs(call, self.VIEW_KWARGS | {"shape", "padding_mode"})
        arr = self.array_arg(call.args[0] if call.args else None)
        idx_node, shp_node = self._kw(call, "index", 1), self._kw(call, "shape", 2)
        shape = self.shape_of(shp_node)
        if shape == () and arr.ty.ndim > 0:
            # shape=(): one element, loaded as a tile of unit axes and reshaped to a 0-d tile
            # (cuda/tile/_ir/ops.py _tile_load_impl_inner)
            t, ty = self.load_tile(call, arr, idx_node, ("1",) * arr.ty.ndim)
            return self.bind(f"{t}.reshape(shape![])", Ty("tile", ty.dtype, ()))
        if len(shape) != arr.ty.ndim:
            self.fail(call, "ct.load", f"tile rank {len(shape)} != array rank {arr.ty.ndim}")
        return self.load_tile(call, arr, idx_node, shape)

    def load_tile(self, call, arr: Var, idx_node, shape: tuple) -> tuple[str, Ty]:
        """The partition-view load of :meth:`load`, of a tile of ``shape`` (the array's rank)."""
        index = self.index_of(idx_node, arr.ty.ndim)
        o = self.view_options(call, arr.ty.ndim, load=True)
        token = self.load_token(arr.rust, call, acquire=o["acquire"])
        v = self.view(arr, shape, self.padding_of(call), call, token, o["dim_map"])
        hints = f"{self.latency_arg(call)}, {self.tma_arg(call)}"
        if o["inbounds"] is not None:
            raw, tok = self.fresh("t"), self.fresh("tok")
            self.out.emit(f"let ({raw}, {tok}): (Tile<{arr.ty.dtype}, {{[{', '.join(shape)}]}}>, Token) = "
                          f"load_view_raw(&{v}, {index}, Some({token}), {o['ordering']}, {o['scope']}, "
                          f"{self.tma_arg(call)}, {self.latency_arg(call)}, {o['inbounds']}, "
                          f"shape![{', '.join(shape)}]);", self.line)
            self.tok_names.add(tok)
            self.loaded(arr.rust, tok, o["acquire"])
            return raw, Ty("tile", arr.ty.dtype, shape)
        # the reference's load_view_tko carries no bounds assert: see the module docstring
        out = self.bind(f"load_view_tko(&{v}, {index}, {o['ordering']}, {o['scope']}, {hints})",
                        Ty("tile", arr.ty.dtype, shape))
        self.loaded(arr.rust, self._tok_let(f"get_partition_token(&{v})"), o["acquire"])
        return out

    def load_advanced_indexing(self, call) -> tuple[str, Ty]:
        """``ct.load_advanced_indexing(array, (page_ids, ct.Slice(start, n), ...), padding_mode=,
        latency=, allow_tma=)``: one axis indexed by a 1-D int32 tile (the sparse axis), every
        other a ``ct.Slice`` of a run-time element offset and a compile-time length; the tile has
        the index tile's length on the sparse axis and the slice lengths elsewhere. cuTile Python
        1.7.0 builds ``make_gather_scatter_view`` of the array's tensor view (tile shape, padding,
        ``sparse_dim``) and a ``load_view_tko`` at (index tile, offsets) (``_ir/ops.py``
        ``load_advanced_indexing`` impl; seen in its Tile IR for FlashInfer's paged loads); the
        port writes cutile 0.5.0's ``make_gather_scatter_view`` (``_tileir.rs``) and
        ``load_view_raw`` with the same index tuple, ordered after the array's last store."""
        self.check_kwargs(call, {"padding_mode", "latency", "allow_tma"})
        if len(call.args) != 2:
            self.fail(call, "ct.load_advanced_indexing", "expects (array, indices) positionally")
        arr = self.array_arg(call.args[0])
        node = call.args[1]
        if not isinstance(node, ast.Tuple) or len(node.elts) != arr.ty.ndim:
            self.fail(node, ast.unparse(node), f"the indices must be a tuple of {arr.ty.ndim} entries")
        shape, index, sparse = [], [], None
        for k, e in enumerate(node.elts):
            if isinstance(e, ast.Call) and self.is_ct(e.func, "Slice"):
                if len(e.args) != 2 or e.keywords:
                    self.fail(e, ast.unparse(e), "ct.Slice(start, length) positionally")
                index.append(self.int_expr(e.args[0]))
                shape.append(str(self.static_int(e.args[1], "a ct.Slice length")))
                continue
            ie, it = self.expr(e)
            if sparse is not None or it.kind != "tile" or it.dtype != "i32" or len(it.shape) != 1:
                self.fail(e, ast.unparse(e), "exactly one index must be a 1-D int32 tile, the others "
                                             "ct.Slice(start, length)")
            sparse = k
            index.append(ie)
            shape.append(it.shape[0])
        if sparse is None:
            self.fail(node, ast.unparse(node), "exactly one index must be a 1-D int32 tile")
        order, scope, _, _ = self.memory_semantics(call, "WEAK", "NONE", {"WEAK"})
        self.need_tileir = True
        token = self.load_token(arr.rust, call)
        sh = ", ".join(shape)
        gsv, t, tok = self.fresh("gsview"), self.fresh("t"), self.fresh("tok")
        self.out.emit(f"let {gsv}: GatherScatterView<{arr.ty.dtype}, {{[{sh}]}}, {sparse}> = "
                      f"make_gather_scatter_view({arr.rust}, shape![{sh}], {self.padding_of(call)});", self.line)
        self.out.emit(f"let ({t}, {tok}): (Tile<{arr.ty.dtype}, {{[{sh}]}}>, Token) = load_view_raw(&{gsv}, "
                      f"({', '.join(index)}), Some({token}), {order}, {scope}, {self.tma_arg(call)}, "
                      f"{self.latency_arg(call)}, [{', '.join(['false'] * arr.ty.ndim)}], shape![{sh}]);",
                      self.line)
        self.tok_names.add(tok)
        self.loaded(arr.rust, tok)
        return t, Ty("tile", arr.ty.dtype, tuple(shape))

    def store(self, call):
        """``ct.store(array, index, tile, order=, check_bounds=, latency=, allow_tma=,
        memory_order=, memory_scope=)``: a mutable partition view written by cutile's
        ``store_view_tko_mut``; with a permuted order or ``check_bounds=False`` a view with its
        ``dim_map`` written by ``store_view_raw`` (cutile's mutable views take no dim_map, only
        the raw op takes ``inbounds``)."""
        self.check_kwargs(call, self.VIEW_KWARGS | {"tile"})
        arr = self.array_arg(call.args[0] if call.args else None)
        idx_node, tile_node = self._kw(call, "index", 1), self._kw(call, "tile", 2)
        t, ty = self.tile_expr(tile_node)
        t, ty = self.implicit_cast(t, ty, arr.ty.dtype, call, "ct.store")
        if len(ty.shape) != arr.ty.ndim:
            self.fail(call, "ct.store", f"tile rank {len(ty.shape)} != array rank {arr.ty.ndim}")
        index = self.index_elems(idx_node, arr.ty.ndim)
        o = self.view_options(call, arr.ty.ndim, load=False)
        token = self.store_token(arr.rust, call, tile_store=True, index=index, release=o["release"])
        sh = ", ".join(ty.shape)
        if o["permuted"] or o["inbounds"] is not None:
            v = self.fresh("view")
            self.out.emit(f"let {v}: Partition<{arr.ty.dtype}, {{[{sh}]}}> = "
                          f"make_partition_view({arr.rust}, shape![{sh}], padding::None, {o['dim_map']}, {token});",
                          self.line)
            done = self.fresh("tok")
            self.out.emit(f"let {done}: Token = store_view_raw(&{v}, {t}, [{', '.join(index)}], Some({token}), "
                          f"{o['ordering']}, {o['scope']}, {self.tma_arg(call)}, {self.latency_arg(call)}, "
                          f"{o['inbounds'] or '[' + ', '.join(['false'] * arr.ty.ndim) + ']'});", self.line)
            self.tok_names.add(done)
            self.stored(arr.rust, done, call)
            return
        name = self.fresh("out")
        self.out.emit(f"let mut {name}: PartitionMut<{arr.ty.dtype}, {{[{sh}]}}> = "
                      f"make_partition_view_mut({arr.rust}, shape![{sh}], padding::None, "
                      f"{token});", self.line)
        # the reference's store_view_tko carries no bounds assert: see the module docstring
        self.out.emit(f"store_view_tko_mut(&mut {name}, {t}, [{', '.join(index)}], "
                      f"{o['ordering']}, {o['scope']}, {self.latency_arg(call)}, "
                      f"{self.tma_arg(call)});", self.line)
        # the store's result token is the view's token after it (cutile 0.5.0 compiles the call
        # to the view itself, whatever its declared `-> Token`)
        self.stored(arr.rust, self._tok_let(f"get_partition_token_mut(&{name})"), call)

    def num_tiles(self, node) -> tuple[str, Ty]:
        self.check_kwargs(node, {"axis", "shape"})
        arr = self.array_arg(node.args[0])
        axis = self._kw(node, "axis", 1)
        shape = self.shape_of(self._kw(node, "shape", 2))
        if not (isinstance(axis, ast.Constant) and isinstance(axis.value, int)):
            self.fail(node, "ct.num_tiles", "axis must be an int literal")
        v = self.view(arr, shape, constructs.PADDING["UNDETERMINED"], node)
        return f"num_tiles(&{v}, {axis.value}i32)", Ty("i32")

    def shape_dim(self, node: ast.Subscript) -> tuple[str, Ty]:
        """``a.shape[i]``: the array's run-time extent along axis ``i`` (``-1``: the last)."""
        arr = self.array_arg(node.value.value)
        i = frontend.shape_axis(node)
        if not -arr.ty.ndim <= i < arr.ty.ndim:
            self.fail(node, ast.unparse(node), f"axis {i} out of range for rank {arr.ty.ndim}")
        i %= arr.ty.ndim
        ext = self.array_extent(arr, i)
        if not ext.startswith("get_shape_dim"):
            return str(int(ext[:-3])), Ty("lit", value=int(ext[:-3]))
        return ext, Ty("i32")

    # ---- sub-arrays: Array.slice ------------------------------------------------------
    def array_slice(self, node: ast.Call) -> tuple[str, Ty]:
        """``a.slice(axis, start, stop)``: a tensor view of ``a`` restricted to ``[start, stop)``
        along ``axis``, built as cuTile Python builds it (cuda-tile 1.7.0 ``_ir/ops.py``
        ``array_slice_impl``): base pointer + ``start * stride[axis]`` (``muli``, ``exti`` to
        int64, ``offset``), extent ``stop - start`` (``subi``; a compile-time extent when start
        and stop are both known: then static in the view's type), the other extents and every
        stride kept; cutile 0.5.0's ``get_tensor_base`` / ``offset_tile`` / ``make_tensor_view``.
        The view keeps its array's memory tokens (one alias set, as the reference orders a
        store through a slice after a store through another slice of the same array).

        ``a``: an array parameter or a slice of one (rank ``n``); ``axis``: an int known at
        compile time (negative counts from the last axis); start / stop: int32 scalars or 0-d
        tiles. Returns the view (an ``arr`` value: a name bound to it is an alias)."""
        self.check_kwargs(node, {"axis", "start", "stop"})
        arr = self.array_arg(node.func.value)
        nodes = [self._kw(node, k, i) for i, k in enumerate(("axis", "start", "stop"))]
        if any(n is None for n in nodes) or len(node.args) + len(node.keywords) != 3:
            self.fail(node, ast.unparse(node), "slice takes axis, start and stop")
        nd = arr.ty.ndim
        axis = self.static_int(nodes[0], "the slice axis")
        if not -nd <= axis < nd:
            self.fail(node, ast.unparse(node), f"axis {axis} out of range for rank {nd}")
        axis %= nd
        shape = list(arr.ty.shape or ("-1",) * nd)
        strides = ["-1"] * (nd - 1) + ["1"]          # an entry tensor's (tileport.cpu.rust_ir)
        # an extent known at compile time is part of the view's type (cuTile Python types
        # the view with it): the values of its constexprs are asked for (they join the keys)
        if all(self.compile_time_int(n) for n in nodes[1:]):
            for name in sorted({x.id for n in nodes[1:] for x in ast.walk(n) if isinstance(x, ast.Name)}):
                if name not in self.spec and name not in self.module_consts:
                    raise NeedConst(self.file, node.lineno, name,
                                    "a slice's compile-time extent is part of the view's type")
        (se, st), (pe, pt) = (self.expr(n) for n in nodes[1:])
        if st.kind == "lit" and pt.kind == "lit":
            if not (type(st.value) is int and type(pt.value) is int and 0 <= st.value <= pt.value):
                self.fail(node, ast.unparse(node), "start and stop must be ints, 0 <= start <= stop")
            shape[axis] = str(pt.value - st.value)
        start = self.as_i32_tile(se, st, nodes[1])
        stop = self.as_i32_tile(pe, pt, nodes[2])
        # the stride of the axis: static 1 innermost, else from the tensor's type metadata
        dyn_strides = []
        if nd > 1:
            self.need_strides = True
            sv = self.fresh("strides")
            self.out.emit(f"let {sv}: Shape<{{[{', '.join(['-1'] * nd)}]}}> = tensor_strides({arr.rust});",
                          self.line)
            dyn_strides = [f"get_shape_dim({sv}, {k}i32)" for k in range(nd - 1)]
        if strides[axis] == "1":
            stride = self.bind("constant(1i32, shape![])", Ty("tile", "i32", ()))[0]
        else:
            stride = self.bind(f"scalar_to_tile({dyn_strides[axis]})", Ty("tile", "i32", ()))[0]
        off = self.bind(f"{start} * {stride}", Ty("tile", "i32", ()))[0]
        off64 = self.bind(f"exti({off})", Ty("tile", "i64", ()))[0]
        el = arr.ty.dtype
        base = self.fresh("base")
        self.out.emit(f"let {base}: PointerTile<*mut {el}, {{[]}}> = get_tensor_base({arr.rust});", self.line)
        ptr = self.fresh("base")
        self.out.emit(f"let {ptr}: PointerTile<*mut {el}, {{[]}}> = {base}.offset_tile({off64});", self.line)
        dims = []
        for k in range(nd):
            if k == axis and shape[k] == "-1":
                n = self.bind(f"{stop} - {start}", Ty("tile", "i32", ()))[0]
                dims.append(self.bind(f"tile_to_scalar({n})", Ty("i32"))[0])
            elif k != axis and shape[k] == "-1":
                dims.append(self.array_extent(arr, k))
        sh, sd = ", ".join(shape), ", ".join(strides)
        tv, ref = self.fresh("view_t"), self.fresh("slice")
        shp, std = self.fresh("shape"), self.fresh("strides")
        self.out.emit(f"let {shp}: Shape<{{[{sh}]}}> = Shape::<{{[{sh}]}}> {{ dims: &[{', '.join(dims)}] }};",
                      self.line)
        self.out.emit(f"let {std}: Array<{{[{sd}]}}> = Array::<{{[{sd}]}}> {{ dims: &[{', '.join(dyn_strides)}] }};",
                      self.line)
        self.out.emit(f"let {tv} = make_tensor_view({ptr}, {shp}, {std}, get_tensor_token({arr.rust}));",
                      self.line)
        self.out.emit(f"let {ref} = &{tv};", self.line)
        self.share_tokens(ref, arr.rust)
        return ref, Ty("arr", dtype=el, shape=tuple(shape), ndim=nd)

    # ---- lists of arrays: As[g], len(As) ---------------------------------------------
    @staticmethod
    def list_row(ndim: int) -> tuple[int, int]:
        """(columns, loaded width) of one row of a list's table: cuTile Python 1.7.0 passes a
        ``list[Array]`` of rank ``ndim`` as a pointer to an int64 table, one row per element
        holding its base address, its ``ndim`` extents and ``ndim`` strides (shape ``[len,
        1 + 2 ndim]``, strides ``[1 + 2 ndim, 1]``), and its length; a row is loaded as one
        tile of the next power of two (seen in its Tile IR: ``tile=(1x4)`` for rank 1)."""
        cols = 1 + 2 * ndim
        return cols, 1 << (cols - 1).bit_length()

    def list_table(self, name: str, rn: str, ndim: int) -> list[str]:
        """The entry's lines for list parameter ``rn`` (Rust ``rn: *mut i64``, ``rn__len:
        i32``): its table's tensor view and partition view (each row one tile), and the
        list's first token (a ``make_token``: the list is one alias set, as in cuTile Python).
        cutile 0.5.0 ``pointer_to_tile``, ``make_tensor_view`` (src/_core.rs), as its own
        ``load_tensor`` reads a tensor's address from a table."""
        cols, width = self.list_row(ndim)
        return [f"let {rn}__tok: Token = new_token_unordered();",
                f"let {rn}__base: PointerTile<*mut i64, {{[]}}> = pointer_to_tile({rn});",
                f"let {rn}__shape: Shape<{{[-1, {cols}]}}> = Shape::<{{[-1, {cols}]}}> {{ dims: &[{rn}__len] }};",
                f"let {rn}__strides: Array<{{[{cols}, 1]}}> = Array::<{{[{cols}, 1]}}> {{ dims: &[] }};",
                f"let {rn}__tv: Tensor<i64, {{[-1, {cols}]}}> = make_tensor_view({rn}__base, {rn}__shape, "
                f"{rn}__strides, new_token_unordered());",
                f"let {rn}__rows: Partition<i64, {{[1, {width}]}}> = make_partition_view(&{rn}__tv, "
                f"shape![1, {width}], padding::None, dim_map::Identity, new_token_unordered());"]

    def list_len(self, node: ast.Call) -> tuple[str, Ty]:
        """``len(As)`` of a list-of-arrays parameter: its length, an int32 entry argument."""
        if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Name):
            self.fail(node, ast.unparse(node), "len() of a list-of-arrays parameter only")
        var = self.lookup(node.args[0].id)
        if var is None or var.ty.kind != "list":
            self.fail(node, ast.unparse(node), "len() of a list-of-arrays parameter only")
        return f"{var.rust}__len", Ty("i32")

    def list_element(self, node: ast.Subscript) -> tuple[str, Ty]:
        """``As[g]`` (``g`` an int32: a constexpr, a loop variable, any scalar): element ``g``
        of a list-of-arrays parameter, built as cuTile Python 1.7.0 builds it (its Tile IR):
        row ``g`` of the list's table loaded as one int64 tile, each needed column extracted
        (``extract`` + ``reshape`` to 0-d), the extents and the outer strides truncated to
        int32 (``trunci``), the address made a pointer (``int_to_ptr``), and a tensor view
        (``make_tensor_view``) with the innermost stride 1 as the reference's signature fixes
        it. cutile 0.5.0: ``int_to_ptr`` (src/_core.rs, cuda_tile.int_to_ptr) and
        ``make_tensor_view`` (src/_core.rs, cuda_tile.make_tensor_view). The view orders its
        ops with the list's tokens. Returns an ``arr`` value (a name bound to it is an
        alias)."""
        lst = self.lookup(node.value.id)
        nd, el = lst.ty.ndim, lst.ty.dtype
        g = self.int_expr(node.slice)
        _, width = self.list_row(nd)
        row = self.fresh("row")
        self.out.emit(f"let {row}: Tile<i64, {{[1, {width}]}}> = load_view_tko(&{lst.rust}__rows, [{g}, 0i32], "
                      f"ordering::Weak, scope::TileBlock, None, tma::Enabled);", self.line)

        zero = self.bind("scalar_to_tile(0i32)", Ty("tile", "i32", ()))[0]

        def column(k: int) -> str:
            kk = zero if k == 0 else self.bind(f"scalar_to_tile({k}i32)", Ty("tile", "i32", ()))[0]
            c = self.bind(f"extract({row}, [{zero}, {kk}])", Ty("tile", "i64", ("1", "1")))[0]
            return self.bind(f"{c}.reshape(shape![])", Ty("tile", "i64", ()))[0]

        cols = [column(k) for k in range(1 + nd + (nd - 1))]
        narrow = [self.bind(f"trunci({c}, {LIST_TRUNCI_OVERFLOW})", Ty("tile", "i32", ()))[0] for c in cols[1:]]
        ptr = self.fresh("base")
        self.out.emit(f"let {ptr}: PointerTile<*mut {el}, {{[]}}> = int_to_ptr({cols[0]});", self.line)
        dims = [self.bind(f"tile_to_scalar({s})", Ty("i32"))[0] for s in narrow[:nd]]
        strides = [self.bind(f"tile_to_scalar({s})", Ty("i32"))[0] for s in narrow[nd:]]
        sh, sd = ", ".join(["-1"] * nd), ", ".join(["-1"] * (nd - 1) + ["1"])
        tv, ref = self.fresh("view_t"), self.fresh("elem")
        shp, std = self.fresh("shape"), self.fresh("strides")
        self.out.emit(f"let {shp}: Shape<{{[{sh}]}}> = Shape::<{{[{sh}]}}> {{ dims: &[{', '.join(dims)}] }};",
                      self.line)
        self.out.emit(f"let {std}: Array<{{[{sd}]}}> = Array::<{{[{sd}]}}> {{ dims: &[{', '.join(strides)}] }};",
                      self.line)
        self.out.emit(f"let {tv}: Tensor<{el}, {{[{sh}]}}> = make_tensor_view({ptr}, {shp}, {std}, "
                      f"{self.first_token(lst.rust)});", self.line)
        self.out.emit(f"let {ref} = &{tv};", self.line)
        self.share_tokens(ref, lst.rust)
        return ref, Ty("arr", dtype=el, ndim=nd)

    def compile_time_int(self, node) -> bool:
        """Is ``node`` built of int literals, int constexprs and module constants only?"""
        names = {x.id for x in ast.walk(node) if isinstance(x, ast.Name)}
        return all(n in self.spec or n in self.module_consts or any(
            p["name"] == n and p["kind"] == "constexpr" for p in self.params) for n in names)

    def as_i32_tile(self, e: str, ty: Ty, node) -> str:
        """An int32 scalar, 0-d tile or int literal as a 0-d int32 tile."""
        if ty.kind == "tile" and ty.dtype == "i32" and ty.shape == ():
            return e
        if ty.kind == "lit" and type(ty.value) is int:
            return self.bind(f"constant({ty.value}i32, shape![])", Ty("tile", "i32", ()))[0]
        if ty.kind == "i32":
            return self.bind(f"scalar_to_tile({e})", Ty("tile", "i32", ()))[0]
        self.fail(node, ast.unparse(node), f"expected an int32 scalar or 0-d tile, got {ty.kind}")

    def array_extent(self, arr: Var, k: int) -> str:
        """The extent of ``arr`` along axis ``k`` (Rust int32): the static one of a view's type,
        else the k-th of its dynamic extents (cutile's ``get_shape_dim`` indexes those)."""
        shape = arr.ty.shape or ("-1",) * arr.ty.ndim
        if shape[k] != "-1":
            return f"{shape[k]}i32"
        return f"get_shape_dim({arr.rust}.shape(), {sum(1 for d in shape[:k] if d == '-1')}i32)"

    # ---- pointer tiles: ct.gather / ct.scatter -------------------------------------
    def gather(self, call) -> tuple[str, Ty]:
        """``ct.gather(arr, indices, mask=, padding_value=, check_bounds=, latency=)``."""
        self.check_kwargs(call, {"mask", "padding_value", "check_bounds", "latency"})
        if len(call.args) != 2:
            self.fail(call, "ct.gather", "expects (array, indices) positionally")
        arr = self.array_arg(call.args[0])
        ptrs, mask, shape = self.gather_scatter(call, arr, call.args[1])
        sh = ", ".join(shape)
        el = arr.ty.dtype
        pe = pt = scalar = padded = None
        if mask is not None:
            pnode = self._kw(call, "padding_value")
            pe, pt = self.expr(pnode) if pnode is not None else ("0", Ty("lit", value=0))
            if pt.kind == "i32" and el != "i32" and str(pt.value).startswith(CONSTEXPR + ":"):
                # cuTile Python folds an int constexpr padding to the array's dtype (an int64
                # constant beside int64 ids): its value is needed
                raise NeedConst(self.file, call.lineno, pt.value.split(":", 1)[1],
                                "a constexpr padding value of another dtype than int32 is folded")
            if len(shape) <= 1:
                scalar = self.padding_scalar(pt, el)
            if scalar is None:
                # cutile 0.5.0 promotes a scalar padding by a reshape to [1] and a broadcast:
                # invalid IR for a gather of rank >= 2 (tileirdisasm: broadcast "source, result
                # have same rank"; compile_cuda_tile_op.rs load_ptr_tko); a padding tile of the
                # result's shape goes in unchanged (PADDED_GATHER_HELPER). Why not a select after
                # an unpadded load: tileiras 13.4 then reads a gathered mma operand back from
                # shared memory into registers (sm_90 SASS of tg_fp8_quantization_matmul and
                # tg_moe: every (Q/H)GMMA with a register A operand, more spills). At rank <= 1
                # the same route carries a padding with no scalar literal (-inf, a tile, ...):
                # with a select after an unpadded load instead, tileiras 13.4 zero-filled the
                # masked lanes of tg_softmax's chunked f32 gathers and then selected -inf into
                # them (sm_90 SASS with the run-time alignment facts: 256 FSEL + 128 CS2R where
                # the reference has 266 MOV of -inf before its predicated LDG.E.128s)
                if pt.kind == "tile":
                    pe, pt = self.implicit_cast(pe, pt, el, call, "ct.gather(..., padding_value=)")
                padded = self.as_tile(pe, pt, el, shape, call)
                self.need_padded_gather = True
        raw, tok = self.fresh("g"), self.fresh("tok")
        op = "load_ptr_tko_padded" if padded else "load_ptr_tko"
        pad = f"Some({padded})" if padded else f"Some({scalar})" if scalar else f"None::<{el}>"
        self.out.emit(f"let ({raw}, {tok}): (Tile<{el}, {{[{sh}]}}>, Token) = {op}({ptrs}, "
                      f"ordering::Weak, None::<scope::TileBlock>, "
                      f"{f'Some({mask})' if mask else 'None'}, {pad}, "
                      f"Some({self.load_token(arr.rust, call)}), {self.latency_marker(call)});", self.line)
        self.tok_names.add(tok)
        self.loaded(arr.rust, tok)
        return raw, Ty("tile", el, shape)

    def padding_scalar(self, pt: Ty, el: str) -> str | None:
        """The padding of a masked ``ct.gather`` as a scalar of the element type ``el``, bound
        to a name for ``load_ptr_tko``'s padding operand (cuTile Python passes it there too), or
        None where that cannot be written (the gather then passes a padding tile of its shape to
        ``load_ptr_tko_padded``, as at rank >= 2): cutile 0.5.0 has no literal of a 16-bit float or of
        the generic E, and reads no associated constant in expression position, but
        ``convert_scalar`` of an f32 literal gives a scalar of E (an f32 constant and a rank-0
        ``ftof``, which the IR diff folds). An int literal of an int32 / int64 array (within its
        range) is a literal of that type (with a select instead, tileiras 13.4 kept the masks
        alive: more SEL / P2R in tg_moe_align_block stage 3's loop). Otherwise a finite literal
        of a float array only, and only
        where rounding it to f32 first gives every variant's value (as
        :meth:`ArithRules.constant_tile`). Why not the select: with the select after an
        unpadded load, tileiras 13.4 scheduled tg_gelu bf16's loads behind the stores (sm_90
        SASS; the reference issues them ahead)."""
        bits = {"i32": 32, "i64": 64}.get(el)
        if (bits and pt.kind == "lit" and type(pt.value) is int
                and -2 ** (bits - 1) <= pt.value < 2 ** (bits - 1)):
            name = self.fresh("pad")          # an int literal of an int32 / int64 array: its literal
            self.out.emit(f"let {name}: {el} = {pt.value}{el};", self.line)
            return name
        if pt.kind != "lit" or isinstance(pt.value, bool) or el not in ("E", "f16", "bf16", "f32"):
            return None
        v = float(pt.value)
        if not math.isfinite(v):
            return None
        if v == 0.0 and math.copysign(1.0, v) > 0 and el != "f32":
            # +0.0 of a 16-bit float or E: the padding tile E::ZERO (load_ptr_tko_padded), a
            # constant of the element type as cuTile Python's. The scalar here would be
            # convert_scalar(0.0f32), an ftof tileiras 13.4 does not fold for bf16 (an F2FP,
            # then a PRMT copying its register into every padded load's destination; f16: the
            # copies stay. tg_geglu sm_90 SASS, where the reference's PRMTs take RZ)
            return None
        c = self.spec.get(DTYPE_KEY) if el == "E" else el
        if any(d not in ("f16", "bf16", "f32") for d in ([c] if c else self.dtypes)):
            return None
        if c is not None:
            v = floats.decode(floats.encode(v, c), c)
        elif any(floats.convert(floats.encode(v, "f32"), "f32", d) != floats.encode(v, d)
                 for d in self.dtypes):
            return None
        name = self.fresh("pad")
        self.out.emit(f"let {name}: {el} = convert_scalar({self.f32_lit(v)});", self.line)
        return name

    def scatter(self, call):
        """``ct.scatter(arr, indices, value, mask=, check_bounds=, latency=)``."""
        self.check_kwargs(call, {"mask", "check_bounds", "latency"})
        if len(call.args) != 3:
            self.fail(call, "ct.scatter", "expects (array, indices, value) positionally")
        arr = self.array_arg(call.args[0])
        ptrs, mask, shape = self.gather_scatter(call, arr, call.args[1])
        ve, vt = self.expr(call.args[2])
        if vt.kind in ("i32", "f32", "bool"):      # a typed scalar: a 0-d tile
            ve, vt = self.bind(f"scalar_to_tile({ve})", Ty("tile", vt.kind, ()))
        if vt.kind == "tile":
            ve, vt = self.implicit_cast(ve, vt, arr.ty.dtype, call, "ct.scatter")
        value = self.as_tile(ve, vt, arr.ty.dtype, shape, call)
        token = self.store_token(arr.rust, call)
        done = self.fresh("tk")
        self.out.emit(f"let {done}: Token = store_ptr_tko({ptrs}, {value}, ordering::Weak, "
                      f"None::<scope::TileBlock>, {f'Some({mask})' if mask else 'None'}, "
                      f"Some({token}), {self.latency_marker(call)});", self.line)
        self.stored(arr.rust, done, call)

    # ---- atomics ---------------------------------------------------------------------
    def memory_semantics(self, call, default: str, scope_default: str, allowed: set) -> tuple:
        """``memory_order=`` / ``memory_scope=`` of a memory op as cutile's ordering and scope
        markers, with whether the order acquires / releases (for its tokens)."""
        found = []
        for kw, default_member, table in (("memory_order", default, constructs.MEMORY_ORDER),
                                          ("memory_scope", scope_default, constructs.MEMORY_SCOPE)):
            node = self._kw(call, kw)
            enum = "MemoryOrder" if kw == "memory_order" else "MemoryScope"
            member = Member(enum, default_member) if node is None else self.enum_of(node)
            if member is None or member.enum != enum or member.name not in table or (
                    kw == "memory_order" and member.name not in allowed):
                self.fail(call, f"{ast.unparse(call.func)}(..., {kw}={ast.unparse(node) if node else ''})",
                          f"{kw} must be one of {sorted(allowed if kw == 'memory_order' else table)} "
                          f"(a ct.{'MemoryOrder' if kw == 'memory_order' else 'MemoryScope'} member)")
            found.append(member.name)
        order, scope = found
        if (order == "WEAK") != (scope == "NONE"):
            # cuTile Python rejects both (cuda/tile/_ir/ops_utils.py: a WEAK op "cannot specify a
            # memory scope", any other order "requires a memory scope"): the kernel's error
            exc = Unsupported(self.file, call.lineno,
                              f"{ast.unparse(call.func)}(..., memory_order={order}, memory_scope={scope})",
                              "a WEAK memory order takes no memory scope and any other order needs "
                              "one (cuTile Python raises TileTypeError for this kernel too)")
            exc.owner = "kernel"
            raise exc
        return (f"ordering::{constructs.MEMORY_ORDER[order]}", f"scope::{constructs.MEMORY_SCOPE[scope]}",
                order in ("ACQUIRE", "ACQ_REL"), order in ("RELEASE", "ACQ_REL"))

    def atomic(self, call) -> tuple[str, Ty]:
        """``ct.atomic_add/xchg/max/min/and/or/xor(array, indices, update, check_bounds=,
        memory_order=, memory_scope=)`` and ``ct.atomic_cas(array, indices, expected, desired,
        ...)``: cutile's ``atomic_rmw_tko`` / ``atomic_cas_tko`` on the pointer tile and bounds
        mask a scatter builds (cuTile Python's ``_gather_scatter_pointer_and_mask``), the mode
        by element type (``addf`` for floats), ordering ``acq_rel`` and scope ``device`` by
        default; returns the old values. Its tokens: :mod:`.tokens` (an atomic stores)."""
        name = call.func.attr
        cas = name == "atomic_cas"
        self.check_kwargs(call, {"check_bounds", "memory_order", "memory_scope"})
        if len(call.args) != (4 if cas else 3):
            self.fail(call, f"ct.{name}", f"expects (array, indices, {'expected, desired' if cas else 'update'}) "
                                          f"positionally")
        arr = self.array_arg(call.args[0])
        dtype = arr.ty.dtype
        is_float = dtype in constructs.FLOAT_TILE_DTYPES
        mode = None if cas else constructs.ATOMIC_RMW[name][0 if is_float else 1]
        if not cas and mode is None:
            self.fail(call, f"ct.{name}", f"cuTile Python has no {name} of a floating-point array")
        order, scope, acquire, release = self.memory_semantics(
            call, "ACQ_REL", "DEVICE", {"RELAXED", "ACQUIRE", "RELEASE", "ACQ_REL"})
        ptrs, mask, shape = self.gather_scatter(call, arr, call.args[1])
        values = []
        for v in call.args[2:]:
            ve, vt = self.expr(v)
            if vt.kind in ("i32", "f32", "bool"):      # a typed scalar: a 0-d tile
                ve, vt = self.bind(f"scalar_to_tile({ve})", Ty("tile", vt.kind, ()))
            if vt.kind == "tile":       # cast implicitly, as cuTile Python's atomics do
                ve, vt = self.implicit_cast(ve, vt, dtype, call, f"ct.{name}")
            values.append(self.as_tile(ve, vt, dtype, shape, call))
        token = self.store_token(arr.rust, call, release=release, acquire=acquire)
        sh = ", ".join(shape)
        old, done = self.fresh("old"), self.fresh("tok")
        op = (f"atomic_cas_tko({ptrs}, {values[0]}, {values[1]}, " if cas
              else f"atomic_rmw_tko({ptrs}, {values[0]}, atomic::{mode}, ")
        self.out.emit(f"let ({old}, {done}): (Tile<{dtype}, {{[{sh}]}}>, Token) = {op}{order}, {scope}, "
                      f"{f'Some({mask})' if mask else 'None'}, Some({token}));", self.line)
        self.tok_names.add(done)
        self.stored(arr.rust, done, call, acquire=acquire)
        return old, Ty("tile", dtype, shape)

    TILED_VIEW_ATOMICS = ("add", "max", "min", "and", "or", "xor")

    @staticmethod
    def is_tiled_view_atomic(call) -> bool:
        """``arr.tiled_view(shape, ...).atomic_store_<op>(index, update)``, as one statement."""
        f = call.func
        return (isinstance(f, ast.Attribute) and f.attr.startswith("atomic_store_")
                and isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Attribute)
                and f.value.func.attr == "tiled_view" and isinstance(f.value.func.value, ast.Name))

    def tiled_view_atomic(self, call):
        """``arr.tiled_view(shape).atomic_store_add/max/min/and/or/xor(index, update)``: the
        update broadcast to the view's tile shape and cast to the array's dtype, reduced into
        tile ``index`` of an unpadded partition view, relaxed, device scope (the only order and
        scope cuTile Python gives it: cuda/tile/_ir/ops.py ``tiled_view_atomic_store_rmw_impl``)
        -> cutile's ``atomic_red_view_raw`` (Tile IR ``atomic_red_view_tko``)."""
        op = call.func.attr[len("atomic_store_"):]
        tv = call.func.value
        what = f"{ast.unparse(tv.func)}(...).{call.func.attr}"
        if op not in self.TILED_VIEW_ATOMICS:
            self.fail(call, what, "no such tiled view atomic")
        arr = self.array_arg(tv.func.value)
        kws = {k.arg: k.value for k in tv.keywords}
        steps = kws.pop("traversal_steps", None)
        kws.pop("padding_mode", None)     # unread: the atomic's view is made with UNDETERMINED
        if kws or len(tv.args) != 1 or not (steps is None or (isinstance(steps, ast.Constant)
                                                             and steps.value is None)):
            self.fail(tv, ast.unparse(tv)[:60], "tiled_view(shape) with traversal_steps or other "
                                                "options is not translated")
        shape = self.shape_of(tv.args[0])
        if len(shape) != arr.ty.ndim:
            self.fail(tv, ast.unparse(tv)[:60], f"tile rank {len(shape)} != array rank {arr.ty.ndim}")
        self.check_kwargs(call, set())
        if len(call.args) != 2:
            self.fail(call, what, "expects (index, update) positionally")
        index = self.index_elems(call.args[0], arr.ty.ndim)
        dtype = arr.ty.dtype
        mode = constructs.ATOMIC_RMW[f"atomic_{op}"][0 if dtype in constructs.FLOAT_TILE_DTYPES else 1]
        if mode is None:
            self.fail(call, what, f"cuTile Python has no {call.func.attr} of a {dtype} array")
        ve, vt = self.tile_expr(call.args[1])
        ve = self.as_tile(ve, vt, vt.dtype, shape, call)
        ve, _ = self.implicit_cast(ve, Ty("tile", vt.dtype, shape), dtype, call, what)
        token = self.store_token(arr.rust, call)
        v = self.view(arr, shape, constructs.PADDING["UNDETERMINED"], call, token)
        done = self.fresh("tok")
        self.out.emit(f"let {done}: Token = atomic_red_view_raw(&{v}, {ve}, [{', '.join(index)}], "
                      f"atomic::{mode}, ordering::Relaxed, scope::Device, Some({token}));", self.line)
        self.tok_names.add(done)
        self.stored(arr.rust, done, call)

    def gather_scatter(self, call, arr: Var, idx_node) -> tuple[str, str | None, tuple]:
        """The pointer tile and mask of a gather/scatter, op for op as cuTile Python builds them
        (cuda-tile 1.7.0, seen in its Tile IR): per axis k, the index widened to i64 (``exti``
        signed) and broadcast to the indices' common shape; with ``check_bounds`` the lanes
        ``index < shape[k]`` compared unsigned (a negative index is out of bounds), and-ed axis
        by axis; the offset ``sum_k index_k * stride_k`` (the innermost stride is the static 1
        every port and reference is compiled for); the base pointer broadcast and offset; a
        ``mask=`` and-ed last. Unsigned comparison comes from cutile's ``u64`` element type (the
        same i64 in Tile IR). Returns (pointer tile, mask or None, shape)."""
        bound = self.lookup(idx_node.id) if isinstance(idx_node, ast.Name) else None
        made = bound.ty.value if bound is not None and bound.ty.kind == INDEX_TUPLE else None
        elts = (made if made is not None else idx_node.elts if isinstance(idx_node, ast.Tuple)
                else [idx_node])
        nd = arr.ty.ndim
        if len(elts) != nd:
            self.fail(idx_node, ast.unparse(idx_node), f"{len(elts)} indices for a rank-{nd} array")
        idx = []
        for e in elts:
            # an element of a tuple bound to a name was translated where the tuple was made
            ie, it = e if made is not None else self.expr(e)
            e = idx_node if made is not None else e
            if it.kind == "lit" and isinstance(it.value, int) and not isinstance(it.value, bool):
                ie, it = f"{it.value}i32", Ty("i32")
            if not ((it.kind == "tile" and it.dtype in ("i32", "i64")) or it.kind == "i32"):
                self.fail(e, ast.unparse(e), "a gather/scatter index must be an int32 or int64 tile or "
                                             "an int32 scalar")
            idx.append((ie, it))
        shape: tuple = ()
        for _, it in idx:
            if it.kind == "tile":
                shape = self.broadcast_shape(Ty("tile", "i32", shape), it, idx_node)
        cb = self._kw(call, "check_bounds")
        check = True if cb is None else self.const_value(cb)
        if not isinstance(check, bool):
            self.fail(call, ast.unparse(cb), "check_bounds must be True, False or a bool constexpr")
        if nd > 1:
            self.need_strides = True
            st = self.fresh("strides")
            self.out.emit(f"let {st}: Shape<{{[{', '.join(['-1'] * nd)}]}}> = tensor_strides({arr.rust});",
                          self.line)
        mask = offset = None
        for k, (ie, it) in enumerate(idx):
            i64 = self.widened(ie, it, shape)
            if check:
                n = self.widened(self.array_extent(arr, k), Ty("i32"), shape)
                m = self.bind(f"cmpi({i64}, {n}, predicate::LessThan)", Ty("tile", "bool", shape))[0]
                mask = m if mask is None else self.bind(f"andi({mask}, {m})", Ty("tile", "bool", shape))[0]
            if k == nd - 1:
                stride = self.bind(f"constant(1u64, shape![{', '.join(shape)}])", Ty("tile", "u64", shape))[0]
            else:
                stride = self.widened(f"get_shape_dim({st}, {k}i32)", Ty("i32"), shape)
            off = self.bind(f"{i64} * {stride}", Ty("tile", "u64", shape))[0]
            offset = off if offset is None else self.bind(f"{offset} + {off}", Ty("tile", "u64", shape))[0]
        mnode = self._kw(call, "mask")
        if mnode is not None:
            me, mt = self.expr(mnode)
            if mt.kind != "tile" or mt.dtype != "bool":
                self.fail(mnode, ast.unparse(mnode), "mask must be a bool tile")
            um = self.as_tile(me, mt, "bool", shape, call)
            mask = um if mask is None else self.bind(f"andi({mask}, {um})", Ty("tile", "bool", shape))[0]
        ptr = "PointerTile<*mut " + arr.ty.dtype + ", {{[{}]}}>"
        base = self.fresh("base")
        self.out.emit(f"let {base}: {ptr.format('')} = get_tensor_base({arr.rust});", self.line)
        bs = base
        if shape:           # all indices scalars: one element, a 0-d pointer tile
            ones = ", ".join(["1"] * len(shape))
            b1 = self.fresh("base")
            self.out.emit(f"let {b1}: {ptr.format(ones)} = {base}.reshape(shape![{ones}]);", self.line)
            bs = self.fresh("base")
            self.out.emit(f"let {bs}: {ptr.format(', '.join(shape))} = {b1}.broadcast(shape![{', '.join(shape)}]);",
                          self.line)
        ptrs = self.fresh("ptrs")
        self.out.emit(f"let {ptrs}: {ptr.format(', '.join(shape))} = {bs}.offset_tile({offset});", self.line)
        return ptrs, mask, shape

    def widened(self, e: str, ty: Ty, shape: tuple) -> str:
        """An int32 index (tile or scalar) as cutile's u64 (Tile IR ``exti`` signed to i64)
        broadcast to ``shape``; an int64 index tile (Unsloth's label ``.item()`` of an int64
        gather), which cuTile Python uses as it is, as cutile's ``bitcast`` to u64 (the same
        Tile IR type: the IR diff reads a bitcast to its own type as its operand)."""
        if ty.kind == "i32":
            e, ty = self.bind(f"scalar_to_tile({e})", Ty("tile", "i32", ()))
        if ty.kind == "tile" and ty.dtype == "i64":
            w, wty = self.bind(f"bitcast({e})", Ty("tile", "u64", ty.shape))
            return self.as_tile(w, wty, "u64", shape, None)
        w, wty = self.bind(f"exti({e})", Ty("tile", "u64", ty.shape))
        return self.as_tile(w, wty, "u64", shape, None)

    def latency_marker(self, call) -> str:
        """``latency=`` as the ``Latency::<n>`` marker of cutile's pointer loads/stores."""
        lat = self.latency_arg(call)
        return "Latency::<0>" if lat == "None" else f"Latency::<{lat[5:-1]}>"

