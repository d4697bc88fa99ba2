"""Manifest key ``flashinfer_bench``: shapes, dtypes and tolerances read from a FlashInfer-Bench definition
and its workloads that an installed wheel ships (tileport.model.flashinfer), here a synthetic distribution
``fibgym`` in a temporary site directory (package files + .dist-info with a RECORD of sha256 digests, as
pip leaves one), found through sys.path and never imported."""
import json
import textwrap

import pytest
from conftest import install_distribution

from tileport.core import wheels
from tileport.model import manifest

DEF = "fibgym/m/kernel_definitions/fib_mul.json"
WL = "fibgym/m/kernel_workloads/fib_mul/workload.jsonl"

DEFINITION = {
    "name": "fib_mul",
    "axes": {"D": {"type": "var"}, "N": {"type": "var"}, "K": {"type": "const", "value": 2}},
    "inputs": {"x": {"dtype": "bfloat16", "shape": ["N", "D"]}, "w": {"dtype": "bfloat16", "shape": ["D"]},
               "eps": {"dtype": "float32", "shape": None}},
    "outputs": {"y": {"dtype": "bfloat16", "shape": ["N", "D"]}},
    "reference": "def run(x, w, eps):\n    return x * w",
}


def workload(n, d, atol, rtol):
    return json.dumps({"uuid": f"{n}-{d}", "axes": {"D": d, "N": n}, "inputs": {},
                       "tolerance": {"max_atol": atol, "max_rtol": rtol}})


WORKLOADS = [workload(8, 128, 0.02, 0.03), workload(3, 64, 0.01, 0.05), workload(8, 128, 0.04, 0.02)]


def install(site, files):
    """A fake installed distribution fibgym 1.0 in ``site``: ``files`` = {path: text}."""
    install_distribution(site, "fibgym", "1.0", files)


@pytest.fixture
def site(tmp_path, monkeypatch):
    s = tmp_path / "site"
    s.mkdir()
    monkeypatch.syspath_prepend(str(s))
    wheels._packages.cache_clear()
    install(s, {"fibgym/__init__.py": "", DEF: json.dumps(DEFINITION, indent=2),
                WL: "\n".join(WORKLOADS) + "\n"})
    yield s
    wheels._packages.cache_clear()


BASE = """\
op: fib
flashinfer_bench: {definition: %s}
kernels:
  k:
    arrays: {x: {ndim: 2, role: input}, w: {ndim: 1, role: input}, y: {ndim: 2, role: output}}
    grid: "(N, 1, 1)"
configs: [{TILE_D: 128}]
tensors:
  x: {shape: [N, D], role: input}
  w: {shape: [D], role: input}
  y: {shape: [N, D], role: output}
""" % DEF


def write(tmp_path, extra="", base=BASE):
    d = tmp_path / "operators" / "fib"
    d.mkdir(parents=True, exist_ok=True)
    (d / "manifest.yaml").write_text(base + textwrap.dedent(extra))
    return d / "manifest.yaml"


def test_shapes_dtypes_and_strictest_tolerance_come_from_the_wheel(site, tmp_path):
    man = manifest.load(write(tmp_path))
    assert man["shape_names"] == ["D", "N"]                      # the var axes, in the definition's order
    assert man["perf_shapes"] == [[128, 8], [64, 3]]             # every workload, each shape once
    assert man["test_shapes"] == [[64, 3]]                       # the smallest workload
    assert man["dtypes"] == ["bf16"]                             # the scalar eps (float32) does not count
    assert man["tolerance"] == {"bf16": {"rtol": 0.02, "atol": 0.01}}   # the smallest of each over workloads
    assert man["_flashinfer_bench"]["workloads"] == WL


def test_explicit_values_that_agree_are_kept_and_order_the_shapes(site, tmp_path):
    man = manifest.load(write(tmp_path, """\
        shape_names: [N, D]
        test_shapes: [[5, 100]]
        perf_shapes: [[8, 128], [3, 64]]
        dtypes: [bf16]
        tolerance: {bf16: {rtol: 2.0e-2, atol: 1.0e-2}}
        """))
    assert man["shape_names"] == ["N", "D"] and man["perf_shapes"] == [[8, 128], [3, 64]]
    assert man["test_shapes"] == [[5, 100]]


@pytest.mark.parametrize("extra, key, words", [
    ("perf_shapes: [[128, 8]]\n", "perf_shapes", r"give the perf shapes \[\[128, 8\], \[64, 3\]\]"),
    ("tolerance: {bf16: {rtol: 2.0e-2, atol: 2.0e-2}}\n", "tolerance",
     r"max_rtol of line 3, max_atol of line 2"),
    ("dtypes: [f16]\n", "dtypes", "has the dtype bf16"),
    ("shape_names: [N, M]\n", "shape_names", r"are not the var axes \['D', 'N'\]"),
])
def test_a_disagreeing_explicit_value_is_an_error_at_its_line(site, tmp_path, extra, key, words):
    path = write(tmp_path, extra)
    line = len(BASE.splitlines()) + 1
    with pytest.raises(manifest.ManifestError, match=rf"{path}:{line}: key '{key}': .*{words}"):
        manifest.load(path)


def test_a_tensor_the_definition_shapes_otherwise_is_an_error(site, tmp_path):
    path = write(tmp_path, base=BASE.replace("w: {shape: [D], role: input}", "w: {shape: [N], role: input}"))
    with pytest.raises(manifest.ManifestError, match=r"key 'tensors/w': .*has it as input \['D'\]"):
        manifest.load(path)


def test_a_missing_definition_is_an_error_naming_the_file(site, tmp_path):
    path = write(tmp_path, base=BASE.replace("fib_mul.json", "fib_add.json"))
    with pytest.raises(manifest.ManifestError,
                       match=r"manifest.yaml:2: key 'flashinfer_bench/definition': .*fib_add.json:1: not a file "
                             r"of fibgym 1.0"):
        manifest.load(path)


def test_a_modified_wheel_file_is_refused(site, tmp_path):
    (site / WL).write_text(WORKLOADS[0] + "\n")
    with pytest.raises(manifest.ManifestError, match=r"workload.jsonl:1: differs from the hash in the RECORD"):
        manifest.load(write(tmp_path))


def test_a_workload_without_a_var_axis_names_its_line(site, tmp_path):
    bad = WORKLOADS[:1] + [json.dumps({"axes": {"N": 4}, "tolerance": {"max_atol": 0.1, "max_rtol": 0.1}})]
    install(site, {"fibgym/__init__.py": "", DEF: json.dumps(DEFINITION, indent=2), WL: "\n".join(bad) + "\n"})
    with pytest.raises(manifest.ManifestError, match=r"workload.jsonl:2: var axis 'D' of fib_mul.json has no value"):
        manifest.load(write(tmp_path))


def test_the_key_is_checked_by_the_schema(site, tmp_path):
    path = write(tmp_path, base=BASE.replace("{definition: ", "{defintion: "))
    with pytest.raises(manifest.ManifestError, match=r"'defintion' is not a key of .*did you mean definition"):
        manifest.load(path)


@pytest.mark.parametrize("op, definition", [
    ("tf_qwen3_5_sigmoid_mul", "qwen3_5/kernel_definitions/qwen3_5_sigmoid_mul.json"),
    ("tf_qwen3_5_silu_and_mul_separate", "qwen3_5/kernel_definitions/qwen3_5_silu_and_mul_separate.json"),
    ("tf_qwen3_5_residual_add_rms_norm", "qwen3_5/kernel_definitions/qwen3_5_residual_add_gemma_rms_norm.json"),
    ("tf_qwen3_5_rms_norm_gated", "qwen3_5/kernel_definitions/qwen3_5_rms_norm_gated_silu.json"),
    ("tf_olmo3_dual_rms_norm", "olmo3/kernel_definitions/olmo3_dual_rms_norm.json"),
    ("tf_olmo3_rms_norm_residual_add", "olmo3/kernel_definitions/olmo3_rms_norm_residual_add.json"),
    ("tf_olmoe_dual_rms_norm", "olmoe/kernel_definitions/olmoe_dual_rms_norm.json"),
    ("tf_olmoe_residual_add_rms_norm", "olmoe/kernel_definitions/olmoe_residual_add_rms_norm.json"),
    ("tf_qwen3_5_gdr_preprocess", "qwen3_5/kernel_definitions/qwen3_5_gdr_preprocess.json"),
    ("tf_qwen3_5_causal_conv1d_update_silu", "qwen3_5/kernel_definitions/qwen3_5_causal_conv1d_update_silu.json"),
    ("tf_qwen3_5_causal_conv1d_prefill_silu", "qwen3_5/kernel_definitions/qwen3_5_causal_conv1d_prefill_silu.json"),
    ("tf_lfm2_moe_causal_conv1d_update", "lfm2_moe/kernel_definitions/lfm2_moe_causal_conv1d_update.json"),
    ("tf_lfm2_moe_causal_conv1d_prefill", "lfm2_moe/kernel_definitions/lfm2_moe_causal_conv1d_prefill.json"),
])
def test_the_transformers_operators_read_the_pinned_wheel(repo, op, definition):
    man = manifest.load(repo / "operators" / op / "manifest.yaml")
    fib = man["_flashinfer_bench"]
    assert fib["definition"] == f"tilegym/transformers/{definition}" and fib["wheel"] == "tilegym 1.5.1"
    want = {"tf_qwen3_5_causal_conv1d_update_silu": [[64]], "tf_qwen3_5_causal_conv1d_prefill_silu": [[64, 5, 8]],
            "tf_lfm2_moe_causal_conv1d_update": [[2048]], "tf_lfm2_moe_causal_conv1d_prefill": [[2048, 128]]}
    assert man["perf_shapes"] == want.get(op, [[3, 64]]) and man["dtypes"] == ["bf16"]
    assert man["tolerance"] == {"bf16": {"rtol": 0.02, "atol": 0.02}}


def test_a_bound_scalar_must_be_the_workloads_value(site, tmp_path):
    with_eps = [json.dumps({**json.loads(w), "inputs": {"eps": {"type": "scalar", "value": 1e-6}}})
                for w in WORKLOADS]
    install(site, {"fibgym/__init__.py": "", DEF: json.dumps(DEFINITION, indent=2), WL: "\n".join(with_eps) + "\n"})
    ok = BASE.replace('    grid: "(N, 1, 1)"', '    bind: {eps: 1.0e-6}\n    grid: "(N, 1, 1)"')
    manifest.load(write(tmp_path, base=ok))
    path = write(tmp_path, base=ok.replace("eps: 1.0e-6", "eps: 1.0e-5"))
    with pytest.raises(manifest.ManifestError, match=r"manifest.yaml:6: key 'kernels/k/bind/eps': eps is bound to "
                                                     r"1e-05, but workload line 1 .* passes the scalar eps = 1e-06"):
        manifest.load(path)


def test_mixed_dtypes_give_no_dtypes_but_the_tolerance_of_the_manifests(site, tmp_path):
    mixed = json.loads(json.dumps(DEFINITION))
    mixed["inputs"]["w"]["dtype"] = "float32"
    install(site, {"fibgym/__init__.py": "", DEF: json.dumps(mixed, indent=2), WL: "\n".join(WORKLOADS) + "\n"})
    base = BASE.replace("w: {shape: [D], role: input}", "w: {shape: [D], role: input, dtype: f32}")
    with pytest.raises(manifest.ManifestError, match="lacks the key 'tolerance'"):
        manifest.load(write(tmp_path, base=base))       # no dtypes: the definition's tensors have two
    man = manifest.load(write(tmp_path, "dtypes: [bf16]\n", base=base))
    assert man["tolerance"] == {"bf16": {"rtol": 0.02, "atol": 0.01}}
