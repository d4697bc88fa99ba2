from tileport.cpu import reference_ir


def test_softmax_reference_ir(repo, tmp_path):
    v = reference_ir.run(repo / "operators" / "softmax", "softmax_kernel", "f16-BM16-TILE1024",
              tmp_path / "r.tileirbc", tmp_path / "r.tileir", tmp_path / "r.json", "softmax")
    assert v["verdict"] == "PASS", v["summary"]
    assert (tmp_path / "r.tileirbc").read_bytes()[:8] == b"\x7fTileIR\x00"
    text = (tmp_path / "r.tileir").read_text()
    assert "padding_value = neg_inf" in text and "tile=(16x1024)" in text
    assert "tensor_view<?x?xf16, strides=[?,1]>" in text
    assert "maxf" in text and "addf" in text and "for %loopIdx" in text


def test_scalar_and_constexpr_signature(repo, tmp_path):
    v = reference_ir.run(repo / "operators" / "rms_norm", "rms_norm_kernel", "bf16-BM8-TILE4096",
              tmp_path / "r.tileirbc", tmp_path / "r.tileir", tmp_path / "r.json", "rms_norm")
    assert v["verdict"] == "PASS"
    head = (tmp_path / "r.tileir").read_text().splitlines()[0]
    assert "tile<ptr<bf16>>" in head and head.count("tile<f32>") == 2


def test_compile_error_is_a_verdict_not_a_crash(op_copy, tmp_path):
    d = op_copy("relu")
    k = d / "kernel.py"
    k.write_text(k.read_text().replace("shape=(TILE,)", "shape=(TILE, TILE)", 1))
    v = reference_ir.run(d, "relu_kernel", "f16-TILE1024", tmp_path / "r.tileirbc", tmp_path / "r.tileir",
              tmp_path / "r.json", "relu")
    assert v["verdict"] == "ERROR" and v["findings"][0]["category"] == "build"
    line = k.read_text().splitlines().index(next(l for l in k.read_text().splitlines() if "(TILE, TILE)" in l)) + 1
    assert f"kernel.py:{line}: cuTile Python compile failed" in v["summary"]
    assert v["findings"][0]["ref"]["line"] == line and v["owner"] == "kernel"


def test_missing_tool_is_env_not_kernel(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEPORT_TILEIRDISASM", "/nonexistent/tileirdisasm")
    v = reference_ir.run(repo / "operators" / "relu", "relu_kernel", "f16-TILE1024", tmp_path / "r.tileirbc",
              tmp_path / "r.tileir", tmp_path / "r.json", "relu")
    assert v["verdict"] == "ERROR" and v["owner"] == "env" and "tileirdisasm" in v["summary"]


def test_unknown_variant_is_blocked(repo, tmp_path):
    v = reference_ir.run(repo / "operators" / "relu", "relu_kernel", "f64-TILE7", tmp_path / "a", tmp_path / "b",
              tmp_path / "r.json", "relu")
    assert v["verdict"] == "BLOCKED" and "unknown variant" in v["summary"]


# -- per-array dtypes, lists, typed scalars, hints; faults traced to the manifest (issue 17 item 2) -
from manifest_ops import make_op, pick_manifest  # noqa: E402


def _ref(d, kernel, variant, tmp_path, op="pick"):
    return reference_ir.run(d, kernel, variant, tmp_path / "r.tileirbc", tmp_path / "r.tileir", tmp_path / "r.json", op)


def test_signature_has_each_arrays_dtype_lists_scalars_and_hints(tmp_path):
    d = make_op(tmp_path)
    v = _ref(d, "pick", "f16-TILE128-LATm1-bias1em06-NEGtrue", tmp_path)
    assert v["verdict"] == "PASS", v["summary"]
    head = (tmp_path / "r.tileir").read_text()
    entry = next(ln for ln in head.splitlines() if "entry @" in ln)
    # src/dst f16, idx i32, stat f32; Count i32 and gain f32 scalars
    assert entry.count("tile<ptr<f16>>") == 2 and "tile<ptr<i32>>" in entry and "tile<ptr<f32>>" in entry
    v = _ref(d, "pick", "f32-TILE32-LAT2-bias0p0-NEGfalse-occupancy2", tmp_path)
    assert v["verdict"] == "PASS" and "occupancy = 2" in (tmp_path / "r.tileir").read_text()
    v = _ref(d, "copy_all", "bf16-TILE64", tmp_path)                   # lists of arrays
    assert v["verdict"] == "PASS", v["summary"]


def test_a_compile_failure_from_a_defaulted_dtype_is_the_manifests(tmp_path):
    """Issue 17 item 2: an int index array left to the variant's float dtype is refused by cuTile;
    the kernel is valid, the manifest lacks the fact: owner manifest, the array and what to write."""
    d = make_op(tmp_path, manifest=pick_manifest().replace("idx: {ndim: 1, role: input, dtype: i32}",
                                                           "idx: {ndim: 1, role: input}"))
    v = _ref(d, "pick", "bf16-TILE128-LATm1-bias1em06-NEGtrue", tmp_path)
    assert v["verdict"] == "ERROR" and v["owner"] == "manifest", v["summary"]
    assert v["findings"][0]["owner"] == "manifest" and v["findings"][0]["ref"]["line"] == 15
    assert "kernel.py:15: cuTile Python refused variant bf16-TILE128" in v["summary"]
    assert "took the variant's dtype bf16 because the manifest gives them none" in v["summary"]
    assert "with idx as i32 cuTile compiles this variant: write idx: {ndim: ..., role: ..., dtype: i32}" in v["summary"]
    # the fp32 side array: the compiler's own message names the dtype to try first
    d = make_op(tmp_path, "pick2", manifest=pick_manifest("pick2").replace(
        "stat: {ndim: 1, role: output, dtype: f32}", "stat: {ndim: 1, role: output}"))
    v = _ref(d, "pick", "f16-TILE128-LATm1-bias1em06-NEGtrue", tmp_path, "pick2")
    assert v["owner"] == "manifest" and "with stat as f32 cuTile compiles this variant" in v["summary"], v["summary"]


def test_a_manifest_that_disagrees_with_the_kernel_blocks_before_compiling(tmp_path):
    d = make_op(tmp_path,
                manifest=pick_manifest().replace("dst: {ndim: 1, role: output}", "dst: {ndim: 1, role: input}"))
    v = _ref(d, "pick", "f16-TILE128-LATm1-bias1em06-NEGtrue", tmp_path)
    assert v["verdict"] == "BLOCKED" and v["owner"] == "manifest" and "write role: output" in v["summary"]
    assert not (tmp_path / "r.tileirbc").exists()


def test_a_wrong_ndim_is_traced_to_the_manifest(op_copy, tmp_path):
    d = op_copy("softmax")
    m = d / "manifest.yaml"
    m.write_text(m.read_text().replace("      x: {ndim: 2, role: input}", "      x: {ndim: 3, role: input}"))
    v = reference_ir.run(d, "softmax_kernel", "f16-BM16-TILE1024", tmp_path / "r.tileirbc", tmp_path / "r.tileir",
              tmp_path / "r.json", "softmax")
    assert v["verdict"] == "ERROR" and v["owner"] == "manifest", v["summary"]
    assert "the manifest gives x ndim 3 (kernels/softmax_kernel/arrays/x); with ndim 2 cuTile compiles" in v["summary"]


# -- a reference cuTile Python itself refuses is the kernel's, in cuTile's words (issue 34 item 3) --
RANK_KERNEL = '''import cuda.tile as ct


@ct.kernel
def rank_kernel(x, y, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(1, TILE))
    ct.store(y, index=(bid, 0), tile=t)
'''
RANK_MANIFEST = '''op: rank
kernels:
  rank_kernel:
    arrays:
      x: {ndim: 4, role: input}
      y: {ndim: 2, role: output}
    grid: "(B * H * S, 1, 1)"
dtypes: [f16]
configs:
  - {TILE: 64}
shape_names: [B, H, S, D]
test_shapes: [[2, 2, 8, 64]]
perf_shapes: [[2, 2, 8, 64]]
fits: "True"
tolerance:
  f16: {rtol: 0.0, atol: 0.0}
tensors:
  x: {shape: [B, H, S, D], role: input}
  y: {shape: ["B * H * S", D], role: output}
'''


def test_a_rank2_load_of_a_rank4_array_is_the_kernels_in_cutiles_words(tmp_path):
    """The manifest gives x rank 4 because the call passes a rank-4 tensor (tensors.x has four
    dimensions): cuTile refuses the kernel's rank-2 load. Owner kernel, cuTile's message quoted;
    never "write x: {ndim: 2}", which would describe a call that does not happen."""
    d = make_op(tmp_path, "rank", RANK_KERNEL, RANK_MANIFEST)
    v = _ref(d, "rank_kernel", "f16-TILE64", tmp_path, "rank")
    assert v["verdict"] == "ERROR" and v["owner"] == "kernel", v["summary"]
    assert "kernel.py:7: cuTile Python compile failed: TypeCheckingError: Index size 2 does not match the array " \
           "rank 4" in v["summary"]
    assert "ndim" not in v["summary"] and {f["owner"] for f in v["findings"]} == {"kernel"}
    # without tensors the manifest chose the rank: then ndim 2 is the manifest's repair
    d = make_op(tmp_path, "rank2", RANK_KERNEL, RANK_MANIFEST.replace("op: rank", "op: rank2").split("tensors:")[0])
    v = _ref(d, "rank_kernel", "f16-TILE64", tmp_path, "rank2")
    assert v["owner"] == "manifest" and "write x: {ndim: 2, ...}" in v["summary"], v["summary"]


SCALED_KERNEL = '''import cuda.tile as ct


@ct.kernel
def scaled_kernel(a, a_s, b, b_s, c, TILE: ct.Constant[int]):
    x = ct.load(a, index=(0, 0), shape=(TILE, TILE))
    xs = ct.load(a_s, index=(0, 0), shape=(TILE, TILE // 32))
    y = ct.load(b, index=(0, 0), shape=(TILE, TILE))
    ys = ct.load(b_s, index=(0, 0), shape=(TILE // 32, TILE))
    acc = ct.mma_scaled(x, xs, y, ys, ct.zeros((TILE, TILE), dtype=ct.float32))
    ct.store(c, index=(0, 0), tile=acc)
'''


def test_advice_never_contradicts_the_dtype_cutile_asks_for(tmp_path):
    """cuTile: "supported scale dtypes are float8_e8m0fnu" for u8 scales. The advice used to be
    "write b_s: {ndim: 1, ...}" (a rank got past the line); a dtype message gets no rank advice.
    f8e8m0fnu is a manifest dtype now (issue 34 item 2 f): the manifest chose u8, so the
    manifest owns it, and the advice is the dtype cuTile asks for, tried on both scales."""
    manifest = RANK_MANIFEST.replace("op: rank", "op: scaled").split("kernels:")[0] + '''kernels:
  scaled_kernel:
    arrays:
      a: {ndim: 2, role: input}
      a_s: {ndim: 2, role: input, dtype: u8}
      b: {ndim: 2, role: input}
      b_s: {ndim: 2, role: input, dtype: u8}
      c: {ndim: 2, role: output, dtype: f32}
    grid: "(1, 1, 1)"
dtypes: [f8e4m3fn]
configs:
  - {TILE: 64}
shape_names: [N]
test_shapes: [[64]]
perf_shapes: [[64]]
fits: "True"
tolerance:
  f8e4m3fn: {rtol: 0.1, atol: 0.1}
'''
    d = make_op(tmp_path, "scaled", SCALED_KERNEL, manifest)
    v = _ref(d, "scaled_kernel", "f8e4m3fn-TILE64", tmp_path, "scaled")
    assert v["verdict"] == "ERROR" and v["owner"] == "manifest", v["summary"]
    assert "with b_s, a_s as f8e8m0fnu cuTile compiles this variant: write dtype: f8e8m0fnu on b_s, a_s" \
        in v["summary"]
    assert "ndim" not in v["summary"]
    assert reference_ir.supported_dtypes("Unsupported scale dtype uint8 ..., supported scale dtypes are "
                                         "float8_e8m0fnu") == ["f8e8m0fnu"]
    # a format the manifest still cannot name stays tileport's limit
    assert reference_ir.unnameable_dtypes("..., supported dtypes are float8_e5m3fnu") == ["float8_e5m3fnu"]
    assert reference_ir.unnameable_dtypes("supported scale dtypes are float8_e8m0fnu") == []


def test_a_module_the_kernel_body_names_is_not_advised_into_the_launch_function(tmp_path):
    """"import it inside the launch function" is wrong advice when the kernel body itself reads
    the module (cp.float32 in a @ct.kernel): the advice names that line and what to do instead."""
    kernel = RANK_KERNEL.replace("import cuda.tile as ct\n", "import cuda.tile as ct\nimport cupy as cp\n").replace(
        "    t = ct.load(x, index=(bid, 0), shape=(1, TILE))",
        "    t = ct.astype(ct.load(x, index=(bid, 0, 0, 0), shape=(1, 1, 1, TILE)), cp.float32)")
    # the launch code needs cupy too, so its import stays (a body-only cp.float32 is read as
    # ct.float32 and the import blanked: tests/test_foreign_dtypes.py)
    kernel += "\n\ndef launch(x):\n    return cp.asarray(x)\n"
    d = make_op(tmp_path, "rank", kernel, RANK_MANIFEST)
    v = _ref(d, "rank_kernel", "f16-TILE64", tmp_path, "rank")
    assert v["verdict"] == "ERROR" and v["owner"] == "env", v["summary"]
    assert "kernel.py:8: the kernel body names cp.float32 of the module 'cupy'" in v["summary"], v["summary"]
    assert "launch function" not in v["summary"] and v["findings"][0]["ref"]["line"] == 8
    # a module only the launch code needs keeps the old advice
    launch = kernel.replace("cp.float32)", "ct.float32)")
    d = make_op(tmp_path, "rank2", launch, RANK_MANIFEST.replace("op: rank", "op: rank2"))
    v = _ref(d, "rank_kernel", "f16-TILE64", tmp_path, "rank2")
    assert "import it inside the launch function" in v["summary"], v["summary"]


TWO_RANKS_KERNEL = '''import cuda.tile as ct


@ct.kernel
def rank_kernel(x, y, FOUR: ct.Constant[bool], TILE: ct.Constant[int]):
    bid = ct.bid(0)
    if FOUR:
        t = ct.load(x, index=(0, 0, bid, 0), shape=(1, 1, 1, TILE))
        ct.store(y, index=(bid, 0), tile=ct.reshape(t, (1, TILE)))
    else:
        t = ct.load(x, index=(bid, 0), shape=(1, TILE))
        ct.store(y, index=(bid, 0), tile=t)
'''
TWO_RANKS_MANIFEST = '''op: tworanks
kernels:
  rank_kernel:
    arrays: {x: {ndim: 2, role: input}, y: {ndim: 2, role: output}}
    grid: "(M, 1, 1)"
    variants:
      - {dtype: f16, constexprs: {FOUR: false, TILE: 64}}
      - {dtype: f16, constexprs: {FOUR: true, TILE: 64}}
shape_names: [M]
test_shapes: [[4]]
perf_shapes: [[4]]
fits: "True"
tolerance:
  f16: {rtol: 0.001, atol: 0.001}
'''


def test_an_array_launched_with_two_ranks_is_tileports_limit_not_a_manifest_edit(tmp_path):
    """One array launched with rank 2 in one configuration and rank 4 in another (issue 34 item
    2 f): the manifest has one ndim per array of a kernel. The advice used to be "write x:
    {ndim: 4}", which breaks the rank-2 variant; the verdict now names both variants and says
    no manifest edit serves both (owner tool)."""
    d = make_op(tmp_path, "tworanks", TWO_RANKS_KERNEL, TWO_RANKS_MANIFEST)
    assert _ref(d, "rank_kernel", "f16-FOURfalse-TILE64", tmp_path, "tworanks")["verdict"] == "PASS"
    v = _ref(d, "rank_kernel", "f16-FOURtrue-TILE64", tmp_path, "tworanks")
    assert v["verdict"] == "ERROR" and v["owner"] == "tool", v["summary"]
    assert ("x is launched with rank 4 in variant f16-FOURtrue-TILE64" in v["summary"]
            and "rank 2 in variant f16-FOURfalse-TILE64" in v["summary"]
            and "no manifest edit serves both" in v["summary"]), v["summary"]
    assert "write x: {ndim: 4" not in v["summary"]


def test_an_unchanged_export_comes_from_the_tile_ir_cache(op_copy, tmp_path, monkeypatch):
    """The same kernel file, variant and tools: the second export is the kept bytecode and text
    (cuTile Python is not called); an edited kernel file misses the cache and compiles."""
    import cuda.tile.compilation as ctc

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    d = op_copy("relu")
    out = [tmp_path / "a.tileirbc", tmp_path / "a.tileir", tmp_path / "a.json"]
    assert reference_ir.run(d, "relu_kernel", "f16-TILE1024", *out, "relu")["verdict"] == "PASS"
    first = [p.read_bytes() for p in out[:2]]

    def refuse(*a, **k):
        raise RuntimeError("cuTile Python called")

    monkeypatch.setattr(ctc, "export_kernel", refuse)
    again = [tmp_path / "b.tileirbc", tmp_path / "b.tileir", tmp_path / "b.json"]
    assert reference_ir.run(d, "relu_kernel", "f16-TILE1024", *again, "relu")["verdict"] == "PASS"
    assert [p.read_bytes() for p in again[:2]] == first
    (d / "kernel.py").write_text((d / "kernel.py").read_text() + "\n# edited\n")
    v = reference_ir.run(d, "relu_kernel", "f16-TILE1024", *again, "relu")
    assert v["verdict"] == "ERROR" and "cuTile Python called" in v["summary"]
