"""Memory: arrays, partition views, ``ct.load`` / ``ct.store``, ``ct.num_tiles``, ``a.shape[i]``.

``ct.load``/``ct.store`` become partition views (``make_partition_view`` with the same padding
marker / ``partition_full_mut``) read by cutile's raw ``load_view_tko`` and written by its
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

from .. import constructs as C
from .core import Ty, Var


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


class MemoryRules:
    """Rules for arrays, partition views and pointer tiles (mixed into the driver's translator)."""

    CALLS = {"load": "load", "num_tiles": "num_tiles", "gather": "gather"}

    def array_arg(self, node) -> Var:
        if not isinstance(node, ast.Name) or self.lookup(node.id) is None or self.lookup(node.id).ty.kind != "arr":
            self.fail(node, ast.unparse(node), "expected an array parameter")
        return self.lookup(node.id)

    def shape_of(self, node) -> tuple:
        """A tile shape: each entry an int literal, a constexpr (its const generic) or
        arithmetic on those (evaluated: its constexprs are specialised per entry)."""
        if not isinstance(node, ast.Tuple):
            self.fail(node, ast.unparse(node), "tile shape must be a tuple literal")
        dims = []
        for e in node.elts:
            if isinstance(e, ast.Name) and any(p["name"] == e.id and p["kind"] == "constexpr"
                                               and e.id not in self.spec for p in self.params):
                dims.append(self.rname(e.id))
                continue
            _, ty = self.expr(e)
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
        if ty.kind != "lit" or type(ty.value) is not int:
            self.fail(node, ast.unparse(node), f"{what} must be an int known at compile time")
        return ty.value

    def index_of(self, node, ndim: int) -> str:
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        if len(elts) != ndim:
            self.fail(node, ast.unparse(node), f"index has {len(elts)} entries, array rank is {ndim}")
        return "[" + ", ".join(self.int_expr(e) for e in elts) + "]"

    def view(self, arr: Var, shape: tuple, padding: str, node) -> str:
        name = self.fresh("view")
        self.out.emit(
            f"let {name}: Partition<E, {{[{', '.join(shape)}]}}> = make_partition_view("
            f"{arr.rust}, shape![{', '.join(shape)}], {padding}, dim_map::Identity, "
            f"get_tensor_token({arr.rust}));", self.line)
        return name

    def padding_of(self, call) -> str:
        """``padding_mode=``: a ``ct.PaddingMode`` member, written out or held in a name (a local
        ``zero_pad = ct.PaddingMode.ZERO``, a module-level constant, a helper's parameter)."""
        pm = self._kw(call, "padding_mode")
        if pm is None:
            return C.PADDING["UNDETERMINED"]
        _, ty = self.expr(pm)
        if ty.kind == "member" and ty.value.enum == "PaddingMode":
            return C.PADDING[ty.value.name]
        self.fail(pm, ast.unparse(pm), "padding_mode must be a ct.PaddingMode member")

    def load(self, call) -> tuple[str, Ty]:
        self.check_kwargs(call, {"index", "shape", "padding_mode", "latency", "allow_tma"})
        arr = self.array_arg(call.args[0] if call.args else None)
        idx_node, shp_node = self._kw(call, "index", 1), self._kw(call, "shape", 2)
        shape = self.shape_of(shp_node)
        if len(shape) != arr.ty.ndim:
            self.fail(call, "ct.load", f"tile rank {len(shape)} != array rank {arr.ty.ndim}")
        v = self.view(arr, shape, self.padding_of(call), call)
        # the reference's load_view_tko carries no bounds assert: see the module docstring
        return self.bind(f"load_view_tko(&{v}, {self.index_of(idx_node, arr.ty.ndim)}, "
                         f"ordering::Weak, scope::TileBlock, {self.latency_arg(call)}, "
                         f"{self.tma_arg(call)})", Ty("tile", "E", shape))

    def store(self, call):
        self.check_kwargs(call, {"index", "tile", "latency", "allow_tma"})
        arr = self.array_arg(call.args[0] if call.args else None)
        idx_node, tile_node = self._kw(call, "index", 1), self._kw(call, "tile", 2)
        t, ty = self.tile_expr(tile_node)
        if ty.dtype != "E":
            self.fail(call, "ct.store", f"stored tile has dtype {ty.dtype}, array has the variant "
                                        "dtype: cast with ct.astype(t, arr.dtype) first")
        if len(ty.shape) != arr.ty.ndim:
            self.fail(call, "ct.store", f"tile rank {len(ty.shape)} != array rank {arr.ty.ndim}")
        name = self.fresh("out")
        self.out.emit(f"let mut {name}: PartitionMut<E, {{[{', '.join(ty.shape)}]}}> = "
                      f"{arr.rust}.partition_full_mut(shape![{', '.join(ty.shape)}]);", self.line)
        # the reference's store_view_tko carries no bounds assert: see the module docstring
        self.out.emit(f"store_view_tko_mut(&mut {name}, {t}, {self.index_of(idx_node, arr.ty.ndim)}, "
                      f"ordering::Weak, scope::TileBlock, {self.latency_arg(call)}, "
                      f"{self.tma_arg(call)});", self.line)

    def num_tiles(self, node) -> tuple[str, Ty]:
        self.check_kwargs(node, {"axis", "shape"})
        arr = self.array_arg(node.args[0])
        axis = self._kw(node, "axis", 1)
        shape = self.shape_of(self._kw(node, "shape", 2))
        if not (isinstance(axis, ast.Constant) and isinstance(axis.value, int)):
            self.fail(node, "ct.num_tiles", "axis must be an int literal")
        v = self.view(arr, shape, C.PADDING["UNDETERMINED"], node)
        return f"num_tiles(&{v}, {axis.value}i32)", Ty("i32")

    def shape_dim(self, node: ast.Subscript) -> tuple[str, Ty]:
        """``a.shape[i]``: the array's run-time extent along axis ``i``."""
        arr = self.array_arg(node.value.value)
        i = node.slice.value
        if not 0 <= i < arr.ty.ndim:
            self.fail(node, ast.unparse(node), f"axis {i} out of range for rank {arr.ty.ndim}")
        return f"get_shape_dim({arr.rust}.shape(), {i}i32)", Ty("i32")

    # ---- pointer tiles: ct.gather / ct.scatter -------------------------------------
    def gather(self, call) -> tuple[str, Ty]:
        """``ct.gather(arr, indices, mask=, padding_value=, check_bounds=, latency=)``."""
        self.check_kwargs(call, {"mask", "padding_value", "check_bounds", "latency"})
        if len(call.args) != 2:
            self.fail(call, "ct.gather", "expects (array, indices) positionally")
        arr = self.array_arg(call.args[0])
        ptrs, mask, shape = self.gather_scatter(call, arr, call.args[1])
        sh = ", ".join(shape)
        raw, tok = self.fresh("g"), self.fresh("tok")
        self.out.emit(f"let ({raw}, {tok}): (Tile<E, {{[{sh}]}}>, Token) = load_ptr_tko({ptrs}, "
                      f"ordering::Weak, None::<scope::TileBlock>, "
                      f"{f'Some({mask})' if mask else 'None'}, None::<E>, "
                      f"None::<Token>, {self.latency_marker(call)});", self.line)
        if mask is None:
            return raw, Ty("tile", "E", shape)
        # cutile has no scalar of the generic element type for load_ptr_tko's padding: the
        # masked-off lanes take it through a select (the IR diff's masked_loads rule)
        pnode = self._kw(call, "padding_value")
        pe, pt = self.expr(pnode) if pnode is not None else ("0", Ty("lit", value=0))
        pad = self.as_tile(pe, pt, "E", shape, call)
        return self.bind(f"select({mask}, {raw}, {pad})", Ty("tile", "E", shape))

    def scatter(self, call):
        """``ct.scatter(arr, indices, value, mask=, check_bounds=, latency=)``."""
        self.check_kwargs(call, {"mask", "check_bounds", "latency"})
        if len(call.args) != 3:
            self.fail(call, "ct.scatter", "expects (array, indices, value) positionally")
        arr = self.array_arg(call.args[0])
        ptrs, mask, shape = self.gather_scatter(call, arr, call.args[1])
        ve, vt = self.expr(call.args[2])
        if vt.kind == "tile" and vt.dtype != "E":
            self.fail(call, "ct.scatter", f"the value has dtype {vt.dtype}, the array the variant "
                                          f"dtype: cast with ct.astype(v, arr.dtype) first")
        value = self.as_tile(ve, vt, "E", shape, call)
        self.out.emit(f"store_ptr_tko({ptrs}, {value}, ordering::Weak, None::<scope::TileBlock>, "
                      f"{f'Some({mask})' if mask else 'None'}, "
                      f"None::<Token>, {self.latency_marker(call)});", self.line)

    def gather_scatter(self, call, arr: Var, idx_node) -> tuple[str, str | None, tuple]:
        """The pointer tile and mask of a gather/scatter, op for op as cuTile Python builds them
        (cuda-tile 1.7.0, seen in its Tile IR): per axis k, the index widened to i64 (``exti``
        signed) and broadcast to the indices' common shape; with ``check_bounds`` the lanes
        ``index < shape[k]`` compared unsigned (a negative index is out of bounds), and-ed axis
        by axis; the offset ``sum_k index_k * stride_k`` (the innermost stride is the static 1
        every port and reference is compiled for); the base pointer broadcast and offset; a
        ``mask=`` and-ed last. Unsigned comparison comes from cutile's ``u64`` element type (the
        same i64 in Tile IR). Returns (pointer tile, mask or None, shape)."""
        elts = idx_node.elts if isinstance(idx_node, ast.Tuple) else [idx_node]
        nd = arr.ty.ndim
        if len(elts) != nd:
            self.fail(idx_node, ast.unparse(idx_node), f"{len(elts)} indices for a rank-{nd} array")
        idx = []
        for e in elts:
            ie, it = self.expr(e)
            if it.kind == "lit" and isinstance(it.value, int) and not isinstance(it.value, bool):
                ie, it = f"{it.value}i32", Ty("i32")
            if not ((it.kind == "tile" and it.dtype == "i32") or it.kind == "i32"):
                self.fail(e, ast.unparse(e), "a gather/scatter index must be an int32 tile or scalar")
            idx.append((ie, it))
        shape: tuple = ()
        for _, it in idx:
            if it.kind == "tile":
                shape = self.broadcast_shape(Ty("tile", "i32", shape), it, idx_node)
        if not shape:
            self.fail(idx_node, ast.unparse(idx_node), "indices that are all scalars (one element) "
                                                       "are not translated")
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
                n = self.widened(f"get_shape_dim({arr.rust}.shape(), {k}i32)", Ty("i32"), shape)
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
        ptr = "PointerTile<*mut E, {{[{}]}}>"
        base = self.fresh("base")
        self.out.emit(f"let {base}: {ptr.format('')} = get_tensor_base({arr.rust});", self.line)
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
        broadcast to ``shape``."""
        if ty.kind == "i32":
            e, ty = self.bind(f"scalar_to_tile({e})", Ty("tile", "i32", ()))
        w, wty = self.bind(f"exti({e})", Ty("tile", "u64", ty.shape))
        return self.as_tile(w, wty, "u64", shape, None)

    def latency_marker(self, call) -> str:
        """``latency=`` as the ``Latency::<n>`` marker of cutile's pointer loads/stores."""
        lat = self.latency_arg(call)
        return "Latency::<0>" if lat == "None" else f"Latency::<{lat[5:-1]}>"

