"""Stage ``mutation``: how often each check catches a wrong port (issue 36), for one kernel.

The accepted port (``results/<op>/rust/src/<kernel>.rs``) is mutated (:mod:`tileport.cpu.mutate`)
and every mutant, plus the unmutated port (``m000``, the false-positive baseline), is

1. compiled: rustc's ``cargo check`` of one crate holding every mutant as a module (a mutant
   rustc rejects is dropped and the rest checked again), then cutile's compiler through
   tileport's one IR dumper (:func:`tileport.cpu.rust_ir.run_dumper_batch`), hint-free and as
   launched; a mutant either compiler rejects counts as ``compiles: false``, never as caught;
2. run past the detectors, per affected variant (the variants whose entry holds the edited line,
   at most ``max_variants``):

   * ``ir_diff``: the structural hint-free diff against the reference Tile IR, exactly as
     ``check_kernel`` runs it (:func:`tileport.ir_diff.stage.run`);
   * ``runtime_ir``: the run-time pair of :mod:`tileport.cpu.runtime_ir` (launched and matched
     readings, the first ``max_shapes`` perf shapes of the variant), judged as that stage does
     (a launched FAIL counts only if the matched reading fails too);
   * ``sass``: the SASS verdict (:func:`tileport.cpu.sass.compare`, ``IDENTICAL`` or not) of each
     reading for each arch in ``archs``. Shortcut (tileiras costs 2-8 s a call): SASS is
     compiled only for a mutant whose run-time Tile IR text differs from the unmutated port's;
     an identical text has the unmutated port's SASS by construction;
   * ``grep_count``: :mod:`tileport.ir_diff.grep_count` on the hint-free pair.

A detector *catches* a mutant when, on some affected variant where it passes the unmutated port,
it flags the mutant. Flagging is a FAIL for the IR diffs (semantic kinds) or any new finding
(the speed-hint kinds of :data:`HINT_KINDS`, whose right answer is a note), a count difference for
``grep_count``; ``sass`` catches where a (shape, reading, arch) whose SASS is IDENTICAL to the
reference's for the unmutated port is not for the mutant (the launched reading often differs by
the launchers' facts alone). The baseline's flags are the false positives (for ``sass``: a
variant with any SASS not IDENTICAL). ``ir_identical``: the mutant's Tile IR equals the
unmutated port's up to debug locations (:func:`without_locations`) in every compilation.
"""
from __future__ import annotations

import fcntl
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

from tileport.core import toolchain
from tileport.core.verdict import Finding, Verdict, VerdictError, atomic_write_text, read, write
from tileport.cpu import mutate, rust_ir, sass
from tileport.cpu.runtime_ir import port_spec
from tileport.ir_diff import grep_count
from tileport.ir_diff import stage as ir_diff_stage
from tileport.ir_diff.entry_facts import diff_runtime_pair
from tileport.ir_diff.parse import IRParseError
from tileport.model import frontend, manifest
from tileport.model import launch_facts as lf

#: kinds that change speed hints only: the right verdict is a note (PASS_WITH_NOTES), not a FAIL
HINT_KINDS = ("latency_hint", "tma_hint")
DETECTORS = ("ir_diff", "runtime_ir", "sass", "grep_count")
DEFAULTS = {"seed": 0, "per_kind": 4, "max_mutants": 48, "max_variants": 1, "max_shapes": 1,
            "archs": ["sm_90"]}
BASE = "m000"


def _rustc(crate: Path, op: str, mods: list[str]) -> dict[str, str]:
    """Modules of ``crate`` rustc rejects (name -> first error): ``cargo check`` of all of them,
    then again without the rejected ones until the rest pass.

    Raises:
        RuntimeError: cargo failed without an error in a module (environment)."""
    env = toolchain.cargo_env(toolchain.default_target_dir())
    bad, live = {}, list(mods)
    cmd = ["cargo", "check", "--locked", "--quiet", "--message-format=short", "--lib",
           "--manifest-path", str(crate / "Cargo.toml")]
    while live:
        rust_ir.write_crate(crate, op, live)
        with open(toolchain.default_target_dir() / ".tileport-build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode == 0:
            return bad
        hit = {}
        for m in toolchain.CARGO_ERR.finditer(proc.stderr):
            stem = Path(m["file"]).stem
            if stem in live and stem not in hit:
                hit[stem] = f"line {m['line']}: {m['msg']}"[:500]
        if not hit:
            raise RuntimeError(f"cargo check failed outside the mutants: {proc.stderr.strip()[-1500:]}")
        bad.update(hit)
        live = [x for x in live if x not in hit]
    return bad


def _facts(d: dict) -> lf.ArrayFacts:
    return lf.ArrayFacts(tuple(d["shape_div"]), tuple(d["stride_div"]), tuple(d["shape_const"]),
                         tuple(d["stride_const"]), d["base_div"])


_LOC = re.compile(r"\s*loc\([^()]*(?:\([^()]*\)[^()]*)*\)")


def without_locations(text: str) -> str:
    """Tile IR text without its debug information (``#di_``/``#loc`` lines and ``loc(...)``
    suffixes): a mutated line shifts columns, which is no change of the program."""
    return "\n".join(_LOC.sub("", x) for x in text.splitlines() if not x.startswith("#"))


def _new_findings(v: dict, base: dict) -> list[str]:
    """Messages of ``v``'s warn/critical findings the baseline ``base`` does not have."""
    have = {f["message"] for f in base.get("findings", []) if f["severity"] != "info"}
    return [f["message"] for f in v.get("findings", []) if f["severity"] != "info" and f["message"] not in have]


def settings_of(cfg: dict | None) -> dict:
    """The study's settings: config ``mutation`` over :data:`DEFAULTS`."""
    return {**DEFAULTS, **(cfg or {})}


def run(op_dir, op: str, kernel: str, build_json, ref_dir, runtime_json, variants: list[str], out_json,
        work_dir, settings: dict | None = None, target: str = "sm_90") -> dict:
    """Run the study for one kernel (module doc) and write its verdict; never raises on bad input.

    ``variants``: the kernel's variant ids; only those at IR PASS (their ``ir_diff`` verdict in
    ``results/<op>/ir_diff/<kernel>/`` beside ``ref_dir``'s tree) take part. Verdict PASS (every
    compiling mutant caught by ``ir_diff`` or ``runtime_ir``, no false positive of either),
    PASS_WITH_NOTES (some mutant none of tileport's checks catches: a finding each, owner
    ``tool``, to explain), FAIL (a tileport check flags the unmutated port), BLOCKED (no build,
    no variant at IR PASS, no run-time record), ERROR (a tool failed). ``details.mutants``: one
    record per mutant; ``details.baseline``: the flags on the unmutated port per variant."""
    t0 = time.monotonic()
    s = settings_of(settings)
    base = dict(stage="mutation", op=op, kernel=kernel)
    work = Path(work_dir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        b = read(build_json)
        rt = read(runtime_json)
    except VerdictError as exc:
        return write(Verdict(**base, verdict="BLOCKED", owner="tool", summary=str(exc)[:1500]), out_json)
    if b["verdict"] != "PASS" or kernel not in b["details"].get("kernels", []):
        return write(Verdict(**base, verdict="BLOCKED", owner=b.get("owner") or "kernel",
                             summary=f"no Rust build of {kernel}: {b['summary']}"[:1500]), out_json)
    crate, binary = Path(b["details"]["crate"]), b["details"]["binary"]
    writer = (b["details"].get("writers") or {}).get(kernel)
    ready = []
    for vid in variants:
        try:
            if read(Path(ref_dir).parent.parent / "ir_diff" / kernel / f"{vid}.json")["verdict"] in (
                    "PASS", "PASS_WITH_NOTES"):
                ready.append(vid)
        except VerdictError:
            pass
    cases: dict[str, list[dict]] = {}
    for c in (rt.get("details") or {}).get("cases", []):
        if c["variant"] in ready and all("ref_ir" in c["readings"].get(r, {}) for r in ("launched", "matched")):
            cases.setdefault(c["variant"], []).append(c)
    ready = [v for v in ready if v in cases]
    if not ready:
        return write(Verdict(**base, verdict="BLOCKED", owner="tool",
                             summary="no variant at IR PASS with a run-time record (runtime_ir)"), out_json)
    text = (crate / "src" / f"{kernel}.rs").read_text()
    entry_of = {v: rust_ir.entry_for(crate / "src" / f"{kernel}.rs.map.json", kernel, v) for v in ready}
    muts = mutate.sample(mutate.candidates(text, set(entry_of.values())), kernel, s["seed"], s["per_kind"],
                         s["max_mutants"])
    affected = {m.id: [v for v in ready if entry_of[v] == m.entry][:s["max_variants"]] for m in muts}
    base_vars = sorted({v for vs in affected.values() for v in vs}, key=ready.index) or ready[:1]
    affected[BASE] = base_vars
    mcrate = work / "crate"
    names = {BASE: f"{kernel}__{BASE}", **{m.id: f"{kernel}__{m.id}" for m in muts}}
    for mid, name in names.items():
        body = text if mid == BASE else mutate.apply(text, next(m for m in muts if m.id == mid))
        atomic_write_text(mcrate / "src" / f"{name}.rs", body)
    try:
        rejected = _rustc(mcrate, f"{op}_mutants", list(names.values()))
    except (RuntimeError, FileNotFoundError) as exc:
        return write(Verdict(**base, verdict="ERROR", owner="env", summary=str(exc)[:1500]), out_json)
    compiled = {mid: ("rustc", rejected[n]) for mid, n in names.items() if n in rejected}
    if BASE in compiled:
        msg = f"rustc rejects the unmutated port: {compiled[BASE][1]}"
        return write(Verdict(**base, verdict="ERROR", owner="tool", summary=msg[:1500]), out_json)

    model = frontend.load_once(op_dir)
    kinfo = model.kernel(kernel).info()
    params = kinfo["params"]
    archs = list(s["archs"])
    # every compile job: (mutant, variant, shape | None, reading | None, target) -> job
    jobs: dict[tuple, list[str]] = {}
    for mid in names:
        if mid in compiled:
            continue
        src = str(mcrate / "src" / f"{names[mid]}.rs")
        for vid in affected[mid]:
            variant = manifest.variant_by_id(model.manifest, vid, kernel)
            generics, strides = rust_ir.variant_args(kinfo, variant)
            d = work / "ir" / mid / vid
            jobs[(mid, vid, None, None, target)] = [src] + rust_ir.dump_job(
                crate, op, kernel, entry_of[vid], d / "hint_free.tileirbc", target, generics, strides)[1:]
            for c in cases[vid][:s["max_shapes"]]:
                shape = "x".join(map(str, c["shape"]))
                for reading in ("launched", "matched"):
                    fx = c["readings"][reading]["facts"]
                    st, spec, hint = port_spec(params, {n: _facts(f) for n, f in fx["port"].items()},
                                               fx.get("port_scalar_hints") or {})
                    for arch in sorted({target, *archs}):
                        jobs[(mid, vid, shape, reading, arch)] = [src] + rust_ir.dump_job(
                            crate, op, kernel, entry_of[vid], d / f"{shape}.{reading}.{arch}.tileirbc", arch,
                            generics, st, spec, hint)[1:]
    for j in jobs.values():
        Path(j[4]).parent.mkdir(parents=True, exist_ok=True)
    t_ir = time.monotonic()
    replies = dict(zip(jobs, rust_ir.run_dumper_batch(binary, list(jobs.values())), strict=True))
    ir_text: dict[tuple, str] = {}
    for key, (code, msg) in replies.items():
        if code != 0:
            compiled.setdefault(key[0], ("cutile", f"{key[1]} {key[3] or 'hint-free'} {key[4]}: {msg}"[:500]))
            continue
        try:
            ir_text[key] = toolchain.disassemble(jobs[key][4])
        except (RuntimeError, OSError) as exc:
            compiled.setdefault(key[0], ("tileirdisasm", str(exc)[:500]))
    t_ir = time.monotonic() - t_ir
    if BASE in compiled:
        msg = f"cutile cannot compile the unmutated port: {compiled[BASE][1]}"
        return write(Verdict(**base, verdict="ERROR", owner="tool", summary=msg[:1500]), out_json)

    bare = {k: without_locations(t) for k, t in ir_text.items()}
    ref_text = {v: (Path(ref_dir) / f"{v}.tileir").read_text() for v in base_vars}
    t_sass, n_sass, n_skip = 0.0, 0, 0
    evals: dict[str, dict[str, dict]] = {}
    for mid in [BASE] + [m.id for m in muts]:
        if mid in compiled:
            continue
        evals[mid] = {}
        for vid in affected[mid]:
            e = evals[mid][vid] = {}
            port_ir = work / "ir" / mid / vid / "hint_free.tileir"
            atomic_write_text(port_ir, ir_text[(mid, vid, None, None, target)])
            d = ir_diff_stage.run(Path(ref_dir) / f"{vid}.tileir", port_ir, work / "ir_diff" / mid / f"{vid}.json",
                                  op, kernel, vid, writer=writer, target=target)
            e["ir_diff"] = {"verdict": d["verdict"], "summary": d["summary"][:300],
                            "findings": [{"severity": f["severity"], "message": f["message"][:400]}
                                         for f in d["findings"] if f["severity"] != "info"][:20]}
            e["grep_count"] = {k: v for k, v in grep_count.compare(
                ref_text[vid], ir_text[(mid, vid, None, None, target)]).items() if k in ("verdict", "differ")}
            e["runtime_ir"], e["sass"] = {}, {}
            for c in cases[vid][:s["max_shapes"]]:
                shape = "x".join(map(str, c["shape"]))
                verdicts = {}
                for reading in ("launched", "matched"):
                    key = (mid, vid, shape, reading, target)
                    rref = c["readings"][reading]["ref_ir"]
                    try:
                        rd = diff_runtime_pair(Path(rref).read_text(), ir_text[key], params, rref,
                                               f"{mid}/{vid}/{shape}.{reading}", target)
                    except (IRParseError, ValueError, OSError) as exc:
                        rd = {"verdict": "ERROR", "summary": str(exc), "findings": []}
                    verdicts[reading] = rd["verdict"]
                    e["runtime_ir"][f"{shape} {reading}"] = {
                        "verdict": rd["verdict"], "summary": rd["summary"][:300],
                        "findings": [{"severity": f.severity, "message": f.message[:400]}
                                     for f in rd["findings"] if f.severity != "info"][:20]}
                    for arch in archs:
                        akey = (mid, vid, shape, reading, arch)
                        label = f"{shape} {reading} {arch}"
                        same = mid != BASE and bare[akey] == bare[(BASE, vid, shape, reading, arch)]
                        if same:                 # the shortcut: the unmutated port's SASS verdict
                            e["sass"][label] = {**evals[BASE][vid]["sass"][label], "from_baseline": True}
                            n_skip += 1
                            continue
                        ref_sass = (c["readings"][reading].get("sass") or {}).get(arch, {}).get("ref")
                        if not ref_sass:
                            e["sass"][label] = {"verdict": "NOT_RUN", "message": f"no reference SASS for {arch}"}
                            continue
                        t1 = time.monotonic()
                        try:
                            opt = int((manifest.variant_by_id(model.manifest, vid, kernel).hints or {}).get(
                                "opt_level", 3))
                            ptext, _ = sass.sass_text(jobs[akey][4], arch, "port", opt)
                            cmp = sass.compare(sass.instructions(Path(ref_sass).read_text()),
                                               sass.instructions(ptext))
                        except (sass.SassError, FileNotFoundError, OSError) as exc:
                            cmp = {"verdict": "ERROR", "message": str(exc)[:500]}
                        n_sass += 1
                        t_sass += time.monotonic() - t1
                        e["sass"][label] = cmp
                # runtime_ir's own rule: a launched FAIL the matched reading does not share is the
                # launchers' facts, not the port
                e["runtime_ir_verdict"] = ("FAIL" if verdicts["matched"] in ("FAIL", "ERROR") else
                                           verdicts["matched"] if verdicts["launched"] != "FAIL"
                                           else "PASS_WITH_NOTES")
    flags = {mid: {vid: _flags(e) for vid, e in ev.items()} for mid, ev in evals.items()}
    records = []
    for m in muts:
        r = {**m.as_dict(), "variants": affected[m.id], "semantic": m.kind not in HINT_KINDS}
        if m.id in compiled:
            r["compiles"], r["rejected_by"] = False, {"stage": compiled[m.id][0], "message": compiled[m.id][1]}
        else:
            r["compiles"] = True
            r["ir_identical"] = all(bare[k] == bare[(BASE,) + k[1:]] for k in bare if k[0] == m.id)
            r["caught"] = _caught(m.kind, evals[m.id], evals[BASE], flags[m.id], flags[BASE])
            r["evidence"] = evals[m.id]
        records.append(r)
    ok = [r for r in records if r["compiles"]]
    missed = [r for r in ok if not (r["caught"]["ir_diff"] or r["caught"]["runtime_ir"])]
    fp = {det: sorted(v for v, f in flags[BASE].items() if f[det]) for det in DETECTORS}
    sass_units = [(v, k) for v, e in evals[BASE].items() for k in e["sass"]]
    findings = [Finding("numerics", "warn", "tool",
                        f"{r['id']} ({r['kind']}, line {r['line']}: {r['description']}) caught by no tileport check"
                        f"{' -- its Tile IR equals the unmutated port' if r['ir_identical'] else ''}: "
                        f"{r['after'].strip()[:200]}") for r in missed]
    cost = {"mutants": len(muts), "compile_jobs": len(jobs), "tile_ir_s": round(t_ir, 1), "sass": n_sass,
            "sass_from_baseline": n_skip, "sass_s": round(t_sass, 1), "wall_s": round(time.monotonic() - t0, 1)}
    rate = {det: sum(r["caught"][det] for r in ok) for det in DETECTORS}
    summary = (f"{len(muts)} mutant(s), {len(ok)} compile; caught: "
               + ", ".join(f"{d} {n}/{len(ok)}" for d, n in rate.items())
               + f"; {len(missed)} caught by no tileport check")
    if fp["ir_diff"] or fp["runtime_ir"]:
        verdict, owner = "FAIL", "tool"
        summary = f"tileport's checks flag the unmutated port ({fp}); " + summary
    else:
        verdict, owner = ("PASS_WITH_NOTES", "tool") if missed else ("PASS", None)
    details = {"settings": s, "variants_at_ir_pass": ready, "entries": entry_of, "mutants": records,
               "baseline": {"variants": base_vars, "flags": flags[BASE], "evidence": evals[BASE]},
               "false_positives": fp,
               "sass_units": {"compared": len(sass_units),
                              "differ": sum(len(f["sass"]) for f in flags[BASE].values())},
               "caught": rate, "cost": cost,
               "no_site": mutate.NO_SITE, "kinds": mutate.KINDS}
    return write(Verdict(**base, verdict=verdict, owner=owner, summary=summary[:1500], findings=findings[:40],
                         details=details), out_json)


def _flags(e: dict) -> dict[str, bool]:
    """Whether each detector flags one variant's evidence (module doc)."""
    return {"ir_diff": e["ir_diff"]["verdict"] in ("FAIL", "ERROR"),
            "runtime_ir": e.get("runtime_ir_verdict") in ("FAIL", "ERROR"),
            "sass": sorted(k for k, x in e["sass"].items() if x.get("verdict") not in ("IDENTICAL", "NOT_RUN")),
            "grep_count": e["grep_count"]["verdict"] == "FAIL"}


def _caught(kind: str, ev: dict, base: dict, fl: dict, bfl: dict) -> dict[str, bool]:
    """Per detector: flags the mutant on a variant where it passes the unmutated port; for a
    speed-hint kind the IR diffs catch it with any new finding (a note is the right answer)."""
    out = {}
    for det in DETECTORS:
        if det == "sass":            # per (shape, reading, arch): a new difference from the reference
            hit = any(set(fl[v][det]) - set(bfl[v][det]) for v in ev)
        else:
            hit = any(fl[v][det] and not bfl[v][det] for v in ev)
        if not hit and kind in HINT_KINDS and det == "ir_diff":
            hit = any(_new_findings(ev[v]["ir_diff"], base[v]["ir_diff"]) for v in ev)
        if not hit and kind in HINT_KINDS and det == "runtime_ir":
            hit = any(_new_findings(x, base[v]["runtime_ir"][k]) for v in ev for k, x in ev[v]["runtime_ir"].items())
        out[det] = hit
    return out


def load(path) -> dict:
    """A mutation verdict's document (for the summary and the report)."""
    return json.loads(Path(path).read_text())
