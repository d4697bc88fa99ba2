"""Stage ``summary``: ``results/summary.csv``, one row per (op, kernel, variant).

Columns (stable; papers and scripts read them): ``op,kernel,variant,analyze,reference_ir,
write_kernel,rust_ir,ir_diff,attempts,test,ratio`` then ``rust_build,owner,note,diagnosis,
ref_us,port_us,torch_us,vs_torch``. Each stage column holds that stage's verdict word,
``missing`` when its verdict file is absent or invalid (``test.json`` / ``bench.json`` that exist
but do not read: ``unreadable`` in ``test`` / ``ratio``, the file, the parse error and who acts
in ``note`` / ``owner``, from :meth:`tileport.gpu.kept.Kept.verdict`). ``test`` is the variant's GPU test
result (PASS / FAIL / ``not_run (<reason>)``, or REF_DEFECT: the port agrees with a reference
that misses the PyTorch semantics under a defect the manifest declares, owner ``kernel`` and the
declaration in ``note``: :mod:`tileport.model.defects`); ``ratio`` the geomean over the variant's perf
configs of reference / port device time, ``ref_us``/``port_us``/``torch_us`` the geomean of
the per-config medians (µs), ``vs_torch`` the geomean of torch / port time.
An operator whose manifest is malformed gets one row with kernel/variant ``-``.
Last, ``loop_ratio`` (geomean over the variant's configs of reference / port time per call in
a back-to-back loop) and ``ref_vs_torch`` (geomean of torch / reference device time: below 1,
the reference itself is slower than PyTorch).

``llm_calls,tokens_in,tokens_out,cost_usd``: the kernel writer's LLM exchanges for that kernel
(from its transcripts; cost blank when the model has no price in config.yaml).

``round,gpu_route``: the operator's last GPU round (1 = results/<op>/; r >= 2 =
results/<op>/rounds/<r>/, which every GPU and port column of the row then describes) and where
its route went (``next (route): reason``, e.g. a stop at the kernel-writer cap with the last
diagnosis).

``source``: where the kernel's cuTile Python comes from: ``module:function`` for a kernel the
importer read from an installed wheel (manifest ``source:``, e.g.
``tilegym.ops.cutile.softmax:_softmax_kernel``), ``operators/<op>/kernel.py:function`` for an
operator's own kernel.py; the import's own verdict (``results/<op>/src/import.json``) is the
first stage of such a row's ``note``/``owner`` chain.

``nv_ir_diff,nv_us,vs_nv``: NVIDIA's shipped cuTile Rust port of the row's kernel (where the
operator imports a TileGym kernel NVIDIA ported, :mod:`tileport.nvidia.port`; blank otherwise): the
verdict of tileport's IR diff on its Tile IR against the reference's, the geomean of its
per-config median device time (µs) and of NVIDIA's time / the port's (> 1: tileport's port is
faster).

``bench``: the operator's bench verdict word as it applies to the row's variant (DONE,
BELOW_THRESHOLD, FAIL, ERROR, BLOCKED, NOT_RUN; blank when no bench verdict was read): ``ratio``
holds the timed numbers of a variant even when a timed output of it missed (FAIL), so this
column, not ``ratio``, says whether the benchmark passed. A FAIL reads DONE on a variant whose
own configs all passed (bench.json ``details.failed_variants`` lists the others).

``runtime_ir,sass_sm_90,sass_sm_100`` (rule ``runtime_ir``, :mod:`tileport.cpu.runtime_ir`): over
the variant's perf shapes, the worst IR diff of the run-time pair (each side compiled with its
launcher's facts; PASS_WITH_NOTES when the facts differ) and the worst SASS verdict per
architecture (IDENTICAL / SAME_OPCODE_COUNTS / DIFFERENT with a shape and the opcode delta),
as launched, then ``| matched`` with both sides given the port's facts.

The ``owner``/``note`` of a row are its first failure's, in pipeline order (a stage's verdict,
the host library leaving the operator out, a declared defect of the kernel, then the GPU test's
or the benchmark's failure); a row with none carries its notes instead (an IR diff's
PASS_WITH_NOTES, its first divergence), owner blank.

``summary_ops.csv``: one row per operator (``op,configs,geomean_ratio,verdict,vs_torch,
ref_vs_torch`` and its LLM calls, tokens and cost over all stages, then the loop gate:
``loop_ratio`` (geomean of the configs' loop ratios), ``loop_verdict`` (DONE / BELOW_THRESHOLD
against ``bench.loop_threshold``), ``ref_host_us,port_host_us`` (median host time per call, µs),
``loop_below`` (configs whose loop ratio is under the threshold, its 95 % interval too),
``loop_undecided`` (loop ratio under it, interval reaching it: within the measurement's noise)),
``vs_nv`` (geomean of NVIDIA's time / the port's) with ``vs_nv_configs``, the configs it is a
geomean over (those where NVIDIA's port ran; blank where none did), and a last row ``ALL`` over
every config of every operator (its ``vs_nv`` over its own ``vs_nv_configs``, not ``configs``).
Every folder under ``operators/`` has a row in both files: an operator whose manifest is malformed
has verdict ``ERROR (manifest: <file:line: cause>)``, a folder that cannot be an operator
``not_run (<why>)``; the ``ALL`` row's verdict counts the operators by verdict.
``configs_pending``: the operator's perf configs no valid bench row covers yet (perf shapes added
since the benchmark, configs a GPU session did not reach: ``python -m tileport.gpu.bench --op <op>
--pending-only`` times them); ``configs`` counts the timed ones, and every geomean is over those
(``vs_nv`` over the ``vs_nv_configs`` of them); ``geomean_ratio_matched`` over its
``matched_configs``: the matched reading (the reference under the port's launch facts,
:mod:`tileport.gpu.matched`), as ``ratio_matched`` per variant in summary.csv.

The GPU verdicts read here are taken as they stand against the operator's files now
(:mod:`tileport.gpu.kept`): test.json holds while its sources and the test-relevant inputs
(kernel.py, reference.py, the manifest less its perf shapes) are unchanged; bench.json is
re-folded over its rows still valid (:meth:`tileport.gpu.kept.Kept.reconcile`), the rest pending.
"""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from tileport.core import source, stats
from tileport.core.verdict import TEST_PASSED, VARIANT_WORD, VerdictError, atomic_write_text, read
from tileport.cpu import runtime_ir
from tileport.flow.route import gpu_history, round_root
from tileport.gpu import harness
from tileport.gpu.fold import BENCH_MEASURED, mark_implausible, matched_rows, positive
from tileport.gpu.kept import Kept
from tileport.gpu.perf_diagnose import judged, loop_judged
from tileport.model import manifest as tp_manifest

COLUMNS = ["op", "kernel", "variant", "analyze", "reference_ir", "write_kernel", "rust_ir",
           "ir_diff", "attempts", "test", "ratio", "rust_build", "owner", "note", "diagnosis",
           "ref_us", "port_us", "torch_us", "vs_torch", "llm_calls", "tokens_in", "tokens_out",
           "cost_usd", "round", "gpu_route", "source", "loop_ratio", "ref_vs_torch", "nv_ir_diff",
           "nv_us", "vs_nv", "bench", "runtime_ir", "sass_sm_90", "sass_sm_100", "ratio_matched"]
OPS_COLUMNS = ["op", "configs", "geomean_ratio", "verdict", "vs_torch", "ref_vs_torch",
               "llm_calls", "tokens_in", "tokens_out", "cost_usd", "loop_ratio", "loop_verdict",
               "ref_host_us", "port_host_us", "vs_nv", "configs_pending", "loop_below", "loop_undecided",
               "vs_nv_configs", "geomean_ratio_matched", "matched_configs"]
_LOOP0 = {"loop_ratio": "", "loop_verdict": "", "ref_host_us": "", "port_host_us": "", "loop_below": "",
          "loop_undecided": ""}
_LLM0 = {"llm_calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": ""}
_NV0 = {"nv_ir_diff": "", "nv_us": "", "vs_nv": ""}


def llm_usage(results: str | Path, op: str, stage: str | None = None, kernel: str | None = None,
              upto: int | None = None) -> dict:
    """LLM calls, tokens and cost (USD; blank when no call had a price) from the transcripts
    under ``results/<op>/transcripts/`` -- all stages, or one ``stage`` (and ``kernel``);
    ``upto``: only ``attempt-<k>.json`` with k <= upto (the attempts that led to the published
    kernel; later ones left from an earlier run are not this run's)."""
    base = Path(results) / op / "transcripts"
    if stage:
        base = base / stage
        if kernel:
            base = base / kernel
    calls, tin, tout, cost, priced = 0, 0, 0, 0.0, False
    # this run's transcripts only: earlier runs are shelved under .../previous/<time>/
    files = [p for p in (base.rglob("attempt-*.json") if base.is_dir() else [])
             if "previous" not in p.relative_to(base).parts
             and (upto is None or (p.stem.split("-")[-1].isdigit() and int(p.stem.split("-")[-1]) <= upto))]
    for p in sorted(files):
        try:
            t = json.loads(p.read_text())
            u = t.get("usage") or {}
            n_in, n_out = int(u.get("input_tokens", 0)), int(u.get("output_tokens", 0))
            c = None if t.get("cost_usd") is None else float(t["cost_usd"])
        except (OSError, ValueError, TypeError, AttributeError):
            continue        # a malformed transcript is not counted (replay names it)
        calls += 1
        tin += n_in
        tout += n_out
        if c is not None:
            cost += c
            priced = True
    return {"llm_calls": calls, "tokens_in": tin, "tokens_out": tout,
            "cost_usd": f"{cost:.6f}" if priced else ""}


def _sum_usage(*us: dict) -> dict:
    cost = [float(x["cost_usd"]) for x in us if x["cost_usd"] != ""]
    return {"llm_calls": sum(x["llm_calls"] for x in us), "tokens_in": sum(x["tokens_in"] for x in us),
            "tokens_out": sum(x["tokens_out"] for x in us), "cost_usd": f"{sum(cost):.6f}" if cost else ""}


def kernel_usage(results: str | Path, op: str, kernel: str, root: str | Path | None = None) -> dict:
    """LLM use behind one kernel's published port: the writer's and the IR diagnoser's calls of
    attempts 1..n, n = the attempt ``<root>/<op>/write_kernel/<kernel>.json`` published (root:
    the operator's last GPU round's tree, default ``results``)."""
    n = (_v(Path(root or results) / op / "write_kernel" / f"{kernel}.json") or {}).get("attempt")
    return _sum_usage(llm_usage(results, op, "write_kernel", kernel, upto=n),
                      llm_usage(results, op, "ir_diagnose", kernel, upto=n))


def op_usage(results: str | Path, op: str, root: str | Path | None = None) -> dict:
    """An operator's LLM use: its kernels' (:func:`kernel_usage`, up to the attempts its last GPU
    round's tree ``root`` published) plus the perf diagnoser's, the host builder's and the analyser's."""
    base = Path(results) / op / "transcripts"
    kernels = sorted({p.name for st in ("write_kernel", "ir_diagnose") if (base / st).is_dir()
                      for p in (base / st).iterdir() if p.is_dir() and p.name != "previous"})
    return _sum_usage(*(kernel_usage(results, op, k, root) for k in kernels),
                      llm_usage(results, op, "perf_diagnose"), llm_usage(results, op, "host_shim"),
                      llm_usage(results, op, "analyze"))


def last_round(results: str | Path, op: str) -> tuple[int, Path, str]:
    """(round, results tree, ``next (route): reason``) of the operator's last GPU round, from
    ``results/<op>/rounds/<r>/route.json`` (round 1 and results/ when there is none)."""
    hist = gpu_history(results, op)
    if not hist:
        return 1, Path(results), ""
    d, r = hist[-1], len(hist)             # gpu_history: rounds 1..n, consecutive
    return r, round_root(results, op, r), f"{d.get('next')} ({d.get('route')}): {d.get('reason', '')}"[:300]


def _v(path: Path) -> dict | None:
    try:
        return read(path)
    except VerdictError:
        return None


def _word(doc: dict | None) -> str:
    return doc["verdict"] if doc else "missing"


def analysis_for_kernel(an: dict | None, kernel: str, variant: str | None = None) -> dict | None:
    """The operator's analysis verdict as one kernel's rows tell it. Its summary names the
    operator's first finding, which may lie in another kernel: a BLOCKED row names its own
    kernel's first finding (with its owner); a kernel with no finding of its own while every
    finding names another kernel is PASS for its rows (its later stages ran: write_kernel
    translates a kernel unless a finding is its own or the operator's). Other verdicts are
    returned unchanged. Blocking is per variant: where all of the kernel's own findings name a
    variant (``variant`` of an unsupported item), the row of ``variant`` is BLOCKED only by its
    own, and the rows of the kernel's other variants read as if the kernel had none."""
    if not an or an.get("verdict") != "BLOCKED":
        return an
    items = (an.get("details") or {}).get("unsupported") or []
    findings = an.get("findings") or []
    if len(items) != len(findings) or not any(u.get("kernel") for u in items):
        return an
    own_v = [i for i, u in enumerate(items) if u.get("kernel") == kernel]
    if variant is not None and own_v and all(items[i].get("variant") for i in own_v):
        mine = [i for i in own_v if items[i]["variant"] == variant]
        if mine:
            f = findings[mine[0]]
            why = f["message"].removeprefix(f"variant {variant} BLOCKED: ")
            return {**an, "owner": f.get("owner") or an.get("owner"),
                    "summary": f"variant {variant} of {kernel} is BLOCKED (the kernel's other variants go on): "
                               f"{why}"}
        keep = [i for i in range(len(items)) if i not in own_v]
        if not keep:
            return {**an, "verdict": "PASS", "owner": None,
                    "summary": f"variant {variant} of {kernel} goes on; {len(own_v)} other variant(s) of it are "
                               f"BLOCKED (first: {findings[own_v[0]]['message']})"}
        items, findings = [items[i] for i in keep], [findings[i] for i in keep]
    own = [i for i, u in enumerate(items) if u.get("kernel") == kernel]
    if own and own[0] == 0:
        return an
    if own:
        f = findings[own[0]]
        summary = (f"{len(items)} finding(s) in the operator, {len(own)} in {kernel}; first in {kernel}: "
                   f"{f['message']}")
        return {**an, "summary": summary, "owner": f.get("owner") or an.get("owner")}
    if any(u.get("kernel") is None for u in items):
        return {**an, "summary": f"none of the operator's {len(items)} finding(s) is in {kernel}, but one "
                                 f"concerns the whole operator; first: {findings[0]['message']}"}
    return {**an, "verdict": "PASS", "owner": None,
            "summary": f"no finding in {kernel} (the operator's {len(items)} are in other kernels; first: "
                       f"{findings[0]['message']})"}


def rows_for(results: Path, op: str, variants: list, manifest_error: str | None) -> list[dict]:
    """Summary rows of one operator, read from its verdict files under ``results/<op>`` (analysis,
    reference Tile IR, transcripts) and under its last GPU round's tree (everything else)."""
    rnd, root, groute = last_round(results, op)
    r, q = results / op, root / op
    an = _v(r / "analysis.json")
    op_dir = Path(results).resolve().parent / "operators" / op
    imported = source.source_of(op_dir)
    # an imported source's own verdict heads the note chain (None: an own kernel.py)
    imp = _v(r / source.IMPORT_DIR / source.VERDICT_NAME) if imported else None
    if imported and imp is None:
        imp = {"verdict": "missing", "stage": "import_source", "owner": "tool",
               "summary": f"no import verdict {r / source.IMPORT_DIR / source.VERDICT_NAME}"}
    if manifest_error or not variants:
        return [{"op": op, "kernel": "-", "variant": "-", "analyze": _word(an),
                 "reference_ir": "not_run", "write_kernel": "not_run", "rust_ir": "not_run",
                 "ir_diff": "not_run", "attempts": 0, "test": "not_run", "ratio": "not_run",
                 "rust_build": "not_run",
                 # the analysis verdict's owner: a manifest error is the manifest's, a limit of
                 # tileport on a valid manifest (manifest.ToolLimitError) the tool's
                 "owner": (an or {}).get("owner") or ("manifest" if manifest_error else "kernel"),
                 "note": (manifest_error or (an or {}).get("summary", "")).replace("\n", " ")[:300],
                 "diagnosis": "", "ref_us": "", "port_us": "", "torch_us": "", "vs_torch": "",
                 **_LLM0, "round": 1, "gpu_route": "",
                 "source": imported["module"] if imported else f"operators/{op}/kernel.py",
                 "loop_ratio": "", "ref_vs_torch": "", **_NV0, "bench": ""}]
    build = _v(q / "rust" / "build.json")
    keeper = Kept(results, op, op_dir)      # the operator's inputs, read and hashed once
    # a GPU verdict that does not read is the owner's ERROR saying so (Kept.verdict), never "missing"
    test, bench = keeper.verdict("test.json", q / "test.json"), keeper.verdict("bench.json", q / "bench.json")
    perf = _v(q / "perf_diagnosis.json")
    hb = _v(root / "host" / "build.json")
    lib = ((hb or {}).get("details") or {}).get("ops", {}).get(op) or {}
    tested = ((test or {}).get("details") or {}).get("sources_sha")
    tdet = (test or {}).get("details") or {}
    stale = None
    if tested and lib.get("sources_sha") and tested != lib["sources_sha"]:
        # the GPU verdicts describe sources the library no longer holds: do not show them
        stale = "stale (tested sources differ from the current host library)"
    elif (tdet.get("inputs_sha") or tdet.get("test_inputs_sha")) and op_dir.is_dir():
        if not keeper.inputs_match(tdet):
            stale = (f"stale (operators/{op} changed since the GPU test (kernel.py, reference.py or "
                     f"the manifest's test-relevant part); the next run of the workflow retests it)")
    if stale:
        test = {**test, "verdict": "NOT_RUN", "summary": stale}
        bench = {**bench, "verdict": "NOT_RUN", "summary": stale} if bench else bench
    if not stale:
        bench = current_bench(_unless_stale_bench(bench, lib), op_dir, results, op, keeper)
    out = []
    # a kernel's LLM use: its writer attempts and the IR diagnoser's calls on them
    usage = {k: kernel_usage(results, op, k, root) for k in {k for k, _ in variants}}
    runtime = {k: runtime_columns(_v(r / "runtime" / f"{k}.json")) for k in {k for k, _ in variants}}
    for kernel, variant in variants:
        wk = _v(q / "write_kernel" / f"{kernel}.json")
        ref = _v(r / "ref" / kernel / f"{variant}.json")
        rir = _v(q / "rust_ir" / kernel / f"{variant}.json")
        dif = _v(q / "ir_diff" / kernel / f"{variant}.json")
        dia = _v(q / "diagnosis" / kernel / f"{variant}.json")
        # the note is the first non-passing stage's own summary, in pipeline order
        note, owner = "", ""
        # a kernel an LLM ported although the analyser found constructs the translator lacks:
        # the analyser's BLOCKED is not this row's problem, the later stages' verdicts are
        llm_ported = (wk or {}).get("verdict") == "PASS" and \
            ((wk or {}).get("details") or {}).get("backend") in ("anthropic", "replay")
        an_k = analysis_for_kernel(an, kernel, variant)
        for d in ((imp,) if imp else ()) + (an_k, ref, wk, build, rir, dif):
            if d is an_k and llm_ported and d is not None and d["verdict"] == "BLOCKED":
                continue
            if d is None:
                note = note or "a verdict file is missing"
                break
            if d["verdict"] not in ("PASS", "PASS_WITH_NOTES"):
                note, owner = f"{d['stage']}: {d['summary']}", d.get("owner") or ""
                break
        gpu = _gpu_columns(test, bench, f"{kernel}/{variant}")
        if not note and hb is not None and lib.get("in_library") is False:
            note, owner = f"host_build: left out of the host library: {lib.get('reason', '')}", "host"
        if not note and gpu["test"] == VARIANT_WORD:
            # the port agrees with a reference whose defect the manifest declares: the kernel's author acts
            shown = (tdet.get("known_defects") or {}).get(f"{kernel}/{variant}") or {}
            note, owner = f"gpu_test: {shown.get('message') or test['summary']}", "kernel"
        if not note:
            for d in (test, bench):
                if d is None or d["verdict"] not in ("FAIL", "ERROR", "BLOCKED", "BELOW_THRESHOLD"):
                    continue
                # an operator's FAIL is shown on its failing variants only (their per-variant word)
                if d["verdict"] == "FAIL" and gpu["test" if d is test else "bench"] != "FAIL":
                    continue
                note, owner = f"{d['stage']}: {d['summary']}", d.get("fail_class") or d.get("owner") or ""
                break
        blocked = blocked_variant(bench, f"{kernel}/{variant}")
        if not note and blocked and gpu["ratio"].startswith("BLOCKED ("):
            # no config of this variant could be timed (the ratio column says so): the refusal's owner acts
            note, owner = f"bench: {gpu['ratio']}", blocked["owner"]
        # no failure: the row's notes (an LLM analyser that gave up, the IR diff's notes)
        llm_an = ((an or {}).get("details") or {}).get("llm") or {}
        if not note and llm_an.get("error"):
            note = f"analyze: LLM analyser ({llm_an.get('fail_class')}): {llm_an['error']}"
        if not note and dif is not None:
            fd = (dif.get("details") or {}).get("first_divergence")
            note = dif["summary"] if dif["verdict"] != "PASS" else ""
            if fd and not note:
                note = fd.get("message", "")
        nvd = r / "nv_ir_diff" / kernel / f"{variant}.json"
        gpu["nv_ir_diff"] = _word(_v(nvd)) if nvd.exists() else ""
        diag = dia["summary"] if dia and dia["verdict"] == "FAIL" else ""
        if not diag and perf is not None and perf["verdict"] == "FAIL":
            diag = f"perf ({perf['owner']}): {perf['summary']}"
        out.append({
            "op": op, "kernel": kernel, "variant": variant, "analyze": _word(an_k),
            "reference_ir": _word(ref), "write_kernel": _word(wk), "rust_ir": _word(rir),
            "ir_diff": _word(dif), "attempts": (wk or {}).get("attempt", 0),
            "rust_build": _word(build), "owner": owner, "note": note.replace("\n", " ")[:300],
            "diagnosis": diag[:500], **gpu, **usage[kernel], "round": rnd, "gpu_route": groute,
            "source": source.source_name(op_dir, kernel),
            **runtime[kernel].get(variant, runtime[kernel].get("*", _RUNTIME0)),
        })
    return out


_RUNTIME0 = {"runtime_ir": "", "sass_sm_90": "", "sass_sm_100": ""}


def runtime_columns(doc: dict | None) -> dict[str, dict]:
    """``runtime_ir,sass_sm_90,sass_sm_100`` of each variant from one kernel's ``runtime_ir``
    verdict (:func:`tileport.cpu.runtime_ir.variant_rows`), keyed by variant id; key ``*`` holds
    what a variant it does not list shows: ``not_run (<why>)`` (the stage's verdict and summary,
    or the variant's reason: not at IR PASS, no perf shape), blank when there is no verdict."""
    if doc is None:
        return {}
    out = runtime_ir.variant_rows(doc)
    det = doc.get("details") or {}
    for vid, why in (det.get("not_run") or {}).items():
        out.setdefault(vid, {c: f"not_run ({why})"[:200] for c in _RUNTIME0})
    if doc["verdict"] in ("ERROR", "BLOCKED"):
        word = f"{doc['verdict']} ({doc.get('owner') or ''}: {doc['summary']})"[:200]
        out = {vid: {c: (v if v and not v.startswith(("ERROR", "not_run")) else word) for c, v in cols.items()}
               for vid, cols in out.items()}
        out["*"] = dict.fromkeys(_RUNTIME0, word)
    else:
        out["*"] = dict.fromkeys(_RUNTIME0, "not_run (no perf shape fits this variant)")
    return out


#: summary.csv's ``test`` / ``ratio`` of a GPU verdict file that exists but does not read
#: (:meth:`tileport.gpu.kept.Kept.verdict`: ``note`` names the file and the parse error, ``owner`` who acts)
UNREADABLE = "unreadable"

#: summary.csv's ``test`` of a variant no test shape fits (shape constexprs set for a perf shape
#: only): it has no functional test of its own; the bench checks its timed outputs against the
#: PyTorch semantics instead (:mod:`tileport.gpu.bench`, ``details.perf_only_variants``)
NO_TEST_SHAPE = "not_run (no test shape fits)"


def _fmt(x: float | None, nd: int = 3) -> str:
    return "" if x is None else f"{x:.{nd}f}"


def bench_failure(word: str | None) -> str | None:
    """The benchmark's failure on one variant, read from summary.csv's ``bench`` column: ``"FAIL"``
    (a launch error or a timed output outside tolerance on this variant; :func:`_gpu_columns`
    writes DONE on the variants another variant's FAIL does not concern) or ``"ERROR"``; None for
    any other word (DONE, BELOW_THRESHOLD, NOT_RUN, ...) and for an empty or missing one (a
    summary.csv written before the column existed). The one reading of that column that
    :mod:`tileport.report.coverage` and the report's coverage matrix share."""
    return word if word in ("FAIL", "ERROR") else None


def blocked_variant(bench: dict | None, key: str) -> dict | None:
    """The configs of ``key`` (kernel/variant) the benchmark refused (``details.blocked_configs``,
    :func:`tileport.gpu.fold.fold`): ``{"configs": n, "owner": "tool" (owners joined by '/'; '?'
    for an entry without one), "evidence": the first one's (else its error)}``; None when it
    refused none. A bench.json copied from elsewhere may lack a field: shown as missing, never
    a crash of the summary."""
    blocked = [b for b in ((bench or {}).get("details") or {}).get("blocked_configs") or []
               if isinstance(b, dict) and f"{b.get('kernel')}/{b.get('variant')}" == key]
    if not blocked:
        return None
    return {"configs": len(blocked), "owner": "/".join(sorted({b.get("owner") or "?" for b in blocked})),
            "evidence": str(blocked[0].get("evidence") or blocked[0].get("error") or "")}


def _gpu_columns(test: dict | None, bench: dict | None, key: str) -> dict:
    """test / ratio / ref_us / port_us / torch_us / vs_torch / bench (the verdict word as it
    applies to ``key``) of one kernel/variant."""
    out = {"test": "missing", "ratio": "missing", "ref_us": "", "port_us": "", "torch_us": "",
           "vs_torch": "", "loop_ratio": "", "ref_vs_torch": "", **_NV0, "bench": ""}
    if test is not None:
        if (test.get("details") or {}).get("unreadable"):
            out["test"] = UNREADABLE
        elif test["verdict"] == "NOT_RUN":
            out["test"] = test["summary"]
        elif test["verdict"] in TEST_PASSED + ("FAIL",):      # per variant: PASS / REF_DEFECT / FAIL / NOT_RUN
            out["test"] = test["details"].get("variants", {}).get(key, NO_TEST_SHAPE)
        else:
            out["test"] = test["verdict"]
    if bench is not None:
        out["bench"] = bench["verdict"]
        failed = (bench.get("details") or {}).get("failed_variants")
        if bench["verdict"] == "FAIL" and isinstance(failed, list) and key not in failed:
            out["bench"] = "DONE"
        if (bench.get("details") or {}).get("unreadable"):
            out["ratio"] = UNREADABLE
        elif bench["verdict"] == "NOT_RUN":
            out["ratio"] = bench["summary"]
        elif bench["verdict"] in ("DONE", "BELOW_THRESHOLD", "FAIL"):
            v = bench["details"].get("variants", {}).get(key)
            if v:
                out.update(ratio=_fmt(v["ratio"]), ref_us=_fmt(v["ref_us"], 2),
                           port_us=_fmt(v["port_us"], 2), torch_us=_fmt(v["torch_us"], 2),
                           vs_torch=_fmt(v["vs_torch"]), loop_ratio=_fmt(v.get("loop_ratio")),
                           ref_vs_torch=_fmt(v.get("ref_vs_torch")), ratio_matched=_fmt(v.get("ratio_matched")))
                if v.get("nv_us") is not None:
                    out.update(nv_us=_fmt(v["nv_us"], 2), vs_nv=_fmt(v["vs_nv"]))
            else:
                pend = sum(1 for p in bench["details"].get("pending_configs") or []
                           if f"{p['kernel']}/{p['variant']}" == key)
                blocked = blocked_variant(bench, key)
                if pend:
                    out["ratio"] = f"pending ({pend} config(s) not timed yet)"
                elif blocked:
                    out["ratio"] = (f"BLOCKED ({blocked['configs']} config(s), owner {blocked['owner']}: "
                                    f"{blocked['evidence'][:160]})")
                else:
                    out["ratio"] = "not_run (no perf shape fits)"
        else:
            out["ratio"] = bench["verdict"]
    return out


def current_bench(bench: dict | None, op_dir: Path, results: Path, op: str,
                  keeper: Kept | None = None) -> dict | None:
    """A measured bench verdict as it stands against ``op_dir`` now (:meth:`tileport.gpu.kept.Kept.reconcile`:
    its rows still valid, the perf configs added since pending, owners from ``results/<op>``'s
    port writers), NOT_RUN "stale (...)" when its test-relevant inputs changed; ``bench`` as it
    is when it is no measurement, when ``op_dir`` does not exist (a results tree read without its
    operators) or when the manifest does not load (the summary reports that error elsewhere).
    ``keeper``: the operator's :class:`tileport.gpu.kept.Kept` when the caller has one (its
    inputs hashed once); default: a new one."""
    if not bench or bench.get("verdict") not in BENCH_MEASURED or not op_dir.is_dir():
        return bench
    keeper = keeper if keeper is not None else Kept(results, op, op_dir)
    try:
        r = keeper.reconcile(bench)
    except (tp_manifest.ManifestError, harness.HarnessError, OSError):
        return bench
    if r is None:
        return {**bench, "verdict": "NOT_RUN",
                "summary": f"stale (operators/{op} changed since the benchmark (kernel.py, reference.py or "
                           f"the manifest's test-relevant part))"}
    return r


def _unless_stale_bench(bench: dict | None, lib: dict) -> dict | None:
    """``bench`` (a bench.json verdict), or NOT_RUN "stale (...)" when it timed other port sources
    than the host library holds now (``details.sources_sha`` against ``lib["sources_sha"]``, the
    host_build entry of the operator): the test redone on the current port, the timing not."""
    benched = ((bench or {}).get("details") or {}).get("sources_sha")
    if bench and benched and lib.get("sources_sha") and benched != lib["sources_sha"]:
        return {**bench, "verdict": "NOT_RUN",
                "summary": "stale (benchmarked sources differ from the current host library)"}
    return bench


def ops_rows(results: str | Path, ops: list, threshold: float | None = None,
             loop_threshold: float | None = None, unusable: dict | None = None) -> list[dict]:
    """Rows of ``summary_ops.csv``: per operator, then ``ALL`` (geomean over every config).
    ``threshold`` / ``loop_threshold`` (config.yaml's) re-judge DONE / BELOW_THRESHOLD of the
    device-time and the loop gate; None keeps the bench's.
    ``unusable``: operators that never reach the GPU stages, with their verdict text (a
    malformed manifest: ``ERROR (manifest: ...)``; a folder that cannot be an operator:
    ``not_run (...)``); they get their row too, in ``ops`` order or after it. The ``ALL``
    row's verdict counts the operators by verdict (``19 operators: DONE 5, ERROR 6, ...``)."""
    unusable = unusable or {}
    rows, all_ratios, all_vt, all_rvt, all_loop, all_vn, all_m = [], [], [], [], [], [], []
    all_pending = 0
    for op in list(ops) + [o for o in unusable if o not in ops]:
        if op in unusable:
            rows.append({"op": op, "configs": 0, "geomean_ratio": "", "verdict": unusable[op],
                         "vs_torch": "", "ref_vs_torch": "", **_LLM0, **_LOOP0, "vs_nv": "",
                         "vs_nv_configs": "", "configs_pending": ""})
            continue
        root = last_round(results, op)[1]
        b = Kept(results, op, Path(results).resolve().parent / "operators" / op).verdict(
            "bench.json", root / op / "bench.json")
        hb = _v(root / "host" / "build.json")
        b = _unless_stale_bench(b, ((hb or {}).get("details") or {}).get("ops", {}).get(op) or {})
        b = current_bench(b, Path(results).resolve().parent / "operators" / op, Path(results), op)
        if b is None or b["verdict"] not in ("DONE", "BELOW_THRESHOLD", "FAIL"):
            rows.append({"op": op, "configs": 0, "geomean_ratio": "", "verdict": _word(b) if b is None
                         else (b["summary"] if b["verdict"] == "NOT_RUN" else
                               f"{b['verdict']} ({b.get('owner')}: {_first_line(b['summary'])})"
                               if (b.get("details") or {}).get("unreadable") else b["verdict"]),
                         "vs_torch": "", "ref_vs_torch": "", **op_usage(results, op, root), **_LOOP0,
                         "vs_nv": "", "vs_nv_configs": "",
                         "configs_pending": ((b or {}).get("details") or {}).get("configs_pending", "")})
            all_pending += int(((b or {}).get("details") or {}).get("configs_pending") or 0)
            continue
        # the configs the bench folded: no error, a plausible device time (an old row timed under the
        # hardware's floor is marked here as the benchmark marks one now); torch's where it was timed
        env = b["details"].get("env")
        good = [r for r in mark_implausible(b["details"].get("rows", []),
                                            env.get("device") if isinstance(env, dict) else None)
                if not r.get("error")]
        all_ratios += [r["ratio"] for r in good]
        all_vt += [r["vs_torch"] for r in good if positive(r.get("vs_torch"))]
        all_rvt += [r["ref_vs_torch"] for r in good if positive(r.get("ref_vs_torch"))]
        all_loop += [r["loop_ratio"] for r in good if isinstance(r.get("loop_ratio"), (int, float))]
        all_vn += [r["vs_nv"] for r in good if isinstance(r.get("vs_nv"), (int, float))]
        all_m += [r["ratio_matched"] for r in matched_rows(good)]
        d = b["details"]
        loop = loop_judged(b, loop_threshold)
        rows.append({"op": op, "configs": d.get("configs", 0),
                     "geomean_ratio": _fmt(d.get("geomean_ratio")), "verdict": judged(b, threshold),
                     "vs_torch": _fmt(d.get("geomean_vs_torch")),
                     "ref_vs_torch": _fmt(d.get("geomean_ref_vs_torch")), **op_usage(results, op, root),
                     **(_LOOP0 if loop is None else {
                         "loop_ratio": _fmt(loop["geomean"]), "loop_verdict": loop["verdict"],
                         "ref_host_us": _fmt(loop["ref_host_us"], 2),
                         "port_host_us": _fmt(loop["port_host_us"], 2),
                         "loop_below": len(loop.get("below") or []),
                         "loop_undecided": len(loop.get("undecided") or [])}),
                     "vs_nv": _fmt(d.get("geomean_vs_nv")),
                     "vs_nv_configs": d.get("nv_configs", "") if d.get("geomean_vs_nv") is not None else "",
                     "geomean_ratio_matched": _fmt(d.get("geomean_ratio_matched")),
                     "matched_configs": d.get("matched_configs", "") if d.get("geomean_ratio_matched") else "",
                     "configs_pending": d.get("configs_pending", 0)})
        all_pending += int(d.get("configs_pending") or 0)
    counts: dict[str, int] = {}
    for r in rows:
        w = str(r["verdict"]).split(" ", 1)[0] or "missing"
        counts[w] = counts.get(w, 0) + 1
    tally = f"{len(rows)} operator(s): " + ", ".join(f"{w} {n}" for w, n in counts.items())
    rows.append({"op": "ALL", "configs": len(all_ratios),
                 "geomean_ratio": _fmt(stats.geomean(all_ratios)) if all_ratios else "",
                 "verdict": tally if all_ratios else f"not_run (no config measured); {tally}",
                 "vs_torch": _fmt(stats.geomean(all_vt)) if all_vt else "",
                 "ref_vs_torch": _fmt(stats.geomean(all_rvt)) if all_rvt else "",
                 **_total_llm(rows), **_LOOP0,
                 "loop_ratio": _fmt(stats.geomean(all_loop)) if all_loop else "",
                 "vs_nv": _fmt(stats.geomean(all_vn)) if all_vn else "", "vs_nv_configs": len(all_vn) or "",
                 "geomean_ratio_matched": _fmt(stats.geomean(all_m)) if all_m else "",
                 "matched_configs": len(all_m) or "",
                 "configs_pending": all_pending,
                 **({k: sum(r[k] for r in rows if isinstance(r.get(k), int)) for k in ("loop_below", "loop_undecided")}
                    if all_loop else {})})
    return rows


def _first_line(text: str, n: int = 200) -> str:
    """The first line of an error, at most ``n`` characters (a table cell)."""
    line = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return line if len(line) <= n else line[: n - 3] + "..."


def _total_llm(rows: list[dict]) -> dict:
    priced = [float(r["cost_usd"]) for r in rows if r.get("cost_usd")]
    return {"llm_calls": sum(int(r["llm_calls"]) for r in rows),
            "tokens_in": sum(int(r["tokens_in"]) for r in rows),
            "tokens_out": sum(int(r["tokens_out"]) for r in rows),
            "cost_usd": f"{sum(priced):.6f}" if priced else ""}


#: an absolute path up to a checkout's ``results/<op>/`` or ``operators/<op>/`` (this machine's
#: checkout, or a GPU node's copy of it, as verdicts written there name it)
_CHECKOUT_PREFIX = re.compile(r"(?<![\w./-])/(?:[\w.+-]+/)*?(?=(?:results|operators)/[\w.-]+/)")


def from_checkout(text: str) -> str:
    """``text`` with every absolute path into a checkout's ``results/`` or ``operators/`` folder
    written from the checkout's root (``/work/x/results/op/src/kernel.py:24`` ->
    ``results/op/src/kernel.py:24``): summary.csv and the tables made from it name no machine's
    directories. Other paths are left as they are."""
    return _CHECKOUT_PREFIX.sub("", text)


def write_summary(results: str | Path, ops: list, variants: dict, manifest_errors: dict,
                  out_csv: str | Path, skipped: dict | None = None,
                  ops_csv: str | Path | None = None, threshold: float | None = None,
                  loop_threshold: float | None = None) -> list[dict]:
    """Write ``summary.csv`` (atomically) for ``ops`` (+ one ``not_run`` row per ``skipped``
    folder, with its reason) and, given ``ops_csv``, ``summary_ops.csv``; returns the rows."""
    results = Path(results)
    rows = []
    for name, why in (skipped or {}).items():
        rows.append({c: "not_run" for c in COLUMNS} | {"op": name, "kernel": "-", "variant": "-",
                                                      "attempts": 0, "owner": "kernel", "round": 1,
                                                      "gpu_route": "",
                                                      "note": why.replace("\n", " ")[:300],
                                                      "diagnosis": "", "ref_us": "", "port_us": "",
                                                      "torch_us": "", "vs_torch": "", **_LLM0,
                                                      "source": "", "loop_ratio": "",
                                                      "ref_vs_torch": "", **_NV0})
    for op in ops:
        rows += rows_for(results, op, [tuple(x) for x in variants.get(op, [])],
                         manifest_errors.get(op))
    for row in rows:
        for col in ("note", "diagnosis"):
            if isinstance(row.get(col), str):
                row[col] = from_checkout(row[col])
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(out_csv, buf.getvalue())
    if ops_csv:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=OPS_COLUMNS, lineterminator="\n")
        w.writeheader()
        # every folder under operators/ has its row in both files, whatever stopped it
        unusable = {op: f"ERROR (manifest: {_first_line(err)})" for op, err in manifest_errors.items()
                    if op in ops}
        unusable.update({name: f"not_run ({_first_line(why)})" for name, why in (skipped or {}).items()})
        w.writerows(ops_rows(results, list(ops), threshold, loop_threshold, unusable))
        atomic_write_text(ops_csv, buf.getvalue())
    return rows


def format_table(csv_path: str | Path, columns=("op", "kernel", "variant", "analyze", "reference_ir",
                                                "write_kernel", "rust_ir", "ir_diff")) -> str:
    """A fixed-width text table of ``summary.csv`` (chosen columns) plus verdict counts."""
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    widths = {c: max([len(c)] + [len(r.get(c, "")) for r in rows]) for c in columns}
    lines = ["  ".join(c.ljust(widths[c]) for c in columns)]
    lines += ["  ".join(r.get(c, "").ljust(widths[c]) for c in columns) for r in rows]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["ir_diff"]] = counts.get(r["ir_diff"], 0) + 1
    lines.append("ir_diff: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                 + f" ({len(rows)} rows)")
    return "\n".join(lines)


def format_ops(ops_csv: str | Path) -> str:
    """``summary_ops.csv`` as a text table (printed at the end of ``make run``)."""
    with open(ops_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    widths = {c: max([len(c)] + [len(r.get(c, "")) for r in rows]) for c in OPS_COLUMNS}
    lines = ["  ".join(c.ljust(widths[c]) for c in OPS_COLUMNS)]
    lines += ["  ".join(r.get(c, "").ljust(widths[c]) for c in OPS_COLUMNS) for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    path = Path(sys.argv[1] if len(sys.argv) > 1 else "results/summary.csv")
    print(format_table(path, columns=("op", "kernel", "variant", "ir_diff", "test", "ratio",
                                      "vs_torch")))
    if (path.parent / "summary_ops.csv").exists():
        print()
        print(format_ops(path.parent / "summary_ops.csv"))
