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


class MemoryRules:
    """Rules for arrays and partition views (mixed into the driver's translator)."""

    CALLS = {"load": "load", "num_tiles": "num_tiles"}

    def array_arg(self, node) -> Var:
        if not isinstance(node, ast.Name) or self.lookup(node.id) is None or self.lookup(node.id).ty.kind != "arr":
            self.fail(node, ast.unparse(node), "expected an array parameter")
        return self.lookup(node.id)

    def shape_of(self, node) -> tuple:
        if not isinstance(node, ast.Tuple):
            self.fail(node, ast.unparse(node), "tile shape must be a tuple literal")
        dims = []
        for e in node.elts:
            if isinstance(e, ast.Constant) and isinstance(e.value, int):
                dims.append(str(e.value))
            elif isinstance(e, ast.Name) and any(p["name"] == e.id and p["kind"] == "constexpr" for p in self.params):
                dims.append(self.rname(e.id))
            else:
                self.fail(e, ast.unparse(e), "tile shape entries must be int literals or constexpr names")
        return tuple(dims)

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
        pm = self._kw(call, "padding_mode")
        if pm is None:
            return C.PADDING["UNDETERMINED"]
        if isinstance(pm, ast.Attribute) and pm.attr in C.PADDING:
            return C.PADDING[pm.attr]
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
