import pytest

from tileport import manifest as M

OPS = ["relu", "gelu", "silu_and_mul", "softmax", "rms_norm", "layer_norm", "matmul", "bmm"]


@pytest.mark.parametrize("op", OPS)
def test_every_operator_manifest_is_valid(repo, op):
    man = M.load(repo / "operators" / op / "manifest.yaml")
    vs = M.variants(man)
    assert len(vs) == len(man["dtypes"]) * len(man["configs"])
    assert len({v.id for v in vs}) == len(vs)


def test_variant_ids_are_readable(repo):
    man = M.load(repo / "operators" / "matmul" / "manifest.yaml")
    assert M.variants(man)[0].id == "f16-BM128-BN128-BK64"
    assert M.variant_by_id(man, "bf16-BM128-BN128-BK32").constexprs == {"BM": 128, "BN": 128, "BK": 32}
    with pytest.raises(KeyError, match="known"):
        M.variant_by_id(man, "f64-X1")


def test_yaml_syntax_error_names_line(op_copy):
    d = op_copy("relu")
    (d / "manifest.yaml").write_text("op: relu\nkernels: [\n  bad: : :\n")
    with pytest.raises(M.ManifestError, match=r"manifest.yaml:\d+: YAML syntax error"):
        M.load(d / "manifest.yaml")


def test_schema_error_names_key_value_and_line(op_copy):
    d = op_copy("relu")
    text = (d / "manifest.yaml").read_text().replace("dtypes: [f16, bf16, f32]", "dtypes: [f16, f12]")
    (d / "manifest.yaml").write_text(text)
    with pytest.raises(M.ManifestError) as e:
        M.load(d / "manifest.yaml")
    msg = str(e.value)
    line = text.splitlines().index("dtypes: [f16, f12]") + 1
    assert f"manifest.yaml:{line}:" in msg and "dtypes/1" in msg and "f12" in msg


def test_missing_tolerance_for_a_dtype(op_copy):
    d = op_copy("gelu")
    text = (d / "manifest.yaml").read_text().replace("  f32: {rtol: 1.0e-5, atol: 1.0e-5}\n", "")
    (d / "manifest.yaml").write_text(text)
    with pytest.raises(M.ManifestError, match="no rtol/atol for listed dtype 'f32'"):
        M.load(d / "manifest.yaml")


def test_op_must_match_folder(op_copy):
    d = op_copy("relu")
    (d / "manifest.yaml").write_text((d / "manifest.yaml").read_text().replace("op: relu", "op: other"))
    with pytest.raises(M.ManifestError, match="does not match folder"):
        M.load(d / "manifest.yaml")
