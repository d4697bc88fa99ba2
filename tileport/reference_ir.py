"""Stage ``reference_ir``: the cuTile Python reference's Tile IR, on the CPU.

For one (kernel, variant) it builds a ``KernelSignature`` (arrays: dtype, rank, int32
indices, non-negative strides, no aliasing, innermost stride 1 -- the same layout facts the
Rust side is compiled with; f32/i32 scalars; constexprs as plain ints), exports Tile IR
bytecode with ``cuda.tile.compilation.export_kernel(..., output_format="tileir_bytecode")``
and disassembles it with ``tileirdisasm`` (both facts: ``shared/notes/toolchain.md``).
"""
from __future__ import annotations

import importlib.util
import re
import sys
import traceback
from pathlib import Path

from . import analyze as A
from . import manifest as M
from . import source as S
from . import toolchain
from .verdict import Finding, Verdict, atomic_write_text, loc, write


def load_module(kernel_py: str | Path):
    """Import ``kernel.py`` from its path under a private module name."""
    kernel_py = Path(kernel_py)
    name = f"tileport_ref_{kernel_py.parent.name}"
    spec = importlib.util.spec_from_file_location(name, kernel_py)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def signature_for(kernel_params: list[dict], variant: M.Variant):
    """A ``KernelSignature`` for one variant.

    ``kernel_params`` is ``analysis.json``'s ``kernels[i].params``. Arrays get the variant
    dtype (the manifest's ``{dtype}``), scalars their own dtype, constexprs the variant value.
    """
    import cuda.tile as ct
    from cuda.tile.compilation import (ArrayConstraint, CallingConvention, KernelSignature,
                                       ScalarConstraint)

    dt = {"f16": ct.float16, "bf16": ct.bfloat16, "f32": ct.float32, "i32": ct.int32}
    params = []
    for p in kernel_params:
        if p["kind"] == "array":
            nd = p["ndim"]
            params.append(ArrayConstraint(
                dt[variant.dtype], nd, index_dtype=ct.int32, stride_lower_bound_incl=0,
                alias_groups=[], may_alias_internally=False,
                stride_constant=[None] * (nd - 1) + [1]))
        elif p["kind"] == "constexpr":
            params.append(variant.constexprs[p["name"]])   # int, float or bool as declared
        else:
            params.append(ScalarConstraint(dt[p["dtype"]]))
    return KernelSignature(params, calling_convention=CallingConvention.cutile_python_v2())


def export(op_dir: str | Path, kernel: str, variant_id: str, out_bc: str | Path,
           out_txt: str | Path) -> None:
    """Export one variant's Tile IR bytecode and its text.

    Raises:
        A.AnalysisError / M.ManifestError: bad operator input.
        RuntimeError: cuTile's compiler or ``tileirdisasm`` failed (message has its stderr).
    """
    op_dir = Path(op_dir)
    details = A.analyse(op_dir)
    man = M.load(op_dir / "manifest.yaml")
    variant = M.variant_by_id(man, variant_id)
    kinfo = next((k for k in details["kernels"] if k["name"] == kernel), None)
    if kinfo is None:
        raise KeyError(f"{S.kernel_py(op_dir)}: no kernel '{kernel}'")
    try:
        mod = load_module(S.kernel_py(op_dir))
    except SystemExit as exc:
        raise RuntimeError(f"importing kernel.py called sys.exit({exc.code})") from None
    from cuda.tile.compilation import export_kernel

    sig = signature_for(kinfo["params"], variant)
    out_bc = Path(out_bc)
    out_bc.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_bc.with_name(out_bc.name + ".tmp")
    export_kernel(getattr(mod, kernel), [sig], str(tmp), output_format="tileir_bytecode")
    text = toolchain.disassemble(tmp)
    tmp.replace(out_bc)
    atomic_write_text(out_txt, text)


def run(op_dir, kernel, variant_id, out_bc, out_txt, out_json, op) -> dict:
    """Run :func:`export` and write a verdict (PASS / BLOCKED / ERROR); never raises on bad input."""
    try:
        export(op_dir, kernel, variant_id, out_bc, out_txt)
    except (A.AnalysisError, M.ManifestError, KeyError) as exc:
        owner = getattr(exc, "owner", "kernel")
        return write(Verdict(stage="reference_ir", op=op, kernel=kernel, variant=variant_id,
                             verdict="BLOCKED", owner=owner, summary=str(exc),
                             findings=[Finding("input", "critical", owner, str(exc))]), out_json)
    except Exception as exc:  # cuTile compiler errors carry the kernel's file:line
        kpy = S.kernel_py(op_dir)
        tb = traceback.format_exc(limit=3)
        if isinstance(exc, (FileNotFoundError, PermissionError)) or (
                isinstance(exc, RuntimeError) and "tileirdisasm" in str(exc)):
            msg = f"tool failure while exporting {kernel}: {type(exc).__name__}: {exc}"
            return write(Verdict(stage="reference_ir", op=op, kernel=kernel, variant=variant_id,
                                 verdict="ERROR", owner="env", summary=msg[:1500],
                                 findings=[Finding("environment", "critical", "env", msg)],
                                 details={"traceback": tb}), out_json)
        if isinstance(exc, ModuleNotFoundError):
            msg = (f"{kpy}: importing kernel.py needs the module '{exc.name}', which is not "
                   f"installed here (import it inside the launch function)")
            return write(Verdict(stage="reference_ir", op=op, kernel=kernel, variant=variant_id,
                                 verdict="ERROR", owner="env", summary=msg,
                                 findings=[Finding("environment", "critical", "env", msg,
                                                   ref=loc(kpy, None))]), out_json)
        text = f"{type(exc).__name__}: {exc}"
        m = re.search(r'"([^"]*kernel\.py)", line (\d+)', text) or re.search(r"kernel\.py:(\d+)", text)
        line = int(m.group(m.lastindex)) if m else None
        msg = f"{kpy}:{line or '?'}: cuTile Python compile failed: {text}"
        return write(Verdict(stage="reference_ir", op=op, kernel=kernel, variant=variant_id,
                             verdict="ERROR", owner="kernel", summary=msg.splitlines()[0][:1500],
                             findings=[Finding("build", "critical", "kernel", msg[:3000],
                                               ref=loc(kpy, line))],
                             details={"traceback": tb}), out_json)
    return write(Verdict(stage="reference_ir", op=op, kernel=kernel, variant=variant_id,
                         verdict="PASS", owner=None, summary="Tile IR exported",
                         artifacts={"bytecode": str(out_bc), "text": str(out_txt)}), out_json)
