"""Stage ``perf_diagnose`` (agent role "perf diagnoser", deterministic backend).

When an operator's benchmark is BELOW_THRESHOLD, ``results/<op>/perf_diagnosis.json`` names the
likely cause with its evidence, and an ``owner`` (kernel / host) for the routing to act on:

* **launch counts** -- the port launches more kernels per call than the reference (from the
  benchmark's CUPTI records): host;
* **host overhead** -- time per call in a loop minus device time, and host (enqueue) time per
  call, port vs reference; reported always, but it cannot explain a *device-time* ratio, so it
  never decides the owner of a device-time diagnosis on its own;
* **loop gate** -- the benchmark's loop ratio (ref / port time per call in a back-to-back loop)
  against ``loop_threshold``: when it is below, the configs under the threshold are named, each
  as *host-bound* (the port's host time per call exceeds both its device time and the
  reference's host time: the loop runs at the speed of the port's host path; owner host) or
  *device-bound* (the loop follows device time; owner kernel);
* **hints** -- IR-diff findings of category ``hint`` (latency, allow_tma, occupancy,
  num_cta_in_cga dropped or changed in the port): kernel;
* **inserted checks** -- IR-diff notes that the port carries operations the reference lacks
  (cutile's partition bounds-check asserts): kernel (compiler-side);
* **launch grid / constants** -- both sides run the manifest's grid and constexprs (the same
  :class:`tileport.gpu.harness.Call`): listed as evidence that launch configuration is *not* the
  cause, with the worst configs' grid;
* **configs dragging the geomean down** -- the configs with the lowest ratio, with their
  per-config ratio and the geomean the operator would have without them.

Verdict: PASS (both gates met: nothing to diagnose), FAIL (a diagnosis, ``owner`` set: the
device-time geomean below ``threshold``, or only the loop geomean below ``loop_threshold``),
BLOCKED (no benchmark to read), NOT_RUN (the benchmark did not run). The GPU route follows the
device-time verdict; a loop-only FAIL is reported in the summary, it does not reroute.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from tileport.core import agents, stats
from tileport.core.verdict import Finding, Verdict, VerdictError, port_fault, read, write
from tileport.cpu import sass
from tileport.gpu.fold import loop_gate
from tileport.ir_diff.entry_facts import entry_symbol


def acting(fail_class: str, bench_json: str | Path, op: str, kernel: str | None = None) -> str:
    """Who must act on a diagnosis of routing class ``fail_class``: a slow port (``kernel``) is
    the translator's (``tool``) when the translator wrote ``kernel`` (the slowest config's
    kernel, as :func:`tileport.gpu.bench.fold` names it) or, without one, every kernel of the
    operator (``results/<op>/write_kernel/*.json`` ``details.backend``, beside ``bench_json``),
    as :func:`tileport.core.verdict.port_fault` says for the other port stages; ``host`` names itself."""
    if fail_class != "kernel":
        return fail_class
    writers = {}
    for f in sorted((Path(bench_json).parent / "write_kernel").glob("*.json")):
        try:
            writers[f.stem] = (read(f).get("details") or {}).get("backend")
        except VerdictError:
            writers[f.stem] = None
    if kernel is not None and kernel in writers:
        return port_fault(writers[kernel], "kernel", "")[0]
    backends = set(writers.values())
    return port_fault(backends.pop() if len(backends) == 1 else None, "kernel", "")[0]


_COUNTS = re.compile(r"\bref (\d+), port (\d+)")


def _port_has_more(message: str) -> bool:
    """An IR-diff note ``... ref N, port M`` (ir_diff's count of asserts/assumes one side
    carries) where the port carries more operations than the reference."""
    m = _COUNTS.search(message)
    return bool(m) and ("assert" in message or "bounds" in message) and int(m[2]) > int(m[1])


def judged(bench: dict, threshold: float | None) -> str:
    """The benchmark's verdict word under ``threshold`` (None: as the benchmark judged it). The
    threshold is applied here and in the summary, not only in the benchmark, so changing it in
    config.yaml never reruns -- and wipes -- a GPU measurement."""
    g = (bench.get("details") or {}).get("geomean_ratio")
    if threshold is None or bench["verdict"] not in ("DONE", "BELOW_THRESHOLD") or g is None:
        return bench["verdict"]
    return "DONE" if g >= threshold else "BELOW_THRESHOLD"


def host_bound(r: dict) -> bool:
    """A config whose loop runs at the speed of the port's host path: the port's host (enqueue)
    time per call exceeds its device time and the reference's host time per call."""
    try:
        return r["port_host_us"] > r["port_us"] and r["port_host_us"] > r["ref_host_us"]
    except (KeyError, TypeError):
        return False


def loop_judged(bench: dict, loop_threshold: float | None) -> dict | None:
    """The benchmark's loop gate (``details.loop``) re-judged under ``loop_threshold`` (None: as
    the benchmark judged it) from its rows; None when the benchmark timed no loop."""
    det = bench.get("details") or {}
    loop = det.get("loop")
    if not isinstance(loop, dict) or loop_threshold is None or loop_threshold == loop.get("threshold"):
        return loop
    rows = [r for r in det.get("rows", []) if not r.get("error")]
    return loop_gate(rows, loop_threshold) or loop


def _loop_findings(loop: dict) -> tuple[list[Finding], str, str]:
    """Findings, owner and cause of a loop gate below its threshold."""
    below = loop.get("below") or []
    hb = [r for r in below if host_bound(r)]
    owner = "host" if hb and len(hb) * 2 >= len(below) else "kernel"
    lead = (hb or below or [{}])[0]
    und = loop.get("undecided") or []
    head = (f"loop ratio {loop['geomean']:.3f} < {loop['threshold']} (time per call in a "
            f"back-to-back loop, ref / port); {len(below)} config(s) below, {len(hb)} of them "
            f"host-bound" + (f"; {len(und)} more under it within the measurement's noise (95 % interval "
                             f"reaching it)" if und else ""))
    if lead:
        head += (f"; e.g. {lead.get('variant')} {lead.get('shape')}: loop ratio "
                 f"{lead.get('loop_ratio', 0):.3f}, port {lead.get('port_loop_us', 0):.1f} µs per call "
                 f"(host {lead.get('port_host_us', 0):.1f} µs, device {lead.get('port_us', 0):.1f} µs) vs "
                 f"reference {lead.get('ref_loop_us', 0):.1f} µs (host {lead.get('ref_host_us', 0):.1f} µs, "
                 f"device {lead.get('ref_us', 0):.1f} µs)")
    cause = ("host overhead: the port's host path per call is slower than ct.launch: " if owner == "host"
             else "device time: the loop follows the port's slower kernels: ") + head
    return [Finding("performance", "critical", owner, cause[:1500])], owner, cause


#: a config whose ratio (either reading) lies outside 1 +- OUTLIER_BAND is an outlier whose cause
#: is named (issue 31 item 6: a port faster than its reference is explained as a slow one is)
OUTLIER_BAND = 0.03
#: the causes :func:`outlier_cause` names, in the order the summary counts them
CAUSES = ("launcher specialisation", "IR difference", "launch count", "within noise", "unexplained")


def _inside(x, band: float) -> bool:
    return isinstance(x, (int, float)) and abs(x - 1.0) <= band


def _sass_text(reading: dict, arch: str) -> str:
    got = (reading.get("sass") or {}).get(arch) or {}
    v = got.get("verdict") or "not compiled"
    delta = got.get("delta") or {}
    return v + (f" ({sass.delta_text(delta, 4)})" if v == "DIFFERENT" and delta else "")


def outlier_cause(row: dict, case: dict | None, arch: str = "sm_90", band: float = OUTLIER_BAND) -> dict:
    """The cause of one bench row's ratio lying outside ``1 +- band`` (either way).

    ``case``: the row's (variant, shape) record of the kernel's ``runtime_ir`` verdict
    (``details.cases``), or None. Causes (:data:`CAUSES`), first that holds:
    ``launch count`` (the sides launch a different number of kernels per call);
    ``launcher specialisation`` (the matched reading, the reference compiled under the port's
    launch facts, is inside the band or its 95 % interval, :func:`matched_interval`, reaches
    into it, and the launchers' facts change the reference's own time by more than the band:
    they alone made the difference); ``within noise`` (the matched reading's interval reaches the
    band and the facts change nothing);
    ``IR difference`` (the matched reading is outside the band and the matched pair's ``arch``
    SASS or run-time Tile IR differ; the evidence quotes the SASS verdict's ``cause``, what
    :mod:`tileport.cpu.runtime_ir` found different in the Tile IR); ``launcher specialisation``
    again where runtime_ir's matched pair has IDENTICAL SASS but the bench's matched reference
    has another symbol than runtime_ir's (``matched_symbol`` against the ``entry`` of the matched
    ``ref_ir``): facts ct.launch keeps, such as a constant extent of 1, which cutile never gives
    the port (lg_rope ``_rope_5d_ct``, docs/results/h100-2026-12-07f); ``unexplained`` (no matched
    reading, or the same SASS runs on both sides under the same facts).
    Returns ``{"kernel", "variant", "shape", "ratio", "ratio_matched",
    "matched_gain", "cause", "evidence"}`` (evidence: one line of text)."""
    out = {k: row.get(k) for k in ("kernel", "variant", "shape", "ratio", "ratio_matched", "matched_gain")}
    rm = row.get("ratio_matched")
    iv = matched_interval(row)
    if iv is not None:
        out["ratio_matched_lo"], out["ratio_matched_hi"] = iv
    shown = (f"{rm:.3f}" + (f" [{iv[0]:.3f}, {iv[1]:.3f}]" if iv else "")) if isinstance(rm, (int, float)) else ""
    # inside the band, or its 95 % interval reaching into it: the measurement cannot tell it from parity
    near = _inside(rm, band) or (iv is not None and iv[0] <= 1 + band and iv[1] >= 1 - band)
    readings = (case or {}).get("readings") or {}
    launched, matched = readings.get("launched") or {}, readings.get("matched") or {}
    sass_l, sass_m = _sass_text(launched, arch), _sass_text(matched, arch)
    ir_m = (matched.get("ir_diff") or {}).get("verdict")
    if str(row.get("port_launches")) != str(row.get("ref_launches")):
        cause, ev = "launch count", f"port {row.get('port_launches')} vs reference {row.get('ref_launches')} launches"
    elif near and not _inside(row.get("matched_gain"), band):
        cause = "launcher specialisation"
        ev = (f"matched reading {shown}: the reference under the port's launch facts runs "
              f"{row.get('matched_gain') or float('nan'):.3f}x faster; {arch} SASS as launched {sass_l}, "
              f"matched {sass_m}")
    elif near:
        cause = "within noise"
        ev = (f"matched reading {shown} reaches the band; the launchers' facts change the reference's time by "
              f"{row.get('matched_gain') or float('nan'):.3f}x; {arch} SASS matched {sass_m}")
    elif isinstance(rm, (int, float)) and (sass_m.startswith("DIFFERENT") or ir_m in ("FAIL", "PASS_WITH_NOTES")):
        cause = "IR difference"
        occ = sass.occupancy_text(((matched.get("sass") or {}).get(arch) or {}).get("resources"))
        why = (((matched.get("sass") or {}).get(arch) or {}).get("cause") or "")
        ev = (f"matched reading {shown}; matched {arch} SASS {sass_m}; run-time Tile IR diff {ir_m or 'none'}"
              + (f"; {occ}" if occ else "") + (f"; what differs (runtime_ir): {why}" if why else ""))
    elif (isinstance(rm, (int, float)) and sass_m.startswith("IDENTICAL") and row.get("matched_symbol")
          and _entry_symbol(matched.get("ref_ir")) not in (None, *str(row["matched_symbol"]).split())):
        # the card's matched reference is not runtime_ir's: ct.launch facts the bench cannot drop
        # (tileport.gpu.matched: a constant extent) stayed in it; the symbol names the facts
        cause = "launcher specialisation"
        ev = (f"matched reading {shown} compiled the reference with facts the port never gets "
              f"({row.get('matched_notes') or 'its symbol differs'}); with the port's facts alone "
              f"(runtime_ir's matched reference) its {arch} SASS is IDENTICAL to the port's")
    else:
        cause = "unexplained"
        ev = ("no matched reading" + (f" ({row['matched_error']})" if row.get("matched_error") else "")
              if not isinstance(rm, (int, float)) else f"matched reading {shown}")
        ev += (f"; {arch} SASS as launched {sass_l}, matched {sass_m}" if case else
               "; no run-time SASS verdict for this config")
    return {**out, "cause": cause, "evidence": ev[:600]}


def _entry_symbol(path) -> str | None:
    """:func:`tileport.ir_diff.entry_facts.entry_symbol` of the Tile IR text at ``path``, or None
    when there is none or it does not read."""
    try:
        return entry_symbol(Path(path).read_text(errors="replace")) if path else None
    except OSError:
        return None


def matched_interval(row: dict) -> tuple[float, float] | None:
    """The 95 % interval of the matched reading's median paired ratio (ref_matched / port per
    interleaved CUPTI round, the row's ``samples``; :func:`tileport.core.stats.median_interval`),
    or None without both sides' samples."""
    smp = row.get("samples") or {}
    a, b = smp.get("ref_matched"), smp.get("port")
    if not a or not b or len(a) != len(b) or any(not (x > 0) for x in b):
        return None
    _, lo, hi = stats.median_interval(stats.paired_ratios(a, b))
    return lo, hi


def outliers(rows: list[dict], runtime_docs: list[dict], band: float = OUTLIER_BAND) -> list[dict]:
    """:func:`outlier_cause` of every row (without ``error``) whose ``ratio`` or ``ratio_matched``
    lies outside ``1 +- band``, farthest from 1 first; ``runtime_docs``: the operator's
    ``runtime_ir`` verdicts (one per kernel; their ``details.cases``)."""
    cases = {}
    for d in runtime_docs:
        kernel = d.get("kernel")
        for c in (d.get("details") or {}).get("cases", []):
            cases[(kernel, c.get("variant"), "x".join(map(str, c.get("shape") or [])))] = c
    def inside(r):
        return _inside(r["ratio"], band) and (r.get("ratio_matched") is None or _inside(r["ratio_matched"], band))

    odd = [r for r in rows if not r.get("error") and isinstance(r.get("ratio"), (int, float)) and not inside(r)]
    odd.sort(key=lambda r: -abs(r["ratio"] - 1.0))
    return [outlier_cause(r, cases.get((r.get("kernel"), r.get("variant"), r.get("shape")))) for r in odd]


def outlier_text(outl: list[dict], band: float = OUTLIER_BAND) -> str:
    """One line: how many configs lie outside the band, by cause (empty when none)."""
    if not outl:
        return ""
    n = {c: sum(1 for o in outl if o["cause"] == c) for c in CAUSES}
    return (f"{len(outl)} config(s) outside +-{band:.0%}: " + ", ".join(f"{k} {v}" for k, v in n.items() if v))


def diagnose(op: str, bench_json: str | Path, ir_diffs: list[str | Path], out_json: str | Path,
             attempt: int = 1, threshold: float | None = None, role: dict | None = None,
             loop_threshold: float | None = None, runtime: list[str | Path] = ()) -> dict:
    """Stage entry point (see module doc). ``ir_diffs``: the operator's ir_diff verdict files;
    ``threshold``, ``loop_threshold``: config.yaml's (None: the ones the benchmark used); a
    benchmark DONE on device time but below the loop gate gets a loop diagnosis (FAIL, owner
    host when most configs under the gate are host-bound, else kernel). ``role``: the perf diagnoser
    role's backend (``{"backend", "settings", "results", "replay_dir", "kernels"}``; default
    deterministic): below threshold, ``anthropic``/``replay`` (``auto``: only without critical
    evidence) also ask an LLM (``prompts/perf_diagnoser.md``; transcript
    ``results/<op>/transcripts/perf_diagnose/attempt-<n>.json``) whose cause and owner are
    recorded in ``details.llm``; its owner replaces the deterministic one only when tileport
    found no critical evidence, and an LLM failure leaves the deterministic verdict as it is.
    ``runtime``: the operator's ``runtime_ir`` verdicts; every verdict that read timings carries
    ``details.outliers`` (:func:`outliers`: the configs outside +-3 % either way, with a cause) and
    an info finding counting them, whatever the device-time verdict.
    Returns the verdict written to ``out_json``; unreadable inputs end in BLOCKED, never raise."""
    base = dict(stage="perf_diagnose", op=op, attempt=attempt)
    try:
        bench = read(bench_json)
    except VerdictError as exc:
        return write(Verdict(**base, verdict="BLOCKED", owner="tool", summary=str(exc)), out_json)
    word = judged(bench, threshold)
    if threshold is not None and word != bench["verdict"]:
        bench = {**bench, "verdict": word, "details": {**bench["details"], "threshold": threshold}}
    if bench["verdict"] == "NOT_RUN":
        return write(Verdict(**base, verdict="NOT_RUN", summary=bench["summary"]), out_json)
    loop = loop_judged(bench, loop_threshold)
    docs = []
    for p in runtime:
        try:
            docs.append(read(p))
        except VerdictError:
            continue        # no run-time verdict: its configs' causes say so
    outl = outliers([r for r in (bench.get("details") or {}).get("rows", [])], docs)
    odd = outlier_text(outl)
    odd_f = [Finding("performance", "info", "tool", odd)] if odd else []
    if bench["verdict"] == "DONE":
        g = bench["details"].get("geomean_ratio")
        if loop is not None and loop["verdict"] == "BELOW_THRESHOLD":
            findings, owner, cause = _loop_findings(loop)
            slow = (loop.get("below") or [{}])[0].get("kernel")
            return write(Verdict(**base, verdict="FAIL", owner=acting(owner, bench_json, op, slow), fail_class=owner,
                                 summary=f"device time met (geomean ratio {g:.3f} >= "
                                         f"{bench['details'].get('threshold')}); below the loop gate: "
                                         f"{cause}"[:1000], findings=findings + odd_f,
                                 details={"evidence": {"geomean_ratio": g, "loop": loop}, "outliers": outl}),
                         out_json)
        more = f"; loop ratio {loop['geomean']:.3f} >= {loop['threshold']}" if loop else ""
        return write(Verdict(**base, verdict="PASS", findings=odd_f, details={"outliers": outl},
                             summary=(f"no slow port to diagnose: geomean ratio {g:.3f} >= threshold "
                                      f"{bench['details'].get('threshold')}{more}" + (f"; {odd}" if odd else ""))
                             [:1000]), out_json)
    if bench["verdict"] != "BELOW_THRESHOLD":
        # the benchmark's owner must act (FAIL, BLOCKED); tileport when it names none
        return write(Verdict(**base, verdict="BLOCKED", owner=bench.get("owner") or "tool",
                             summary=f"no timing to diagnose: bench {bench['verdict']}: "
                                     f"{bench['summary']}"), out_json)
    det = bench["details"]
    rows = [r for r in det.get("rows", []) if not r.get("error")]
    findings: list[Finding] = []
    evidence: dict = {"geomean_ratio": det.get("geomean_ratio"), "threshold": det.get("threshold")}
    owner = "kernel"
    # launch counts
    extra = [r for r in rows if str(r.get("port_launches")) != str(r.get("ref_launches"))]
    if extra:
        owner = "host"
        findings.append(Finding("launch", "critical", "host",
                                f"{len(extra)} config(s) launch a different number of kernels: e.g. "
                                f"{extra[0]['variant']} {extra[0]['shape']}: port "
                                f"{extra[0]['port_launches']} vs reference {extra[0]['ref_launches']}"))
    # host overhead (loop time - device time per call; host time per call)
    if rows:
        ho_p = stats.median([r["port_host_overhead_us"] for r in rows])
        ho_r = stats.median([r["ref_host_overhead_us"] for r in rows])
        evidence["host_overhead_us"] = {"port_median": ho_p, "ref_median": ho_r}
        msg = (f"host overhead per call (loop time - device time, back-to-back): port "
               f"{ho_p:.1f} µs vs reference {ho_r:.1f} µs median")
        if loop is not None:
            evidence["loop"] = loop
            msg += (f"; host time per call port {loop['port_host_us']:.1f} µs vs reference "
                    f"{loop['ref_host_us']:.1f} µs; loop ratio {loop['geomean']:.3f} ({loop['verdict']} "
                    f"at {loop['threshold']})")
        findings.append(Finding("performance", "info", "host",
                                msg + "; it does not enter the device-time ratio"))
    # IR-diff hints and inserted operations
    hint_msgs, inserted = [], []
    for p in ir_diffs:
        try:
            d = read(p)
        except VerdictError:
            continue
        for f in d.get("findings", []):
            if f["category"] == "hint" and f["severity"] != "info":   # info = extra assumes, not hints
                hint_msgs.append(f"{d.get('variant')}: {f['message']}")
            elif f["severity"] == "info" and _port_has_more(f["message"]):
                inserted.append(f"{d.get('variant')}: {f['message']}")
    evidence["ir_hints"] = sorted(set(hint_msgs))[:20]
    evidence["ir_inserted"] = sorted(set(inserted))[:20]
    if hint_msgs:
        findings.append(Finding("hint", "critical", "kernel",
                                f"{len(hint_msgs)} IR hint difference(s), e.g. {hint_msgs[0][:300]}"))
    if inserted:
        findings.append(Finding("performance", "warn", "kernel",
                                f"the port's IR carries operations the reference lacks, e.g. "
                                f"{inserted[0][:300]}"))
    # launch grid / constants: same by construction
    worst = sorted(rows, key=lambda r: r["ratio"])[:3]
    evidence["worst_configs"] = [{k: r.get(k) for k in ("kernel", "variant", "shape", "grid", "ratio",
                                                        "ref_us", "port_us", "paired_ratio")}
                                 for r in worst]
    if worst:
        w = worst[0]
        findings.append(Finding("performance", "warn", owner,
                                f"slowest config: {w['variant']} {w['shape']} ratio {w['ratio']:.3f} "
                                f"(ref {w['ref_us']:.1f} µs, port {w['port_us']:.1f} µs, grid "
                                f"{w.get('grid')} on both sides: same launch grid and constexprs)"))
        rest = [r["ratio"] for r in rows if r not in worst]
        if rest:
            evidence["geomean_without_worst"] = stats.geomean(rest)
    lead = next((f for f in findings if f.severity == "critical"), None) or (
        findings[-1] if findings else None)
    cause = lead.message if lead else "no evidence beyond the timings"
    if not hint_msgs and not extra:
        cause = (f"same IR hints, launch grid, constexprs and launch counts; the port's device code "
                 f"is slower: {cause}" + (f" (IR notes: {inserted[0][:200]})" if inserted else ""))
    details = {"evidence": evidence, "outliers": outl}
    findings += odd_f
    backend = (role or {}).get("backend", "deterministic")
    critical = any(f.severity == "critical" for f in findings)
    if backend != "deterministic" and (backend != "auto" or not critical):
        got = _llm(op, role, det, evidence, cause, attempt)
        details["llm"] = got
        claim = (got.get("agent_claim") or {}).get("validation") or {}
        if "output" in got and claim.get("owner") in ("kernel", "host") and isinstance(claim.get("cause"), str):
            findings.append(Finding("performance", "warn", claim["owner"],
                                    f"LLM perf diagnoser: {claim['cause']}"[:1500]))
            if not critical:
                owner = claim["owner"]
                cause = f"{cause} | LLM perf diagnoser ({claim['owner']}): {claim['cause']}"
        elif "output" in got:
            details["llm"] = {**got, "error": "validation block lacks owner kernel|host and a cause",
                              "fail_class": "agent_output"}
    return write(Verdict(**base, verdict="FAIL", owner=acting(owner, bench_json, op,
                                                             worst[0].get("kernel") if worst else None),
                         fail_class=owner, summary=f"below threshold ({det.get('geomean_ratio', 0):.3f} < "
                                                   f"{det.get('threshold')}): {cause}"[:1000],
                         findings=findings, details=details), out_json)


def _llm(op: str, role: dict, det: dict, evidence: dict, cause: str, attempt: int) -> dict:
    """Ask the LLM perf diagnoser (see :func:`diagnose`); never raises."""
    src = []
    for k in role.get("kernels", []):
        try:
            src.append(Path(k).read_text())
        except OSError:
            pass
    fields = {"op": op, "geomean": f"{det.get('geomean_ratio', 0):.3f}", "threshold": det.get("threshold"),
              "evidence": json.dumps(evidence, indent=1, default=str)[:12000], "deterministic": cause,
              "port_source": "\n".join(src)[:20000] or "(none)"}
    return agents.consult("perf_diagnoser", fields, role, op=op, stage=role.get("stage", "perf_diagnose"),
                          attempt=attempt,
                          lang="markdown", repo_root=Path(role["results"]).resolve().parent)
