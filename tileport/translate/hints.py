"""Hints: performance hints carried from the reference to the port, never dropped.

* ``latency=`` of ``ct.load`` / ``ct.store`` -> the ``latency: Option<i32>`` argument of
  cutile's ``load_view_tko`` / ``store_view_tko_mut`` (``Some(n)``; an int constexpr stays its
  const generic, which cutile resolves per launch);
* ``allow_tma=False`` -> ``tma::Disabled`` (``True`` and absent -> ``tma::Enabled``, which emits
  no hint, as cuTile Python emits none for ``True``);
* ``@ct.kernel(occupancy=, num_ctas=, num_worker_warps=)``, and the manifest's
  ``compiler_hints`` of the entry's variants over them (the launch code's ``replace_hints``) -> the entry's
  ``optimization_hints = (default = (occupancy = .., num_cta_in_cga = ..,
  num_worker_warps_per_cta = ..))``; a ``ct.ByTarget(...)`` value under each of its
  architectures and its default, as cuTile Python keys them (``CompilerOptions.hints_by_target``,
  cuda-tile 1.7.0). ``opt_level`` is no Tile IR hint but a compile option of tileiras, which cutile 0.5.0
  takes only at launch (``CompileOptions::opt_level``): a kernel that sets another level than
  the default 3 is BLOCKED rather than ported with the default.

Both frontends then print the same ``optimization_hints`` on the entry (``<default = {...},
sm_90 = {...}>``), which the IR diff resolves for the target; cutile keys the per-op load /
store hints by the compile target (cutile-compiler 0.5.0 ``build_load_store_hints``).
"""
from __future__ import annotations

import ast

# @ct.kernel keyword -> cutile entry hint (cutile-compiler 0.5.0 hints.rs SMHints)
ENTRY_HINTS = {"occupancy": "occupancy", "num_ctas": "num_cta_in_cga",
               "num_worker_warps": "num_worker_warps_per_cta"}
DEFAULT_OPT_LEVEL = 3        # cuda-tile 1.7.0 CompilerOptions.opt_level


class HintRules:
    """Rules for hints (mixed into the driver's translator)."""

    CALLS: dict[str, str] = {}

    # the compiler hints the launch code gives this entry's variants (manifest compiler_hints,
    # TileGym's kernel.replace_hints): set by the driver, they override the decorator's
    launch_hints: dict = {}

    def entry_attribute(self) -> str:
        """``#[cutile::entry(...)]`` carrying the kernel's hints keyed as cuTile Python keys them:
        the ``@ct.kernel(...)`` options, overridden by :attr:`launch_hints` as cuTile Python's
        ``replace_hints`` overrides them (cuda-tile 1.7.0: the reference is compiled so). A plain
        value goes under ``default``, a ``ct.ByTarget`` under each of its architectures and its
        default (cuda-tile 1.7.0 ``CompilerOptions.hints_by_target``), so the port compiled for
        another architecture than the configured one (the sm_100 SASS of ``runtime_ir``) has the
        hints the reference has there; cutile 0.5.0 accepts ``default`` and ``sm_*`` keys
        (cutile-compiler ``hints.rs`` ``OptimizationHints::parse``)."""
        dec = next((d for d in self.fn.decorator_list
                    if isinstance(d, ast.Call) and self.is_ct(d.func, "kernel")), None)
        values = {}
        for k in dec.keywords if dec is not None else ():
            what = f"@{self.alias}.kernel({k.arg}={ast.unparse(k.value)})"
            values[k.arg] = (self.by_key(k.value, what), dec, what)
        for k, v in self.launch_hints.items():
            values[k] = ({"default": v}, self.fn, f"compiler_hints {k}: {v!r} (the manifest's, as the launch sets it)")
        groups: dict[str, list[str]] = {}
        for k, (per_key, node, what) in values.items():
            if k == "opt_level":
                v = per_key.get(self.target, per_key.get("default"))
                if v is not None and v != DEFAULT_OPT_LEVEL:
                    self.fail(node, what, "cutile 0.5.0 takes the tileiras optimisation level only "
                                          "as a launch option (CompileOptions::opt_level), not in "
                                          "the kernel: not carried")
                continue
            if k not in ENTRY_HINTS:
                self.fail(node, what, f"kernel option '{k}' not translated (translated: "
                                      f"{sorted(ENTRY_HINTS)}, opt_level={DEFAULT_OPT_LEVEL})")
            for key, v in per_key.items():
                if v is not None:
                    groups.setdefault(key, []).append(f"{ENTRY_HINTS[k]} = {v}")
        if not groups:
            return "#[cutile::entry()]"
        keys = sorted(groups, key=lambda key: (key != "default", key))
        body = ", ".join(f"{key} = ({', '.join(groups[key])},)" for key in keys)
        return f"#[cutile::entry(optimization_hints = ({body},))]"

    def by_key(self, node, what: str) -> dict:
        """A kernel option's values by hint key: ``{"default": v}`` for a plain value, a
        ``ct.ByTarget(sm_XX=.., default=..)``'s values by architecture plus its default (none
        when it has none: the option's default is unset), each as :meth:`by_target` reads it."""
        if isinstance(node, ast.Call) and self.is_ct(node.func, "ByTarget"):
            kws = {k.arg: k.value for k in node.keywords}
            if node.args or None in kws:
                self.fail(node, what, "ct.ByTarget takes keyword values only")
            bad = [k for k in kws if k != "default" and not k.startswith("sm_")]
            if bad:
                self.fail(node, what, f"ct.ByTarget key '{bad[0]}' is neither 'default' nor an sm_* "
                                      "architecture (cutile 0.5.0 takes no other hint key)")
            return {k: self.by_target(v, what) for k, v in kws.items()}
        return {"default": self.by_target(node, what)}

    def by_target(self, node, what: str):
        """The value of a kernel option for the configured target: an int (literal or
        module-level constant), a ``ct.ByTarget(sm_XX=.., default=..)``'s entry for the target
        (else its default; None when it has neither), or None."""
        if isinstance(node, ast.Call) and self.is_ct(node.func, "ByTarget"):
            kws = {k.arg: k.value for k in node.keywords}
            if node.args or None in kws:
                self.fail(node, what, "ct.ByTarget takes keyword values only")
            pick = kws.get(self.target, kws.get("default"))
            return None if pick is None else self.by_target(pick, what)
        v = self.const_value(node)
        if v is None and not (isinstance(node, ast.Constant) and node.value is None):
            self.fail(node, what, "the value must be an int literal, a module-level constant or "
                                  "a ct.ByTarget of those")
        if v is not None and (type(v) is not int or v < 0):
            self.fail(node, what, f"expected a non-negative int, got {v!r}")
        return v

    def const_value(self, node):
        """The compile-time value of ``node``: a literal, a float/bool constexpr of this entry or
        a module-level constant (None when it is neither)."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self.const_value(node.operand)
            return -v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            # ``check_bounds=not no_padding`` with ``no_padding = TILE_N == n_cols`` (Unsloth's
            # norms): Python evaluates it on the compile-time bool
            v = self.const_value(node.operand)
            return (not v) if isinstance(v, bool) else None
        if isinstance(node, ast.Name) and node.id in self.spec:
            return self.spec[node.id]
        if isinstance(node, ast.Name) and self.lookup(node.id) is not None:
            var = self.lookup(node.id)           # a name bound to a compile-time value
            if var.ty.kind == "bool" and var.ty.value is None:
                self.specialise_compared(node.id)
            return var.ty.value if var.ty.kind == "lit" else None
        if isinstance(node, ast.Name) and self.lookup(node.id) is None:
            return self.module_consts.get(node.id)
        if isinstance(node, ast.Name) and self.lookup(node.id).ty.kind == "lit":
            return self.lookup(node.id).ty.value      # a name bound to a compile-time value
        return None

    def specialise_compared(self, name: str) -> None:
        """``name`` holds a bool that a compile-time keyword needs: where the function being
        translated binds it to a comparison of int constexprs (``no_padding = TILE_N == n_cols``,
        Unsloth's norms; cuTile Python compares the two constants when it compiles), the
        entries are specialised on those constexprs (:meth:`need_constexpr_value` raises
        :class:`NeedConst`), so that the comparison folds to a literal."""
        fn = self.module_functions.get(self.inlining[-1]) if self.inlining else self.fn
        for st in ast.walk(fn):
            if (isinstance(st, ast.Assign) and [ast.unparse(t) for t in st.targets] == [name]
                    and isinstance(st.value, ast.Compare)):
                for n in ast.walk(st.value):
                    var = self.lookup(n.id) if isinstance(n, ast.Name) else None
                    if var is not None:
                        self.need_constexpr_value(var.ty, n)

    def latency_arg(self, call) -> str:
        """``latency=`` of a load/store as cutile's ``Option<i32>`` argument."""
        node = self._kw(call, "latency")
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return "None"
        if type(self.const_value(node)) is int:
            return f"Some({self.const_value(node)})"
        var = self.lookup(node.id) if isinstance(node, ast.Name) else None
        if var is not None and var.ty.kind == "i32" and var.decl is None and any(
                p["name"] == node.id and p["kind"] == "constexpr" for p in self.params):
            return f"Some({var.rust})"
        if var is not None and var.ty.kind == "lit" and type(var.ty.value) is int:
            return f"Some({var.ty.value})"
        if var is not None:
            # a helper's parameter bound to an int constexpr: specialise on its value
            self.need_constexpr_value(var.ty, node)
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
