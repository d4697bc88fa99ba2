"""The IR diagnoser on a deliberately broken translation rule, end to end (real compilers)."""
from conftest import run_chain

from tileport import translate
from tileport.core.verdict import Verdict, write
from tileport.cpu import ir_diagnose
from tileport.model import constructs


def chain(repo, root, op, kernel, variant):
    return run_chain(repo / "operators" / op, root, op, kernel, variant)


def test_broken_reduction_rule_is_diagnosed(repo, tmp_path, monkeypatch):
    # break the translation rule for ct.max: it now emits a min-reduction
    monkeypatch.setitem(constructs.REDUCTIONS, "max", "reduce_min")
    diff, diag, rs = chain(repo, tmp_path, "softmax", "softmax_kernel", "f16-BM16-TILE1024")
    # the translator's wrong rule is the tool's fault, never the user's valid kernel's
    assert diff["verdict"] == "FAIL" and diff["owner"] == "tool"
    assert diff["summary"].startswith("the translator lacks a rule")
    assert diff["details"]["first_divergence"]["category"] == "reduction"
    assert diag["verdict"] == "FAIL"
    d = diag["details"]["diagnoses"][0]
    assert d["category"] == "reduction"
    py = (repo / "operators/softmax/kernel.py").read_text().splitlines()
    # both sides point at the source that made the op
    assert d["reference"]["python"]["text"] == "m = ct.max(t, axis=1, keepdims=True)"
    assert py[d["reference"]["python"]["line"] - 1].strip() == d["reference"]["python"]["text"]
    assert "reduce_min(t, 1)" in d["port"]["rust"]["text"]
    assert rs.read_text().splitlines()[d["port"]["rust"]["line"] - 1].strip() == d["port"]["rust"]["text"]
    assert d["port"]["python_of_rust"]["line"] == d["reference"]["python"]["line"]
    assert "combines with `maxf`, the port with `minf`" in d["advice"]


def test_broken_operand_order_is_diagnosed(repo, tmp_path, monkeypatch):
    # break the binary-op rule: `a - b` is emitted as `b - a` (and a / b as b / a)
    orig = translate.KernelTranslator.bind

    def swapped(self, expr, ty, stem="t"):
        for op in (" - ", " / "):
            if op in expr and expr.count(" ") == 2:
                a, b = expr.split(op)
                expr = f"{b}{op}{a}"
        return orig(self, expr, ty, stem)

    monkeypatch.setattr(translate.KernelTranslator, "bind", swapped)
    diff, diag, rs = chain(repo, tmp_path, "softmax", "softmax_kernel", "f32-BM8-TILE4096")
    assert diff["verdict"] == "FAIL"
    cats = {d["category"] for d in diag["details"]["diagnoses"]}
    assert cats == {"math"}
    lines = {d["reference"]["python"]["text"] for d in diag["details"]["diagnoses"]}
    assert "e = ct.exp(t - m)" in lines


def test_pass_and_blocked(tmp_path):
    write(Verdict(stage="ir_diff", op="o", verdict="PASS", summary="ok"), tmp_path / "d.json")
    assert ir_diagnose.run(tmp_path / "d.json", tmp_path, tmp_path / "m", tmp_path / "k.py",
                           tmp_path / "o.json", "o", "k", "v")["verdict"] == "PASS"
    write(Verdict(stage="ir_diff", op="o", verdict="BLOCKED", owner="kernel", summary="no IR"),
          tmp_path / "d.json")
    v = ir_diagnose.run(tmp_path / "d.json", tmp_path, tmp_path / "m", tmp_path / "k.py",
                        tmp_path / "o.json", "o", "k", "v")
    assert v["verdict"] == "BLOCKED" and "no IR" in v["summary"]
    assert ir_diagnose.run(tmp_path / "missing.json", tmp_path, tmp_path / "m", tmp_path / "k.py",
                           tmp_path / "o.json", "o", "k", "v")["verdict"] == "BLOCKED"
