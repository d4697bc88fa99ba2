"""Driver: one kernel of an operator -> one ``#[cutile::module]`` with one entry per
specialisation (the construct families are mixed into :class:`KernelTranslator` here)."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from tileport.model import constructs, frontend, manifest

from . import code_motion, memory
from .arith import DIVF_FULL_HELPER, ArithRules
from .control import ControlRules
from .core import CONSTEXPR, DTYPE_KEY, NeedConst, NeedDtype, TranslatorBase, Ty, Unsupported, Var, module_constants
from .dtypes import RUST_ELEMENT, DtypeRules
from .hints import HintRules
from .matrix import MatrixRules
from .memory import PADDED_GATHER_HELPER, STRIDES_HELPER, MemoryRules
from .reductions import ReductionRules
from .shape import ShapeRules
from .tokens import TokenRules

FAMILIES = (ControlRules, MemoryRules, TokenRules, ArithRules, ReductionRules, ShapeRules,
            MatrixRules, HintRules, DtypeRules)


def _merge_calls(families) -> dict[str, str]:
    calls: dict[str, str] = {}
    for fam in families:
        clash = set(calls) & set(fam.CALLS)
        if clash:
            raise RuntimeError(f"{fam.__name__} redefines the rule of {sorted(clash)}")
        calls.update(fam.CALLS)
    return calls


class KernelTranslator(*FAMILIES, TranslatorBase):
    """Translate one ``@ct.kernel`` function (see :mod:`tileport.translate` for the rules)."""

    CALLS = _merge_calls(FAMILIES)

    # ---- entry ---------------------------------------------------------------------
    def translate(self) -> tuple[str, list]:
        """Returns (entry function source, source map [(rust line in fn, py line)])."""
        generics, args = ["E: ElementType"], []
        # the entry's run-time scalars and const generics, name -> Rust type (for code_motion)
        scalars: dict[str, str] = {}
        consts: dict[str, str] = {}
        self.list_params: list = []
        for p in self.params:
            rn = self.rname(p["name"])
            if p["kind"] == "array" and p.get("list"):
                # a list of arrays: its table's address and its length (MemoryRules.list_table)
                args += [f"{rn}: *mut i64", f"{rn}__len: i32"]
                scalars[f"{rn}__len"] = "i32"
                elem = self.array_dtypes.get(p["name"], "E")
                self.scopes[0][p["name"]] = Var(rn, Ty("list", dtype=elem, ndim=p["ndim"]), None, 0)
                self.list_params.append((p["name"], rn, p["ndim"]))
                self.__dict__.setdefault("list_tokens", {})[rn] = f"{rn}__tok"
            elif p["kind"] == "array":
                # -1: a run-time extent; a one-element array's constant [1] (frontend.unit_array)
                dims = ", ".join(str(d) for d in p.get("static_shape") or [-1] * p["ndim"])
                elem = self.array_dtypes.get(p["name"], "E")   # an array of its own dtype
                args.append(f"{rn}: &Tensor<{elem}, {{[{dims}]}}>")
                self.scopes[0][p["name"]] = Var(rn, Ty("arr", dtype=elem, ndim=p["ndim"]), None, 0)
            elif p["kind"] == "constexpr" and p.get("ctype", "int") == "int":
                generics.append(f"const {rn}: i32")
                consts[rn] = "i32"
                if p["name"] in self.spec:
                    # specialised: a compile-time argument computes with it (the generic stays,
                    # the host passes every int constexpr)
                    v = self.spec[p["name"]]
                    self.scopes[0][p["name"]] = Var(repr(v), Ty("lit", value=v), None, 0)
                else:   # a const generic; its value is asked for (NeedConst) where it matters
                    self.scopes[0][p["name"]] = Var(rn, Ty("i32", value=f"{CONSTEXPR}:{p['name']}"), None, 0)
            elif p["kind"] == "constexpr":
                # float/bool constexprs have no Rust const-generic form: each specialised
                # entry inlines its value (bool ones can only steer static `if`s)
                v = self.spec[p["name"]]
                self.scopes[0][p["name"]] = Var(repr(v), Ty("lit", value=v), None, 0)
            else:
                t = "f32" if p["kind"] == "scalar_f32" else "i32"
                args.append(f"{rn}: {t}")
                scalars[rn] = t
                self.scopes[0][p["name"]] = Var(rn, Ty(t), None, 0)
        body = self.fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # docstring
        returns_early = self.kernel_returns_early()
        guards = returns_early and self.guard_clauses(body)
        self.guard_tails = [body] if guards else []
        if guards:
            # guard clauses only: each an if whose else holds the rest of the kernel (block)
            self.block(body)
        elif returns_early:
            # cutile lowers `return` only inside a `loop`: one that runs once (see early_return)
            self.out.emit("loop {", self.fn.lineno)
            self.out.indent += 1
            self.block(body)
            if not (self.out.lines and self.out.lines[-1][1] == "return;"):
                self.out.emit("return;", self.fn.lineno)
            self.out.indent -= 1
            self.out.emit("}", self.fn.lineno)
        else:
            self.block(body)
        self.prune_tokens()
        # what a loop cannot change, computed before it as cuTile Python's compiler does
        code_motion.hoist_invariant_lets(self.out.lines, params=scalars, consts=consts)
        head = []
        for name, rn, nd in self.list_params:
            if any(ln[1] is not None and f"{rn}__" in ln[1] for ln in self.out.lines):
                head += [[2, ln, self.fn.lineno] for ln in self.list_table(name, rn, nd)]
        if self.need_pid:
            head.append([2, "let __pid: (i32, i32, i32) = get_tile_block_id();", self.fn.lineno])
        if self.need_nblk:
            head.append([2, "let __nblk: (i32, i32, i32) = get_num_tile_blocks();", self.fn.lineno])
        lines = head + [ln for ln in self.out.lines if ln[1] is not None]
        sig = (f"    {self.entry_attribute()}\n    pub unsafe fn {self.entry}<{', '.join(generics)}>(\n"
               + "".join(f"        {a},\n" for a in args) + "    ) {\n")
        text = sig + "".join("    " * ind + txt + "\n" for ind, txt, _ in lines) + "    }\n"
        first = sig.count("\n")
        smap = [(first + i + 1, pl) for i, (_, _, pl) in enumerate(lines)]
        # the `pub unsafe fn` line (second line of the signature) comes from the `def` line
        return text, [(2, self.fn.lineno)] + smap


# variant dtypes E stands for (the rules read E as a float: cmpf, fma contraction); an array of
# an integer variant dtype (topk ids of int32 / int64) gets the concrete type instead
FLOAT_VARIANT_DTYPES = ("f16", "bf16", "f32")
INT_VARIANT_DTYPES = ("i32", "i64")
# variant dtypes that are no E: the arrays of the variant's dtype get the concrete element type,
# one entry per dtype (f64, the f8 formats: cutile 0.5.0 src/_core.rs `impl ElementType`)
CONCRETE_VARIANT_DTYPES = (*INT_VARIANT_DTYPES, "f64", "f8e4m3fn", "f8e5m2")

MODULE_HEADER = """// Generated by tileport's translator (backend: translator) from {src}.
// Do not edit: edit the cuTile Python reference and rerun the workflow.
#[cutile::module]
pub mod port {{
    use cutile::core::*;

"""


def display_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it lies below it (stable artefacts)."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


# compile-time arguments of cuTile calls: name -> [(positional index, keyword, names may stay
# generic)]. A tile shape entry may be a const generic (`{[BM, TILE]}`) but not arithmetic on
# one (stable Rust has no generic const expressions); an axis or a permutation must be a
# literal.
STATIC_ARGS = {
    "load": [(2, "shape", True)], "num_tiles": [(2, "shape", True), (1, "axis", False)],
    "full": [(0, "shape", True)], "zeros": [(0, "shape", True)], "ones": [(0, "shape", True)],
    "reshape": [(1, "shape", True)], "extract": [(2, "shape", True)],
    "broadcast_to": [(1, "shape", True)], "arange": [(0, "size", True)],
    "sum": [(1, "axis", False)], "max": [(1, "axis", False)], "min": [(1, "axis", False)],
    "prod": [(1, "axis", False)], "expand_dims": [(1, "axis", False)],
    "permute": [(1, "axes", False)], "transpose": [(1, "axis0", False), (2, "axis1", False)],
    "cat": [(1, "axis", False)],
}
# compile-time keyword-only arguments (a name bound once in the kernel counts as its value:
# `check = TILE != N; ct.gather(..., check_bounds=check)`)
STATIC_KWARGS = {"gather": ("check_bounds",), "scatter": ("check_bounds",),
                 "load": ("check_bounds", "order"), "store": ("check_bounds", "order")}


def specialisation_keys(fn: ast.FunctionDef, params: list[dict], alias: str = "ct",
                        module: ast.Module | None = None) -> list[str]:
    """Constexprs that split a kernel into several Rust entries: those read by static ``if``
    tests (also in a helper the kernel calls, through its arguments) and ``ct.static_assert``
    conditions, float/bool ones (no
    const-generic form in Rust), and int ones a compile-time argument computes with
    (:data:`STATIC_ARGS`); in parameter order."""
    cnames = {p["name"] for p in params if p["kind"] == "constexpr"}
    consts = set(module_constants(module)) if module is not None else set()
    derived = compile_time_locals(fn, cnames, consts)
    # module-level constants and compile-time locals are compile-time values too
    # (`if APPROX == GELU_TANH:`, `check = TILE != N`)
    static = cnames | consts | set(derived)

    def through(names: set) -> set:
        """Constexprs behind ``names`` (themselves, or those a compile-time local is made of)."""
        out = names & cnames
        for n in names & set(derived):
            out |= derived[n]
        return out

    used = set()
    bound: dict = {}
    for n in ast.walk(fn):
        for t in (n.targets if isinstance(n, ast.Assign) else []):
            if isinstance(t, ast.Name):
                bound[t.id] = n.value if t.id not in bound else None
    helpers = {n.name: n for n in (module.body if module else ()) if isinstance(n, ast.FunctionDef)}
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in helpers:
            h = helpers[n.func.id]
            hp = [a.arg for a in h.args.args]
            args = dict(zip(hp, n.args)) | {k.arg: k.value for k in n.keywords}
            for t in ast.walk(h):
                tests = [t.test] if isinstance(t, (ast.If, ast.IfExp)) else t.values if isinstance(
                    t, ast.BoolOp) else []
                for test in tests:
                    if not frontend.static_test(test, set(hp) | static):
                        continue
                    for name in {x.id for x in ast.walk(test) if isinstance(x, ast.Name)}:
                        if name in args:
                            used |= {x.id for x in ast.walk(args[name]) if isinstance(x, ast.Name)} & cnames
        if isinstance(n, (ast.If, ast.IfExp)) and frontend.static_test(n.test, static):
            used |= through({x.id for x in ast.walk(n.test) if isinstance(x, ast.Name)})
        # arithmetic of constexprs as an operand of run-time arithmetic (`x * (H * SEQ_LEN)`): cuTile
        # Python folds it to one constant; cutile 0.5.0 cannot compile const-generic arithmetic
        # whose value its bounds make exact ("expected a scalar element type",
        # _function.rs compile_constant_from_exact_bounds), so those constexprs are specialised
        if isinstance(n, ast.BinOp) and not frontend.static_test(n, static):
            for c in (n.left, n.right):
                names = through({x.id for x in ast.walk(c) if isinstance(x, ast.Name)})
                if isinstance(c, ast.BinOp) and frontend.static_test(c, static) and len(names) >= 2:
                    used |= names
        # a compile-time operand of `and` / `or` short-circuits at compile time (bool_chain)
        for v in n.values if isinstance(n, ast.BoolOp) else ():
            if frontend.static_test(v, static):
                used |= through({x.id for x in ast.walk(v) if isinstance(x, ast.Name)})
        if isinstance(n, ast.Call) and frontend.is_ct(n.func, alias, "static_assert") and n.args:
            used |= through({x.id for x in ast.walk(n.args[0]) if isinstance(x, ast.Name)})
        if isinstance(n, ast.Call) and frontend.is_ct(n.func, alias):
            for kw in STATIC_KWARGS.get(n.func.attr, ()):
                arg = frontend.kw(n, kw)          # a compile-time value (check_bounds=, order=)
                if isinstance(arg, ast.Name) and arg.id not in derived and bound.get(arg.id) is not None:
                    arg = bound[arg.id]
                if arg is not None:
                    used |= through({x.id for x in ast.walk(arg) if isinstance(x, ast.Name)})
        if isinstance(n, ast.Call) and (frontend.is_ct(n.func, alias) or frontend.is_tile_method(n.func, alias)):
            method = not frontend.is_ct(n.func, alias)
            for pos, kw, bare_ok in STATIC_ARGS.get(n.func.attr, ()):
                arg = frontend.kw(n, kw, pos - method if pos - method >= 0 else None)
                if arg is None:
                    continue
                elts = arg.elts if isinstance(arg, ast.Tuple) and bare_ok else [arg]
                for e in elts:
                    if not (bare_ok and isinstance(e, ast.Name) and e.id in cnames):
                        used |= through({x.id for x in ast.walk(e) if isinstance(x, ast.Name)})
    return [p["name"] for p in params if p["kind"] == "constexpr"
            and (p["name"] in used or p.get("ctype", "int") != "int")]


def compile_time_locals(fn: ast.FunctionDef, cnames: set, consts: set) -> dict[str, set]:
    """Locals of ``fn`` bound once to a compile-time expression (``check = TILE != N``,
    ``total = N * N``: constexprs, module constants, literals and such locals under
    arithmetic, comparisons and boolean operators): name -> the constexprs it is made of.
    cuTile Python folds them; where a compile-time position reads one, those constexprs are
    specialised."""
    ok = (ast.BinOp, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Name, ast.Constant, ast.Load,
          ast.operator, ast.cmpop, ast.boolop, ast.unaryop, ast.Call, ast.Attribute)

    def folds(v) -> bool:     # calls: ct.cdiv, min, max (cuTile folds them on constants)
        return all(isinstance(x, ok) and not (isinstance(x, ast.Call) and not (
            (isinstance(x.func, ast.Name) and x.func.id in ("min", "max"))
            or (isinstance(x.func, ast.Attribute) and x.func.attr == "cdiv"
                and isinstance(x.func.value, ast.Name)))) and not (
            isinstance(x, ast.Attribute) and x.attr != "cdiv") for x in ast.walk(v))

    bound: dict[str, list] = {}
    for n in ast.walk(fn):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
            n, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
        for t in targets:
            for x in ast.walk(t):
                if isinstance(x, ast.Name):
                    bound.setdefault(x.id, []).append(n.value if isinstance(n, ast.Assign) and t is x else None)
    out: dict[str, set] = {}
    changed = True
    while changed:
        changed = False
        for name, values in bound.items():
            if name in out or len(values) != 1 or values[0] is None:
                continue
            v = values[0]
            if not folds(v):
                continue
            names = {x.id for x in ast.walk(v) if isinstance(x, ast.Name)} - {
                x.func.id if isinstance(x.func, ast.Name) else x.func.value.id
                for x in ast.walk(v) if isinstance(x, ast.Call)}
            if names <= cnames | consts | set(out):
                out[name] = (names & cnames).union(*(out[x] for x in names & set(out)))
                changed = True
    return out


def translate_entries_per_variant(op_dir: str | Path, kernel: str, target: str = "sm_90"
                                  ) -> tuple[tuple[str, list, dict], dict[str, Unsupported]]:
    """:func:`translate_per_variant` of the operator's front-end model (raises as
    :func:`translate_entries`)."""
    return translate_per_variant(frontend.load(op_dir), kernel, target)


def translate_entries(op_dir: str | Path, kernel: str, target: str = "sm_90") -> tuple[str, list, dict]:
    """Translate one kernel of an operator into one Rust module: :func:`translate_model` of the
    operator's front-end model (:func:`tileport.model.frontend.load`).

    Raises:
        Unsupported: a construct without a rule (file:line: construct: reason).
        frontend.AnalysisError / manifest.ManifestError: bad operator input.
    """
    return translate_model(frontend.load(op_dir), kernel, target)


def translate_per_variant(model: frontend.OperatorModel, kernel: str, target: str = "sm_90"
                          ) -> tuple[tuple[str, list, dict], dict[str, Unsupported]]:
    """:func:`translate_model`, blocking per variant (issue 34 item 3): when the kernel's
    variants together cannot be translated, each is translated alone; those the translator
    cannot handle (an f8 sibling of an f16 launch, a constexpr value a rule lacks) are left out
    and the others translated together.

    Returns ((Rust source, source map, {variant id: entry}) of the translated variants,
    {blocked variant id: its :class:`Unsupported`}).

    Raises:
        Unsupported: as :func:`translate_model` when no variant can be translated, when the
            failure is not any one variant's (every variant alone translates), or for a manifest
            finding on the kernel (owner not ``tool``: it concerns every variant).
    """
    try:
        return translate_model(model, kernel, target), {}
    except Unsupported as exc:
        km = model.kernel(kernel)
        if (getattr(exc, "owner", None) or "tool") != "tool" or km is None or len(km.variants) < 2:
            raise
        blocked: dict[str, Unsupported] = {}
        for v in km.variants:
            try:
                translate_model(model, kernel, target, only=[v["id"]])
            except Unsupported as one:
                blocked[v["id"]] = one
        ok = [v["id"] for v in km.variants if v["id"] not in blocked]
        if not blocked or not ok:
            raise
        return translate_model(model, kernel, target, only=ok), blocked


def translate_model(model: frontend.OperatorModel, kernel: str, target: str = "sm_90",
                    only: list[str] | None = None) -> tuple[str, list, dict]:
    """Translate one kernel of an operator's front-end model into one Rust module.

    A kernel whose code depends on constexpr ``if``s or float/bool constexprs becomes one
    ``#[cutile::entry()]`` per distinct combination of those values over the manifest's
    variants (named ``<kernel>__<NAME><value>...``); otherwise one entry named like the kernel.
    Each entry carries its variants' ``compiler_hints`` (split further where they differ:
    ``..._occupancy2``).
    When a rule needs the concrete element type (a cast that is a no-op for one dtype only, a
    constant whose bits depend on it), the entries are split per dtype too (``..._f16``).

    ``target``: the GPU architecture the port is compiled for (config ``gpu_target``): the
    entry's hints are keyed by it, and a ``ct.ByTarget`` hint takes its value for it.
    ``only``: the variant ids to translate (default: all of the kernel's).

    Returns (Rust source of ``src/<kernel>.rs``, source map ``[(rust_line, py_line)]`` (1-based),
    ``{variant id: entry name}``).

    Raises:
        Unsupported: a construct without a rule (file:line: construct: reason; ``owner`` tool), or
            a manifest finding on this kernel (``owner`` as the finding says: the manifest's
            disagreement must be fixed before the kernel is translated).
    """
    kfile = model.kernel_file
    mine = model.findings_of(kernel)
    if mine:
        u = mine[0]
        exc = Unsupported(u["file"], u["line"], u["construct"], u["reason"])
        exc.owner = u.get("owner", "tool")      # manifest findings are the manifest's to fix
        raise exc
    km = model.kernel(kernel)
    if km is None:
        raise Unsupported(kfile, 1, f"kernel {kernel}", "not found in the analysis")
    if only is not None:
        km = dataclasses.replace(km, variants=[v for v in km.variants if v["id"] in only])
    kinfo = km.info()
    manifest_forms_without_rule(kinfo, kfile)
    tree, fn, alias = model.tree, km.fn, model.alias
    keys = specialisation_keys(fn, kinfo["params"], alias, tree)
    while True:
        try:
            bodies, entries, needs = _translate_groups(fn, kinfo, km.variants, alias, kfile, keys,
                                                       kernel, target, tree)
            break
        except NeedConst as exc:
            # a rule needs the value of an int constexpr left generic (cuTile Python folds
            # every constexpr): specialise the entries on it too and translate again
            if exc.name in keys:
                raise
            keys = [p["name"] for p in kinfo["params"] if p["name"] in {*keys, exc.name}]
    header = MODULE_HEADER.format(src=display_path(kfile))
    if "tileir" in needs:
        # Tile IR ops cutile keeps outside its core prelude (make_gather_scatter_view)
        header = header.replace("    use cutile::core::*;\n", "    use cutile::core::*;\n    use cutile::tileir::*;\n")
    header = (header + (STRIDES_HELPER if "strides" in needs else "")
              + (PADDED_GATHER_HELPER if "padded_gather" in needs else "")
              + (DIVF_FULL_HELPER if "divf_full" in needs else ""))
    parts, smap = [header], []
    line = header.count("\n")
    for body, bmap in bodies:
        smap += [(r + line, p) for r, p in bmap]
        parts.append(body + "\n")
        line += body.count("\n") + 1
    return "".join(parts) + "}\n", smap, entries


def _translate_groups(fn, kinfo: dict, kvariants: list, alias: str, kfile: str, keys: list,
                      kernel: str, target: str, tree) -> tuple[list, dict, set]:
    """One entry per distinct combination of the ``keys`` constexprs' values over the kernel's
    variants, generic over E first, split per dtype when a rule needs E's concrete type.
    Returns (bodies with their source maps, {variant id: entry}, the module-level helpers the
    module needs: "strides" (memory.STRIDES_HELPER), "padded_gather" (memory.PADDED_GATHER_HELPER),
    "divf_full" (arith.DIVF_FULL_HELPER)).
    Raises :class:`NeedConst` for a constexpr that must join ``keys``.
    ``kvariants``: the kernel's own variants."""
    # the compiler hints the launch code sets (manifest compiler_hints: kernel.replace_hints in
    # the reference); variants that differ in them get entries of their own
    hints_of = {v["id"]: tuple(sorted((v.get("compiler_hints") or {}).items())) for v in kvariants}
    split_hints = len(set(hints_of.values())) > 1
    for by_dtype in (False, True):
        groups: dict[tuple, list[str]] = {}
        for v in kvariants:
            groups.setdefault(tuple(v["constexprs"][k] for k in keys)
                              + ((hints_of[v["id"]],) if split_hints else ())
                              + ((v["dtype"],) if by_dtype else ()), []).append(v["id"])
        bodies, entries = [], {}
        need_dtype, needs = False, set()
        for key, vids in groups.items():
            mine = [v for v in kvariants if v["id"] in vids]
            arrays = entry_array_dtypes(kinfo["params"], mine)
            if arrays is None:          # an array's dtype mapping varies with the variant dtype
                need_dtype = True
                break
            spec = dict(zip(keys, key))
            words = [f"{k}{manifest.Variant('x', {k: v}).id.split('-', 1)[1][len(k):]}" for k, v in spec.items()]
            hints = dict(hints_of[vids[0]])
            if split_hints:
                words += [f"{k}{v}" for k, v in hints.items()] or ["nohints"]
            if by_dtype:
                spec[DTYPE_KEY] = key[-1]
                words.append(key[-1])
            name = kernel + "__" + "_".join(words) if words else kernel
            # E's possible types: the dtypes of this entry's variants
            tr = KernelTranslator(fn, kinfo["params"], alias, kfile, spec, name,
                                  tuple(dict.fromkeys(v["dtype"] for v in mine)), target, tree, arrays)
            tr.launch_hints = hints
            tr.entry_constexprs = [v["constexprs"] for v in mine]
            try:
                bodies.append(tr.translate())
            except NeedDtype:
                if by_dtype:            # a split entry knows E: no rule asks again
                    raise
                need_dtype = True
                break
            alias_conflicts(kinfo, tr, kfile)
            need_dtype |= tr.need_dtype
            needs |= {"strides"} if tr.need_strides else set()
            needs |= {"padded_gather"} if tr.need_padded_gather else set()
            needs |= {"divf_full"} if tr.need_divf_full else set()
            needs |= {"tileir"} if getattr(tr, "need_tileir", False) else set()
            entries.update({vid: name for vid in vids})
        if not need_dtype:
            break
    return bodies, entries, needs


def entry_array_dtypes(params: list[dict], variants: list[dict]) -> dict[str, str] | None:
    """The element type of each array parameter in an entry serving ``variants`` (the
    analysis' ``{"dtype", "arrays": {name: code}}``): 'E' where the array has the variant's
    dtype in every one of them (a float dtype: :data:`FLOAT_VARIANT_DTYPES`), the Rust type of the
    one dtype it has in all of them (an f32 Rstd beside f16 data), None when it differs between
    them (the entries must be split per dtype)."""
    out = {}
    for p in params:
        if p["kind"] != "array":
            continue
        got = {(v.get("arrays", {}).get(p["name"], v["dtype"]), v["dtype"]) for v in variants}
        if all(a == d and d in FLOAT_VARIANT_DTYPES for a, d in got):
            out[p["name"]] = "E"
        elif len({a for a, _ in got}) == 1:
            out[p["name"]] = RUST_ELEMENT[got.pop()[0]]
        else:
            return None
    return out


def translate_kernel(op_dir: str | Path, kernel: str, target: str = "sm_90") -> tuple[str, list]:
    """:func:`translate_entries` without the entry table: (Rust source, source map)."""
    src, smap, _ = translate_entries(op_dir, kernel, target)
    return src, smap



def alias_conflicts(kinfo: dict, tr, kfile: str) -> None:
    """Raise :class:`Unsupported` (owner ``tool``) when an entry reads or writes two arrays of
    one ``alias_group`` one of which is written: cutile 0.5.0 allows shared reads of one memory
    but, while a tensor is a mutable output, no other path may read or write that memory
    (cutile-0.5.0 src/tensor.rs, Tensor::borrow_raw_parts, its 'Aliasing' safety rule;
    store_ptr_tko: 'no aliasing that would race'). An entry that touches one array of the group
    only (the other a parameter it never loads from nor stores to, e.g. behind a constexpr
    ``if`` this entry does not take) has one path to the memory: translated."""
    groups: dict[str, list] = {}
    for p in kinfo["params"]:
        if p["kind"] == "array" and p.get("alias_group"):
            groups.setdefault(p["alias_group"], []).append(p)
    used = getattr(tr, "accessed_arrays", set())
    for g, members in groups.items():
        written = [q["name"] for q in members if q.get("role") != "input"]
        touched = [q for q in members if tr.rname(q["name"]) in used]
        if written and len(touched) > 1:
            raise Unsupported(kfile, touched[0].get("line"), f"parameter {touched[0]['name']}",
                              f"arrays that may alias (alias_group {g}) where {', '.join(written)} "
                              f"is written, both accessed by entry {tr.entry}: cutile 0.5.0 allows "
                              f"shared reads of one memory but a tensor written must be the only "
                              f"path to it (src/tensor.rs, Tensor::borrow_raw_parts, its 'Aliasing' "
                              f"safety rule; store_ptr_tko: 'no aliasing that would race')")


def manifest_forms_without_rule(kinfo: dict, kfile: str) -> None:
    """Manifest forms of a parameter the translator has no rule for raise :class:`Unsupported`
    (owner ``tool``: the translator or cutile lacks the rule, the kernel is valid), each with
    the evidence: an array dtype without a cutile element type, a ``list`` of arrays (while
    :data:`memory.LIST_TRUNCI_OVERFLOW` is None: cutile 0.5.0 writes no flagless ``trunci``),
    ``index_dtype`` i64
    (``ct.IndexedWithInt64``), an i64 scalar, a variant dtype outside f16/bf16/f32 and
    :data:`CONCRETE_VARIANT_DTYPES`. Arrays of
    their own dtype (an f32 Rstd, an int32 index array) and aliasing read-only arrays are
    translated (every array is a ``&Tensor``: shared reads of one memory are what cutile's
    ``Tensor::borrow_raw_parts`` allows, cutile-0.5.0 src/tensor.rs, its "Aliasing" safety
    rule)."""
    groups: dict[str, list] = {}
    for p in kinfo["params"]:
        if p["kind"] == "array" and p.get("alias_group"):
            groups.setdefault(p["alias_group"], []).append(p)
    for p in kinfo["params"]:
        why = None
        own = p.get("dtype", "{dtype}")
        codes = set(own.values()) if isinstance(own, dict) else {own} - {"{dtype}"}
        if p["kind"] == "array" and codes - set(RUST_ELEMENT):
            why = (f"the manifest gives it the dtype {p['dtype']}; cutile 0.5.0 has no element type "
                   f"the translator maps {sorted(codes - set(RUST_ELEMENT))[0]} to")
        elif p["kind"] == "array" and p.get("list") and memory.LIST_TRUNCI_OVERFLOW is None:
            why = ("a list of arrays: cuTile Python 1.7.0 passes it as an int64 table (address, extents, "
                   "strides per element) and truncates each extent to int32 with a `trunci` that has no "
                   "overflow flag; cutile 0.5.0 expresses the rest (int_to_ptr, make_tensor_view, pointer "
                   "entry parameters) but cannot write that trunci: cutile-0.5.0 src/_core.rs:2415 maps "
                   "overflow::None to no attribute, which cutile-ir-0.5.0 src/bytecode/op_writer.rs:158-160 "
                   "requires ('missing attribute 'overflow' on op TruncI'), and an i64 -> i32 convert_tile "
                   "is 'not yet implemented' (cutile-compiler-0.5.0 src/compiler/compile_intrinsic.rs:2106)")
        elif p["kind"] == "array" and p.get("index_dtype") == "i64":
            why = ("an array indexed with int64 (ct.IndexedWithInt64): cutile 0.5.0 tensors have i32 "
                   "shapes and strides (src/_core.rs: Tensor<E, const D: [i32; N]>, Shape { dims: "
                   "&[i32] }, get_shape_dim -> i32), so an int64 tensor view has no counterpart")
        elif p["kind"].startswith("scalar") and p["kind"] not in ("scalar_f32", "scalar_i32"):
            why = (f"a {p.get('dtype')} scalar: cutile 0.5.0 takes any element-type scalar, but the "
                   f"translator and the host ABI (tileport/host/shim.py call_block) know f32 and i32 "
                   f"scalars only")
        if why:
            raise Unsupported(kfile, p.get("line"), f"parameter {p['name']}", why)
    for v in kinfo.get("variants", []):
        # an integer variant dtype (int32 / int64 index arrays) is no E: the arrays that follow
        # it get its concrete element type, one entry per dtype (entry_array_dtypes)
        if v["dtype"] not in constructs.RUST_DTYPE and v["dtype"] not in CONCRETE_VARIANT_DTYPES:
            raise Unsupported(kfile, kinfo.get("line"), f"variant {v['id']}",
                              f"variant dtype {v['dtype']}; the translator's element type E is one of "
                              f"{', '.join(constructs.RUST_DTYPE)} only, and an array of the variant's dtype "
                              f"takes one of {', '.join(CONCRETE_VARIANT_DTYPES)} as a concrete type")
