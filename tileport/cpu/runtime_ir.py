"""Stage ``runtime_ir``: the Tile IR and SASS that run, on both sides, for every perf shape, on the CPU.

One job per (operator, kernel). For every variant at IR PASS and every perf shape it times
(:func:`tileport.model.launch_facts.perf_cases`), it derives each launcher's facts
(:mod:`tileport.model.launch_facts`), and compiles two readings:

* ``launched``: the reference exported with ``ct.launch``'s facts in its ``KernelSignature``
  (cuda-tile 1.7.0 ``ArrayConstraint`` ``shape_divisible_by`` / ``stride_divisible_by`` /
  ``shape_constant`` / ``stride_constant`` / ``base_addr_divisible_by``), the port compiled with
  cutile's ``spec_args`` and ``scalar_hints`` (``rust/irdump.rs`` drives ``KernelCompiler``) as
  tileport's host shim launches it (an array the port reads the strides of by dimension in the
  layout it was compiled for: :func:`port_launch_facts`);
* ``matched``: both with the port's array facts (:func:`launch_facts.matched_facts`); integer
  scalar hints, which a cuda-tile signature cannot state, are left out of the port too.

Each pair gets the run-time IR diff (:func:`tileport.ir_diff.entry_facts.diff_runtime_pair`, kept
by content in ``irdiff/``: :func:`tileport.ir_diff.kept.kept_diff_runtime_pair`) and,
per architecture of :data:`tileport.cpu.sass.ARCHS`, a SASS comparison
(:func:`tileport.cpu.sass.compare`); a SASS that differs where the IR diff passes carries its
``cause`` (:func:`sass_cause`: launch facts, a difference the structural diff matched through,
or identical Tile IR). Every distinct compilation runs once: Tile IR keyed by what
it is compiled from, SASS by the bytecode (:func:`tileport.cpu.sass.cache_key`), so shapes that
share a specialisation share the work. Both are also kept across jobs, runs and clones of one
machine under ``tileport.core.toolchain.cache_root()`` (``tileir/``, ``sass/``; env
``TILEPORT_TILEIR_CACHE=off`` / ``TILEPORT_SASS_CACHE=off`` / ``TILEPORT_IRDIFF_CACHE=off``
bypass them): the reference is
exported from kernel.py's path relative to the working directory (the repository root in a
Snakemake job), so its bytecode names no checkout.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

from tileport.core import source
from tileport.core.verdict import Finding, Verdict, VerdictError, link_or_copy, read, write
from tileport.cpu import reference_ir, rust_ir, sass
from tileport.ir_diff.kept import kept_diff_runtime_pair
from tileport.ir_diff.parse import IRParseError
from tileport.model import constructs, frontend, manifest
from tileport.model import launch_facts as lf
from tileport.translate import memory

READINGS = ("launched", "matched")
_RANK = {"PASS": 0, "PASS_WITH_NOTES": 1, "FAIL": 2, "ERROR": 3}


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def ref_signature(params: list[dict], variant: manifest.Variant, facts: dict[str, lf.ArrayFacts]):
    """A cuda-tile 1.7.0 ``KernelSignature`` for one variant with each array's launch facts
    (``facts`` by parameter name; the other fields as :func:`reference_ir.signature_for` sets
    them). The calling convention is the one ``ct.launch`` picks: ``cutile_python_v1`` unless
    an extent is constant (``shape_constant`` needs v2); every reference kernel name in
    docs/results/h200 bench.json shows that choice (``_K t1`` / ``_K t2``)."""
    import cuda.tile as ct
    from cuda.tile.compilation import ArrayConstraint, CallingConvention, KernelSignature, ScalarConstraint

    out, v2 = [], False
    for p in params:
        if p["kind"] == "array":
            if p.get("list"):
                raise ValueError(f"array list {p['name']}: the launch facts of a list are not derived")
            f = facts[p["name"]]
            v2 = v2 or any(c is not None for c in f.shape_const)
            out.append(ArrayConstraint(
                getattr(ct, manifest.DTYPES[manifest.resolve_dtype(p.get("dtype"), variant.dtype)][0]), p["ndim"],
                index_dtype=ct.int64 if p.get("index_dtype") == "i64" else ct.int32,
                stride_lower_bound_incl=0,
                alias_groups=[p["alias_group"]] if p.get("alias_group") else [], may_alias_internally=False,
                stride_constant=list(f.stride_const), shape_constant=list(f.shape_const),
                stride_divisible_by=list(f.stride_div), shape_divisible_by=list(f.shape_div),
                base_addr_divisible_by=f.base_div))
        elif p["kind"] == "constexpr":
            out.append(variant.constexprs[p["name"]])
        else:
            out.append(ScalarConstraint(getattr(ct, manifest.DTYPES[p["dtype"]][0])))
    cc = CallingConvention.cutile_python_v2() if v2 else CallingConvention.cutile_python_v1()
    return KernelSignature(out, calling_convention=cc)


def port_launch_facts(arrays: dict, strided) -> dict[str, lf.ArrayFacts]:
    """cutile's launch facts for each array of one call (``arrays``: name -> ``Shaped``) as
    tileport's host shim launches the port: an array in ``strided`` (Rust names of the arrays
    the port reads the strides of by dimension, ``memory.strided_arrays``) in the layout the port
    was compiled for (:func:`launch_facts.port_facts_shimmed`: a unit stride on a dimension of
    extent 1, or on an outer one, is not compiled as a static 1), every other one as cutile's
    launcher derives them (:func:`launch_facts.port_facts`). Errors: ``LaunchFactsError``."""
    return {n: (lf.port_facts_shimmed if constructs.rust_ident(n) in strided else lf.port_facts)(a)
            for n, a in arrays.items()}


def port_spec(params: list[dict], facts: dict[str, lf.ArrayFacts], hints: dict[str, int]) -> tuple[str, str, str]:
    """The dumper's ``<strides> <spec args> <scalar hints>`` arguments (``rust/irdump.rs``) for
    the port compiled with ``facts`` (stride of 1 static, others dynamic, as cutile's launcher
    compiles ``stride_one``) and integer scalar ``hints`` (divisor by parameter name)."""
    strides, specs = [], []
    for p in params:
        if p["kind"] != "array":
            continue
        f, name = facts[p["name"]], constructs.rust_ident(p["name"])
        strides.append(f"{name}=" + ",".join("1" if c == 1 else "-1" for c in f.stride_const))
        specs.append(f"{name}=" + "|".join([",".join(map(str, f.shape_div)), ",".join(map(str, f.stride_div)),
                                            ",".join("1" if c == 1 else "0" for c in f.stride_const),
                                            str(f.base_div)]))
    hint = ";".join(f"{constructs.rust_ident(k)}={v}" for k, v in hints.items() if v > 1)
    return ";".join(strides), ";".join(specs), hint


def sass_cause(d: dict) -> str:
    """What made two compilations' SASS differ where their run-time IR diff passes, from that
    diff (:func:`tileport.ir_diff.entry_facts.diff_runtime_pair`'s result), so that no such
    verdict is silent: the launch facts that differ (``launch facts differ: <label> ref <fact>
    port <fact>; ...``); then up to three named differences the structural diff matched through
    (its warn and info findings but the assume tallies, loop placement first: ``1 load(s) run
    inside more loops on the port side ...``) and the raw Tile IR op counts that differ (``Tile IR op counts ref/port:
    make_token 1/7, ...``); or, where the two texts are the same program up to debug locations
    and the entry's name, ``identical Tile IR`` (then tileiras made the difference: its flags
    differ by side, :data:`tileport.cpu.sass.FLAGS`)."""
    raw = d.get("raw") or {}
    if raw.get("identical"):
        return ("identical Tile IR (up to debug locations and the entry's name): the difference is "
                "tileiras's, run with each launcher's flags")
    parts = []
    if d.get("facts_differ"):
        parts.append("launch facts differ: " + "; ".join(f"{k} ref {a or 'none'} port {b or 'none'}"
                                                         for k, a, b in d["facts_differ"]))
    # the assume tallies are left out: facts are compared above, and a one-sided assume on a
    # computed value (cuda-tile restates an offset pointer's alignment) is as common where the
    # SASS is identical
    named = [f for f in d.get("findings", []) if f.category != "launch_facts"
             and not f.message.startswith(("assume ops are transparent", "only the ref assumes",
                                           "only the port assumes"))]
    named.sort(key=lambda f: ("run inside more loops" not in f.message, f.severity != "warn"))
    parts += list(dict.fromkeys(f.message[:300] for f in named))[:3]
    counts = ", ".join(f"{k} {a}/{b}" for k, (a, b) in (raw.get("op_counts") or {}).items())
    if counts:
        parts.append(f"Tile IR op counts ref/port: {counts}")
    return "; ".join(parts) or "no difference named: the run-time IR diff and the op counts agree"


class _Work:
    """The compilations of one job, each done once (keyed by its inputs; SASS by bytecode)."""

    def __init__(self, op_dir: Path, kernel: str, art: Path, binary: str | None, target: str,
                 crate: Path | None = None, op: str = ""):
        self.op_dir, self.kernel, self.art, self.binary, self.target = op_dir, kernel, art, binary, target
        self.crate, self.op = crate, op
        self.ir: dict[str, Path] = {}
        self.sass: dict[str, dict] = {}
        self.counts = {"tile_ir": 0, "tile_ir_cached": 0, "sass": 0, "sass_cached": 0, "tile_ir_s": 0.0,
                       "sass_s": 0.0}
        self._mod = None
        kpy = source.kernel_py(op_dir)
        # exported from its path relative to the working directory where it lies below it: the
        # bytecode's debug locations then name no checkout (the Tile IR cache is shared by clones)
        self.kpy = reference_ir.exported_path(kpy)
        self.kpy_text = Path(kpy).read_text() if Path(kpy).is_file() else ""

    def _compiled(self, key: str, inputs: list, compile_to) -> Path:
        """The bytecode (and its tileirdisasm text beside it) of ``key``: from this job, from the
        machine's Tile IR cache (keyed by ``inputs``: everything the program is compiled from),
        or compiled by ``compile_to(bytecode_path)`` and then kept there."""
        if key in self.ir:
            return self.ir[key]
        t0 = time.monotonic()
        bc = self.art / "ir" / f"{key}.tileirbc"
        if rust_ir.kept_tileir(inputs, bc, compile_to):
            self.counts["tile_ir_cached"] += 1
        self.ir[key] = bc
        self.counts["tile_ir"] += 1
        self.counts["tile_ir_s"] += time.monotonic() - t0
        return bc

    def ref(self, variant: manifest.Variant, sig) -> Path:
        key = "ref-" + _sha([variant.id, variant.hints, repr(sig)])[:16]

        def export(bc: Path) -> None:
            if self._mod is None:
                self._mod = reference_ir.load_module(self.kpy)
            from cuda.tile.compilation import export_kernel

            export_kernel(reference_ir.kernel_object(self._mod, self.kernel, variant), [sig], str(bc),
                          output_format="tileir_bytecode")

        return self._compiled(key, ["ref", self.kpy_text, str(self.kpy), self.kernel, repr(variant), repr(sig),
                                    *reference_ir.cuda_tile_id(), sass.tool_id("tileirdisasm")], export)

    def port(self, entry: str, generics: list[str], strides: str, spec: str, hints: str,
             target: str | None = None) -> Path:
        """The port's bytecode, compiled by cutile for ``target`` (default: the job's): its
        hints are keyed by the target it is compiled for, as cutile's JIT compiles for the GPU
        it launches on."""
        target = target or self.target
        key = "port-" + _sha([entry, generics, strides, spec, hints, target])[:16]
        rs = Path(self.crate) / "src" / f"{self.kernel}.rs"

        def dump(bc: Path) -> None:
            job = rust_ir.dump_job(self.crate, self.op, self.kernel, entry, bc, target, generics, strides, spec, hints)
            proc = rust_ir.run_dumper([self.binary], job)
            if proc.returncode != 0:
                raise RuntimeError(f"cutile compile ({' | '.join(job)}): {proc.stderr.strip()[:1500]}")

        # the dumper compiles the kernel's file at run time: keyed as check_kernel's dumps are
        return self._compiled(key, rust_ir.port_inputs(rs.read_text(), self.kernel, entry, generics, strides, spec,
                                                       hints, target, self.binary), dump)

    def sass_of(self, bc: Path, side: str, arch: str, opt: int) -> dict:
        data = bc.read_bytes()
        key = f"{hashlib.sha256(data).hexdigest()[:16]}.{side}.O{opt}.{arch}"
        if key not in self.sass:
            t0 = time.monotonic()
            out = self.art / "sass" / f"{key}.sass"
            ins, res, hit = sass.compiled_instructions(bc, arch, side, out, opt, data=data)
            self.sass[key] = {"file": out, "instructions": ins, "resources": res}
            self.counts["sass"] += 1
            self.counts["sass_cached"] += int(hit)
            self.counts["sass_s"] += time.monotonic() - t0
        return self.sass[key]


def run(op_dir, op: str, kernel: str, build_json, ir_diff_verdicts: dict[str, str], out_json,
        art_dir, target: str = "sm_90", archs=sass.ARCHS) -> dict:
    """Run the stage for one kernel and write its verdict (see the module doc); never raises on
    bad input. ``ir_diff_verdicts``: variant id -> path of its hint-free ``ir_diff`` verdict
    (only variants at PASS / PASS_WITH_NOTES are compiled; the others are listed as not run).

    Verdict: the worst run-time IR diff over all (variant, shape, reading): PASS, PASS_WITH_NOTES
    (launch facts differ, owner ``tool``), FAIL; ERROR when a compilation failed (owner ``env``
    for a missing tool, else ``tool``); BLOCKED when no variant is at IR PASS.
    ``details.cases``: one record per (variant, shape) with both readings' facts, IR diff and
    per-architecture SASS verdict; ``details.cost``: compilations done and CPU seconds.
    """
    t_start, cpu0 = time.monotonic(), os.times()
    base = dict(stage="runtime_ir", op=op, kernel=kernel)
    art = Path(art_dir)
    shutil.rmtree(art, ignore_errors=True)
    art.mkdir(parents=True)
    try:
        model = frontend.load(op_dir)
        man = model.manifest
        params = model.kernel(kernel).info()["params"]
        cases = lf.perf_cases(man, kernel)
    except (lf.LaunchFactsError, manifest.ManifestError, KeyError, ValueError) as exc:
        return write(Verdict(**base, verdict="BLOCKED", owner="manifest", summary=str(exc)[:1500],
                             findings=[Finding("manifest", "critical", "manifest", str(exc))]), out_json)
    ready, skipped = set(), {}
    for vid, path in ir_diff_verdicts.items():
        try:
            v = read(path)
            if v["verdict"] in ("PASS", "PASS_WITH_NOTES"):
                ready.add(vid)
            else:
                skipped[vid] = f"ir_diff {v['verdict']}: {v['summary'][:200]}"
        except VerdictError as exc:
            skipped[vid] = str(exc)
    binary, writer, crate = None, None, None
    try:
        b = read(build_json)
        if b["verdict"] == "PASS" and kernel in b["details"].get("kernels", []):
            binary = b["details"]["binary"]
            crate = Path(b["details"].get("crate") or Path(binary).parent)
            writer = (b["details"].get("writers") or {}).get(kernel)
    except VerdictError:
        pass
    todo = [(v, s) for v, s in cases if v.id in ready]
    if not todo or binary is None:
        why = "no Rust build of this kernel" if binary is None else "no variant at IR PASS has a perf shape"
        return write(Verdict(**base, verdict="BLOCKED", owner="kernel" if binary is None else "tool",
                             summary=f"nothing to compile: {why}",
                             details={"not_run": skipped, "cases": []}), out_json)
    work = _Work(Path(op_dir), kernel, art, binary, target, crate, op)
    # arrays whose strides the port reads by dimension: launched in the shim's layout
    strided = set(memory.strided_arrays((Path(crate) / "src" / f"{kernel}.rs").read_text()))
    kpy = source.kernel_py(op_dir)
    records, findings, worst, errors = [], [], "PASS", 0
    for variant, shape in todo:
        rec = {"variant": variant.id, "shape": list(shape), "readings": {}}
        records.append(rec)
        sdir = art / "cases" / variant.id / "x".join(map(str, shape))
        try:
            arrays, scalars = lf.call_arrays(man, kernel, params, variant, shape)
            lists = [n for n, a in arrays.items() if isinstance(a, list)]
            if lists:
                raise lf.LaunchFactsError(f"array list(s) {', '.join(lists)}: launch facts of a list not derived")
            port_f = port_launch_facts(arrays, strided)
            statics = {p["name"]: p.get("static_shape") for p in params if p["kind"] == "array"}
            ints = {p["name"]: lf.port_scalar_hint(scalars[p["name"]]) for p in params
                    if p["kind"].startswith("scalar") and p.get("dtype", "f32")[0] in "iu" and p["name"] in scalars}
            sides = {"launched": ({n: lf.reference_facts(a) for n, a in arrays.items()}, port_f, ints),
                     "matched": ({n: lf.matched_facts(f, statics.get(n)) for n, f in port_f.items()}, port_f, {})}
            rec["arrays"] = {n: {"dtype": a.dtype, "shape": list(a.shape), "strides": list(a.strides),
                                 "offset": a.offset} for n, a in arrays.items()}
            rec["scalar_hints"] = ints
        except lf.LaunchFactsError as exc:
            rec["error"] = {"owner": "tool", "message": str(exc)[:1500]}
            errors += 1
            continue
        generics, _ = rust_ir.variant_args(model.kernel(kernel).info(), variant)
        entry = rust_ir.entry_for(crate / "src" / f"{kernel}.rs.map.json", kernel, variant.id)
        opt = int(variant.hints.get("opt_level", 3)) if variant.hints else 3
        pending_fail = None
        for reading, (ref_f, pf, hints) in sides.items():
            out = {"facts": {"ref": {n: f.as_dict() for n, f in ref_f.items()},
                             "port": {n: f.as_dict() for n, f in pf.items()}, "port_scalar_hints": hints}}
            rec["readings"][reading] = out
            try:
                rbc = work.ref(variant, ref_signature(params, variant, ref_f))
                strides, spec, hint = port_spec(params, pf, hints)
                pbc = work.port(entry, generics, strides, spec, hint)
            except FileNotFoundError as exc:
                out["error"] = {"owner": "env", "message": str(exc)[:1500]}
                errors += 1
                continue
            except Exception as exc:  # noqa: BLE001 - a compile failure of one case is recorded
                out["error"] = {"owner": "tool", "message": f"{type(exc).__name__}: {exc}"[:1500]}
                errors += 1
                continue
            out["ref_ir"] = link_or_copy(rbc.with_suffix(".tileir"), sdir / f"{reading}.ref.tileir")
            out["port_ir"] = link_or_copy(pbc.with_suffix(".tileir"), sdir / f"{reading}.port.tileir")
            try:
                d = kept_diff_runtime_pair(rbc.with_suffix(".tileir").read_text(),
                                           pbc.with_suffix(".tileir").read_text(),
                                           params, out["ref_ir"], out["port_ir"], target)
            except (IRParseError, ValueError) as exc:
                out["error"] = {"owner": "tool", "message": f"run-time IR diff: {exc}"[:1500]}
                errors += 1
                continue
            out["ir_diff"] = {"verdict": d["verdict"], "owner": d["owner"], "summary": d["summary"],
                              "facts_differ": d["facts_differ"],
                              "findings": [f.__dict__ for f in d["findings"] if f.severity != "info"][:20]}
            cat = next((f.category for f in d["findings"] if f.severity == "critical"), "signature")
            failed = Finding(cat, "critical", d["owner"] or "tool",
                             f"{variant.id} {tuple(shape)} {reading}: {d['summary']}"[:1500])
            if reading == "launched" and d["verdict"] == "FAIL":
                pending_fail = failed       # judged once the matched reading of the case is known
            else:
                if _RANK[d["verdict"]] > _RANK[worst]:
                    worst = d["verdict"]
                if d["verdict"] == "FAIL":
                    findings.append(failed)
            out["sass"] = {}
            for arch in archs:
                try:
                    r = work.sass_of(rbc, "ref", arch, opt)
                    p = work.sass_of(pbc if arch == target else work.port(entry, generics, strides, spec, hint, arch),
                                     "port", arch, opt)
                except (sass.SassError, FileNotFoundError, RuntimeError) as exc:
                    out["sass"][arch] = {"verdict": "ERROR", "message": str(exc)[:800],
                                         "owner": "env" if isinstance(exc, FileNotFoundError)
                                         else "compiler" if isinstance(exc, sass.SassError) else "tool"}
                    errors += 1
                    continue
                cmp = sass.compare(r["instructions"], p["instructions"])
                cmp["resources"] = {"ref": r["resources"], "port": p["resources"]}
                cmp["ref"] = link_or_copy(r["file"], sdir / f"{reading}.ref.{arch}.sass")
                cmp["port"] = link_or_copy(p["file"], sdir / f"{reading}.port.{arch}.sass")
                if cmp["verdict"] != "IDENTICAL" and d["verdict"] != "FAIL":
                    cmp["cause"] = sass_cause(d)
                out["sass"][arch] = cmp
        if pending_fail is not None:
            # the IR differs as launched but not under the same facts: the launchers' facts (an
            # extent ct.launch makes a constant, a divisor one side states) made it differ, not the port
            m = (rec["readings"].get("matched", {}).get("ir_diff") or {}).get("verdict")
            if m in ("PASS", "PASS_WITH_NOTES"):
                rec["readings"]["launched"]["ir_diff"]["by_launch_facts"] = True
                worst = max(worst, "PASS_WITH_NOTES", key=lambda v: _RANK[v])
                findings.append(Finding("launch_facts", "warn", "tool",
                                        f"{pending_fail.message} -- the matched reading is {m}: the launchers' "
                                        f"facts alone make the Tile IR differ"[:1500]))
            else:
                worst = max(worst, "FAIL", key=lambda v: _RANK[v])
                findings.append(pending_fail)
    findings += _case_findings(records, archs)
    cpu1 = os.times()
    cost = {**work.counts, "cases": len(records), "wall_s": round(time.monotonic() - t_start, 2),
            "cpu_s": round(sum(cpu1[:4]) - sum(cpu0[:4]), 2),
            "tile_ir_s": round(work.counts["tile_ir_s"], 2), "sass_s": round(work.counts["sass_s"], 2)}
    tally = _tally(records, archs)
    details = {"cases": records, "not_run": skipped, "cost": cost, "tally": tally, "writer": writer,
               "kernel_py": str(kpy), "archs": list(archs)}
    if errors:
        first = next(e for r in records for e in [r.get("error")] + [x.get("error") for x in r["readings"].values()]
                     + [s for x in r["readings"].values() for s in (x.get("sass") or {}).values()
                        if s.get("verdict") == "ERROR"] if e)
        owner = first.get("owner", "tool")
        return write(Verdict(**base, verdict="ERROR", owner=owner,
                             summary=f"{errors} compilation(s) or comparison(s) failed; first: "
                                     f"{first['message']}"[:1500],
                             findings=findings + [Finding("build", "critical", owner, first["message"])],
                             details=details), out_json)
    owner = None if worst == "PASS" else ("tool" if worst == "PASS_WITH_NOTES" else findings[0].owner)
    summary = (f"{len(records)} (variant, shape) case(s), {cost['tile_ir']} Tile IR and {cost['sass']} SASS "
               f"compilations; " + "; ".join(f"{k}: {v}" for k, v in tally.items()))
    return write(Verdict(**base, verdict=worst, owner=owner, summary=summary[:1500], findings=findings,
                         details=details), out_json)


def _case_findings(records: list[dict], archs) -> list[Finding]:
    """The stage's own findings: each launch fact that differs as launched (one per (fact, ref,
    port), with the cases it holds in; owner ``tool``: the launchers derive it), and each SASS that
    differs although both sides had the same facts (matched reading: the Tile IR's form, owner
    ``tool``), with its ``cause`` (:func:`sass_cause`)."""
    facts: dict[tuple, list] = {}
    out = []
    for r in records:
        where = f"{r['variant']} {'x'.join(map(str, r['shape']))}"
        for label, a, b in (r["readings"].get("launched", {}).get("ir_diff") or {}).get("facts_differ", []):
            facts.setdefault((label, a, b), []).append(where)
        for arch in archs:
            s = (r["readings"].get("matched", {}).get("sass") or {}).get(arch) or {}
            if s.get("verdict") == "DIFFERENT":
                occ = sass.occupancy_text(s.get("resources"))
                out.append(Finding("performance", "warn", "tool",
                                   f"{where} matched {arch}: same launch facts, other SASS: ref "
                                   f"{s['ref_instructions']}, port {s['port_instructions']} instructions "
                                   f"({sass.delta_text(s['delta'])})" + (f"; {occ}" if occ else "")
                                   + (f"; cause: {s['cause']}" if s.get("cause") else "")))
    head = [Finding("launch_facts", "warn", "tool",
                    f"{label}: ct.launch states {a or 'none'}, cutile's launcher {b or 'none'} "
                    f"({len(w)} case(s): {', '.join(w[:3])}{' ...' if len(w) > 3 else ''})")
            for (label, a, b), w in facts.items()]
    return (head + out)[:40]


def _tally(records: list[dict], archs) -> dict:
    """``{"launched ir": "PASS 3, PASS_WITH_NOTES 2", "launched sm_90": "IDENTICAL 1, DIFFERENT 4", ...}``."""
    from collections import Counter

    out = {}
    for reading in READINGS:
        c = Counter(r["readings"][reading]["ir_diff"]["verdict"] for r in records
                    if "ir_diff" in r["readings"].get(reading, {}))
        out[f"{reading} ir"] = ", ".join(f"{k} {n}" for k, n in sorted(c.items()))
        for arch in archs:
            c = Counter(r["readings"][reading]["sass"][arch]["verdict"] for r in records
                        if arch in (r["readings"].get(reading, {}).get("sass") or {}))
            out[f"{reading} {arch}"] = ", ".join(f"{k} {n}" for k, n in sorted(c.items()))
    return out


def variant_rows(doc: dict) -> dict[str, dict]:
    """Per variant, the summary's run-time columns from a ``runtime_ir`` verdict document:
    ``runtime_ir`` (worst run-time IR diff verdict of the launched reading over the variant's
    perf shapes, ``matched`` in brackets) and ``sass_sm_90`` / ``sass_sm_100`` (per reading the
    worst SASS verdict, with the opcode delta of the first DIFFERENT shape), e.g.
    ``DIFFERENT 37x1000 (LDG.E.U16 -32, ...) | matched IDENTICAL``."""
    order = {"IDENTICAL": 0, "SAME_OPCODE_COUNTS": 1, "DIFFERENT": 2, "ERROR": 3}
    rows: dict[str, dict] = {}
    for r in (doc.get("details") or {}).get("cases", []):
        row = rows.setdefault(r["variant"], {"cases": []})
        row["cases"].append(r)
    out = {}
    for vid, row in rows.items():
        cols = {}
        ir = {}
        for reading in READINGS:
            vs = [c["readings"].get(reading, {}).get("ir_diff", {}).get("verdict") or "ERROR" for c in row["cases"]]
            ir[reading] = max(vs, key=lambda v: _RANK.get(v, 3))
        if ir["launched"] == "FAIL" and all((c["readings"].get("launched", {}).get("ir_diff") or {}).get(
                "by_launch_facts") for c in row["cases"]
                if (c["readings"].get("launched", {}).get("ir_diff") or {}).get("verdict") == "FAIL"):
            ir["launched"] = "FAIL (launch facts)"     # the same facts give the same IR: the launchers'
        cols["runtime_ir"] = f"{ir['launched']} | matched {ir['matched']}"
        for arch in (doc.get("details") or {}).get("archs", sass.ARCHS):
            parts = []
            for reading in READINGS:
                got = [(c["readings"].get(reading, {}).get("sass", {}).get(arch) or {"verdict": "ERROR"}, c["shape"])
                       for c in row["cases"]]
                worst, shape = max(got, key=lambda g: order.get(g[0]["verdict"], 3))
                text = worst["verdict"]
                if text == "DIFFERENT":
                    text += f" {'x'.join(map(str, shape))} ({sass.delta_text(worst['delta'], 3)})"
                parts.append(text if reading == "launched" else f"matched {text}")
            cols[f"sass_{arch}"] = " | ".join(parts)
        out[vid] = cols
    return out
