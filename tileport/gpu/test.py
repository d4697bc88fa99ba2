"""Stage ``gpu_test``: the Rust port against the cuTile Python reference and the PyTorch semantics.

For every kernel x variant x test shape that fits (:func:`tileport.gpu.harness.cases`), one
:class:`tileport.gpu.harness.Call` runs the reference kernel and the port on the same inputs and
launch grid, and both outputs are compared with ``reference.reference`` under the manifest's
per-dtype rtol/atol. Per variant, the kernels each side launches for one call are counted
from CUPTI records (:mod:`tileport.gpu.cupti`); a port that launches a different number of
kernels than the reference fails.

Where NVIDIA shipped a cuTile Rust port of a kernel (:mod:`tileport.nvidia.port`), a second pass,
after every call above (so that its failures cannot touch tileport's), runs NVIDIA's port on the
same calls and compares it alike: ``details.nv`` (``variants``: PASS / FAIL / NOT_RUN per
kernel/variant, ``cases``, ``note``); it never changes the verdict, and the benchmark times NVIDIA's
port only where it passed here.

Verdict (``results/<op>/test.json``): ``ALL_PASS``; ``FAITHFUL_REF_DEFECT`` (owner ``kernel``:
the port is faithful, and misses the PyTorch semantics only where the cuTile Python reference
does under a defect the manifest declares, ``known_defects``: :func:`verdict_of`,
:mod:`tileport.model.defects`); ``FAIL`` with ``fail_class`` kernel / host /
env and the worst mismatch (index, values, allowance); ``BLOCKED`` when the host library holds
no port of the operator; ``NOT_RUN`` without a GPU under ``gpu: auto`` or with ``gpu: off``.
``gpu: required`` without a GPU writes an ERROR verdict and exits with status 1.

Run directly on a GPU node without Snakemake::

    python -m tileport.gpu.test --op softmax [--results results] [--gpu auto|required|off]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

from tileport.core import provenance, source, yamlio
from tileport.core.verdict import (
    OP_WORD,
    TEST_PASSED,
    VARIANT_PASSED,
    VARIANT_WORD,
    Finding,
    Verdict,
    VerdictError,
    brief,
    read,
    write,
)
from tileport.gpu import cupti, harness
from tileport.gpu.fold import (  # noqa: F401 - MEASURED re-exported: callers know it as gpu_test.MEASURED
    MEASURED,
    owner_of,
    routed,
)
from tileport.gpu.kept import Kept, measured_at
from tileport.host import shim as host_shim
from tileport.host.ffi import FfiError, HostLibrary
from tileport.model import defects as tp_defects
from tileport.model import manifest as tp_manifest
from tileport.nvidia.ffi import NvError, device_target, gpu_binding, reference_options

REPO = Path(__file__).resolve().parents[2]


def not_run(stage: str, op: str, reason: str, out: str | Path, attempt: int = 1) -> dict:
    """Write a NOT_RUN verdict whose summary is ``not_run (<reason>)``."""
    return write(Verdict(stage=stage, op=op, verdict="NOT_RUN", attempt=attempt,
                         summary=f"not_run ({reason})"), out)


def gpu_gate(stage: str, op: str, gpu: str, out: str | Path, attempt: int = 1, keep=None) -> dict | None:
    """Apply config.yaml's ``gpu`` mode. Returns a verdict (the caller stops) or None (a GPU is
    there: go on). Without a GPU: NOT_RUN (``auto``/``off``), or ERROR and exit 1
    (``required``) -- except that an existing GPU measurement at ``out`` is kept as it is and
    returned (:func:`tileport.gpu.kept.measured_at`), and otherwise ``keep()`` (the kept copy's
    restore, :meth:`tileport.gpu.kept.Kept.restore`, when given) may bring back the measurement
    of the same sources: a GPU-less run never overwrites what a GPU measured."""
    held = measured_at(out) or (keep() if keep else None)
    if gpu == "off":
        return held or not_run(stage, op, "gpu: off", out, attempt)
    try:
        harness.probe_gpu()
    except harness.NoGpu as exc:
        if held:
            return held
        if gpu == "required":
            msg = f"gpu: required, but there is no usable GPU here: {exc}"
            write(Verdict(stage=stage, op=op, verdict="ERROR", owner="env", fail_class="env",
                          attempt=attempt, summary=msg,
                          findings=[Finding("environment", "critical", "env", msg)]), out)
            print(f"tileport: {stage} {op}: {msg}", file=sys.stderr)
            sys.exit(1)
        return not_run(stage, op, f"no GPU: {exc}", out, attempt)
    return None


def library_for(op: str, results: Path, host_build: Path, keeper: Kept | None = None):
    """The operator's state in the host library: ``(library path, None)`` or ``(None, (fail_class,
    reason))`` when the library lacks it or holds other sources than results/<op> now.
    ``keeper``: the operator's :class:`tileport.gpu.kept.Kept`, whose :attr:`sources_sha` (hashed
    once per stage) is compared; default: the sources hashed here."""
    try:
        hb = read(host_build)
    except VerdictError as exc:
        return None, ("host", f"host library not built: {exc}")
    st = hb.get("details", {}).get("ops", {}).get(op)
    # this operator's own reason first: a library with no operator in it (e.g. a round's
    # one-operator library whose shim the host builder could not write) is that operator's case
    if st and not st.get("in_library"):
        reason = str(st.get("reason", ""))
        owner = (upstream_owner(results, op) if "port crate" in reason or "no shim" in reason
                 else "env" if reason.startswith("host shim unusable (env)") else "host")
        return None, (owner, f"not in the host library: {reason}")
    if hb["verdict"] == "ERROR":
        return None, (hb.get("fail_class") or "host", f"host library not built: {hb['summary']}")
    if not st:
        return None, ("host", f"{op} is not in the host library (built for "
                              f"{sorted(hb.get('details', {}).get('ops', {}))}): run the workflow "
                              f"with {op} among config.yaml's operators")
    try:
        now = keeper.sources_sha if keeper is not None else host_shim.sources_sha(results, op)
    except (OSError, ValueError, KeyError) as exc:
        return None, ("host", f"results/{op}/host: shim files unreadable: {exc}")
    if now != st.get("sources_sha"):
        return None, ("host", f"{hb['details']['library']} was built from other sources of {op} "
                              f"than results/{op} holds now: rebuild (rule host_build)")
    return str(results / "host" / host_shim.LIB_NAME), None


def blocked_variants(results: Path, op: str) -> dict[tuple[str, str], str]:
    """``{(kernel, variant id): reason}`` of the variants the kernel writer left out
    (``results/<op>/write_kernel/<kernel>.json`` ``details.blocked_variants``: blocking is per
    variant); unreadable verdicts contribute none."""
    out = {}
    for f in sorted((results / op / "write_kernel").glob("*.json")):
        try:
            v = read(f)
        except VerdictError:
            continue
        for vid, b in ((v.get("details") or {}).get("blocked_variants") or {}).items():
            out[f.stem, vid] = b.get("summary", "")
    return out


def upstream_owner(results: Path, op: str) -> str:
    """Who must act when an operator has no port in the host library because no kernel was
    translated or its port crate did not build: the owner of the first such upstream verdict
    (``results/<op>/write_kernel/<kernel>.json`` not PASS, else ``results/<op>/rust/build.json``):
    ``tool`` where the translator lacks a rule, ``kernel`` only where the analysis found the
    user's kernel invalid. ``tool`` when no upstream verdict names one (tileport's pipeline
    left the operator without a port)."""
    for f in sorted((results / op / "write_kernel").glob("*.json")):
        try:
            v = read(f)
        except VerdictError:
            continue
        if v["verdict"] not in ("PASS", "PASS_WITH_NOTES") and v.get("owner"):
            return v["owner"]
    try:
        b = read(results / op / "rust" / "build.json")
        if b["verdict"] != "PASS" and b.get("owner"):
            return b["owner"]
    except VerdictError:
        pass
    return "tool"


def failure_class(exc: BaseException, side: str) -> str:
    """Routing class of an exception a side raised: an :class:`tileport.host.ffi.FfiError` carries its
    own (``host``: the shim refused or failed; ``env``: no CUDA context); a CUDA error of the
    port is the port's (``kernel``); anything else is the environment's (``env``)."""
    if isinstance(exc, FfiError):
        return exc.fail_class
    return "kernel" if side == "port" and _cuda_error(exc) else "env"


def _cuda_error(exc: BaseException) -> bool:
    s = str(exc)
    return "CUDA error" in s or "CUDA_ERROR" in s or "cudaError" in s or "illegal" in s


class OpContext:
    """Everything one operator's GPU stage loads once: manifest, modules, library, analysis.
    ``keeper``: the operator's :class:`tileport.gpu.kept.Kept`, whose manifest (loaded once per
    stage) is used; default: the manifest loaded here. Raises ManifestError, HarnessError,
    VerdictError (analysis.json), FfiError (the library)."""

    def __init__(self, op: str, op_dir: Path, results: Path, library: str,
                 nv_build: str | Path | None = None, keeper: Kept | None = None):
        self.op, self.op_dir, self.results = op, op_dir, results
        self.man = keeper.manifest if keeper is not None else tp_manifest.load(op_dir / "manifest.yaml")
        lacking = [k for k in self.man["kernels"] if tp_manifest.kernel_tensors(self.man, k) is None]
        if lacking:
            raise harness.ManifestValueError(f"{op_dir / 'manifest.yaml'}: no 'tensors' section for "
                                       f"{', '.join(lacking)}: the GPU stages cannot build the inputs "
                                       f"of a call; write tensors: {{<name>: {{shape: [...], role: input}}, "
                                       f"...}} (the operator's, or under kernels/<kernel>)")
        self.kmod = harness.load_module(source.kernel_py(op_dir), f"tileport_ref_{op}")
        self.rmod = harness.load_module(op_dir / "reference.py", f"tileport_torch_{op}")
        an = read(results / op / "analysis.json")
        self.params = {k["name"]: k["params"] for k in an["details"]["kernels"]}
        self.lib = HostLibrary(library, [results / op / "host" / "ffi.json"])
        # NVIDIA's port of each kernel it ported ({} and a reason when its library is unusable)
        self.nv, self.nv_note = gpu_binding(op_dir, results, nv_build)
        self._targets: dict[int, str] = {}        # device -> sm_XY, read once

    def call(self, kernel, variant, shape, seed=0, nv=False):
        """The :class:`tileport.gpu.harness.Call`; with ``nv``, NVIDIA's port is bound as its fourth
        side where it ported the kernel, with the CGA size and occupancy the reference variant
        compiles with on device 0 (:meth:`nv_side`)."""
        spec = self.lib.for_variant(kernel, variant.id)
        return harness.build_call(self.op_dir, self.man, self.kmod, self.rmod, self.params[kernel],
                            kernel, variant, shape, self.lib, spec["symbol"], seed=seed,
                            nv=self.nv_side(kernel, variant) if nv else None)

    def nv_side(self, kernel, variant, device: int = 0):
        """NVIDIA's side of ``kernel`` for ``variant`` (None where NVIDIA did not port it), its C
        function's ``num_cta_in_cga`` / ``occupancy`` bound to the reference's: the kernel's
        ``@ct.kernel`` options under the variant's hints, for ``device``'s target
        (:func:`tileport.nvidia.ffi.reference_options`). Options that cannot be read leave the
        side without them: its binding then fails with the reason, and the call runs without
        NVIDIA's side (``Call.nv_note``)."""
        side = self.nv.get(kernel)
        if side is None:
            return None
        try:
            if device not in self._targets:
                self._targets[device] = device_target(device)
            opts = reference_options(getattr(self.kmod, kernel), variant.hints, self._targets[device])
        except NvError as exc:
            return side.with_options(None, str(exc))
        return side.with_options(opts)


def input_error(op: str, exc: Exception, attempt: int = 1, stage: str = "gpu_test") -> Verdict:
    """ERROR verdict for an operator input the GPU stage cannot use: owner ``manifest`` (no
    fail_class: the routes stop, no writer or host builder can fix a manifest) when the manifest
    is the cause (:class:`tileport.model.manifest.ManifestError`,
    :class:`tileport.gpu.harness.ManifestValueError`); ``tool`` when tileport's own artefact is
    unreadable (analysis.json: :class:`tileport.core.verdict.VerdictError`); else ``kernel``
    (kernel.py / reference.py do not import)."""
    manifest = isinstance(exc, (tp_manifest.ManifestError, harness.ManifestValueError))
    owner = "manifest" if manifest else "tool" if isinstance(exc, VerdictError) else "kernel"
    return Verdict(stage=stage, op=op, verdict="ERROR", owner=owner,
                   fail_class=routed(owner), attempt=attempt, summary=str(exc)[:600],
                   findings=[Finding("manifest" if manifest else "input", "critical", owner, str(exc)[:1500])])


def check_call(c, tol: dict) -> dict:
    """Run both kernels of one call once and compare each with the PyTorch semantics
    (:func:`tileport.gpu.harness.compare_outputs`: an output with an error scale is judged against
    it). Raises :class:`tileport.gpu.harness.ManifestValueError` where reference.py's return
    value disagrees with the manifest's ``error_scale`` (:func:`tileport.gpu.harness.split_expected`)."""
    import torch  # lazy: a CPU job never loads torch

    row = {"kernel": c.kernel, "variant": c.variant.id, "shape": list(c.shape), "grid": list(c.grid)}
    expected = c.expected()
    for side, fn in (("ref", c.ref), ("port", c.port)):
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - every failure is classified below
            fc = failure_class(exc, side)
            row[side] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:800], "fail_class": fc,
                         "cuda_error": _cuda_error(exc)}
            continue
        res = harness.compare_outputs(c.outputs[side], expected, tol)
        worst = max(res, key=lambda r: (not r["ok"], r["max_abs"] or 0))
        row[side] = worst
    if row["ref"].get("ok") is not None and "error" not in row["port"] and "error" not in row["ref"]:
        row["port_vs_ref_max_abs"] = max(float((a.double() - b.double()).abs().nan_to_num(float("inf")).max())
                                         for a, b in zip(c.outputs["port"], c.outputs["ref"]))
        row["bitwise_equal"] = all(torch.equal(a, b) for a, b in zip(c.outputs["port"], c.outputs["ref"]))
        # the port within tolerance of the reference kernel (NaN where it has NaN): "the same way";
        # an output with an error scale takes this call's (harness.matches_ref)
        row["port_matches_ref"] = harness.matches_ref(c.outputs["port"], c.outputs["ref"], expected, tol)
    return row


def check_nv(c, tol: dict) -> dict:
    """NVIDIA's port of one call, once, against the PyTorch semantics (``{"ok", ...}`` as
    :func:`tileport.gpu.harness.compare`, or ``{"ok": False, "error", "cuda_error"}``)."""
    import torch  # lazy: a CPU job never loads torch

    try:
        c.nv()
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - NVIDIA's side: recorded, never raised
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:800], "cuda_error": _cuda_error(exc)}
    res = harness.compare_outputs(c.outputs["nv"], c.expected(), tol)
    return max(res, key=lambda r: (not r["ok"], r["max_abs"] or 0))


def nv_pass(ctx: "OpContext", todo: list, seed: int) -> dict:
    """The second pass (module doc): NVIDIA's port on every call of a kernel it ported.
    Returns ``details.nv`` of test.json: ``{"variants", "cases", "note"}``."""
    out = {"variants": {}, "cases": [], "note": ctx.nv_note}
    dead, counted = None, set()
    for kernel, variant, shape in todo:
        if kernel not in ctx.nv:
            continue
        key = f"{kernel}/{variant.id}"
        row = {"kernel": kernel, "variant": variant.id, "shape": list(shape)}
        if dead:
            row["not_run"] = f"CUDA context lost earlier: {dead}"
        else:
            try:
                c = ctx.call(kernel, variant, shape, seed, nv=True)
            except Exception as exc:  # noqa: BLE001 - tileport's own side could not be built
                row["not_run"] = f"{type(exc).__name__}: {exc}"[:400]
                c = None
            if c is not None and c.nv is None:
                row["not_run"] = c.nv_note
            elif c is not None:
                row["nv"] = check_nv(c, harness.tolerance(ctx.man, variant, shape))
                if row["nv"].get("cuda_error"):
                    dead = row["nv"]["error"][:200]
                elif key not in counted:
                    counted.add(key)
                    try:
                        row["launches"] = cupti.profile([("nv", c.nv)], reps=1)["launches"]["nv"][0]
                    except Exception as exc:  # noqa: BLE001 - NVIDIA's side never fails the stage
                        row["launches"] = f"{type(exc).__name__}: {exc}"[:200]
                del c
        out["cases"].append(row)
        word = "NOT_RUN" if "not_run" in row else ("PASS" if row["nv"].get("ok") else "FAIL")
        prev = out["variants"].get(key)
        out["variants"][key] = ("FAIL" if "FAIL" in (prev, word) else
                                "NOT_RUN" if "NOT_RUN" in (prev, word) else "PASS")
    return out


def run(op: str, op_dir: str | Path, results: str | Path, out_json: str | Path, gpu: str = "auto",
        host_build: str | Path | None = None, seed: int = 0, attempt: int = 1,
        nv_build: str | Path | None = None) -> dict:
    """Stage entry point (see module doc). Returns the verdict dict written to ``out_json``.
    ``nv_build``: NVIDIA's build verdict (default ``<results>/nvidia/shipped/build.json``).
    Each input is read and hashed once (:class:`tileport.gpu.kept.Kept`)."""
    op_dir, results = Path(op_dir), Path(results)
    keeper = Kept(results, op, op_dir)
    host_build = Path(host_build) if host_build else results / "host" / "build.json"
    gate = gpu_gate("gpu_test", op, gpu, out_json, attempt, keep=lambda: keeper.restore("test.json", out_json))
    if gate is not None:
        return gate
    library, why = library_for(op, results, host_build, keeper)
    if why:
        return write(Verdict(stage="gpu_test", op=op, verdict="BLOCKED", owner=why[0],
                             fail_class=routed(why[0]), attempt=attempt, summary=why[1]), out_json)
    t0 = time.monotonic()
    try:
        ctx = OpContext(op, op_dir, results, library, nv_build, keeper)
    except (harness.HarnessError, tp_manifest.ManifestError, VerdictError) as exc:
        return write(input_error(op, exc, attempt), out_json)
    except Exception as exc:  # FfiError on load: the library itself; anything else (a bad
        # TILEPORT_RUST_MARSHAL, ffi.rust_marshal_env) the environment's, as bench decides it
        owner = "host" if type(exc).__name__ == "FfiError" else "env"
        return write(Verdict(stage="gpu_test", op=op, verdict="ERROR", owner=owner,
                             fail_class=owner, attempt=attempt, summary=str(exc)[:600]), out_json)
    try:
        todo = harness.cases(ctx.man, "test")
        tols = {(k, v.id, s): harness.tolerance(ctx.man, v, s) for k, v, s in todo}
    except harness.HarnessError as exc:
        return write(input_error(op, exc, attempt), out_json)
    rows, counted, dead = [], set(), None
    left_out = blocked_variants(results, op)
    for kernel, variant, shape in todo:
        if (kernel, variant.id) in left_out:
            # blocking is per variant: the writer left this one out, there is no port to call
            rows.append({"kernel": kernel, "variant": variant.id, "shape": list(shape),
                         "blocked": left_out[kernel, variant.id][:800]})
            continue
        if dead:
            rows.append({"kernel": kernel, "variant": variant.id, "shape": list(shape),
                         "not_run": f"CUDA context lost earlier: {dead}"})
            continue
        try:
            c = ctx.call(kernel, variant, shape, seed)
        except harness.HarnessError as exc:   # the manifest's tensors/bind/grid: not the port's fault
            return write(input_error(op, exc, attempt), out_json)
        except Exception as exc:  # noqa: BLE001 - no shim for the variant (host), allocation failure (env)
            rows.append({"kernel": kernel, "variant": variant.id, "shape": list(shape),
                         "port": {"ok": False, "error": str(exc)[:800], "fail_class": failure_class(exc, "call")},
                         "ref": {"ok": None}})
            continue
        try:
            row = check_call(c, tols[kernel, variant.id, shape])
        except harness.HarnessError as exc:   # reference.py's values against the manifest (error_scale)
            return write(input_error(op, exc, attempt), out_json)
        shim = getattr(getattr(ctx, "lib", None), "shims", {}).get(getattr(c, "symbol", None))
        restaged = getattr(shim, "restaged", None)
        if restaged:        # arrays the host copied to a layout the port reads (ffi.restage_strides)
            row["restaged"] = dict(restaged)
            restaged.clear()
        for side in ("ref", "port"):
            if row[side].get("cuda_error"):
                dead = row[side]["error"][:200]
        ran = all("error" not in row[side] for side in ("ref", "port"))
        if not dead and ran and (kernel, variant.id) not in counted:
            # launches counted only when both sides ran: a side that raised would raise again
            counted.add((kernel, variant.id))
            prof = cupti.profile([("ref", c.ref), ("port", c.port), ("torch", c.torch)], reps=1)
            row["launches"] = {s: prof["launches"][s][0] for s in ("ref", "port", "torch")}
            row["kernel_names"] = {s: [n for n, _ in prof["kernels"][s][0]] for s in ("ref", "port")}
        rows.append(row)
        del c
    nv = nv_pass(ctx, todo, seed) if (ctx.nv or ctx.nv_note) and not dead else None
    v = verdict_of(op, rows, attempt, round(time.monotonic() - t0, 1), harness.env_versions(),
                   writers=keeper.writers, defects=tp_manifest.declared_defects(ctx.man))
    if nv is not None:
        v.details["nv"] = nv
    v.details["sources_sha"] = keeper.sources_sha             # what the library held
    v.details["inputs_sha"] = keeper.inputs_sha               # kernel.py, reference.py, manifest
    v.details["test_inputs_sha"] = keeper.test_inputs_sha     # less the manifest's bench-only parts
    v.details["provenance"] = provenance.collect(bench={"seed": seed})   # GPU, driver, versions, commit
    d = write(v, out_json)
    if Path(out_json) == results / op / "test.json":
        keeper.snapshot()
    return d


def same_miss(r: dict) -> bool:
    """The port and the cuTile Python reference both fail the check, the same way: the port
    equals the reference bit for bit, or lies within tolerance of it (NaN where it has NaN:
    ``port_matches_ref``), or (rows without that field) both miss the same number of elements
    with the same worst element (index, value, expected)."""
    port, ref = r.get("port", {}), r.get("ref", {})
    if port.get("ok") is not False or ref.get("ok") is not False:
        return False
    if r.get("bitwise_equal") is True or r.get("port_matches_ref") is True:
        return True
    if "port_matches_ref" in r:
        return False

    def worst(side):
        w = side.get("worst") or {}
        return (side.get("mismatches"), w.get("index"), repr(w.get("actual")), repr(w.get("expected")))
    return port.get("mismatches") is not None and worst(port) == worst(ref)


def verdict_of(op: str, rows: list[dict], attempt: int = 1, secs: float = 0.0, env=None,
               writers: dict | None = None, defects: list | None = None) -> Verdict:
    """Fold the per-call rows into the stage verdict (pure: unit-tested without a GPU).

    A row fails when the port errs or mismatches, or its launch count differs from the
    reference's. A reference that fails while the port passes is a note (the oracle or the
    reference kernel is off, not the port). A port that mismatches the same way as the cuTile
    Python kernel, which fails the check too (:func:`same_miss`), is owner ``manifest``: the
    expected values (reference.py as called, the manifest's tensors / bind / tolerance) disagree
    with the kernel, not the port (seen on tg_mhc, whose reference got a kernel scalar's value for
    a shape name); when only such rows fail the verdict has no ``fail_class`` (the routes stop) --
    unless the manifest declares that defect of the kernel (``defects``: its ``known_defects``,
    :func:`tileport.model.defects.declared`) for the variant: the row is then no failure but the
    variant's word is ``REF_DEFECT`` (a warning, owner ``kernel``, naming the manifest entry and
    the kernel's line), and an operator whose variants all pass or are ``REF_DEFECT`` is
    ``FAITHFUL_REF_DEFECT`` (owner ``kernel``, no fail_class: the port is faithful, the reference
    defective; the benchmark runs). A declared defect that does not show (the reference matches
    the PyTorch semantics on every test call of a variant the entry covers) is a warning, owner
    ``manifest`` (a stale declaration). A port that differs from the reference stays a failure of
    the port, declared defect or not. Owners name who must act (:func:`owner_of`): a wrong port
    the translator wrote (``writers``: kernel -> backend) is ``tool``, a shim's refusal ``host``;
    ``fail_class`` keeps the route (``kernel``: the kernel writer). ``details.variants`` maps
    ``kernel/variant`` to PASS / REF_DEFECT / FAIL / NOT_RUN for summary.csv;
    ``details.known_defects`` maps each REF_DEFECT variant to its entry and message,
    ``details.stale_defects`` lists the stale declarations.
    """
    writers = writers or {}
    defects = list(defects or [])
    cover = tp_defects.covering(defects)
    findings, variants = [], {}
    fail_classes, owners = [], []
    known: dict[str, dict] = {}             # kernel/variant -> the declared defect its rows showed
    ref_missed: dict[str, bool] = {}        # kernel/variant -> the reference missed on some call
    for r in rows:
        key = f"{r['kernel']}/{r['variant']}"
        where = f"{key} shape {tuple(r['shape'])}"
        if "blocked" in r:
            # a variant the kernel writer left out (blocking is per variant): no port to call,
            # no failure of the others; its reason is the writer's
            if key not in variants:
                findings.append(Finding("unsupported", "info", "tool", f"{key}: BLOCKED, not translated: "
                                                                       f"{r['blocked']}"))
            variants[key] = "BLOCKED"
            continue
        if "not_run" in r:
            variants.setdefault(key, "NOT_RUN")
            findings.append(Finding("environment", "warn", "env", f"{where}: not run: {r['not_run']}"))
            fail_classes.append("env")
            continue
        port, ref = r.get("port", {}), r.get("ref", {})
        declared = cover.get((r["kernel"], r["variant"])) or []
        ref_missed[key] = ref_missed.get(key, False) or bool(ref.get("error")) or ref.get("ok") is False
        bad, shown = [], None
        if port.get("error") and ref.get("cuda_error") and port.get("cuda_error"):
            # check_call runs the reference first: its CUDA fault lost the context the port then
            # ran in; the call the manifest asks for is one the kernel itself does not run
            bad.append(("manifest", "launch", f"the cuTile Python reference faulted first ({ref['error'][:300]}); "
                                              f"the port's call then failed in the lost CUDA context: "
                                              f"{port['error'][:300]}"))
        elif port.get("error"):
            bad.append((port.get("fail_class", "host"), "launch", f"port failed: {port['error']}"))
        elif port.get("ok") is False:
            # a port that misses the same values as the cuTile Python kernel: the expected
            # values (reference.py as the harness calls it, the manifest's tensors / bind)
            # disagree with the kernel itself; no kernel writer can fix that
            same = same_miss(r)
            how = ("equals the cuTile Python reference bit for bit" if r.get("bitwise_equal")
                   else "agrees with the cuTile Python reference")
            if same and declared and not port.get("shape"):
                shown = declared[0]
                msg = (f"{where}: the port {how}, which misses the PyTorch semantics: a known defect of "
                       f"the kernel, declared in {shown.label}: {shown.kernel} at {shown.where}: "
                       f"{shown.effect[:300]} ({harness.mismatch_text(port)})")
                findings.append(Finding("numerics", "warn", "kernel", msg,
                                        ref={"file": shown.file, "line": shown.line}))
                known.setdefault(key, {**shown.to_dict(), "message": msg[:600]})
            else:
                # whose fault first: a summary keeps about the message's first 300 characters (brief)
                text = harness.mismatch_text(port)
                if same and not port.get("shape"):
                    text = (f"the port {how}; both miss the same values, so reference.py or the manifest's "
                            f"tensors / bind are wrong, not the port ({text})")
                if declared and not same:
                    text += (f"; {declared[0].label} declares a defect of the kernel for this variant, but "
                             f"the port does not agree with the reference: the port is wrong")
                bad.append(("manifest" if same else "kernel", "numerics", text))
        la = r.get("launches")
        # the host's restaging copies (ffi.restage_strides, listed in the row) are not the port's
        copies = sum(int(x.get("copies", 0)) for x in (r.get("restaged") or {}).values())
        if la and la["port"] - copies != la["ref"]:
            bad.append(("host", "launch", f"port launches {la['port']} kernel(s) per call"
                                          + (f" ({copies} of them the host's restaging copies)" if copies else "")
                                          + f", reference {la['ref']} ({r.get('kernel_names')})"))
        if (ref.get("error") or ref.get("ok") is False) and shown is None:
            findings.append(Finding("numerics", "warn", "manifest" if same_miss(r) else "kernel",
                                    f"{where}: the cuTile Python reference itself fails the check: "
                                    f"{ref.get('error') or ref.get('worst')}"))
        for fc, cat, msg in bad:
            findings.append(Finding(cat, "critical", owner_of(fc, writers.get(r["kernel"])), f"{where}: {msg}"))
            fail_classes.append(fc)
            owners.append((fc, findings[-1].owner))
        prev = variants.get(key, "PASS")
        word = "FAIL" if bad else VARIANT_WORD if shown is not None else "PASS"
        variants[key] = ("FAIL" if "FAIL" in (prev, word) else prev if prev == "NOT_RUN"
                         else VARIANT_WORD if VARIANT_WORD in (prev, word) else "PASS")
    stale = []
    for d in defects:
        for vid in d.variants:
            key = f"{d.kernel}/{vid}"
            ran = [r for r in rows if f"{r['kernel']}/{r['variant']}" == key and "not_run" not in r]
            if ran and not ref_missed.get(key):
                msg = (f"{d.manifest}:{d.manifest_line}: {d.label.split(' ')[0]} declares a defect of {d.kernel} "
                       f"({d.where}) for variant {vid}, but the cuTile Python reference matches the PyTorch "
                       f"semantics on all {len(ran)} test call(s) of it: a stale declaration (remove the entry "
                       f"or narrow its variants)")
                findings.append(Finding("manifest", "warn", "manifest", msg))
                stale.append({**d.to_dict(), "variant": vid, "message": msg})
    details = {"cases": rows, "variants": variants, "seconds": secs, "env": env or {}}
    if defects:
        details["known_defects"] = known
        details["stale_defects"] = stale
    n_fail = sum(1 for v in variants.values() if v not in VARIANT_PASSED + ("BLOCKED",))
    n_blocked = sum(1 for v in variants.values() if v == "BLOCKED")
    if not rows:        # the manifest's test_shapes / fits: no writer or host builder can act
        return Verdict(stage="gpu_test", op=op, verdict="BLOCKED", owner="manifest", fail_class=None,
                       attempt=attempt, summary="no test shape fits any variant", details=details)
    tail = (f"; {len(stale)} declared known defect(s) did not show: stale ({stale[0]['declared']})"
            if stale else "")
    if n_blocked:
        tail += f"; {n_blocked} variant(s) BLOCKED, not translated (not tested)"
    if rows and n_blocked == len(variants):
        return Verdict(stage="gpu_test", op=op, verdict="BLOCKED", owner="tool", fail_class=None, attempt=attempt,
                       summary=(f"every variant a test shape fits is BLOCKED, not translated: "
                                f"{rows[0]['blocked']}")[:1500],
                       findings=findings, details=details)
    if n_fail == 0 and known:
        first = next(iter(known.values()))
        n_def = sum(1 for v in variants.values() if v == VARIANT_WORD)
        return Verdict(stage="gpu_test", op=op, verdict=OP_WORD, owner="kernel", fail_class=None,
                       attempt=attempt,
                       summary=(f"the port is faithful, the reference defective: {len(variants) - n_def} of "
                                f"{len(variants)} variant(s) within tolerance; {n_def} miss the PyTorch semantics "
                                f"exactly as the cuTile Python reference does, a known defect of the kernel "
                                f"declared in known_defects[{first['entry']}] ({first['declared']}): "
                                f"{first['kernel']} at {first['line']}: {first['effect'][:200]}"
                                + tail)[:1500],
                       findings=findings, details=details)
    if n_fail == 0:
        return Verdict(stage="gpu_test", op=op, verdict="ALL_PASS", attempt=attempt,
                       summary=f"{len(variants)} variant(s) x {len(rows)} call(s) within tolerance, "
                               f"equal launch counts" + tail, findings=findings, details=details)
    crit = [f for f in findings if f.severity == "critical"] or findings
    fc = next((c for c in ("kernel", "host", "env") if c in fail_classes), None)
    if fc is None and "manifest" in fail_classes:
        # only the expected values are off: the routes stop (no writer or host builder acts)
        return Verdict(stage="gpu_test", op=op, verdict="FAIL", owner="manifest", fail_class=None,
                       attempt=attempt, summary=f"{n_fail} of {len(variants)} variant(s) fail: "
                                                f"{brief(crit[0].message)}", findings=findings, details=details)
    fc = fc or "kernel"
    owner = next((o for c, o in owners if c == fc), owner_of(fc, None))
    return Verdict(stage="gpu_test", op=op, verdict="FAIL", owner=owner, fail_class=fc, attempt=attempt,
                   summary=f"{n_fail} of {len(variants)} variant(s) fail: {brief(crit[0].message)}",
                   findings=findings, details=details)


def cli_args(description: str, argv=None, extra=None):
    """Arguments shared by the GPU stages' command lines. ``--gpu`` and the seed default to
    ``config.yaml``'s ``gpu`` and ``bench.seed``; an unknown operator exits with status 2."""
    ap = argparse.ArgumentParser(description=description,
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--op", required=True, help="operator folder name under --operators")
    ap.add_argument("--operators", default=str(REPO / "operators"), help="operators folder")
    ap.add_argument("--results", default="results", help="results tree built by the CPU stages")
    ap.add_argument("--config", default=str(REPO / "config.yaml"),
                    help="config.yaml: defaults of --gpu, --seed and the bench settings")
    ap.add_argument("--gpu", choices=("auto", "required", "off"), default=None,
                    help="default: config.yaml's gpu")
    ap.add_argument("--seed", type=int, default=None, help="default: config.yaml's bench.seed")
    if extra:
        extra(ap)
    a = ap.parse_args(argv)
    try:
        cfg = yamlio.load_file(a.config) or {}
    except (OSError, yaml.YAMLError) as exc:
        ap.error(f"--config {a.config}: {exc}")
    a.cfg = cfg
    a.gpu = a.gpu or cfg.get("gpu", "auto")
    a.seed = a.seed if a.seed is not None else (cfg.get("bench") or {}).get("seed", 0)
    if not (Path(a.operators) / a.op / "manifest.yaml").is_file():
        ap.error(f"--op {a.op}: no {Path(a.operators) / a.op / 'manifest.yaml'}")
    return a


def main(argv=None) -> int:
    a = cli_args("tileport GPU functional test of one operator", argv,
                 lambda ap: ap.add_argument("--out", help="default: <results>/<op>/test.json"))
    out = a.out or str(Path(a.results) / a.op / "test.json")
    d = run(a.op, Path(a.operators) / a.op, a.results, out, gpu=a.gpu, seed=a.seed)
    print(d["verdict"], d["summary"])
    return exit_status(d)


def exit_status(d: dict) -> int:
    """Command-line exit status of a GPU stage: 0 when it measured or was not run (ALL_PASS,
    FAITHFUL_REF_DEFECT: the port is faithful; DONE, BELOW_THRESHOLD, NOT_RUN), 1 otherwise
    (FAIL, ERROR, BLOCKED)."""
    return 0 if d["verdict"] in TEST_PASSED + ("DONE", "BELOW_THRESHOLD", "NOT_RUN") else 1


if __name__ == "__main__":
    sys.exit(main())
