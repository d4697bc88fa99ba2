"""Reductions and scans: ``ct.sum/max/min/prod(t, axis=, keepdims=)`` -> cutile's ``reduce_*``
(``keepdims=True`` reshapes the result back to the input's rank with a unit axis);
``ct.cumsum(t, axis=0, reverse=False)`` -> cutile's ``scan_sum`` (a Tile IR ``scan`` whose region
adds, identity 0, as cuTile Python's ``scan_simple`` builds it).

cutile 0.5.0 writes every ``scan`` with ``dim = 0`` and ``identities = [0]`` whatever its
arguments say (cutile-compiler 0.5.0 ``compile_cuda_tile_op.rs``, ``compile_scan_op``: the op
is built with ``.attr("dim", Attribute::i32(0))`` and a zero identity; its ``dim`` and
``identity`` arguments are never read). So a scan along another axis, and ``ct.cumprod``
(identity 1), have no cuTile Rust form: BLOCKED, naming that evidence."""
from __future__ import annotations

import ast

from .. import constructs as C
from .core import Ty


class ReductionRules:
    """Rules for reductions (mixed into the driver's translator)."""

    CALLS = {**{n: "reduction" for n in C.REDUCTIONS}, **{n: "scan" for n in C.SCANS}}

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
        if C.SCANS[name] != "add":
            self.fail(node, f"ct.{name}", f"a product scan needs the identity 1; {self.SCAN_EVIDENCE}")
        if ax != 0:
            self.fail(node, f"ct.{name}", f"a scan along axis {ax}; {self.SCAN_EVIDENCE}")
        if ty.dtype not in self.SCAN_ZERO:
            self.fail(node, f"ct.{name}", f"a scan of a {ty.dtype} tile (cuTile Python casts a bool "
                                          f"tile to int32 first) is not translated")
        direction = "reverse::Reverse" if reverse else "reverse::Forward"
        return self.bind(f"scan_sum({e}, 0, {direction}, {self.SCAN_ZERO[ty.dtype]})", ty)

    def reduction(self, node: ast.Call) -> tuple[str, Ty]:
        name = node.func.attr
        self.check_kwargs(node, {"axis", "keepdims"})
        e, ty = self.tile_expr(node.args[0])
        axis_node = self._kw(node, "axis", 1)
        if axis_node is None or (isinstance(axis_node, ast.Constant) and axis_node.value is None):
            self.fail(node, f"ct.{name}", "axis must be an int known at compile time (reductions "
                                          "over all axes are not translated)")
        axis = self.static_int(axis_node, "axis")
        if not -len(ty.shape) <= axis < len(ty.shape):
            self.fail(node, f"ct.{name}", f"axis {axis} out of range for a rank-"
                                          f"{len(ty.shape)} tile")
        ax = axis % len(ty.shape)
        kd = self._kw(node, "keepdims")
        keep = kd is not None and self.const_value(kd) is True
        red = tuple(d for i, d in enumerate(ty.shape) if i != ax)
        r, rty = self.bind(f"{C.REDUCTIONS[name]}({e}, {ax})", Ty("tile", ty.dtype, red))
        if keep:
            kept = tuple("1" if i == ax else d for i, d in enumerate(ty.shape))
            return self.bind(f"{r}.reshape(shape![{', '.join(kept)}])", Ty("tile", ty.dtype, kept))
        return r, rty
