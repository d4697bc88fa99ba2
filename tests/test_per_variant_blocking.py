"""Blocking is per variant (issue 34 item 3): one variant the translator cannot handle (an i16
launch; a constexpr branch with ct.floordiv) no longer blocks the kernel's other variants. The
analysis, write_kernel and check_kernel verdicts and the per-variant stage files name the
BLOCKED variants and why; the other variant goes on to IR PASS with the real compilers
(tests/data/operators/pervariant)."""
import json
from pathlib import Path

import pytest

from tileport.cpu import analyze, reference_ir, write_kernel
from tileport.flow import check as tp_check
from tileport.translate import Unsupported, translate_entries, translate_entries_per_variant

OP = Path(__file__).parent / "data" / "operators" / "pervariant"
K = "twice_kernel"
OK = "f16-TILE256-FLOORfalse"
BLOCKED = {"i16-TILE256-FLOORfalse": "variant dtype i16", "f16-TILE128-FLOORtrue": "ct.floordiv"}
VARIANTS = [OK, *BLOCKED]


def test_translator_blocks_per_variant():
    with pytest.raises(Unsupported):          # all variants together: what blocked every one
        translate_entries(OP, K)
    (src, _, entries), blocked = translate_entries_per_variant(OP, K)
    assert list(entries) == [OK] and set(blocked) == set(BLOCKED)
    for v, why in BLOCKED.items():
        assert why in str(blocked[v]), blocked[v]


def test_analysis_names_the_blocked_variants(tmp_path):
    a = analyze.run(OP, tmp_path / "analysis.json", "pervariant")
    items = a["details"]["unsupported"]
    assert {u["variant"] for u in items} == set(BLOCKED), items
    assert all(u["owner"] == "tool" and u["kernel"] == K for u in items)
    assert a["details"]["translated_variants"] == {K: [OK]}
    assert "i16-TILE256-FLOORfalse" in a["summary"] and OK in a["summary"], a["summary"]


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    root = tmp_path_factory.mktemp("pv")
    ref = root / "ref" / K
    ref.mkdir(parents=True)
    for v in VARIANTS:
        r = reference_ir.run(OP, K, v, ref / f"{v}.tileirbc", ref / f"{v}.tileir", ref / f"{v}.json", "pervariant")
        assert r["verdict"] == "PASS", r["summary"]
    adir = root / "results" / "pervariant" / "attempts" / K / "1"
    w = write_kernel.run(OP, K, adir / "rust" / "src" / f"{K}.rs", adir / "write.json", "pervariant")
    c = tp_check.check(OP, "pervariant", K, 1, adir / "write.json", ref, VARIANTS, adir / "check.json")
    return w, c, adir


def test_write_kernel_passes_with_the_blocked_variants_named(checked):
    w, _, _ = checked
    assert w["verdict"] == "PASS", w["summary"]
    assert set(w["details"]["blocked_variants"]) == set(BLOCKED)
    assert all(f["severity"] == "warn" and f["owner"] == "tool" for f in w["findings"])


def test_check_kernel_ir_pass_for_the_others(checked):
    _, c, adir = checked
    assert c["verdict"] == "PASS", c["summary"]
    assert c["details"]["variants"] == {OK: "PASS", **{v: "BLOCKED" for v in BLOCKED}}
    assert "2 BLOCKED" in c["summary"], c["summary"]
    assert json.loads((adir / "ir_diff" / f"{OK}.json").read_text())["verdict"] == "PASS"
    for v, why in BLOCKED.items():
        for stage in ("rust_ir", "ir_diff", "diagnosis"):
            d = json.loads((adir / stage / f"{v}.json").read_text())
            assert d["verdict"] == "BLOCKED" and d["owner"] == "tool" and why in d["summary"], (stage, d)


def test_summary_rows_block_only_their_variant(tmp_path):
    """summary.csv's analyze column: BLOCKED (owner tool, with the reason) on the blocked
    variants' rows only; the other variant's row reads PASS (its stages went on)."""
    from tileport.report.summary import analysis_for_kernel

    a = analyze.run(OP, tmp_path / "analysis.json", "pervariant")
    assert a["verdict"] == "BLOCKED"
    assert analysis_for_kernel(a, K, OK)["verdict"] == "PASS"
    for v, why in BLOCKED.items():
        row = analysis_for_kernel(a, K, v)
        assert row["verdict"] == "BLOCKED" and row["owner"] == "tool", row
        assert f"variant {v} of {K} is BLOCKED" in row["summary"] and why in row["summary"], row["summary"]


def test_host_shim_has_no_function_for_a_blocked_variant(tmp_path):
    """The host shim binds only the translated variants' entries (a blocked variant has none to
    call: without the filter its variants fell back to an entry named like the kernel)."""
    from tileport.host import shim as host

    r = tmp_path / "results" / "pervariant"
    analyze.run(OP, r / "analysis.json", "pervariant")
    (r / "write_kernel").mkdir(parents=True)
    w = write_kernel.run(OP, K, r / "rust" / "src" / f"{K}.rs", r / "write_kernel" / f"{K}.json", "pervariant")
    assert w["verdict"] == "PASS"
    host.write_shim("pervariant", r / "analysis.json", r, r / "host" / "ffi.rs", r / "host" / "ffi.json",
                    r / "host" / "shim.json")
    fns = json.loads((r / "host" / "ffi.json").read_text())["functions"]
    ids = [v for f in fns for v in f["variants"]]
    assert ids == [OK], fns


def test_gpu_test_counts_a_blocked_variant_as_no_failure():
    """gpu_test: a variant the writer left out is BLOCKED (no port to call), not a failure of
    the operator (it was a port call error, fail_class host, before)."""
    from tileport.gpu import test as gpu_test

    ok = {"kernel": K, "variant": OK, "shape": [1000], "port": {"ok": True}, "ref": {"ok": True},
          "launches": {"ref": 1, "port": 1, "torch": 1}}
    blocked = {"kernel": K, "variant": "i16-TILE256-FLOORfalse", "shape": [1000], "blocked": "the translator lacks"}
    v = gpu_test.verdict_of("pervariant", [ok, blocked])
    assert v.verdict == "ALL_PASS", v.summary
    assert v.details["variants"] == {f"{K}/{OK}": "PASS", f"{K}/i16-TILE256-FLOORfalse": "BLOCKED"}
    assert "1 variant(s) BLOCKED" in v.summary
    only = gpu_test.verdict_of("pervariant", [blocked])
    assert only.verdict == "BLOCKED" and only.owner == "tool"
