"""Stage ``reference_ir``: the cuTile Python reference's Tile IR, on the CPU.

For one (kernel, variant) it builds a ``KernelSignature`` (arrays: the manifest's dtype or the
variant's, rank, int32 indices, non-negative strides, no aliasing, innermost stride 1 -- the
same layout facts the Rust side is compiled with; lists of such arrays; i32/i64/f32 scalars;
constexprs as the manifest writes them: ints of any sign, floats, bools), exports Tile IR
bytecode with ``cuda.tile.compilation.export_kernel(..., output_format="tileir_bytecode")``
and disassembles it with ``tileirdisasm`` (both facts: ``shared/notes/toolchain.md``).
"""
from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import re
import sys
import traceback
from pathlib import Path

from tileport.core import source
from tileport.core.verdict import Finding, Verdict, loc, write
from tileport.cpu import rust_ir, sass
from tileport.model import frontend, manifest, torch_uses


def load_module(kernel_py: str | Path):
    """Import ``kernel.py`` from its path under a private module name, as cuTile compiles it
    (torch / cupy / numpy dtypes in kernel bodies as cuTile's own:
    :func:`tileport.model.torch_uses.exec_kernel_module`)."""
    kernel_py = Path(kernel_py)
    name = f"tileport_ref_{kernel_py.parent.name}"
    spec = importlib.util.spec_from_file_location(name, kernel_py)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    torch_uses.exec_kernel_module(mod, kernel_py)
    return mod


def kernel_object(mod, kernel: str, variant: manifest.Variant):
    """The ``@ct.kernel`` object of ``kernel`` in the imported module, with the variant's
    compiler hints applied as the launch code applies them (``kernel.replace_hints``)."""
    fn = getattr(mod, kernel)
    return fn.replace_hints(**variant.hints) if variant.hints else fn


def signature_for(kernel_params: list[dict], variant: manifest.Variant):
    """A ``KernelSignature`` for one variant.

    ``kernel_params`` is ``analysis.json``'s ``kernels[i].params``. Arrays get their own
    ``dtype`` (a code, or a mapping by variant dtype) or, where it is ``{dtype}``, the variant's;
    a ``list`` array becomes a ``ListConstraint`` of such arrays (elements may not alias); arrays
    alias only within their ``alias_group``; scalars get their ``dtype``
    (i32 / i64 / f32); constexprs the variant's value as written (int, float or bool). An array
    with a ``static_shape`` (a one-element array: :func:`tileport.model.frontend.unit_array`) gets it
    as its ``shape_constant``, as cuTile Python's launcher gives every extent-1 dimension.
    """
    import cuda.tile as ct
    from cuda.tile.compilation import (
        ArrayConstraint,
        CallingConvention,
        KernelSignature,
        ListConstraint,
        ScalarConstraint,
    )

    def dt(code):
        return getattr(ct, manifest.DTYPES[code][0])

    params = []
    for p in kernel_params:
        if p["kind"] == "array":
            nd = p["ndim"]
            arr = ArrayConstraint(
                dt(manifest.resolve_dtype(p.get("dtype"), variant.dtype)), nd,
                index_dtype=ct.int64 if p.get("index_dtype") == "i64" else ct.int32,
                stride_lower_bound_incl=0,
                alias_groups=[p["alias_group"]] if p.get("alias_group") else [], may_alias_internally=False,
                stride_constant=[None] * (nd - 1) + [1],
                # a one-element array's constant shape, as the launcher derives it from the
                # array (frontend.unit_array; the port's Tensor<E, {[1]}>)
                shape_constant=p.get("static_shape"))
            params.append(ListConstraint(arr, alias_groups=[], elements_may_alias=False)
                          if p.get("list") else arr)
        elif p["kind"] == "constexpr":
            params.append(variant.constexprs[p["name"]])   # int, float or bool as declared
        else:
            params.append(ScalarConstraint(dt(p["dtype"])))
    return KernelSignature(params, calling_convention=CallingConvention.cutile_python_v2())


class ManifestGap(ValueError):
    """The manifest does not describe the kernel well enough to compile it (the analysis names
    why); ``owner`` is ``manifest`` (edit the manifest) or ``tool`` (the format lacks the
    concept)."""

    def __init__(self, msg: str, owner: str, file: str | None = None, line: int | None = None):
        super().__init__(msg)
        self.owner, self.file, self.line = owner, file, line


def export(op_dir: str | Path, kernel: str, variant_id: str, out_bc: str | Path,
           out_txt: str | Path) -> None:
    """Export one variant's Tile IR bytecode and its text.

    Raises:
        frontend.AnalysisError / manifest.ManifestError: bad operator input.
        ManifestGap: the analysis found that the manifest disagrees with this kernel or cannot
            describe it (nothing is compiled: a signature built from it would be wrong).
        KeyError: no such kernel or variant.
        RuntimeError: cuTile's compiler or ``tileirdisasm`` failed (message has its stderr).
    """
    op_dir = Path(op_dir)
    model = frontend.load_once(op_dir)
    details, man = model.details(), model.manifest
    kinfo = next((k for k in details["kernels"] if k["name"] == kernel), None)
    gaps = [u for u in details["unsupported"] if u.get("category") == "manifest" and u.get("kernel") == kernel]
    if gaps:
        u = gaps[0]
        raise ManifestGap(f"{u['file']}:{u['line']}: {u['construct']}: {u['reason']}", u.get("owner", "manifest"),
                          u["file"], u["line"])
    if kinfo is None:
        raise KeyError(f"{source.kernel_py(op_dir)}: no kernel '{kernel}'")
    variant = manifest.variant_by_id(man, variant_id, kernel)
    kpy = exported_path(source.kernel_py(op_dir))
    sig = signature_for(kinfo["params"], variant)
    out_bc = Path(out_bc)
    tmp = out_bc.with_name(out_bc.name + ".tmp")

    def compile_to(bc: Path) -> None:
        try:
            mod = load_module(kpy)
        except SystemExit as exc:
            raise RuntimeError(f"importing kernel.py called sys.exit({exc.code})") from None
        from cuda.tile.compilation import export_kernel

        export_kernel(kernel_object(mod, kernel, variant), [sig], str(bc), output_format="tileir_bytecode")

    # the program is compiled from the kernel file (imports inlined), the variant, the signature
    # and the tools: the same inputs give the same bytecode, kept in the Tile IR cache. cuda-tile's
    # own folder too: the debug locations of its inlined helpers name it (a text from another
    # clone's environment would carry that clone's path into this one's prompts)
    inputs = ["ref-export", kpy.read_text() if kpy.is_file() else "", str(kpy), kernel, repr(variant), repr(sig),
              *cuda_tile_id(), sass.tool_id("tileirdisasm")]
    rust_ir.kept_tileir(inputs, tmp, compile_to)     # writes tmp and its text beside it
    Path(out_txt).parent.mkdir(parents=True, exist_ok=True)
    tmp.with_suffix(".tileir").replace(out_txt)
    tmp.replace(out_bc)


@functools.cache
def cuda_tile_id() -> tuple[str, str]:
    """What a reference export's Tile IR cache key holds of cuda-tile: its version and the path
    of its package as imported here. The debug locations of the helpers it inlines name that
    folder, so a text kept for another environment (another clone's own .venv) is never read
    back into this one (make install shares one per machine: docs/configuration.md). Asked once
    per process (runtime_ir keys every case with it)."""
    return importlib.metadata.version("cuda-tile"), importlib.util.find_spec("cuda.tile").origin


def exported_path(kpy: str | Path) -> Path:
    """The path a kernel file is exported from: relative to the working directory where it lies
    below it (the bytecode's debug locations then name no checkout), else absolute."""
    rel = os.path.relpath(Path(kpy).absolute())
    return Path(rel) if not rel.startswith("..") else Path(kpy).absolute()


def cutile_refusal(op_dir: str | Path, kernel: str, model=None, limit: int = 4,
                   only: list[str] | None = None) -> dict | None:
    """Whether cuTile Python itself refuses ``kernel``: its variants (at most ``limit``) are
    compiled to Tile IR as :func:`export` compiles them (nothing is written); the first
    refusal is returned as ``{"variant", "line" (kernel.py, or None), "message"}`` (cuTile's
    words, first line), None when every variant tried compiles or the refusal is not the
    kernel's (a missing module, a dtype the manifest cannot name, a value traced to the
    manifest: :func:`run` says those). For the analyser: a kernel the translator cannot port
    and cuTile refuses is the kernel's to fix, not a rule the translator lacks. ``only``: the
    variant ids to try (default: the kernel's first ``limit``)."""
    import tempfile

    from cuda.tile.compilation import export_kernel

    model = model or frontend.load(op_dir)
    km = model.kernel(kernel)
    if km is None:
        return None
    params = km.info()["params"]
    try:
        mod = load_module(source.kernel_py(op_dir))
    except BaseException:  # noqa: BLE001 - an unimportable kernel.py: reference_ir says why
        return None
    with tempfile.TemporaryDirectory() as tmp:
        tried = [v for v in manifest.variants(model.manifest, kernel) if only is None or v.id in only]
        for v in tried[:limit]:
            try:
                export_kernel(kernel_object(mod, kernel, v), [signature_for(params, v)], f"{tmp}/k.bc",
                              output_format="tileir_bytecode")
            except Exception as exc:  # noqa: BLE001 - cuTile's refusal, judged below
                text = f"{type(exc).__name__}: {exc}"
                if isinstance(exc, (ImportError, OSError)) or unnameable_dtypes(text):
                    return None
                eloc = getattr(exc, "loc", None)
                line = getattr(eloc, "line", None) if str(getattr(eloc, "filename", "")).endswith(".py") else None
                if _is_type_error(exc) and traced_to_manifest(op_dir, kernel, v.id, line, text):
                    return None
                return {"variant": v.id, "line": line, "message": text.splitlines()[0]}
    return None


def traced_to_manifest(op_dir: str | Path, kernel: str, variant_id: str, line: int | None,
                       message: str = "") -> str | None:
    """Why a cuTile *type* error at ``kernel.py:line`` is the manifest's doing, or None.

    The arrays whose values reach that line (its names, followed back through assignments of
    the kernel body) are the suspects: one whose dtype the manifest did not state took the
    variant's dtype by default (an int index array or an fp32 side array given the variant's
    f16 is refused by cuTile although the kernel is valid), and any may have the wrong
    ``ndim``. Traced means shown: giving one of them another dtype or rank
    (:func:`_trial_fix`) makes cuTile compile the variant or get past that line. The answer
    names the array, what the manifest gave it, what helps and what to write."""
    import ast

    try:
        model = frontend.load(op_dir)
        variant = manifest.variant_by_id(model.manifest, variant_id, kernel)
        km = model.kernel(kernel)
        kinfo, fn = km.info(), km.fn
    except Exception:  # noqa: BLE001 - no trace is an answer too
        return None
    if line is None:
        return None
    arrays = {p["name"]: p for p in kinfo["params"] if p["kind"] == "array"}
    # name -> the parameters its value derives from (assignments in source order, to a fixpoint)
    deps: dict[str, set] = {p["name"]: {p["name"]} for p in kinfo["params"]}
    assigns = sorted((n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))),
                     key=lambda n: n.lineno)
    for _ in range(3):
        for n in assigns:
            src = {x.id for x in ast.walk(n.value) if isinstance(x, ast.Name)} if n.value else set()
            got = set().union(*(deps.get(x, set()) for x in src)) if src else set()
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for x in ast.walk(t):
                    if isinstance(x, ast.Name):
                        deps[x.id] = deps.get(x.id, set()) | got
    at_line, direct = set(), set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and getattr(n, "lineno", None) == line:
            at_line |= deps.get(n.id, set())
            direct.add(n.id)
    order = [p["name"] for p in kinfo["params"]]
    # the arrays the line names itself first, then those its values come from
    reach = sorted(at_line & set(arrays), key=lambda a: (a not in direct, -order.index(a)))
    defaulted = [a for a in reach if arrays[a].get("dtype") == "{dtype}"]
    by_name = {cute: code for code, (cute, _, _) in manifest.DTYPES.items()}
    named = [by_name[w] for w in re.findall(r"[a-z0-9_]+", message) if w in by_name]
    dtypes = [d for d in dict.fromkeys(named + list(_TRIED)) if d != variant.dtype]
    dtype_trials = [(a, "dtype", d) for a in defaulted for d in dtypes]
    # a dtype the manifest stated (u8 scales) and cuTile refuses, naming the one it supports
    # (float8_e8m0fnu): the manifest chose the failing value; trial the supported one
    stated = [a for a in reach if arrays[a].get("dtype") not in ("{dtype}", None)
              and not isinstance(arrays[a].get("dtype"), dict)]
    asked = supported_dtypes(message)
    asked_trials = []
    for d in asked:       # those of one stated dtype together (a's and b's scales), then each alone
        alone = [a for a in stated if arrays[a]["dtype"] != d]
        together = {arrays[a]["dtype"]: [b for b in alone if arrays[b]["dtype"] == arrays[a]["dtype"]]
                    for a in alone}
        asked_trials += [(", ".join(g), "dtype", d) for g in together.values() if len(g) > 1]
        asked_trials += [(a, "dtype", d) for a in alone]
    dtype_trials = asked_trials + dtype_trials
    # an array whose tensor in the manifest has as many dimensions as its ndim is launched with
    # that rank: the manifest did not choose it, so another rank is no repair to offer
    tensors = manifest.kernel_tensors(model.manifest, kernel) or {}
    pinned = {a for a in reach if len((tensors.get(a) or {}).get("shape") or []) == arrays[a]["ndim"]}
    ndim_trials = [(a, "ndim", nd) for a in reach if a not in pinned
                   for nd in sorted(range(1, 7), key=lambda k: abs(k - arrays[a]["ndim"]))
                   if nd != arrays[a]["ndim"]][:6]
    rank_words = re.search(r"\b(rank|ndim|shape length|dimensions?|index has|index size|number of indices)\b",
                           message)
    if re.search(r"\bdtypes?\b", message) and not rank_words:
        ndim_trials = []      # cuTile names a dtype: a rank is never the repair of its message
    trials = ndim_trials + dtype_trials if rank_words else dtype_trials + ndim_trials
    fix = _trial_fix(op_dir, kernel, kinfo["params"], variant, trials, line)
    if not fix:
        return None           # no change the manifest could make helps: the kernel's own error
    name, field, value, passed = fix
    got = "compiles this variant" if passed else f"gets past line {line}"
    if field == "dtype" and name.split(", ")[0] not in defaulted:
        was = arrays[name.split(", ")[0]]["dtype"]
        return (f"the manifest gives {name} the dtype {was} (kernels/{kernel}/arrays); cuTile supports "
                f"{', '.join(asked)} there, and with {name} as {value} cuTile {got}: write dtype: {value} on "
                f"{name} under kernels/{kernel}/arrays (and on the tensor(s) bound to it)")
    if field == "dtype":
        names = ", ".join(defaulted)
        return (f"the array(s) {names} reach that line and took the variant's dtype {variant.dtype} because "
                f"the manifest gives them none (kernels/{kernel}/arrays); with {name} as {value} cuTile {got}: "
                f"write {name}: {{ndim: ..., role: ..., dtype: {value}}} under kernels/{kernel}/arrays (and "
                f"dtype: {value} on the tensor bound to it)")
    other = _rank_conflict(op_dir, kernel, model.manifest, kinfo["params"], variant, name, value)
    if other:
        # the rank that serves this variant refuses another: no single ndim serves both
        return Traced(f"{name} is launched with rank {value} in variant {variant.id} (cuTile {got} with ndim "
                      f"{value}) and rank {arrays[name]['ndim']} in variant {other} (which ndim {value} breaks); "
                      f"the manifest has one ndim per array of a kernel (kernels/{kernel}/arrays/{name}): a limit "
                      f"of tileport, no manifest edit serves both", owner="tool")
    return (f"the manifest gives {name} ndim {arrays[name]['ndim']} (kernels/{kernel}/arrays/{name}); with ndim "
            f"{value} cuTile {got}: write {name}: {{ndim: {value}, ...}}")


class Traced(str):
    """A :func:`traced_to_manifest` answer whose owner is not the manifest's (``owner``)."""

    def __new__(cls, text: str, owner: str = "manifest"):
        obj = super().__new__(cls, text)
        obj.owner = owner
        return obj


def _rank_conflict(op_dir, kernel: str, man: dict, params: list, variant, name: str, ndim: int,
                   limit: int = 3) -> str | None:
    """The id of another variant of ``kernel`` that cuTile compiles with the manifest's ``ndim``
    of array ``name`` and refuses with ``ndim`` (the array is launched with two ranks), or None;
    at most ``limit`` variants, two compiles each."""
    import tempfile

    from cuda.tile.compilation import export_kernel

    try:
        mod = load_module(source.kernel_py(op_dir))
    except BaseException:  # noqa: BLE001
        return None
    trial = [dict(p, ndim=ndim) if p["name"] == name else p for p in params]
    others = [v for v in manifest.variants(man, kernel) if v.id != variant.id][:limit]
    with tempfile.TemporaryDirectory() as tmp:
        for v in others:
            fn = kernel_object(mod, kernel, v)
            try:
                export_kernel(fn, [signature_for(params, v)], f"{tmp}/a.bc", output_format="tileir_bytecode")
            except Exception:  # noqa: BLE001 - refused as the manifest stands: no evidence
                continue
            try:
                export_kernel(fn, [signature_for(trial, v)], f"{tmp}/b.bc", output_format="tileir_bytecode")
            except Exception:  # noqa: BLE001 - refused with the other rank: the conflict
                return v.id
    return None


def supported_dtypes(message: str) -> list[str]:
    """The manifest codes of the dtypes a cuTile compiler message names as supported
    ("..., supported scale dtypes are float8_e8m0fnu" -> ``['f8e8m0fnu']``), in its order;
    empty when it names none (cuda-tile 1.7.0 TypeCheckingError wording)."""
    first = message.splitlines()[0] if message else ""      # the rest quotes the source line
    m = re.search(r"\bsupported\b", first)
    by_name = {cute: code for code, (cute, _, _) in manifest.DTYPES.items()}
    return list(dict.fromkeys(by_name[w] for w in re.findall(r"[a-z0-9_]+", first[m.end():] if m else "")
                              if w in by_name))


def unnameable_dtypes(message: str) -> list[str]:
    """The cuda.tile dtypes a cuTile compiler message asks for ("supported scale dtypes are
    float8_e8m0fnu") when none of those it names has a manifest code: what no manifest edit can
    supply (:data:`tileport.model.manifest.OTHER_CUTILE_DTYPES`). Empty when the message names
    no dtype or names one the manifest can write."""
    first = message.splitlines()[0] if message else ""      # the rest quotes the source line
    m = re.search(r"\bsupported\b", first)
    words = re.findall(r"[a-z0-9_]+", first[m.end():]) if m else []
    cute_codes = {cute for cute, _, _ in manifest.DTYPES.values()}
    asked = [w for w in dict.fromkeys(words) if w in manifest.OTHER_CUTILE_DTYPES or w in cute_codes]
    return asked if asked and all(w in manifest.OTHER_CUTILE_DTYPES for w in asked) else []


#: dtypes tried, in order, for an array whose defaulted dtype cuTile refused (after those the
#: compiler's message names): index arrays and fp32 side arrays are the common cases (issue 17)
_TRIED = ("i32", "f32", "i64")


def _trial_fix(op_dir, kernel, params, variant, trials, line, limit: int = 10):
    """The first ``(array, field, value)`` of ``trials`` (field ``dtype`` or ``ndim``) that makes
    cuTile compile the variant (returned with True) or at least no longer stop at ``line``
    (False: another array may need its fact too), or None; at most ``limit`` compiles."""
    import tempfile

    from cuda.tile.compilation import export_kernel

    try:
        mod = load_module(source.kernel_py(op_dir))
        fn = kernel_object(mod, kernel, variant)
    except BaseException:  # noqa: BLE001
        return None
    with tempfile.TemporaryDirectory() as tmp:
        for name, field, value in trials[:limit]:
            trial = [dict(p, **{field: value}) if p["name"] in name.split(", ") else p for p in params]
            try:
                export_kernel(fn, [signature_for(trial, variant)], f"{tmp}/t.bc", output_format="tileir_bytecode")
            except Exception as exc:  # noqa: BLE001 - refused again: where?
                at = getattr(getattr(exc, "loc", None), "line", None)
                if _is_type_error(exc) and at is not None and at != line:
                    return name, field, value, False
                continue
            return name, field, value, True
    return None


def run(op_dir, kernel, variant_id, out_bc, out_txt, out_json, op) -> dict:
    """Run :func:`export` and write a verdict (PASS / BLOCKED / ERROR); never raises on bad input.

    Owners: ``manifest`` for a malformed manifest, one that disagrees with the kernel (BLOCKED),
    and a cuTile type error traced to an array whose dtype the manifest left to the variant
    (ERROR, :func:`traced_to_manifest`: only a value the manifest chose, never the rank of an
    array whose manifest tensor has that many dimensions, never a rank for a message about a
    dtype); ``tool`` when the manifest format cannot describe the kernel, or cuTile asks for a
    dtype the manifest cannot name (:func:`unnameable_dtypes`) (ERROR); ``env`` for a missing tool
    or module; ``kernel`` for any other compile error, quoting cuTile's message.
    """
    base = dict(stage="reference_ir", op=op, kernel=kernel, variant=variant_id)
    try:
        export(op_dir, kernel, variant_id, out_bc, out_txt)
    except ManifestGap as exc:
        word = "ERROR" if exc.owner == "tool" else "BLOCKED"
        return write(Verdict(**base, verdict=word, owner=exc.owner, summary=str(exc)[:1500],
                             findings=[Finding("manifest", "critical", exc.owner, str(exc),
                                               ref=loc(exc.file, exc.line) if exc.file else None)]), out_json)
    except manifest.ManifestError as exc:
        return write(Verdict(**base, verdict="BLOCKED", owner="manifest", summary=str(exc),
                             findings=[Finding("manifest", "critical", "manifest", str(exc))]), out_json)
    except (frontend.AnalysisError, KeyError) as exc:
        owner = getattr(exc, "owner", "kernel")
        return write(Verdict(**base, verdict="BLOCKED", owner=owner, summary=str(exc),
                             findings=[Finding("input", "critical", owner, str(exc))]), out_json)
    except Exception as exc:  # cuTile compiler errors carry the kernel's file:line
        kpy = source.kernel_py(op_dir)
        tb = traceback.format_exc(limit=3)
        if isinstance(exc, (FileNotFoundError, PermissionError)) or (
                isinstance(exc, RuntimeError) and "tileirdisasm" in str(exc)):
            msg = f"tool failure while exporting {kernel}: {type(exc).__name__}: {exc}"
            return write(Verdict(**base, verdict="ERROR", owner="env", summary=msg[:1500],
                                 findings=[Finding("environment", "critical", "env", msg)],
                                 details={"traceback": tb}), out_json)
        if isinstance(exc, ModuleNotFoundError):
            used = kernel_body_uses(kpy, exc.name)
            if used:
                # the kernel body itself reads the module: moving the import would break it
                line, expr = used
                msg = (f"{kpy}:{line}: the kernel body names {expr} of the module '{exc.name}', which is not "
                       f"installed here; cuTile Python evaluates it when it compiles the kernel, so install "
                       f"'{exc.name}' or write the cuda.tile spelling (e.g. ct.float32 for a dtype)")
                return write(Verdict(**base, verdict="ERROR", owner="env", summary=msg,
                                     findings=[Finding("environment", "critical", "env", msg,
                                                       ref=loc(kpy, line))]), out_json)
            msg = (f"{kpy}: importing kernel.py needs the module '{exc.name}', which is not "
                   f"installed here (import it inside the launch function)")
            return write(Verdict(**base, verdict="ERROR", owner="env", summary=msg,
                                 findings=[Finding("environment", "critical", "env", msg,
                                                   ref=loc(kpy, None))]), out_json)
        text = f"{type(exc).__name__}: {exc}"
        m = re.search(r'"([^"]*kernel\.py)", line (\d+)', text) or re.search(r"kernel\.py:(\d+)", text)
        line = int(m.group(m.lastindex)) if m else None
        eloc = getattr(exc, "loc", None)
        if line is None and getattr(eloc, "line", None) and str(getattr(eloc, "filename", "")).endswith("kernel.py"):
            line = eloc.line
        lacking = unnameable_dtypes(text) if _is_type_error(exc) else []
        if lacking:
            msg = (f"{kpy}:{line or '?'}: cuTile Python refused variant {variant_id} of {kernel}: "
                   f"{text.splitlines()[0]}; it asks for {', '.join(lacking)}, which the manifest has no dtype "
                   f"for yet: a limit of tileport (no manifest change can give an array that dtype)")
            return write(Verdict(**base, verdict="ERROR", owner="tool", summary=msg[:1500],
                                 findings=[Finding("manifest", "critical", "tool", msg[:3000],
                                                   ref=loc(kpy, line))],
                                 details={"traceback": tb, "compiler_message": text[:3000]}), out_json)
        why = traced_to_manifest(op_dir, kernel, variant_id, line, text) if _is_type_error(exc) else None
        if why:
            msg = (f"{kpy}:{line}: cuTile Python refused variant {variant_id} of {kernel}: "
                   f"{text.splitlines()[0]}; {why}")
            owner = getattr(why, "owner", "manifest")
            return write(Verdict(**base, verdict="ERROR", owner=owner, summary=msg[:1500],
                                 findings=[Finding("manifest", "critical", owner, msg[:3000],
                                                   ref=loc(kpy, line))],
                                 details={"traceback": tb, "compiler_message": text[:3000]}), out_json)
        msg = f"{kpy}:{line or '?'}: cuTile Python compile failed: {text}"
        return write(Verdict(**base, verdict="ERROR", owner="kernel", summary=msg.splitlines()[0][:1500],
                             findings=[Finding("build", "critical", "kernel", msg[:3000],
                                               ref=loc(kpy, line))],
                             details={"traceback": tb}), out_json)
    return write(Verdict(**base, verdict="PASS", owner=None, summary="Tile IR exported",
                         artifacts={"bytecode": str(out_bc), "text": str(out_txt)}), out_json)


def kernel_body_uses(kernel_py: str | Path, module: str | None) -> tuple[int, str] | None:
    """``(line, expression)`` of the first use of ``module`` (imported under any name) inside a
    ``@ct.kernel`` function or a module-level helper of ``kernel_py``, or None (the module is
    only needed by launch code, or the file does not parse)."""
    import ast

    if not module:
        return None
    try:
        tree = ast.parse(Path(kernel_py).read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    top = module.split(".")[0]
    names = {a.asname or a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import)
             for a in n.names if a.name.split(".")[0] == top}
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        decorated = any("kernel" in ast.unparse(d) or "function" in ast.unparse(d) for d in fn.decorator_list)
        if not decorated:
            continue
        for n in ast.walk(fn):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in names:
                return n.lineno, ast.unparse(n)
    return None


def _is_type_error(exc: BaseException) -> bool:
    """cuTile's type-checking errors (cuda-tile 1.7.0 ``cuda/tile/_exception.py``): the ones a
    wrong parameter dtype produces."""
    return type(exc).__name__ in ("TypeCheckingError", "TileTypeError", "InvalidValueError")
