"""Stages ``host_shim`` and ``host_build`` (agent role "host builder", deterministic backend).

``host_shim`` (per operator) writes ``results/<op>/host/ffi.rs``: one ``extern "C"`` function per
(kernel, Rust entry) -- a *variant family*: every variant the translator compiled to that entry,
the dtype chosen at run time by the descriptors' dtype code, the int constexprs passed as
``i32`` -- and ``results/<op>/host/ffi.json``, the machine-readable signature of each function
that :mod:`tileport.host.ffi` binds with ctypes.

C signature of every shim (all integers native-endian, the ABI of ``rust/host/abi.rs``)::

    int32_t tp_<op>__<entry>(const TpTensor *<array>..., <f32|i32> <scalar>...,
                             int32_t <constexpr>..., uint32_t grid_x, uint32_t grid_y,
                             uint32_t grid_z, int32_t device, void *stream);

Beside each shim, ``<symbol>__packed(const uint8_t *block)`` takes the same arguments laid out
in one block (:func:`call_block`: the descriptors, then the scalars, constexprs, launch grid,
device and stream) and calls the shim: one foreign-call argument instead of one per parameter,
which is what a Python caller pays per argument.

Arrays and scalars come in the kernel's parameter order (arrays first in the C signature, the
kernel called with its own order: ``ffi.json``'s ``order``). The shim checks every descriptor
(null pointers, rank, dtype, extents/strides within i32), borrows the memory as cutile tensors
(no copy, never freed), and launches the kernel asynchronously on the caller's stream; it returns
a ``TP_*`` status code and never lets a panic cross the boundary. The variant dtype is the one
dtype of the arrays that have it; an array of its own dtype (``ffi.json``: ``"dtype": {variant
dtype: code}``, e.g. an f32 Rstd beside f16 data, an int32 index array) must have its code
(:data:`DTYPE_CODES`) and is borrowed with its own element type.

``host_build`` (one job for all operators) assembles ``results/host/`` -- one cdylib crate with
every operator's shim and translated kernels, the committed ``rust/host-template/Cargo.lock``
(``--locked``), release profile -- and builds ``results/host/libtileport_host.so``. An operator
whose port did not build, or whose files break the combined build, is left out (named in the
verdict, with rustc's file:line) and the others are built without it.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from tileport.core import agents, toolchain
from tileport.core.verdict import Finding, Verdict, VerdictError, atomic_write_text, brief, loc, read, write

REPO = Path(__file__).resolve().parents[2]
HOST_TEMPLATE = REPO / "rust" / "host-template"
ABI_RS = REPO / "rust" / "host" / "abi.rs"
ABI_VERSION = 1
LIB_NAME = "libtileport_host.so"
#: ``TP_MAX_DIMS`` and ``size_of::<TpTensor>()`` of ``rust/host/abi.rs``
MAX_DIMS, DESC_BYTES = 6, 120

#: status codes of ``rust/host/abi.rs`` -> (name, fail_class, meaning)
STATUS = {
    0: ("TP_OK", None, "ok"),
    1: ("TP_ERR_NULL_POINTER", "host", "a descriptor or its data pointer is null"),
    2: ("TP_ERR_BAD_RANK", "host", "a descriptor's rank differs from the kernel parameter's"),
    3: ("TP_ERR_BAD_DTYPE", "host", "unknown or mixed dtype, or no instance for it"),
    4: ("TP_ERR_BAD_SHAPE", "host", "an extent/stride outside i32, or too many bytes for cutile"),
    5: ("TP_ERR_CUDA_CONTEXT", "env", "no CUDA driver/device, or its context cannot be retained"),
    6: ("TP_ERR_LAUNCH", "kernel", "cutile failed to compile or launch the kernel"),
    7: ("TP_ERR_PANIC", "host", "a panic inside the shim or cutile, caught at the boundary"),
    8: ("TP_ERR_BAD_ARGUMENT", "host", "a zero launch-grid dimension or a bad device ordinal"),
}
#: dtype codes of ``TpTensor.dtype`` (``rust/host/abi.rs``): the variant dtypes f16/bf16/f32
#: and the element types an array of its own dtype may have (an f32 Rstd, an int32 index array)
DTYPE_CODES = {"f16": 1, "bf16": 2, "f32": 3, "f64": 4, "i8": 5, "i16": 6, "i32": 7, "i64": 8,
               "u8": 9, "u16": 10, "u32": 11, "u64": 12, "bool": 13, "f8e4m3fn": 14, "f8e5m2": 15}
_RUST_ELEM = {"f16": "half::f16", "bf16": "half::bf16", "f32": "f32", "f64": "f64", "i8": "i8",
              "i16": "i16", "i32": "i32", "i64": "i64", "u8": "u8", "u16": "u16", "u32": "u32",
              "u64": "u64", "bool": "bool", "f8e4m3fn": "cuda_core::f8e4m3fn",
              "f8e5m2": "cuda_core::f8e5m2"}
_RUST_SCALAR = {"f32": "f32", "i32": "i32"}


class ShimError(ValueError):
    """The inputs of the shim generator are inconsistent (named file and cause)."""


def symbol(op: str, entry: str) -> str:
    """C symbol of the shim of one (operator, Rust entry): ``tp_<op>__<entry>``."""
    return f"tp_{op}__{entry}"


def families(kinfo: dict, entries: dict[str, str], variants: list[dict]) -> dict[str, list[dict]]:
    """Group a kernel's variants by the Rust entry the translator compiled them to.

    ``entries`` is the source map's ``{variant id -> entry}`` (a kernel without constexpr
    specialisation has one entry named like the kernel). Returns ``{entry: [variant, ...]}`` in
    manifest order; each variant is the analysis' ``{"id", "dtype", "constexprs"}``.
    """
    out: dict[str, list[dict]] = {}
    for v in variants:
        out.setdefault(entries.get(v["id"], kinfo["name"]), []).append(v)
    return out


def function_spec(op: str, kinfo: dict, entry: str, fam: list[dict]) -> dict:
    """Machine-readable signature of one shim (what ``ffi.json`` lists and ctypes binds)."""
    arrays, scalars, constexprs = [], [], []
    for p in kinfo["params"]:
        if p["kind"] == "array":
            a = {"name": p["name"], "ndim": p["ndim"], "role": p["role"]}
            # an array of its own dtype: its dtype per variant dtype of the family
            own = {v["dtype"]: v.get("arrays", {}).get(p["name"], v["dtype"]) for v in fam}
            if any(d != vd for vd, d in own.items()):
                a["dtype"] = own
            arrays.append(a)
        elif p["kind"].startswith("scalar"):
            scalars.append({"name": p["name"], "type": p.get("dtype", "f32")})
        elif p["kind"] == "constexpr" and p.get("ctype", "int") == "int":
            constexprs.append(p["name"])
    return {
        "symbol": symbol(op, entry), "kernel": kinfo["name"], "entry": entry,
        "variants": [v["id"] for v in fam],
        "dtypes": sorted({v["dtype"] for v in fam}, key=list(DTYPE_CODES).index),
        "arrays": arrays, "scalars": scalars, "constexprs": constexprs,
        # constexprs every variant of the family gives a positive value (tile sizes, counts):
        # the shim refuses zero or less for them; one the manifest sets to zero or less
        # somewhere (TileGym's LOAD_LATENCY=-1, APPROXIMATE=0, a negative SEED) goes through
        "positive": [c for c in constexprs
                     if all(type(v["constexprs"].get(c)) is int and v["constexprs"][c] >= 1 for v in fam)],
        # the entry's runtime arguments in the kernel's parameter order (arrays and scalars may
        # interleave: tg_mhc's finalize kernel takes Bias after its scalars)
        "order": [p["name"] for p in kinfo["params"] if p["kind"] == "array" or p["kind"].startswith("scalar")],
    }


def unread_arrays(port: str, entry: str, arrays: list[str]) -> list[str]:
    """The array parameters of Rust entry ``entry`` that its body never names, in ``arrays``' order.

    ``port``: the generated kernel module (``results/<op>/rust/src/<kernel>.rs``). An array the body
    does not name is never loaded, stored, viewed or measured by that entry, whatever the launch
    (a compile-time ``if`` of the variant's constexprs removed every use, e.g. tg_moe's
    ``a_scale_ptr`` without fp8): the caller may pass no memory for it. Read from the compiled
    port itself rather than the translator's load/store record (``accessed_arrays``), which does
    not count shape reads; naming is a superset of every access, so the list errs towards
    "read". An entry not found, or a parameter its signature spells otherwise, counts as read.
    """
    m = re.search(r"\bpub unsafe fn " + re.escape(entry) + r"\b", port)
    end = port.find("\n    ) {", m.end()) if m else -1
    if end < 0:
        return []
    nxt = port.find("#[cutile::entry", end)
    sig, body = port[m.end():end], port[end:nxt if nxt >= 0 else len(port)]
    # a parameter spelled otherwise in Rust (not found in the signature) counts as read
    return [a for a in arrays if re.search(r"(?<![\w#])" + re.escape(a) + r":", sig)
            and not re.search(r"\b" + re.escape(a) + r"\b", body)]


def desc_format(ranks: list[int]) -> str:
    """``struct`` format (no byte-order prefix) of consecutive ``TpTensor`` descriptors of arrays
    of these ranks: the layout of ``#[repr(C)] TpTensor`` (:data:`DESC_BYTES` each: u64 data,
    i32 ndim + 4 pad, i64 shape[6], i64 strides[6], i32 dtype + 4 pad), the extents and strides
    beyond the rank left as zero padding."""
    out = ""
    for r in ranks:
        pad = 8 * (MAX_DIMS - r)
        out += f"Qi4x{r}q{pad}x{r}q{pad}xi4x"
    return out


def call_block(spec: dict) -> tuple[str, dict]:
    """Layout of the argument block of ``<symbol>__packed`` for one shim spec (``ffi.json`` entry).

    Returns ``(fmt, offsets)``: ``fmt`` a native-byte-order ``struct`` format whose values are,
    in order, every array's descriptor fields (data, ndim, the ``ndim`` extents and strides,
    dtype code), the scalars (f32 / i32), the constexprs (i32), grid x, y, z (u32), the device
    (i32) and the stream handle (u64, 0 = the legacy default stream); ``offsets`` the byte
    offset of each: ``{"arrays": [...], "scalars": [...], "constexprs": [...], "grid": [x, y,
    z], "device": n, "stream": n, "size": bytes}``. Descriptors come first (the block must be
    8-byte aligned; they are :data:`DESC_BYTES` apart), 4-byte fields after them, the stream
    8-byte aligned last.
    """
    k = len(spec["arrays"])
    fmt = "=" + desc_format([a["ndim"] for a in spec["arrays"]])
    off = {"arrays": [DESC_BYTES * i for i in range(k)]}
    pos = DESC_BYTES * k
    off["scalars"] = []
    for sc in spec["scalars"]:
        off["scalars"].append(pos)
        fmt += "i" if sc["type"] == "i32" else "f"
        pos += 4
    off["constexprs"] = [pos + 4 * i for i in range(len(spec["constexprs"]))]
    fmt += "i" * len(spec["constexprs"])
    pos += 4 * len(spec["constexprs"])
    off["grid"] = [pos, pos + 4, pos + 8]
    off["device"] = pos + 12
    fmt += "IIIi"
    pos += 16
    pad = -pos % 8
    fmt += f"{pad}xQ" if pad else "Q"
    off["stream"] = pos + pad
    off["size"] = pos + pad + 8
    return fmt, off


def _packed_fn(spec: dict) -> str:
    """Rust text of the ``<symbol>__packed`` entry of one shim (see :func:`call_block`)."""
    _, off = call_block(spec)
    sym = spec["symbol"]
    args = [f"blk.add({o}) as *const TpTensor" for o in off["arrays"]]
    args += [f"rd::<{_RUST_SCALAR[s['type']]}>(blk, {o})" for s, o in zip(spec["scalars"], off["scalars"])]
    args += [f"rd::<i32>(blk, {o})" for o in off["constexprs"]]
    args += [f"rd::<u32>(blk, {o})" for o in off["grid"]]
    args += [f"rd::<i32>(blk, {off['device']})", f"rd::<u64>(blk, {off['stream']}) as usize as *mut c_void"]
    return (f"/// `{sym}` with its arguments in one block of {off['size']} bytes (tileport's call_block layout).\n"
            f"#[no_mangle]\npub unsafe extern \"C\" fn {sym}__packed(blk: *const u8) -> i32 {{\n"
            f"    if let Some(rc) = bad_block(blk, \"{sym}__packed\") {{\n        return rc;\n    }}\n"
            f"    {sym}(\n        " + ",\n        ".join(args) + ",\n    )\n}\n")


def _shim_fn(spec: dict) -> str:
    """Rust text of one ``extern "C"`` shim."""
    A = [(a["name"], f"arr_{a['name']}", a["ndim"]) for a in spec["arrays"]]
    S = [(s["name"], f"sc_{s['name']}", _RUST_SCALAR[s["type"]]) for s in spec["scalars"]]
    X = [(c, f"cx_{c}") for c in spec["constexprs"]]
    sym, kernel, entry = spec["symbol"], spec["kernel"], spec["entry"]
    params = ([f"{r}: *const TpTensor" for _, r, _ in A] + [f"{r}: {t}" for _, r, t in S]
              + [f"{r}: i32" for _, r in X]
              + ["grid_x: u32", "grid_y: u32", "grid_z: u32", "device: i32", "stream: *mut c_void"])
    shown = ", ".join(f"{a['name']} ({a['ndim']}-D, {a['role']})" for a in spec["arrays"])
    doc = (f"/// `{kernel}` (Rust entry `{entry}`), variants: {', '.join(spec['variants'])}.\n"
           f"/// Arrays: {shown}"
           f"; scalars: {', '.join(n for n, _, _ in S) or 'none'}"
           f"; constexprs: {', '.join(n for n, _ in X) or 'none'}.\n")
    body = [f"    guard(\"{sym}\", || {{"]
    for n, r, d in A:
        body.append(f"        let {r} = check({r}, \"{n}\", {d})?;")
    for n, r, _ in A:
        if n in spec.get("strided", ()):    # strides read by dimension: the layout it was compiled for
            body.append(f"        let {r}_as_compiled = as_compiled_strides({r}, \"{n}\")?;")
            body.append(f"        let {r} = &{r}_as_compiled;")
    own = {a["name"]: a["dtype"] for a in spec["arrays"] if "dtype" in a}   # arrays of their own dtype
    var = [(n, r) for n, r, _ in A if n not in own]
    if var:   # the variant dtype: the one dtype of the arrays that have it
        body.append("        let dtype = same_dtype(&[" + ", ".join(f"(\"{n}\", {r})" for n, r in var) + "])?;")
    else:     # every array has a dtype of its own: the family dtype whose array dtypes match
        cands = ", ".join(f"({DTYPE_CODES[dt]}, &[" + ", ".join(
            f"(\"{n}\", {r}, {DTYPE_CODES[own[n][dt]]})" for n, r, _ in A) + "][..])" for dt in spec["dtypes"])
        body.append(f"        let dtype = dtype_by_arrays(&[{cands}])?;")
    for n, r in X:
        if n in spec.get("positive", ()):
            body.append(f"        if {r} < 1 {{ return Err((TP_ERR_BAD_ARGUMENT, "
                        f"format!(\"constexpr {n} = {{}} is not positive\", {r}))); }}")
    body.append("        let grid = grid(grid_x, grid_y, grid_z)?;")
    body.append("        let (ctx, s) = context_and_stream(device, stream)?;")
    body.append("        match dtype_name(dtype) {")
    for dt in spec["dtypes"]:
        elems = {n: own[n][dt] if n in own else dt for n, _, _ in A}
        given = {n: f"borrow::<{_RUST_ELEM[elems[n]]}>({r}, &ctx)" for n, r, _ in A} | {n: r for n, r, _ in S}
        args = ", ".join(given[n] for n in spec.get("order", list(given)))
        gens = ", ".join(["\"" + dt + "\".to_string()"] + [f"{r}.to_string()" for _, r in X])
        checks = "".join(f"expect_dtype(\"{n}\", {r}, {DTYPE_CODES[elems[n]]})?; " for n, r, _ in A if n in own)
        launch = (f"launched(super::{kernel}::port::{entry}({args})\n"
                  f"                .generics(vec![{gens}]).grid(grid).async_on(&s))")
        if checks:
            body.append(f"            Some(\"{dt}\") => {{ {checks}{launch} }}")
        else:
            body.append(f"            Some(\"{dt}\") => {launch},")
    body.append(f"            other => Err((TP_ERR_BAD_DTYPE, format!(\"no {kernel} instance for dtype {{}} "
                f"(variants of this family: {', '.join(spec['dtypes'])})\", other.unwrap_or(\"?\")))),")
    body.append("        }")
    body.append("    })")
    return (doc + "#[no_mangle]\npub unsafe extern \"C\" fn " + sym + "(\n    "
            + ",\n    ".join(params) + ",\n) -> i32 {\n" + "\n".join(body) + "\n}\n\n" + _packed_fn(spec))


def render(op: str, specs: list[dict]) -> str:
    """Rust text of ``results/<op>/host/ffi.rs`` for the given function specs."""
    head = (f"// Generated by tileport's host builder (backend: deterministic) for operator {op}.\n"
            "// Do not edit: rerun the workflow. ABI: rust/host/abi.rs (TpTensor, TP_* codes).\n"
            "#![allow(clippy::too_many_arguments)]\n"
            "use std::ffi::c_void;\n\n"
            "use cuda_async::device_operation::DeviceOp;\n"
            "use cutile::tile_kernel::TileKernel;\n\n"
            "use crate::abi::*;\n")
    return head + "".join("\n" + _shim_fn(s) for s in specs)


def write_shim(op: str, analysis_json: str | Path, results_op: str | Path, out_rs: str | Path,
               out_json: str | Path, out_verdict: str | Path, attempt: int = 1) -> dict:
    """Stage ``host_shim``: generate ``ffi.rs`` + ``ffi.json`` for every translated kernel.

    Reads ``analysis.json`` (kernel parameters, variants) and, per kernel, the write_kernel
    verdict and the source map's ``entries`` under ``results_op``. Kernels that were not
    translated are listed as ``blocked`` (no shim). Verdict PASS, or BLOCKED when no kernel
    has a port. Raises nothing for bad upstream files: they end in the verdict.
    """
    results_op = Path(results_op)
    try:
        an = read(analysis_json)
    except VerdictError as exc:
        return write(Verdict(stage="host_shim", op=op, verdict="BLOCKED", owner="kernel",
                             fail_class="kernel", attempt=attempt, summary=str(exc)), out_verdict)
    det = an.get("details", {})
    specs, blocked = [], {}
    for kinfo in det.get("kernels", []):
        k = kinfo["name"]
        try:
            wk = read(results_op / "write_kernel" / f"{k}.json")
        except VerdictError as exc:
            blocked[k] = str(exc)
            continue
        if wk["verdict"] != "PASS":
            blocked[k] = f"not translated: {wk['summary']}"
            continue
        try:
            entries = json.loads((results_op / "rust" / "src" / f"{k}.rs.map.json").read_text())["entries"]
            port = (results_op / "rust" / "src" / f"{k}.rs").read_text()
        except (OSError, ValueError, KeyError) as exc:
            blocked[k] = f"source map or port unreadable: {exc}"
            continue
        # arrays whose strides the port reads by dimension
        # imported here: the translator's modules are needed by the shim writer alone, not by
        # the GPU-side jobs that import this module for sources_sha (issue 32)
        from tileport.translate import memory

        strided = memory.strided_arrays(port)
        # variants the writer left out (blocking is per variant) have no entry to call
        left_out = set((wk.get("details") or {}).get("blocked_variants") or {})
        kvars = [v for v in kinfo.get("variants", det.get("variants", [])) if v["id"] not in left_out]
        for entry, fam in families(kinfo, entries, kvars).items():
            spec = function_spec(op, kinfo, entry, fam) | ({"strided": strided} if strided else {})
            unread = unread_arrays(port, entry, [a["name"] for a in spec["arrays"]])
            specs.append(spec | ({"unread": unread} if unread else {}))
    doc = {"op": op, "abi_version": ABI_VERSION, "functions": specs, "blocked": blocked,
           "status_codes": {str(c): n for c, (n, _, _) in STATUS.items()},
           "dtype_codes": DTYPE_CODES}
    atomic_write_text(out_rs, render(op, specs))
    atomic_write_text(out_json, json.dumps(doc, indent=1) + "\n")
    if not specs:
        return write(Verdict(stage="host_shim", op=op, verdict="BLOCKED", owner="kernel",
                             fail_class="kernel", attempt=attempt,
                             summary="no translated kernel: no shim",
                             details={"blocked": blocked}), out_verdict)
    return write(Verdict(stage="host_shim", op=op, verdict="PASS", attempt=attempt,
                         summary=f"{len(specs)} shim(s): {', '.join(s['symbol'] for s in specs)}",
                         details={"functions": [s["symbol"] for s in specs], "blocked": blocked},
                         artifacts={"ffi_rs": str(out_rs), "ffi_json": str(out_json)}), out_verdict)


def write_shim_llm(op: str, analysis_json: str | Path, results_op: str | Path, out_rs: str | Path,
                   out_json: str | Path, out_verdict: str | Path, role: dict, rnd: int = 1,
                   previous: str = "", attempt: int = 1) -> dict:
    """Stage ``host_shim`` with the host builder role played by an LLM (``prompts/host_builder.md``).

    tileport first writes the signatures (``ffi.json``, from the analysis: the contract the
    Python side calls) and its own shim (:func:`write_shim`); the LLM is shown both, the ABI
    module, the kernels and ``previous`` (what the last GPU round found) and replies with the
    whole ``ffi.rs``. ``role``: ``{"backend", "settings", "results", "replay_dir"}``
    (:func:`tileport.core.agents.role_config`); transcript
    ``results/<op>/transcripts/host_shim/attempt-<rnd>.json`` (one per GPU round's tree).
    tileport checks that every signature's symbol is exported (``#[no_mangle]`` + ``extern "C"
    fn <symbol>``); cargo (rule host_build) and the GPU stages judge the rest.
    Verdicts: PASS (``details.backend``, ``transcript``, ``agent_claim``); FAIL ``fail_class
    agent_output`` (no usable reply, a symbol missing); ERROR ``fail_class env`` (key, network,
    replay miss); the deterministic shim's own BLOCKED when no kernel has a port. The failed
    cases leave an ``ffi.rs`` that only says why (no deterministic fallback is passed off as the
    LLM's). Never raises for a bad reply.
    """
    det = write_shim(op, analysis_json, results_op, out_rs, out_json, out_verdict, attempt=attempt)
    if det["verdict"] != "PASS":
        return det
    results_op = Path(results_op)
    spec = json.loads(Path(out_json).read_text())
    kernels = []
    for k in sorted({f["kernel"] for f in spec["functions"]}):
        kernels.append(f"// {k}.rs\n" + (results_op / "rust" / "src" / f"{k}.rs").read_text())
    fields = {"op": op, "attempt": rnd, "signatures": json.dumps(spec["functions"], indent=1),
              "abi": ABI_RS.read_text(), "kernels": "\n".join(kernels)[:40000],
              "current_shim": Path(out_rs).read_text(), "previous": previous or "(first attempt)"}
    got = agents.consult("host_builder", fields, role, op=op, stage="host_shim", attempt=rnd, lang="rust",
                         repo_root=Path(role["results"]).resolve().parent)
    base = dict(stage="host_shim", op=op, attempt=attempt)
    details = {"backend": got["backend"], "round": rnd, "functions": [f["symbol"] for f in spec["functions"]]}
    if "transcript" in got:
        details["transcript"] = got["transcript"]
    problem = got.get("error")
    text = got.get("output", "")
    if not problem:
        lacking = [f["symbol"] for f in spec["functions"]
                   if not re.search(r'extern\s+"C"\s+fn\s+' + re.escape(f["symbol"]) + r"\s*\(", text)]
        if lacking or "#[no_mangle]" not in text:
            problem = f"the shim does not export {lacking or 'any #[no_mangle] symbol'}"
    if problem:
        fc = got.get("fail_class", "agent_output") if "error" in got else "agent_output"
        atomic_write_text(out_rs, f"// host builder ({got['backend']}) round {rnd} gave no usable shim: "
                                  f"{problem[:300]}\n")
        return write(Verdict(**base, verdict="ERROR" if fc == "env" else "FAIL", owner="env" if fc == "env" else "host",
                             fail_class=fc, summary=f"host builder ({got['backend']}): {problem}"[:1500],
                             findings=[Finding("build", "critical", "env" if fc == "env" else "host",
                                               f"{out_rs}: {problem}"[:1500])],
                             details=details), out_verdict)
    details["agent_claim"] = got.get("agent_claim")
    atomic_write_text(out_rs, f"// Written by tileport's host builder (backend: {got['backend']}) for operator "
                              f"{op}, round {rnd}; transcript {got.get('transcript', '-')}.\n" + text)
    return write(Verdict(**base, verdict="PASS",
                         summary=f"{len(spec['functions'])} shim(s) by the LLM host builder: "
                                 f"{', '.join(details['functions'])}",
                         details=details, artifacts={"ffi_rs": str(out_rs), "ffi_json": str(out_json)}),
                 out_verdict)


# ---------------------------------------------------------------------------------------------
# host_build


def _op_eligible(results: Path, op: str) -> tuple[list[str], str]:
    """Kernels of ``op`` that the combined library can include, or ``([], reason)``."""
    try:
        b = read(results / op / "rust" / "build.json")
        s = read(results / op / "host" / "shim.json")
    except VerdictError as exc:
        return [], str(exc)
    if b["verdict"] != "PASS":
        return [], f"port crate did not build: {b['summary']}"
    if s["verdict"] != "PASS":
        if s.get("fail_class") in ("agent_output", "host", "env"):   # the host builder's own failure
            return [], f"host shim unusable ({s['fail_class']}): {s['summary']}"
        return [], f"no shim: {s['summary']}"
    path = results / op / "host" / "ffi.json"
    try:
        spec = json.loads(path.read_text())
        kernels = sorted({f["kernel"] for f in spec["functions"]})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [], f"{path}: unreadable shim signatures: {exc}"
    missing = [k for k in kernels if k not in b["details"].get("kernels", [])]
    if missing:
        return [], f"shim names kernels the port crate lacks: {missing}"
    return kernels, ""


def package_names(host: Path) -> tuple[str, str]:
    """(package, library) name of the host crate at ``host``: unique per checkout, because every
    checkout shares the cargo target directory, where one package name = one library file
    (two clones would otherwise overwrite each other's library)."""
    h = hashlib.sha1(str(Path(host).resolve()).encode()).hexdigest()[:8]
    return f"tileport-host-{h}", f"tileport_host_{h}"


def template_files(host: Path) -> dict[str, str]:
    """``Cargo.toml``, ``Cargo.lock`` and ``src/abi.rs`` of a host-library crate at ``host``: the
    committed template (``rust/host-template``) with its package renamed to
    :func:`package_names` ``(host)``, the lock renamed alike (so ``--locked`` builds the same
    dependency versions). Raises RuntimeError when the template's lock lacks its one root package."""
    pkg, lib_name = package_names(host)
    toml = ((HOST_TEMPLATE / "Cargo.toml").read_text()
            .replace('name = "tileport-host"', f'name = "{pkg}"')
            .replace('name = "tileport_host"', f'name = "{lib_name}"'))
    lock = (HOST_TEMPLATE / "Cargo.lock").read_text()
    if lock.count('name = "tileport-host"\n') != 1:
        raise RuntimeError(f"{HOST_TEMPLATE / 'Cargo.lock'}: expected one root package 'tileport-host'")
    return {"Cargo.toml": toml,
            "Cargo.lock": lock.replace('name = "tileport-host"\n', f'name = "{pkg}"\n'),
            "src/abi.rs": ABI_RS.read_text()}


def assemble(host: Path, results: Path, ops: dict[str, list[str]]) -> dict[str, str]:
    """Write the host crate under ``host``: the template's Cargo.toml/lock, ``src/abi.rs``,
    ``src/lib.rs`` and one ``src/ops/<op>/`` module per operator (its kernels and ffi.rs,
    copied). Files are rewritten only when their content changes (cargo fingerprints).
    Returns ``{crate file: source file}`` for mapping rustc errors back to results/."""
    files = template_files(host)
    origin = {"src/abi.rs": str(ABI_RS)}
    lib = ["// Generated by tileport: the C ABI shims of every operator (rust/host/abi.rs).",
           "#![allow(non_snake_case)]", "pub mod abi;", "pub mod ops {"]
    for op, kernels in sorted(ops.items()):
        lib.append(f"    pub mod {op};")
        mod = [f"// {op}: translated kernels and their shims (copied from results/{op}/)."]
        for k in kernels:
            src = results / op / "rust" / "src" / f"{k}.rs"
            files[f"src/ops/{op}/{k}.rs"] = src.read_text()
            origin[f"src/ops/{op}/{k}.rs"] = str(src)
            mod.append(f"pub mod {k};")
        src = results / op / "host" / "ffi.rs"
        files[f"src/ops/{op}/ffi.rs"] = src.read_text()
        origin[f"src/ops/{op}/ffi.rs"] = str(src)
        mod.append("pub mod ffi;")
        files[f"src/ops/{op}/mod.rs"] = "\n".join(mod) + "\n"
    lib.append("}")
    files["src/lib.rs"] = "\n".join(lib) + "\n"
    for rel, text in files.items():
        p = host / rel
        if not p.exists() or p.read_text() != text:
            atomic_write_text(p, text)
    keep = {host / rel for rel in files}
    for p in (host / "src").rglob("*.rs"):   # operators dropped since the last build
        if p not in keep:
            p.unlink()
    return origin


def _stamp(target: Path, host: Path) -> Path:
    return target / "release" / f".{package_names(host)[0]}.sources"


def _hash_crate(h, host: Path, origin: dict[str, str], also: tuple[str, ...] = ()):
    """Feed ``h`` the crate files ``origin`` names, ``src/lib.rs`` and ``also``: path and bytes."""
    for rel in [*sorted(origin), "src/lib.rs", *also]:
        h.update(rel.encode() + b"\0" + (host / rel).read_bytes() + b"\0")
    return h


def _sources_digest(host: Path, origin: dict[str, str]) -> str:
    return _hash_crate(hashlib.sha256(), host, origin, ("Cargo.toml",)).hexdigest()


#: libraries :func:`build` keeps in ``<target>/tileport-host-libs/`` (the most recently used)
LIB_CACHE_KEEP = 24


def library_key(host: Path, origin: dict[str, str]) -> str:
    """Hex SHA-256 naming a host library by what builds it, the same in every checkout: the
    assembled crate's sources (``origin``'s files, ``src/lib.rs``), the committed template's
    Cargo.toml and Cargo.lock (before :func:`template_files` renames the package per checkout),
    the cargo command and ``rustc -vV``. Raises FileNotFoundError without rustc."""
    h = _hash_crate(hashlib.sha256(b"host-library\0" + " ".join(_CARGO_FLAGS).encode() + b"\0"), host, origin)
    for f in (HOST_TEMPLATE / "Cargo.toml", HOST_TEMPLATE / "Cargo.lock"):
        h.update(f.read_bytes() + b"\0")
    h.update(subprocess.run(["rustc", "-vV"], capture_output=True, check=True).stdout)
    return h.hexdigest()


def _lib_cache(target: Path, key: str) -> Path:
    return target / "tileport-host-libs" / f"{key[:24]}.so"


def _keep_in_cache(built: Path, cached: Path) -> bool:
    """Copy a library just built into the cache (atomically, with its sha256 beside it) and drop
    all but the :data:`LIB_CACHE_KEEP` most recently used. A cache that cannot be written (full
    disk, a file where its folder should be) costs the next clone a build, never this one: False
    and a line in the job's log."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{cached.name}.tmp")
        shutil.copy2(built, tmp)
        atomic_write_text(cached.with_suffix(".sha256"), _file_sha(tmp) + "\n")
        tmp.replace(cached)
        os.utime(cached)
        libs = sorted(cached.parent.glob("*.so"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in libs[LIB_CACHE_KEEP:]:
            old.unlink(missing_ok=True)
            old.with_suffix(".sha256").unlink(missing_ok=True)
    except OSError as exc:
        print(f"tileport: the host library is not kept for other checkouts: {cached.parent}: {exc}")
        return False
    return True


def _file_sha(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _intact(cached: Path) -> bool:
    """Whether a kept library has the bytes it was kept with (its ``.sha256`` beside it): a
    damaged or truncated one is built again, never loaded (dlopen of a truncated ELF can kill
    the process)."""
    mark = cached.with_suffix(".sha256")
    return mark.is_file() and mark.read_text().strip() == _file_sha(cached)


def _refresh_if_stale(host: Path, target: Path, origin: dict[str, str]) -> None:
    """cargo decides by mtimes: sources restored from a backup (old mtimes, other content than
    the last build) would be taken as up to date. When the crate's sources differ from those of
    the last successful build (a stamp beside the library), give them a fresh mtime."""
    stamp = _stamp(target, host)
    if stamp.exists() and stamp.read_text() == _sources_digest(host, origin):
        return
    for p in (host / "src").rglob("*.rs"):
        os.utime(p)


def _missing_symbols(lib: Path, results: Path, ops: dict[str, list[str]]) -> list[str]:
    """Shim symbols listed in the operators' ffi.json that ``lib`` does not export."""
    import ctypes

    handle = ctypes.CDLL(str(lib))
    want = [f["symbol"] for op in ops
            for f in json.loads((results / op / "host" / "ffi.json").read_text())["functions"]]
    return [w for w in want if not hasattr(handle, w)]


_CARGO_FLAGS = ("build", "--release", "--locked", "--quiet", "--message-format=short", "--lib")


def cargo_build(host: Path, target: Path) -> subprocess.CompletedProcess:
    """``cargo build --release --locked`` of the host-library crate at ``host`` into ``target``
    (the shared cargo target dir); prints the command, its time and output (the job's log).
    Raises FileNotFoundError without cargo. The caller holds the target dir's build lock."""
    cmd = ["cargo", *_CARGO_FLAGS, "--manifest-path", str(host / "Cargo.toml")]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=toolchain.cargo_env(target), cwd=host)
    print(f"$ {' '.join(cmd)}\n# {time.monotonic() - t0:.1f} s, exit {proc.returncode}\n"
          f"{proc.stdout}{proc.stderr}")
    return proc


def cargo_errors(proc, host: Path, origin: dict[str, str]) -> list[tuple[str | None, Finding]]:
    """rustc errors of :func:`cargo_build` as (the module under ``src/ops/`` at fault or None,
    finding at the source file and line): ``origin`` maps a crate file to the file it was copied
    from (``{crate file: source file}``, as :func:`assemble` returns)."""
    out = []
    for m in toolchain.CARGO_ERR.finditer(proc.stderr):
        f = Path(m["file"])
        rel = str(f.relative_to(host)) if f.is_absolute() and f.is_relative_to(host) else str(f)
        src = origin.get(rel, str(host / rel))
        parts = Path(rel).parts
        op = parts[2] if len(parts) > 3 and parts[:2] == ("src", "ops") else None
        owner = "host" if rel.endswith("ffi.rs") or op is None else "kernel"
        out.append((op, Finding("build", "critical", owner, f"{src}:{m['line']}: {m['msg']}",
                                port=loc(src, int(m["line"])))))
    return out


def build(ops: list[str], results: str | Path, out_verdict: str | Path,
          target_dir: str | Path | None = None, attempt: int = 1) -> dict:
    """Stage ``host_build``: build ``results/host/libtileport_host.so`` with every eligible operator.

    ``ops`` are the workflow's operators. An operator is eligible when its port crate built
    and its shim was generated. If the combined build fails and rustc's errors point into some
    operators' files, those operators are dropped (each gets the findings) and the build is
    retried once without them. Verdict PASS (all eligible operators in), PASS_WITH_NOTES (some
    left out), ERROR (no library). ``details.ops`` maps every operator to ``{"in_library",
    "reason", "sources_sha"}``; ``sources_sha`` hashes that operator's copied files, so a GPU
    stage can tell that the library holds the files it was asked to test.
    """
    results = Path(results).resolve()
    host = results / "host"
    target = Path(target_dir) if target_dir else toolchain.default_target_dir()
    status: dict[str, dict] = {}
    included: dict[str, list[str]] = {}
    for op in ops:
        kernels, why = _op_eligible(results, op)
        if kernels:
            included[op] = kernels
        else:
            status[op] = {"in_library": False, "reason": why, "findings": []}
    if not included:
        # whose fault: the host builder's when every shim it wrote is unusable (env when each
        # failed for the environment), else the ports'
        why = [st["reason"] for st in status.values()]
        fc = ("env" if why and all(w.startswith("host shim unusable (env)") for w in why)
              else "host" if why and all(w.startswith("host shim unusable") for w in why) else "kernel")
        return write(Verdict(stage="host_build", op="*", verdict="ERROR", owner=fc,
                             fail_class=fc, attempt=attempt,
                             summary="no operator has a built port and a usable shim: "
                                     f"no library ({brief(why[0]) if why else 'no operator'})",
                             details={"ops": status}), out_verdict)
    findings: list[Finding] = []
    t0 = time.monotonic()
    target.mkdir(parents=True, exist_ok=True)
    cached = None
    with open(target / ".tileport-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for _round in range(2):
            origin = assemble(host, results, included)
            try:
                cached = _lib_cache(target, library_key(host, origin))
                if cached.is_file():
                    if _intact(cached):
                        break        # built from these sources before (in any checkout): no cargo
                    cached.unlink(missing_ok=True)     # damaged since it was kept: build
                _refresh_if_stale(host, target, origin)
                proc = cargo_build(host, target)
            except (FileNotFoundError, subprocess.CalledProcessError) as exc:
                msg = f"cannot run cargo or find the CUDA headers: {exc}"
                return write(Verdict(stage="host_build", op="*", verdict="ERROR", owner="env",
                                     fail_class="env", attempt=attempt, summary=msg,
                                     findings=[Finding("environment", "critical", "env", msg)]),
                             out_verdict)
            if proc.returncode == 0:
                break
            errs = cargo_errors(proc, host, origin)
            guilty = {op for op, _ in errs if op in included}
            if not guilty or guilty == set(included) or _round == 1:
                tail = " | ".join(proc.stderr.strip().splitlines()[-4:])
                fs = [f for _, f in errs] or [Finding("build", "critical", "env",
                                                      f"cargo build failed: {tail}")]
                return write(Verdict(stage="host_build", op="*", verdict="ERROR",
                                     owner=fs[0].owner, fail_class=fs[0].owner
                                     if fs[0].owner in ("kernel", "host", "env") else "env",
                                     attempt=attempt, summary=brief(fs[0].message), findings=fs,
                                     details={"ops": status}), out_verdict)
            for op in sorted(guilty):
                mine = [f for o, f in errs if o == op]
                status[op] = {"in_library": False,
                              "reason": f"breaks the combined build: {brief(mine[0].message)}",
                              "findings": [f.__dict__ for f in mine]}
                findings += mine
                del included[op]
        hit = cached.is_file()
        built = cached if hit else target / "release" / f"lib{package_names(host)[1]}.so"
        tmp = host / f".{LIB_NAME}.tmp"
        shutil.copy2(built, tmp)
        lacking = _missing_symbols(tmp, results, included)
        if lacking:
            tmp.unlink()
            msg = (f"cargo reported success but {built} lacks {lacking}: a stale build in the "
                   f"shared target dir; remove {built} and rerun")
            return write(Verdict(stage="host_build", op="*", verdict="ERROR", owner="tool",
                                 fail_class="env", attempt=attempt, summary=msg,
                                 findings=[Finding("build", "critical", "tool", msg)],
                                 details={"ops": status}), out_verdict)
        tmp.replace(host / LIB_NAME)
        if hit:
            os.utime(cached)                  # most recently used: kept longest
        else:
            _stamp(target, host).write_text(_sources_digest(host, origin))
            _keep_in_cache(built, cached)
    secs = round(time.monotonic() - t0, 1)
    for op, kernels in included.items():
        status[op] = {"in_library": True, "reason": "", "kernels": kernels,
                      "sources_sha": sources_sha(results, op)}
    out = sorted(o for o, s in status.items() if not s["in_library"])
    word = "PASS" if not out else "PASS_WITH_NOTES"
    how = f"copied from the build cache ({cached.name}) in" if hit else "in"
    summary = (f"built {LIB_NAME} with {len(included)} operator(s) {how} {secs} s"
               + (f"; left out: {', '.join(out)}" if out else ""))
    return write(Verdict(stage="host_build", op="*", verdict=word, attempt=attempt,
                         summary=summary, findings=findings,
                         details={"ops": status, "library": str(host / LIB_NAME), "seconds": secs,
                                  "from_cache": str(cached) if hit else None},
                         artifacts={"library": str(host / LIB_NAME)}), out_verdict)


def sources_sha(results: str | Path, op: str) -> str:
    """SHA-256 of the files ``host_build`` copies for ``op`` (its kernels and ffi.rs), computed
    from ``results/<op>/`` as it is now; equal to the library's ``details.ops[op].sources_sha``
    when the library holds the current port of ``op``."""
    results = Path(results)
    spec = json.loads((results / op / "host" / "ffi.json").read_text())
    kernels = sorted({f["kernel"] for f in spec["functions"]})
    files = {f"src/ops/{op}/{k}.rs": results / op / "rust" / "src" / f"{k}.rs" for k in kernels}
    files[f"src/ops/{op}/ffi.rs"] = results / op / "host" / "ffi.rs"
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + files[rel].read_bytes())
    return h.hexdigest()
