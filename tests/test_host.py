"""Host builder: shim generation from real analyses/translations, and the combined cdylib build
(real cargo, release profile, shared target dir) including leaving a broken operator out."""
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from tileport.core import toolchain
from tileport.core.verdict import read
from tileport.cpu import analyze
from tileport.host import shim as host


def test_shim_signature_follows_the_kernel(built):
    results, _ = built
    spec = json.loads((results / "rms_norm" / "host" / "ffi.json").read_text())
    (f,) = spec["functions"]
    assert f["symbol"] == "tp_rms_norm__rms_norm_kernel" and f["entry"] == "rms_norm_kernel"
    assert [a["name"] for a in f["arrays"]] == ["x", "w", "y"]
    assert [a["ndim"] for a in f["arrays"]] == [2, 1, 2]
    assert f["scalars"] == [{"name": "inv_n", "type": "f32"}, {"name": "eps", "type": "f32"}]
    assert f["constexprs"] == ["BM", "TILE"] and f["dtypes"] == ["f16", "bf16", "f32"]
    # every manifest variant belongs to the one family
    man_variants = [v["id"] for v in read(results / "rms_norm" / "analysis.json")["details"]["variants"]]
    assert f["variants"] == man_variants
    rs = (results / "rms_norm" / "host" / "ffi.rs").read_text()
    sig = re.search(r"extern \"C\" fn tp_rms_norm__rms_norm_kernel\((.*?)\) -> i32", rs, re.S)[1]
    params = [p.strip().split(":")[0] for p in sig.split(",") if p.strip()]
    assert params == ["arr_x", "arr_w", "arr_y", "sc_inv_n", "sc_eps", "cx_BM", "cx_TILE",
                      "grid_x", "grid_y", "grid_z", "device", "stream"]
    # one launch per dtype, generics = element type then the int constexprs in order
    for dt, elem in (("f16", "half::f16"), ("bf16", "half::bf16"), ("f32", "f32")):
        assert f'Some("{dt}") => launched(super::rms_norm_kernel::port::rms_norm_kernel(borrow::<{elem}>(arr_x' in rs
        assert f'.generics(vec!["{dt}".to_string(), cx_BM.to_string(), cx_TILE.to_string()])' in rs
    assert "async_on(&s)" in rs and "catch_unwind" not in rs        # the guard in abi.rs catches


def test_arrays_of_their_own_dtype(built):
    """An int32 index array and f32 outputs beside f16 data: the shim takes the variant dtype
    from the arrays that have it, checks the others' dtype codes and borrows each with its own
    element type; the library builds (test_library_holds_every_shim)."""
    results, _ = built
    spec = json.loads((results / "constructs" / "host" / "ffi.json").read_text())
    f = next(f for f in spec["functions"] if f["kernel"] == "dtypes_kernel")
    assert [a.get("dtype") for a in f["arrays"]] == [None, {"f16": "i32"}, None, {"f16": "f32"}, {"f16": "f32"}]
    rs = (results / "constructs" / "host" / "ffi.rs").read_text()
    assert 'let dtype = same_dtype(&[("x", arr_x), ("y", arr_y)])?;' in rs
    assert (f'expect_dtype("idx", arr_idx, {host.DTYPE_CODES["i32"]})?; '
            f'expect_dtype("stat", arr_stat, {host.DTYPE_CODES["f32"]})?;') in rs
    assert ("dtypes_kernel(borrow::<half::f16>(arr_x, &ctx), borrow::<i32>(arr_idx, &ctx), "
            "borrow::<half::f16>(arr_y, &ctx), borrow::<f32>(arr_stat, &ctx)") in rs
    # the kernel's parameter order, whatever the C signature's (arrays first) is
    f = next(f for f in spec["functions"] if f["kernel"] == "promote_kernel")
    assert f["order"] == ["x", "y", "scale"]


def test_arrays_whose_strides_the_port_reads(built):
    """A gather / scatter on 2-D arrays reads their strides by dimension: the shim passes them
    through as_compiled_strides (the layout the port was compiled for; test_ffi checks it)."""
    results, _ = built
    spec = json.loads((results / "constructs" / "host" / "ffi.json").read_text())
    f = next(f for f in spec["functions"] if f["kernel"] == "gather_kernel")
    assert f["strided"] == ["a", "b"]
    assert "strided" not in next(f for f in spec["functions"] if f["kernel"] == "promote_kernel")
    rs = (results / "constructs" / "host" / "ffi.rs").read_text()
    assert ('let arr_a_as_compiled = as_compiled_strides(arr_a, "a")?;\n'
            '        let arr_a = &arr_a_as_compiled;') in rs


PORT_TWO_ENTRIES = """pub mod port {
    #[cutile::entry()]
    pub unsafe fn k__FP8false<E: ElementType, const T: i32>(
        a: &Tensor<E, {[-1]}>,
        scale: &Tensor<E, {[-1]}>,
        out: &mut Tensor<E, {[-1]}>,
        r#type: &Tensor<E, {[-1]}>,
    ) {
        let v = make_partition_view(a, shape![T], padding::None, dim_map::Identity, get_tensor_token(a));
        let n: i32 = get_shape_dim(out.shape(), 0);
    }

    #[cutile::entry()]
    pub unsafe fn k__FP8true<E: ElementType, const T: i32>(
        a: &Tensor<E, {[-1]}>,
        scale: &Tensor<E, {[-1]}>,
        out: &mut Tensor<E, {[-1]}>,
        r#type: &Tensor<E, {[-1]}>,
    ) {
        let s = get_tensor_token(scale);
    }
}
"""


def test_unread_arrays_are_those_an_entry_never_names():
    """ffi.json's ``unread``: per entry, the array parameters its body never names (a shape read
    counts as a use: ``out`` in the first entry). A parameter spelled otherwise in Rust
    (``r#type``) and an entry not found count as read."""
    names = ["a", "scale", "out", "type"]
    assert host.unread_arrays(PORT_TWO_ENTRIES, "k__FP8false", names) == ["scale"]
    assert host.unread_arrays(PORT_TWO_ENTRIES, "k__FP8true", names) == ["a", "out"]
    assert host.unread_arrays(PORT_TWO_ENTRIES, "k__FP8", names) == []


def test_families_split_by_entry():
    kinfo = {"name": "k", "params": []}
    variants = [{"id": "f16-A1", "dtype": "f16"}, {"id": "f16-A2", "dtype": "f16"},
                {"id": "f32-A1", "dtype": "f32"}]
    fams = host.families(kinfo, {"f16-A1": "k__A1", "f32-A1": "k__A1", "f16-A2": "k__A2"}, variants)
    assert {e: [v["id"] for v in vs] for e, vs in fams.items()} == {"k__A1": ["f16-A1", "f32-A1"],
                                                                   "k__A2": ["f16-A2"]}
    # no entries table: one family named like the kernel
    assert list(host.families(kinfo, {}, variants)) == ["k"]


def test_untranslated_kernel_gets_no_shim(tmp_path):
    r = tmp_path / "results" / "relu"
    op_dir = REPO / "operators" / "relu"
    analyze.run(op_dir, r / "analysis.json", "relu")
    # no write_kernel verdict at all
    d = host.write_shim("relu", r / "analysis.json", r, r / "host" / "ffi.rs", r / "host" / "ffi.json",
                        r / "host" / "shim.json")
    assert d["verdict"] == "BLOCKED" and d["fail_class"] == "kernel"
    assert "relu_kernel" in d["details"]["blocked"]
    assert json.loads((r / "host" / "ffi.json").read_text())["functions"] == []


def test_library_holds_every_shim(built):
    results, v = built
    assert v["verdict"] == "PASS", v["summary"]
    lib = results / "host" / host.LIB_NAME
    assert lib.stat().st_size > 0
    ops = v["details"]["ops"]
    assert ops["relu"]["in_library"] and ops["rms_norm"]["in_library"] and ops["constructs"]["in_library"]
    assert ops["relu"]["sources_sha"] == host.sources_sha(results, "relu")
    # the crate's package name is unique to the checkout (shared cargo target dir)
    toml = (results / "host" / "Cargo.toml").read_text()
    pkg, _ = host.package_names(results / "host")
    assert f'name = "{pkg}"' in toml and pkg.startswith("tileport-host-")
    lock = (results / "host" / "Cargo.lock").read_text()
    assert lock == (REPO / "rust/host-template/Cargo.lock").read_text().replace(
        'name = "tileport-host"\n', f'name = "{pkg}"\n')


def test_broken_shim_leaves_only_its_operator_out(built, tmp_path):
    src, _ = built
    results = tmp_path / "results"
    for op in ("relu", "rms_norm"):
        shutil.copytree(src / op, results / op)
    ffi = results / "relu" / "host" / "ffi.rs"
    ffi.write_text(ffi.read_text().replace("let grid = grid(", "let grid = grid_nope(", 1))
    v = host.build(["relu", "rms_norm"], results, results / "host" / "build.json")
    assert v["verdict"] == "PASS_WITH_NOTES", v["summary"]
    ops = v["details"]["ops"]
    assert not ops["relu"]["in_library"] and ops["rms_norm"]["in_library"]
    assert "breaks the combined build" in ops["relu"]["reason"]
    f = v["findings"][0]
    assert f["owner"] == "host" and f["port"]["file"] == str(ffi) and f["port"]["line"] > 1
    assert "grid_nope" in ffi.read_text().splitlines()[f["port"]["line"] - 1]
    assert "relu" in v["summary"]


def test_operator_without_built_port_is_left_out(built, tmp_path):
    src, _ = built
    results = tmp_path / "results"
    shutil.copytree(src / "rms_norm", results / "rms_norm")
    shutil.copytree(src / "relu", results / "relu")
    b = json.loads((results / "relu" / "rust" / "build.json").read_text())
    b["verdict"], b["owner"], b["summary"] = "ERROR", "kernel", "rustc error in relu_kernel.rs:9"
    (results / "relu" / "rust" / "build.json").write_text(json.dumps(b))
    v = host.build(["relu", "rms_norm"], results, results / "host" / "build.json")
    assert v["verdict"] == "PASS_WITH_NOTES"
    assert "port crate did not build" in v["details"]["ops"]["relu"]["reason"]


def test_unreadable_ffi_json_leaves_only_its_operator_out(built, tmp_path):
    src, _ = built
    results = tmp_path / "results"
    for op in ("relu", "rms_norm"):
        shutil.copytree(src / op, results / op)
    (results / "relu" / "host" / "ffi.json").write_text("{not json")
    v = host.build(["relu", "rms_norm"], results, results / "host" / "build.json")
    assert v["verdict"] == "PASS_WITH_NOTES"
    why = v["details"]["ops"]["relu"]["reason"]
    assert "relu/host/ffi.json: unreadable shim signatures" in why


def test_the_same_sources_in_another_checkout_come_from_the_build_cache(built, tmp_path):
    """A library is named by what builds it, not by the checkout: another results tree with the
    same operators gets the built library without cargo (a fresh clone's host_build)."""
    src, first = built
    results = tmp_path / "elsewhere" / "results"
    for op in ("relu", "rms_norm", "constructs"):
        shutil.copytree(src / op, results / op)
    v = host.build(["relu", "rms_norm", "constructs"], results, results / "host" / "build.json")
    assert v["verdict"] == "PASS", v["summary"]
    cached = Path(v["details"]["from_cache"])
    assert cached.is_file() and "build cache" in v["summary"]
    lib = results / "host" / host.LIB_NAME
    assert lib.read_bytes() == cached.read_bytes() == (src / "host" / host.LIB_NAME).read_bytes()
    assert {f["symbol"] for op in ("relu", "rms_norm") for f in
            json.loads((results / op / "host" / "ffi.json").read_text())["functions"]} <= \
        set(toolchain.exported_symbols(lib))
    # the key is the crate's content: the same in both trees, another for one changed kernel
    # (whose library cargo builds: no cached library has that name)
    crate, origin = results / "host", dict.fromkeys(["src/abi.rs", "src/ops/relu/relu_kernel.rs"])
    key = host.library_key(crate, origin)
    assert key == host.library_key(src / "host", origin)
    k = crate / "src" / "ops" / "relu" / "relu_kernel.rs"
    k.write_text(k.read_text() + "\n// changed\n")
    assert host.library_key(crate, origin) != key


def test_a_damaged_cached_library_is_built_again(built, tmp_path):
    src, first = built
    results = tmp_path / "results"
    for op in ("relu", "rms_norm", "constructs"):
        shutil.copytree(src / op, results / op)
    v = host.build(["relu", "rms_norm", "constructs"], results, results / "host" / "build.json")
    cached = Path(v["details"]["from_cache"])
    good = cached.read_bytes()
    bad = cached.with_name("bad.tmp")                            # a new file: the old one is mapped
    bad.write_bytes(good[: len(good) // 3])                      # truncated
    bad.replace(cached)
    v = host.build(["relu", "rms_norm", "constructs"], results, results / "host" / "build.json")
    assert v["verdict"] == "PASS" and v["details"]["from_cache"] is None, v["summary"]
    assert cached.read_bytes() != good[: len(good) // 3]        # cargo's library kept again
    assert host._intact(cached)


def test_the_build_cache_keeps_the_most_recently_used(tmp_path):
    import os

    cache = tmp_path / "tileport-host-libs"
    built = tmp_path / "lib.so"
    built.write_bytes(b"\x7fELF")
    for i in range(host.LIB_CACHE_KEEP + 2):
        host._keep_in_cache(built, cache / f"{i:02d}.so")
        os.utime(cache / f"{i:02d}.so", (1000 + i, 1000 + i))
    host._keep_in_cache(built, cache / "new.so")
    kept = sorted(p.name for p in cache.glob("*.so"))
    assert len(kept) == host.LIB_CACHE_KEEP and "new.so" in kept and "00.so" not in kept
    assert not list(cache.glob(".*.tmp")) and len(list(cache.glob("*.sha256"))) == host.LIB_CACHE_KEEP
    assert host._intact(cache / "new.so")
    # a cache that cannot be written is said, not raised: the library just built stands
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    assert host._keep_in_cache(built, blocked / "x.so") is False and built.is_file()


def test_sources_restored_with_old_mtimes_are_rebuilt(tmp_path):
    """cargo compares mtimes; a stamp of the last build's sources makes older files current."""
    import os

    host_dir, target = tmp_path / "host", tmp_path / "target"
    (host_dir / "src").mkdir(parents=True)
    (target / "release").mkdir(parents=True)
    for rel in ("src/lib.rs", "Cargo.toml", "src/a.rs"):
        (host_dir / rel).write_text(rel)
    origin = {"src/a.rs": "a"}
    host._stamp(target, host_dir).write_text(host._sources_digest(host_dir, origin))
    os.utime(host_dir / "src/a.rs", (1, 1))
    host._refresh_if_stale(host_dir, target, origin)          # same sources: left alone
    assert (host_dir / "src/a.rs").stat().st_mtime == 1
    (host_dir / "src/a.rs").write_text("restored older content")
    os.utime(host_dir / "src/a.rs", (1, 1))
    host._refresh_if_stale(host_dir, target, origin)          # differs from the stamp: fresh mtime
    assert (host_dir / "src/a.rs").stat().st_mtime > 1


# -- the host builder played by an LLM (a local server speaking the Messages API) ---------------

from test_agents import FakeMessages, ok, server  # noqa: E402,F401  (server: a fixture)

from tileport.core import agents  # noqa: E402


def shim_reply(rust: str) -> str:
    return f"```rust\n{rust}```\n\n```json\n{{\"symbols\": [], \"changes\": \"none\"}}\n```\n\nVERDICT: PASS\n"


@pytest.fixture
def llm_tree(built, tmp_path, server, monkeypatch):
    """A copy of the built relu tree and the host builder role pointed at the fake server."""
    results = tmp_path / "results"
    shutil.copytree(built[0] / "relu", results / "relu", ignore=shutil.ignore_patterns("host"))
    monkeypatch.setenv("TILEPORT_HOST_KEY", "sk-ant-host-test")
    s = agents.LlmSettings(model="claude-test", max_tokens=512, temperature=0.0, timeout_s=5.0, max_retries=0,
                      base_url=server[1], api_key_env="TILEPORT_HOST_KEY")
    role = {"backend": "auto", "settings": s, "results": results, "replay_dir": results}
    return results, role, (built[0] / "relu" / "host" / "ffi.rs").read_text()


def shim(results, role, **kw):
    r = results / "relu"
    return host.write_shim_llm("relu", r / "analysis.json", r, r / "host" / "ffi.rs", r / "host" / "ffi.json",
                               r / "host" / "shim.json", role, **kw)


def test_llm_shim_is_checked_built_and_transcribed(llm_tree):
    results, role, det = llm_tree
    FakeMessages.script = [ok(shim_reply(det))]
    d = shim(results, role, rnd=2, previous="GPU round 1: gpu_test FAIL (fail_class host): port launches 2")
    assert d["verdict"] == "PASS" and d["details"]["backend"] == "anthropic", d["summary"]
    prompt = FakeMessages.seen[0]["body"]["messages"][0]["content"]
    assert "tp_relu__relu_kernel" in prompt and "port launches 2" in prompt and "pub struct TpTensor" in prompt
    text = (results / "relu" / "host" / "ffi.rs").read_text()
    assert text.startswith("// Written by tileport's host builder (backend: anthropic)") and det in text
    assert (results / "relu" / "transcripts" / "host_shim" / "attempt-2.json").is_file()
    # cargo builds the LLM's shim into a library that exports its symbol
    b = host.build(["relu"], results, results / "host" / "build.json")
    assert b["verdict"] == "PASS" and b["details"]["ops"]["relu"]["in_library"], b["summary"]
    # replay (no server call) answers the same request from the transcript: the same ffi.rs
    shim(results, {**role, "backend": "replay"}, rnd=2,
         previous="GPU round 1: gpu_test FAIL (fail_class host): port launches 2")
    assert len(FakeMessages.seen) == 1
    assert (results / "relu" / "host" / "ffi.rs").read_text() == text.replace("backend: anthropic", "backend: replay")


@pytest.mark.parametrize("reply,why", [
    (lambda det: "Here is the shim, trust me.", "fenced ```rust"),
    (lambda det: shim_reply(det.replace("fn tp_relu__relu_kernel(", "fn tp_relu_other(")),
     "does not export ['tp_relu__relu_kernel']"),
])
def test_unusable_llm_shim_fails_as_agent_output_and_leaves_the_operator_out(llm_tree, reply, why):
    results, role, det = llm_tree
    FakeMessages.script = [ok(reply(det))]
    d = shim(results, role)
    assert (d["verdict"], d["fail_class"], d["owner"]) == ("FAIL", "agent_output", "host")
    assert why in d["summary"]
    assert (results / "relu" / "host" / "ffi.rs").read_text().startswith(
        "// host builder (anthropic) round 1 gave no usable shim")
    b = host.build(["relu"], results, results / "host" / "build.json")
    assert (b["verdict"], b["fail_class"]) == ("ERROR", "host")     # the host builder's fault, not the port's
    assert b["details"]["ops"]["relu"]["reason"].startswith("host shim unusable (agent_output)")


def test_llm_shim_without_a_key_is_an_environment_error(llm_tree, monkeypatch):
    results, role, _ = llm_tree
    monkeypatch.delenv("TILEPORT_HOST_KEY")
    d = shim(results, role)
    assert (d["verdict"], d["fail_class"]) == ("ERROR", "env") and "TILEPORT_HOST_KEY" in d["summary"]
    assert FakeMessages.seen == []


def test_only_constexprs_always_positive_are_checked_positive():
    """A constexpr every variant of the entry sets to a positive value (a tile size) is refused
    at zero or less by the shim; one the manifest sets to zero or less somewhere (TileGym's
    LOAD_LATENCY=-1, APPROXIMATE=0) goes through to the launch, as ct.launch passes it."""
    kinfo = {"name": "k", "params": [
        {"name": "x", "kind": "array", "ndim": 1, "role": "inout"},
        {"name": "TILE", "kind": "constexpr", "ctype": "int"},
        {"name": "LOAD_LATENCY", "kind": "constexpr", "ctype": "int"}]}
    fam = [{"id": f"f16-TILE{t}-LOAD_LATENCY{lat}", "dtype": "f16",
            "constexprs": {"TILE": t, "LOAD_LATENCY": lat}} for t, lat in ((64, -1), (128, 3))]
    spec = host.function_spec("op", kinfo, "k", fam)
    assert spec["constexprs"] == ["TILE", "LOAD_LATENCY"] and spec["positive"] == ["TILE"]
    text = host.render("op", [spec])
    assert "constexpr TILE = {} is not positive" in text
    assert "LOAD_LATENCY = {} is not positive" not in text and "cx_LOAD_LATENCY.to_string()" in text
