"""Hints: performance hints carried from the reference to the port, never dropped.

* ``latency=`` of ``ct.load`` / ``ct.store`` -> the ``latency: Option<i32>`` argument of
  cutile's ``load_view_tko`` / ``store_view_tko_mut`` (``Some(n)``; an int constexpr stays its
  const generic, which cutile resolves per launch);
* ``allow_tma=False`` -> ``tma::Disabled`` (``True`` and absent -> ``tma::Enabled``, which emits
  no hint, as cuTile Python emits none for ``True``).

Both frontends then print the same ``optimization_hints`` on the op; cutile keys them by the
compile target (``<sm_90 = {...}>``) where cuTile Python writes ``<default = {...}>``
(cutile-compiler 0.5.0 ``build_load_store_hints``), which the IR diff resolves for the target.
"""
from __future__ import annotations

import ast


class HintRules:
    """Rules for hints (mixed into the driver's translator)."""

    CALLS: dict[str, str] = {}

    def const_value(self, node):
        """The compile-time value of ``node``: a literal, or a float/bool constexpr of this
        entry (None when it is neither)."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.spec:
            return self.spec[node.id]
        return None

    def latency_arg(self, call) -> str:
        """``latency=`` of a load/store as cutile's ``Option<i32>`` argument."""
        node = self._kw(call, "latency")
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return "None"
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return f"Some({node.value})"
        var = self.lookup(node.id) if isinstance(node, ast.Name) else None
        if var is not None and var.ty.kind == "i32" and var.decl is None and any(
                p["name"] == node.id and p["kind"] == "constexpr" for p in self.params):
            return f"Some({var.rust})"
        if var is not None and var.ty.kind == "lit" and type(var.ty.value) is int:
            return f"Some({var.ty.value})"
        self.fail(call, f"{ast.unparse(call.func)}(..., latency={ast.unparse(node)})",
                  "latency must be an int literal or an int constexpr parameter")

    def tma_arg(self, call) -> str:
        """``allow_tma=`` of a load/store as cutile's TMA marker."""
        node = self._kw(call, "allow_tma")
        if node is None:
            return "tma::Enabled"
        v = self.const_value(node)
        if v is None and isinstance(node, ast.Constant):
            return "tma::Enabled"
        if not isinstance(v, bool):
            self.fail(call, f"{ast.unparse(call.func)}(..., allow_tma={ast.unparse(node)})",
                      "allow_tma must be True, False or a bool constexpr")
        return "tma::Enabled" if v else "tma::Disabled"
