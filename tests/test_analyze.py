import json

import pytest

from tileport.cpu import analyze

OPS = ["relu", "gelu", "silu_and_mul", "softmax", "rms_norm", "layer_norm", "matmul", "bmm"]


@pytest.mark.parametrize("op", OPS)
def test_real_operators_pass(repo, tmp_path, op):
    d = analyze.run(repo / "operators" / op, tmp_path / "a.json", op)
    assert d["verdict"] == "PASS", d["summary"]
    assert d["details"]["unsupported"] == []


def test_softmax_details(repo):
    d = analyze.analyse(repo / "operators" / "softmax")
    k = d["kernels"][0]
    kinds = {p["name"]: (p["kind"], p.get("role")) for p in k["params"]}
    assert kinds == {"x": ("array", "input"), "y": ("array", "output"),
                     "BM": ("constexpr", None), "TILE": ("constexpr", None)}
    loads = [c for c in k["calls"] if c["call"] == "ct.load"]
    assert loads[0]["padding"] == "NEG_INF" and loads[0]["tile_shape"] == "(BM, TILE)"
    reds = {c["call"]: c for c in k["calls"] if c["call"] in ("ct.max", "ct.sum")}
    assert reds["ct.max"]["axis"] == "1" and reds["ct.sum"]["keepdims"] == "True"
    assert k["loops"] == 1 and k["grid"].startswith("(min(cdiv(M, BM)")
    assert [v["id"] for v in d["variants"]][:2] == ["f16-BM16-TILE1024", "f16-BM8-TILE4096"]


def test_scalar_params(repo):
    k = analyze.analyse(repo / "operators" / "rms_norm")["kernels"][0]
    assert [(p["name"], p["kind"]) for p in k["params"] if p["kind"].startswith("scalar")] == \
        [("inv_n", "scalar_f32"), ("eps", "scalar_f32")]


def test_syntax_error_is_blocked_with_line(op_copy, tmp_path):
    d = op_copy("relu")
    src = (d / "kernel.py").read_text().replace("bid = ct.bid(0)", "bid = ct.bid(0", 1)
    (d / "kernel.py").write_text(src)
    v = analyze.run(d, tmp_path / "a.json", "relu")
    assert v["verdict"] == "BLOCKED"
    assert v["findings"][0]["category"] == "syntax"
    assert "kernel.py:" in v["summary"] and "syntax error" in v["summary"]


def test_unsupported_construct_named_with_line(op_copy, tmp_path):
    d = op_copy("softmax")
    src = (d / "kernel.py").read_text()
    src = src.replace("        m = ct.max(t, axis=1, keepdims=True)\n",
                      "        m = ct.max(t, axis=1, keepdims=True)\n        g = ct.argmax(t, axis=1)\n")
    (d / "kernel.py").write_text(src)
    line = src.splitlines().index("        g = ct.argmax(t, axis=1)") + 1
    v = analyze.run(d, tmp_path / "a.json", "softmax")
    assert v["verdict"] == "BLOCKED"
    assert f"kernel.py:{line}: ct.argmax" in v["findings"][0]["message"]
    assert v["findings"][0]["ref"]["line"] == line
    # a valid construct without a translation rule: the tool must act, not the kernel's author
    assert v["owner"] == "tool" and v["findings"][0]["owner"] == "tool"


def test_try_is_refused_by_cutile_so_it_is_the_kernels(op_copy):
    """The translator has no rule for `try`, and cuTile Python refuses it too ("Unsupported
    syntax"): the kernel's to change, in cuTile's words (issue 34 item 3), at the try's line."""
    d = op_copy("relu")
    src = (d / "kernel.py").read_text().replace(
        "    bid = ct.bid(0)\n", "    bid = ct.bid(0)\n    try:\n        pass\n    finally:\n        pass\n")
    (d / "kernel.py").write_text(src)
    un = analyze.analyse(d)["unsupported"]
    line = src.splitlines().index("    try:") + 1
    assert un and un[0]["line"] == line and "cuTile Python itself refuses" in un[0]["reason"], un
    assert "Unsupported syntax" in un[0]["reason"]
    assert un[0]["owner"] == "kernel" and un[0]["category"] == "build"


def test_malformed_manifest_is_error_naming_file(op_copy, tmp_path):
    d = op_copy("relu")
    (d / "manifest.yaml").write_text("op: relu\nkernels: 3\n")
    v = analyze.run(d, tmp_path / "a.json", "relu")
    assert v["verdict"] == "ERROR" and v["findings"][0]["category"] == "manifest"
    assert "manifest.yaml:2" in v["summary"]
    assert json.loads((tmp_path / "a.json").read_text())["verdict"] == "ERROR"


def test_role_mismatch_is_blocked(op_copy, tmp_path):
    d = op_copy("relu")
    m = d / "manifest.yaml"
    m.write_text(m.read_text().replace("y: {ndim: 1, role: output}", "y: {ndim: 1, role: input}"))
    v = analyze.run(d, tmp_path / "a.json", "relu")
    assert v["verdict"] == "BLOCKED" and v["owner"] == "manifest"
    assert ("the manifest says role 'input' but relu_kernel writes it" in v["summary"]
            and "write role: output" in v["summary"])


def test_manifest_and_kernel_must_agree(op_copy, tmp_path):
    d = op_copy("rms_norm")
    m = d / "manifest.yaml"
    text = m.read_text()
    m.write_text(text.replace("scalars: {inv_n: f32, eps: f32}", "scalars: {inv_n: f32, eps: i32}")
                 .replace("      y: {ndim: 2, role: output}",
                          "      y: {ndim: 2, role: output}\n      z: {ndim: 2, role: input}"))
    reasons = [u["reason"] for u in analyze.analyse(d)["unsupported"]]
    assert any("manifest lists array 'z'" in r for r in reasons)
    assert any("the manifest says i32, but kernel.py:14 annotates eps as `float`" in r for r in reasons)


def test_tile_sizes_must_be_powers_of_two(op_copy):
    d = op_copy("softmax")
    m = d / "manifest.yaml"
    m.write_text(m.read_text().replace("{BM: 16, TILE: 1024}", "{BM: 16, TILE: 1000}"))
    un = analyze.analyse(d)["unsupported"]
    assert un and un[0]["construct"] == "constexpr TILE=1000" and un[0]["file"].endswith("manifest.yaml")
    assert "powers of two" in un[0]["reason"]


def test_annotations_and_decorator_kwargs_are_not_kernel_code(op_copy):
    d = op_copy("relu")
    k = d / "kernel.py"
    k.write_text(k.read_text().replace("TILE: ConstInt", "TILE: ct.Constant[int]")
                 .replace("@ct.kernel\n", "@ct.kernel(occupancy=2)\n"))
    assert analyze.analyse(d)["unsupported"] == []


@pytest.mark.parametrize("header,ok", [("from cuda import tile as ct\n", True),
                                       ("import cuda.tile\nct = cuda.tile\n", False)])
def test_import_forms(op_copy, header, ok):
    d = op_copy("relu")
    k = d / "kernel.py"
    k.write_text(k.read_text().replace("import cuda.tile as ct\n", header))
    if ok:
        assert analyze.analyse(d)["kernels"][0]["name"] == "relu_kernel"
    else:
        with pytest.raises(analyze.AnalysisError, match=r"kernel.py:\d+: `import cuda.tile` without an alias"):
            analyze.analyse(d)


def test_nul_byte_is_a_syntax_error_with_line(op_copy, tmp_path):
    d = op_copy("relu")
    (d / "kernel.py").write_bytes(b"import cuda.tile as ct\n\x00\n")
    v = analyze.run(d, tmp_path / "a.json", "relu")
    assert v["verdict"] == "BLOCKED" and "kernel.py:1: syntax error" in v["summary"]


def test_config_constexpr_unknown_to_the_kernel(op_copy):
    d = op_copy("relu")
    m = d / "manifest.yaml"
    m.write_text(m.read_text().replace("{TILE: 1024}", "{TILE: 1024, BLOCK: 2}")
                 .replace("{TILE: 2048}", "{TILE: 2048, BLOCK: 2}"))
    un = analyze.analyse(d)["unsupported"]
    assert un and un[0]["construct"] == "constexpr BLOCK" and un[0]["file"].endswith("manifest.yaml")


# -- the analyser role played by an LLM (a local server speaking the Messages API) --------------

from test_agents import FakeMessages, ok, server  # noqa: E402,F401  (server: a fixture)

from tileport.core import agents  # noqa: E402


def atomic_softmax(op_copy):
    """softmax with a ct.argmax the translator lacks (the deterministic analyser: BLOCKED)."""
    d = op_copy("softmax")
    src = (d / "kernel.py").read_text().replace(
        "        m = ct.max(t, axis=1, keepdims=True)\n",
        "        m = ct.max(t, axis=1, keepdims=True)\n        g = ct.argmax(t, axis=1)\n")
    (d / "kernel.py").write_text(src)
    return d, src.splitlines().index("        g = ct.argmax(t, axis=1)") + 1


def notes_reply(kernels, line):
    return ("```markdown\nline {0}: ct.atomic_cas swaps x at the indices in t; cutile: atomic_cas_tko "
            "and select.\n```\n```json\n{{\"kernels\": {1}, \"constructs\": [{{\"line\": {0}, "
            "\"construct\": \"ct.atomic_cas\", \"rust\": \"atomic_cas_tko\"}}]}}\n```\nVERDICT: PASS\n"
            ).format(line, json.dumps(kernels))


@pytest.fixture
def role(server, monkeypatch, tmp_path):
    monkeypatch.setenv("TILEPORT_AN_KEY", "sk-ant-analyser")
    s = agents.LlmSettings(model="claude-test", max_tokens=256, temperature=0.0, timeout_s=5.0, max_retries=0,
                           base_url=server[1], api_key_env="TILEPORT_AN_KEY")
    return {"backend": "auto", "settings": s, "results": tmp_path / "results", "replay_dir": tmp_path / "results"}


def test_llm_analyser_notes_are_checked_and_kept(op_copy, tmp_path, role):
    d, line = atomic_softmax(op_copy)
    FakeMessages.script = [ok(notes_reply({"softmax_kernel": ["x", "y", "BM", "TILE"]}, line))]
    out = tmp_path / "results" / "softmax" / "analysis.json"
    v = analyze.run_backend(d, out, "softmax", "auto", role)
    assert v["verdict"] == "BLOCKED"                      # the analysis stays tileport's
    llm = v["details"]["llm"]
    assert llm["notes"].startswith(f"line {line}: ct.atomic_cas") and llm["constructs"][0]["line"] == line
    assert "ct.argmax" in FakeMessages.seen[0]["body"]["messages"][0]["content"]
    assert (tmp_path / "results" / "softmax" / "transcripts" / "analyze" / "attempt-1.json").is_file()
    assert json.loads(out.read_text())["details"]["llm"] == llm


@pytest.mark.parametrize("kernels,line,why", [
    ({"softmax_kernel": ["x", "y", "TILE"]}, None, "parameters of softmax_kernel"),
    ({"other_kernel": ["x"]}, None, "kernels ['other_kernel'] differ"),
    ({"softmax_kernel": ["x", "y", "BM", "TILE"]}, 999, "names no line of kernel.py"),
])
def test_llm_analyser_that_disagrees_with_the_parse_is_an_agent_output_failure(op_copy, tmp_path, role,
                                                                               kernels, line, why):
    d, real = atomic_softmax(op_copy)
    FakeMessages.script = [ok(notes_reply(kernels, line or real))]
    v = analyze.run_backend(d, tmp_path / "a.json", "softmax", "anthropic", role)
    llm = v["details"]["llm"]
    assert llm["fail_class"] == "agent_output" and why in llm["error"] and "notes" not in llm
    assert v["verdict"] == "BLOCKED" and any(f["message"].startswith("LLM analyser (agent_output)")
                                             for f in v["findings"])


def test_auto_analyser_asks_only_when_blocked(repo, tmp_path, role):
    v = analyze.run_backend(repo / "operators" / "relu", tmp_path / "a.json", "relu", "auto", role)
    assert v["verdict"] == "PASS" and "llm" not in v["details"] and FakeMessages.seen == []


def test_llm_analyser_garbage_reply_and_syntax_error(op_copy, tmp_path, role):
    d, _ = atomic_softmax(op_copy)
    FakeMessages.script = [ok("I analysed it, all fine.")]
    v = analyze.run_backend(d, tmp_path / "a.json", "softmax", "auto", role)
    assert v["details"]["llm"]["fail_class"] == "agent_output"
    # a rerun asks again; the earlier exchange is kept under previous/
    FakeMessages.script = [ok("Still nothing to parse.")]
    analyze.run_backend(d, tmp_path / "a.json", "softmax", "auto", role)
    tdir = tmp_path / "results" / "softmax" / "transcripts" / "analyze"
    assert len(FakeMessages.seen) == 2 and len(list((tdir / "previous").rglob("attempt-1.json"))) == 1
    # nothing to annotate: a kernel.py that does not parse is never sent
    src = (d / "kernel.py").read_text()
    (d / "kernel.py").write_text(src.replace("keepdims=True)", "keepdims=True", 1))
    v = analyze.run_backend(d, tmp_path / "b.json", "softmax", "anthropic", role)
    assert v["verdict"] == "BLOCKED" and v["findings"][0]["category"] == "syntax"
    assert len(FakeMessages.seen) == 2


# -- manifests that describe real launches (issue 12 section 2, issue 13, issue 17) ----------------
from manifest_ops import PICK_KERNEL, make_op, pick_manifest  # noqa: E402


def test_analysis_json_carries_dtypes_scalars_and_variants_per_kernel(tmp_path):
    d = make_op(tmp_path)
    v = analyze.run(d, tmp_path / "a.json", "pick")
    man_findings = [f for f in v["findings"] if f["category"] == "manifest"]
    assert man_findings == [], man_findings          # roles, scalars, constexprs all agree
    k = {x["name"]: x for x in v["details"]["kernels"]}
    p = {x["name"]: x for x in k["pick"]["params"]}
    assert (p["src"]["dtype"], p["idx"]["dtype"], p["stat"]["dtype"]) == ("{dtype}", "i32", "f32")
    assert p["Count"] == {"name": "Count", "kind": "scalar_i32", "line": 11, "dtype": "i32", "annotated": False}
    assert (p["gain"]["kind"], p["gain"]["annotated"]) == ("scalar_f32", True)
    assert (p["bias"]["ctype"], p["NEG"]["ctype"], p["LAT"]["ctype"]) == ("float", "bool", "int")
    assert k["pick"]["scalars"] == {"Count": "i32", "gain": "f32"}
    assert k["pick"]["constexprs"] == ["TILE", "LAT", "bias", "NEG"]
    vs = k["pick"]["variants"]
    assert [x["id"] for x in vs] == ["f16-TILE128-LATm1-bias1em06-NEGtrue", "bf16-TILE128-LATm1-bias1em06-NEGtrue",
                                     "f32-TILE32-LAT2-bias0p0-NEGfalse-occupancy2"]
    assert vs[1]["arrays"] == {"src": "bf16", "idx": "i32", "dst": "bf16", "stat": "f32"}
    assert vs[2]["compiler_hints"] == {"occupancy": 2} and "compiler_hints" not in vs[0]
    assert {x["name"]: x.get("list") for x in k["copy_all"]["params"]} == {"srcs": True, "dsts": True, "TILE": None}
    assert [x["id"] for x in k["copy_all"]["variants"]] == ["f16-TILE64", "bf16-TILE64", "f32-TILE64"]


def test_scatter_only_output_and_list_elements_pass_the_role_check(tmp_path):
    """Issue 13's analyser fault: a scatter-only output was said to be 'only loaded'."""
    d = make_op(tmp_path, manifest=pick_manifest()
                .replace("dst: {ndim: 1, role: output}", "dst: {ndim: 1, role: input}")
                .replace("dsts: {ndim: 1, role: output, list: true}", "dsts: {ndim: 1, role: inout, list: true}"))
    un = [u for u in analyze.analyse(d)["unsupported"] if u.get("category") == "manifest"]
    assert [u["construct"] for u in un] == ["parameter dst", "parameter dsts"]
    assert "the manifest says role 'input' but pick writes it (line 20) and never reads it; write role: output" \
        in un[0]["reason"]
    assert "copy_all writes it (line 29) and never reads it; write role: output" in un[1]["reason"]
    assert all(u["owner"] == "manifest" and u["file"].endswith("manifest.yaml") for u in un)


def test_unannotated_parameters_and_constexpr_types(tmp_path):
    text = (pick_manifest().replace("    scalars: {Count: i32}\n", "")
            .replace("{TILE: 32, LAT: 2, bias: 0.0, NEG: false}", "{TILE: 32, LAT: 2, bias: 0, NEG: 0}"))
    un = [u for u in analyze.analyse(make_op(tmp_path, manifest=text))["unsupported"]
          if u.get("category") == "manifest"]
    reasons = " | ".join(u["reason"] for u in un)
    # an unannotated parameter the manifest lists nowhere: say both ways to list it
    assert "pick's parameter Count (kernel.py:11) is neither under kernels/pick/arrays nor under kernels/pick/scalars" \
        in reasons and "Count: i32 (or f32) under scalars" in reasons
    assert "bias is declared ct.Constant[float] (kernel.py:12) but kernels/pick/variants gives 0" in reasons
    assert "write a float with a dot such as 0.0" in reasons
    assert "NEG is declared ct.Constant[bool]" in reasons and "write true or false" in reasons
    assert not any("LAT" in u["construct"] for u in un)           # LAT: -1 is a valid int constexpr


def test_kernel_the_manifest_cannot_describe_is_an_error_naming_concept_and_line(tmp_path):
    kernel = PICK_KERNEL.replace("def copy_all(srcs, dsts, TILE: ConstInt):",
                                 "def copy_all(srcs, dsts, TILE: ConstInt, MODE: ct.Constant[str], *rest):")
    d = make_op(tmp_path, kernel=kernel)
    v = analyze.run(d, tmp_path / "a.json", "pick")
    assert v["verdict"] == "ERROR" and v["owner"] == "tool"
    line = pick_manifest().splitlines().index("  copy_all:") + 1
    assert f"manifest.yaml:{line}: parameter *rest: copy_all takes *rest: the manifest describes" in v["summary"]
    msgs = [f["message"] for f in v["findings"] if f["owner"] == "tool"]
    assert any("MODE is a ct.Constant[str]" in m and "no words for this type" in m for m in msgs)


HELPER_KERNEL = '''\
import cuda.tile as ct


def _put(out, i, tile):
    ct.store(out, index=(i,), tile=tile)


@ct.kernel
def relay(x, y, TILE: ct.Constant[int]):
    b = ct.bid(0)
    _put(y, b, ct.load(x, index=(b,), shape=(TILE,)))
'''


def test_role_check_follows_arrays_into_helpers_of_the_module(tmp_path):
    man = ("op: relay\nkernels:\n  relay:\n    arrays:\n      x: {ndim: 1, role: input}\n"
           "      y: {ndim: 1, role: ROLE}\n    grid: \"(1, 1, 1)\"\ndtypes: [f16]\nconfigs: [{TILE: 64}]\n"
           "shape_names: [N]\ntest_shapes: [[64]]\nperf_shapes: [[64]]\ntolerance: {f16: {rtol: 0, atol: 0}}\n")
    d = make_op(tmp_path, "relay", HELPER_KERNEL, man.replace("ROLE", "output"))
    assert [u for u in analyze.analyse(d)["unsupported"] if u.get("category") == "manifest"] == []
    d = make_op(tmp_path, "relay", HELPER_KERNEL, man.replace("ROLE", "input"))
    un = [u for u in analyze.analyse(d)["unsupported"] if u.get("category") == "manifest"]
    assert "relay writes it (line 11) and never reads it" in un[0]["reason"]      # the call's line


VIEW_KERNEL = '''\
import cuda.tile as ct


@ct.kernel
def views(x, y, acc, TILE: ct.Constant[int]):
    b = ct.bid(0)
    seg = y.slice(axis=0, start=b, stop=b + TILE)
    half = seg.slice(axis=0, start=0, stop=TILE // 2)
    t = ct.load(x, index=(b,), shape=(TILE,))
    ct.store(half, index=(0,), tile=t)
    acc.tiled_view((TILE,)).atomic_store_add((b,), t)
'''


def test_role_check_follows_slices_and_tiled_views(tmp_path):
    """TileGym's MoE backward writes through x.slice(...) views, mamba2 accumulates through
    x.tiled_view(...).atomic_store_add(...): both are uses of the array itself."""
    man = ("op: views\nkernels:\n  views:\n    arrays:\n      x: {ndim: 1, role: input}\n"
           "      y: {ndim: 1, role: YROLE}\n      acc: {ndim: 1, role: AROLE}\n    grid: \"(1, 1, 1)\"\n"
           "dtypes: [f32]\nconfigs: [{TILE: 64}]\nshape_names: [N]\ntest_shapes: [[64]]\nperf_shapes: [[64]]\n"
           "tolerance: {f32: {rtol: 0, atol: 0}}\n")
    d = make_op(tmp_path, "views", VIEW_KERNEL, man.replace("YROLE", "output").replace("AROLE", "inout"))
    assert [u for u in analyze.analyse(d)["unsupported"] if u.get("category") == "manifest"] == []
    assert analyze.array_uses(__import__("ast").parse(VIEW_KERNEL).body[1], "ct", {"x", "y", "acc"}) == {
        "x": {"read": [9]}, "y": {"write": [10]}, "acc": {"atomic": [11]}}
    d = make_op(tmp_path, "views", VIEW_KERNEL, man.replace("YROLE", "input").replace("AROLE", "input"))
    un = [u["reason"] for u in analyze.analyse(d)["unsupported"] if u.get("category") == "manifest"]
    assert "views writes it (line 10) and never reads it; write role: output" in un[0]
    assert "views updates it atomically (line 11); write role: output" in un[1]


def test_a_kernel_named_with_non_ascii_letters_is_a_limit_of_tileport_not_of_the_kernel(tmp_path):
    """``glätten_kernel`` is a Python name (cuTile Python takes it); the manifest reads it, and tileport
    names its own limit (the {kernel} wildcard, Rust file modules and #[no_mangle] symbols are ASCII):
    BLOCKED, owner tool, never "not a name a Python parameter can have"."""
    from tileport.model import manifest as tp_manifest

    kernel = PICK_KERNEL.replace("def pick(", "def glätten_kernel(")
    d = make_op(tmp_path, kernel=kernel, manifest=pick_manifest().replace("  pick:\n", "  glätten_kernel:\n"))
    with pytest.raises(tp_manifest.ManifestError) as e:
        tp_manifest.load(d / "manifest.yaml")
    line = pick_manifest().splitlines().index("  pick:") + 1
    assert "a Python parameter" not in str(e.value) and e.value.owner == "tool", str(e.value)
    assert str(e.value).startswith(f"{d / 'manifest.yaml'}:{line}: key 'kernels/glätten_kernel': kernel name "
                                   f"'glätten_kernel' is a Python name, but tileport cannot carry a non-ASCII "
                                   f"kernel name"), str(e.value)
    assert "pub mod glätten_kernel;" in str(e.value) and "tp_pick__glätten_kernel" in str(e.value)
    v = analyze.run(d, tmp_path / "a.json", "pick")
    assert v["verdict"] == "BLOCKED" and v["owner"] == "tool", v
    assert [(f["owner"], f["category"]) for f in v["findings"]] == [("tool", "unsupported")]
    # the same kernel spelled in ASCII analyses and translates (copy_all's list of arrays is BLOCKED as ever)
    ascii_op = make_op(tmp_path / "ascii", kernel=kernel.replace("glätten", "glaetten"),
                       manifest=pick_manifest().replace("  pick:\n", "  glaetten_kernel:\n"))
    v = analyze.run(ascii_op, tmp_path / "b.json", "pick")
    assert [k["name"] for k in v["details"]["kernels"]] == ["glaetten_kernel", "copy_all"]
    assert [u["kernel"] for u in v["details"]["unsupported"]] == ["copy_all"], v["summary"]


@pytest.mark.parametrize("name,words", [
    ("glätten-kernel", "'glätten-kernel' is not a name a Python parameter can have"),
    ("2pick", "'2pick' is not a name a Python parameter can have"),
    ("ﬁlter_kernel", "Python reads the name 'ﬁlter_kernel' as 'filter_kernel'"),
])
def test_a_kernel_name_python_does_not_take_as_written_is_the_manifests(tmp_path, name, words):
    from tileport.model import manifest as tp_manifest

    d = make_op(tmp_path, manifest=pick_manifest().replace("  pick:\n", f"  {name}:\n"))
    with pytest.raises(tp_manifest.ManifestError) as e:
        tp_manifest.load(d / "manifest.yaml")
    assert words in str(e.value) and e.value.owner == "manifest", str(e.value)


def test_a_kernel_cutile_refuses_is_the_kernels_not_a_missing_rule(tmp_path):
    """Issue 34 item 3: the translator cannot port a rank-2 load of an array the call passes
    with rank 4, and neither can cuTile Python compile it. The analysis says so in cuTile's
    words with owner kernel -- not "the translator lacks a rule" (owner tool)."""
    from test_reference_ir import RANK_KERNEL, RANK_MANIFEST
    d = make_op(tmp_path, "rank", RANK_KERNEL, RANK_MANIFEST)
    v = analyze.run(d, tmp_path / "analysis.json", "rank")
    assert v["verdict"] == "BLOCKED" and v["owner"] == "kernel", v["summary"]
    (f,) = v["findings"]
    assert f["owner"] == "kernel" and f["ref"]["line"] == 7, f
    assert "cuTile Python itself refuses variant f16-TILE64: TypeCheckingError: Index size 2 does not match the " \
           "array rank 4" in f["message"] and "lacks a rule" not in v["summary"]
    # a kernel cuTile compiles keeps the translator's own limit (owner tool)
    ok_kernel = RANK_KERNEL.replace("shape=(1, TILE))", "shape=(1, 1, 1, TILE))").replace(
        "ct.store(y, index=(bid, 0), tile=t)", "ct.store(y, index=(bid, 0), tile=ct.cosh(ct.reshape(t, (1, TILE))))")
    ok_kernel = ok_kernel.replace("index=(bid, 0), shape=(1, 1", "index=(bid, 0, 0, 0), shape=(1, 1")
    d = make_op(tmp_path, "rank2", ok_kernel, RANK_MANIFEST.replace("op: rank", "op: rank2"))
    v = analyze.run(d, tmp_path / "analysis2.json", "rank2")
    assert v["owner"] == "tool" and "lacks a rule" in v["summary"], v["summary"]
