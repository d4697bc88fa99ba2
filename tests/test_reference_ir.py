from tileport import reference_ir as R


def test_softmax_reference_ir(repo, tmp_path):
    v = R.run(repo / "operators" / "softmax", "softmax_kernel", "f16-BM16-TILE1024",
              tmp_path / "r.tileirbc", tmp_path / "r.tileir", tmp_path / "r.json", "softmax")
    assert v["verdict"] == "PASS", v["summary"]
    assert (tmp_path / "r.tileirbc").read_bytes()[:8] == b"\x7fTileIR\x00"
    text = (tmp_path / "r.tileir").read_text()
    assert "padding_value = neg_inf" in text and "tile=(16x1024)" in text
    assert "tensor_view<?x?xf16, strides=[?,1]>" in text
    assert "maxf" in text and "addf" in text and "for %loopIdx" in text


def test_scalar_and_constexpr_signature(repo, tmp_path):
    v = R.run(repo / "operators" / "rms_norm", "rms_norm_kernel", "bf16-BM8-TILE4096",
              tmp_path / "r.tileirbc", tmp_path / "r.tileir", tmp_path / "r.json", "rms_norm")
    assert v["verdict"] == "PASS"
    head = (tmp_path / "r.tileir").read_text().splitlines()[0]
    assert "tile<ptr<bf16>>" in head and head.count("tile<f32>") == 2


def test_compile_error_is_a_verdict_not_a_crash(op_copy, tmp_path):
    d = op_copy("relu")
    k = d / "kernel.py"
    k.write_text(k.read_text().replace("shape=(TILE,)", "shape=(TILE, TILE)", 1))
    v = R.run(d, "relu_kernel", "f16-TILE1024", tmp_path / "r.tileirbc", tmp_path / "r.tileir",
              tmp_path / "r.json", "relu")
    assert v["verdict"] == "ERROR" and v["findings"][0]["category"] == "build"
    line = k.read_text().splitlines().index(next(l for l in k.read_text().splitlines() if "(TILE, TILE)" in l)) + 1
    assert f"kernel.py:{line}: cuTile Python compile failed" in v["summary"]
    assert v["findings"][0]["ref"]["line"] == line and v["owner"] == "kernel"


def test_missing_tool_is_env_not_kernel(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEPORT_TILEIRDISASM", "/nonexistent/tileirdisasm")
    v = R.run(repo / "operators" / "relu", "relu_kernel", "f16-TILE1024", tmp_path / "r.tileirbc",
              tmp_path / "r.tileir", tmp_path / "r.json", "relu")
    assert v["verdict"] == "ERROR" and v["owner"] == "env" and "tileirdisasm" in v["summary"]


def test_unknown_variant_is_blocked(repo, tmp_path):
    v = R.run(repo / "operators" / "relu", "relu_kernel", "f64-TILE7", tmp_path / "a", tmp_path / "b",
              tmp_path / "r.json", "relu")
    assert v["verdict"] == "BLOCKED" and "unknown variant" in v["summary"]
