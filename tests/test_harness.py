"""GPU harness pieces that need no GPU: expressions, fits/perf_fits, case lists, manifest
tensors/bind validation, and the probe that gpu: auto relies on."""
import pytest

from tileport import harness as H
from tileport import manifest as M


def test_cdiv_and_grid_expressions(repo):
    man = M.load(repo / "operators" / "softmax" / "manifest.yaml")
    env = H.base_env(man, [4096, 1024], {"BM": 16, "TILE": 1024}, num_sms=132)
    assert H.cdiv(10, 4) == 3 and H.cdiv(8, 4) == 2 and H.cdiv(0, 4) == 0
    # min(cdiv(M, BM), num_sms * blocks_per_sm): blocks_per_sm comes from the manifest hints
    assert H.evaluate(man["kernels"]["softmax_kernel"]["grid"], env, "g") == (256, 1, 1)
    env = H.base_env(man, [1 << 20, 1024], {"BM": 16, "TILE": 1024}, num_sms=132)
    assert H.evaluate(man["kernels"]["softmax_kernel"]["grid"], env, "g") == (528, 1, 1)


def test_bind_expressions(repo):
    man = M.load(repo / "operators" / "rms_norm" / "manifest.yaml")
    env = H.base_env(man, [8, 1000], {}, 1)
    b = man["kernels"]["rms_norm_kernel"]["bind"]
    assert H.evaluate(b["inv_n"], env, "b") == pytest.approx(1e-3) and H.evaluate(b["eps"], env, "b") == 1e-6
    man = M.load(repo / "operators" / "silu_and_mul" / "manifest.yaml")
    env = H.base_env(man, [3, 4], {}, 1)
    assert [H.evaluate(e, env, "s") for e in man["tensors"]["x"]["shape"]] == [3, 8]
    # views are evaluated over the tensors: a list stands in for a tensor here
    env["x"] = [[0, 1, 2, 3, 4, 5, 6, 7]]
    assert H.evaluate("x[0][N:]", env, "v") == [4, 5, 6, 7]


def test_expression_errors_name_the_place():
    with pytest.raises(H.HarnessError, match=r"m.yaml: kernels/k/bind/eps: expression '1 / Q': NameError"):
        H.evaluate("1 / Q", {"N": 2}, "m.yaml: kernels/k/bind/eps")
    # no builtins: a manifest expression cannot reach open() or __import__
    with pytest.raises(H.HarnessError, match="NameError"):
        H.evaluate("open('/etc/passwd')", {}, "m.yaml: x")


def test_cases_apply_fits_and_perf_fits(repo):
    man = M.load(repo / "operators" / "softmax" / "manifest.yaml")
    test = {(v.id, s) for _, v, s in H.cases(man, "test")}
    perf = {(v.id, s) for _, v, s in H.cases(man, "perf")}
    # fits: N <= TILE; perf_fits: TILE < 2 * N (no tile that is mostly padding is timed)
    assert ("f16-BM16-TILE1024", (64, 4096)) not in test and ("f16-BM8-TILE4096", (64, 4096)) in test
    assert ("f16-BM8-TILE4096", (1, 1)) in test
    assert perf == {(f"{dt}-BM16-TILE1024", (4096, 1024)) for dt in ("f16", "bf16", "f32")} | \
                   {(f"{dt}-BM8-TILE4096", (16384, 4096)) for dt in ("f16", "bf16", "f32")}


def test_every_operator_has_a_harness(repo):
    total = 0
    for d in sorted((repo / "operators").iterdir()):
        man = M.load(d / "manifest.yaml")
        assert any(t["role"] == "output" for t in man["tensors"].values()), d
        assert (d / "reference.py").read_text().count("def torch_impl(") == 1, d
        assert H.cases(man, "test"), d
        total += len(H.cases(man, "perf"))
    assert total >= 40          # the issue asks for at least 40 paired configs


def test_manifest_tensor_errors(op_copy):
    d = op_copy("rms_norm")
    m = d / "manifest.yaml"
    good = m.read_text()
    m.write_text(good.replace('inv_n: "1.0 / N"', 'inv_n: "1.0 / (N"'))
    with pytest.raises(M.ManifestError, match=r"manifest.yaml:\d+: key 'kernels/rms_norm_kernel/bind/inv_n'.*not valid Python"):
        M.load(m)
    m.write_text(good.replace('eps: 1.0e-6}', 'eps: 1.0e-6, zeta: 2}'))
    # only kernel.py knows every parameter (annotated scalars need no manifest entry): the analyser
    from tileport import analyze as A
    un = A.analyse(d)["unsupported"]
    assert un[0]["owner"] == "manifest" and "binds 'zeta' but rms_norm_kernel has no such parameter" in un[0]["reason"]
    m.write_text(good.replace("y: {shape: [M, N], role: output}", "y: {shape: [M, N], role: input}"))
    with pytest.raises(M.ManifestError, match="no tensor has role output"):
        M.load(m)
    m.write_text(good.replace("y: {shape: [M, N], role: output}", "y: {shape: [M, N], role: result}"))
    with pytest.raises(M.ManifestError, match="tensors/y/role"):
        M.load(m)


def test_probe_without_torch_says_why():
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed here")
    except ImportError:
        pass
    with pytest.raises(H.NoGpu, match="torch is not installed"):
        H.probe_gpu()


def test_load_module_errors_name_file_and_line(tmp_path):
    p = tmp_path / "reference.py"
    p.write_text("import math\n\nx = 1 / 0\n")
    with pytest.raises(H.HarnessError, match=r"reference.py:3: import failed: ZeroDivisionError"):
        H.load_module(p, "r")
    with pytest.raises(H.HarnessError, match="no such file"):
        H.load_module(tmp_path / "nope.py", "n")


def test_predicate_and_grid_syntax_is_checked_at_load(op_copy):
    d = op_copy("softmax")
    m = d / "manifest.yaml"
    good = m.read_text()
    for old, new, key in [('perf_fits: "TILE < 2 * N"', 'perf_fits: "TILE < 2 *"', "perf_fits"),
                          ('fits: "N <= TILE"', 'fits: "N <=="', "fits"),
                          ('grid: "(min(', 'grid: "((min(', "kernels/softmax_kernel/grid")]:
        m.write_text(good.replace(old, new))
        with pytest.raises(M.ManifestError, match=rf"manifest.yaml:\d+: key '{key}'.*not valid Python"):
            M.load(m)
