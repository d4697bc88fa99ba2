"""Reductions and scans: ``ct.sum/max/min/prod(t, axis=, keepdims=)`` -> cutile's ``reduce_*``
(one per reduced axis: ``axis=None`` reduces every axis, a tuple several; ``keepdims=True``
reshapes the result back to the input's rank with unit axes);
``ct.cumsum(t, axis=0, reverse=False)`` -> cutile's ``scan_sum`` (a Tile IR ``scan`` whose region
adds, identity 0, as cuTile Python's ``scan_simple`` builds it).

cutile 0.5.0 writes every ``scan`` with ``dim = 0`` and ``identities = [0]`` whatever its
arguments say (cutile-compiler 0.5.0 ``compile_cuda_tile_op.rs``, ``compile_scan_op``: the op
is built with ``.attr("dim", Attribute::i32(0))`` and a zero identity; its ``dim`` and
``identity`` arguments are never read). A scan along another axis is written as that axis
swapped to the front (``permute``), the scan along axis 0, and the swap back; ``ct.cumprod``
(identity 1) has no cuTile Rust form: BLOCKED, naming that evidence."""
from __future__ import annotations

import ast

from tileport.model import constructs

from .core import Ty


class ReductionRules:
    """Rules for reductions (mixed into the driver's translator)."""

    CALLS = {**{n: "reduction" for n in constructs.REDUCTIONS}, **{n: "scan" for n in constructs.SCANS}}

    # the identity argument cutile's scan_sum takes, per element type (it prints 0 whatever
    # this says: see the module docstring)
    SCAN_ZERO = {"f32": "0.0f32", "i32": "0i32", "i64": "0i64", "E": "E::ZERO"}
    SCAN_EVIDENCE = ("cutile 0.5.0 builds every scan op with dim = 0 and identities = [0], "
                     "ignoring its dim and identity arguments (cutile-compiler 0.5.0 "
                     "src/compiler/compile_cuda_tile_op.rs, compile_scan_op)")

    def scan(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.cumsum/cumprod(x, axis=0, reverse=False)`` along a compile-time axis."""
        name = node.func.attr
        self.check_kwargs(node, {"axis", "reverse"})
        e, ty = self.tile_expr(node.args[0])
        axis_node = self._kw(node, "axis", 1)
        axis = 0 if axis_node is None else self.static_int(axis_node, "axis")
        if not -len(ty.shape) <= axis < len(ty.shape):
            self.fail(node, f"ct.{name}", f"axis {axis} out of range for a rank-{len(ty.shape)} tile")
        rev = self._kw(node, "reverse", 2)
        reverse = False if rev is None else self.const_value(rev)
        if not isinstance(reverse, bool):
            self.fail(node, f"ct.{name}", "reverse must be True, False or a bool constexpr")
        ax = axis % len(ty.shape)
        if constructs.SCANS[name] != "add":
            self.fail(node, f"ct.{name}", f"a product scan needs the identity 1; {self.SCAN_EVIDENCE}")
        if ty.dtype not in self.SCAN_ZERO:
            self.fail(node, f"ct.{name}", f"a scan of a {ty.dtype} tile (cuTile Python casts a bool "
                                          f"tile to int32 first) is not translated")
        direction = "reverse::Reverse" if reverse else "reverse::Forward"
        if ax == 0:
            return self.bind(f"scan_sum({e}, 0, {direction}, {self.SCAN_ZERO[ty.dtype]})", ty)
        # cutile scans along axis 0 only: axis ax swapped to the front, scanned, swapped back
        # (each line along ax is scanned on its own, so the result is the scan along ax; the
        # IR diff reads permute-scan(dim 0)-permute back as the scan along ax)
        swap = list(range(len(ty.shape)))
        swap[0], swap[ax] = ax, 0
        t, tty = self.permuted(e, ty, swap, node)
        t, tty = self.bind(f"scan_sum({t}, 0, {direction}, {self.SCAN_ZERO[ty.dtype]})", tty)
        return self.permuted(t, tty, swap, node)

    def reduction(self, node: ast.Call) -> tuple[str, Ty]:
        """``ct.sum/max/min/prod(x, axis=None | int | tuple, keepdims=False)``.

        One axis: one ``reduce_*``. Several axes (a tuple, or ``axis=None``: every axis): one
        ``reduce_*`` per axis in ascending order, each along ``axis - i`` once ``i`` axes are
        gone, as cuTile Python's ``reduce`` (cuda/tile/_ir/ops.py) builds it; ``keepdims``
        reshapes the result back to the input's rank with unit axes."""
        name = node.func.attr
        self.check_kwargs(node, {"axis", "keepdims"})
        e, ty = self.tile_expr(node.args[0])
        rank = len(ty.shape)
        axis_node = self._kw(node, "axis", 1)
        if axis_node is None or (isinstance(axis_node, ast.Constant) and axis_node.value is None):
            axes = list(range(rank))
        elif isinstance(axis_node, ast.Tuple):
            axes = [self.static_int(a, "axis") for a in axis_node.elts]
        else:
            axes = [self.static_int(axis_node, "axis")]
        for a in axes:
            if not -rank <= a < rank:
                self.fail(node, f"ct.{name}", f"axis {a} out of range for a rank-{rank} tile")
        axes = sorted(a % rank for a in axes)
        if len(set(axes)) != len(axes):
            self.fail(node, f"ct.{name}", f"repeated reduction axis in {axes}")
        kd = self._kw(node, "keepdims")
        keep = kd is not None and self.const_value(kd) is True
        r, rty = e, ty
        for i, ax in enumerate(axes):
            red = tuple(d for j, d in enumerate(rty.shape) if j != ax - i)
            r, rty = self.bind(f"{constructs.REDUCTIONS[name]}({r}, {ax - i})", Ty("tile", ty.dtype, red))
        if keep and axes:
            kept = tuple("1" if i in axes else d for i, d in enumerate(ty.shape))
            return self.bind(f"{r}.reshape(shape![{', '.join(kept)}])", Ty("tile", ty.dtype, kept))
        return r, rty
