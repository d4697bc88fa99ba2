"""One front end for the analyser and the translator (issue 13): both read the operator's one
kernel model, so they cannot disagree. Run over every operator of the checkout: the own ones and
the TileGym ones (their kernels imported from the installed wheel by the importer). CPU only,
no cargo: about 15 s on 2 cores."""
from pathlib import Path

import pytest
from manifest_ops import checkout_op

from tileport.cpu import analyze
from tileport.model import frontend, manifest
from tileport.translate import Unsupported, translate_entries, translate_model

REPO = Path(__file__).resolve().parent.parent
OPS = sorted(p.name for p in (REPO / "operators").iterdir() if (p / "manifest.yaml").is_file())


def _operator(tmp_path: Path, op: str) -> Path:
    return checkout_op(tmp_path, op)


@pytest.mark.parametrize("op", OPS)
def test_analyser_and_translator_agree(tmp_path, op):
    """A kernel the analyser passes is one the translator translates; a kernel the translator
    cannot translate is one the analyser reports, with the same construct, file and line."""
    d = _operator(tmp_path, op)
    details = analyze.analyse(d)
    assert details["kernels"] or details["unsupported"], "the analysis says nothing"
    n_lines = Path(details["kernel_file"]).read_text().count("\n") + 1
    for k in details["kernels"]:
        mine = [u for u in details["unsupported"] if u.get("kernel") in (None, k["name"])]
        try:
            translate_entries(d, k["name"])
        except Unsupported as exc:
            assert mine, f"{k['name']}: the analyser passed it, the translator says: {exc}"
            u = mine[0]
            assert (u["file"], u["line"], u["construct"], u["reason"]) == \
                (exc.file, exc.line, exc.construct, exc.reason)
            assert u["owner"] == (getattr(exc, "owner", None) or "tool")
            if u.get("category") == "unsupported":      # a construct: named with its kernel.py line
                assert u["file"] == details["kernel_file"] and 1 <= u["line"] <= n_lines, u
            continue
        assert not mine, f"{k['name']}: the translator translated it, the analyser says: {mine[0]}"


def test_the_translator_reads_only_the_model(tmp_path):
    """The translator consumes the front end's model: with the kernel file and the manifest gone
    after the model was read, it still translates (it parses nothing, loads no manifest)."""
    d = _operator(tmp_path, "softmax")
    model = frontend.load(d)
    want = translate_entries(d, "softmax_kernel")
    (d / "kernel.py").unlink()
    (d / "manifest.yaml").unlink()
    assert translate_model(model, "softmax_kernel") == want


def test_a_construct_the_translator_lacks_in_a_helper_is_reported_with_its_line(op_copy):
    """The translator inlines helper functions; a construct it lacks inside one is the analyser's
    finding too (before the front end the analyser saw only the kernel's own body)."""
    d = op_copy("relu")
    src = (d / "kernel.py").read_text()
    src = src.replace("\n\n@ct.kernel\n",
                      "\n\ndef _same(t):\n    u = ct.cosh(t)\n    return t\n"
                      "\n\n@ct.kernel\n",
                      1)
    src = src.replace("tile=ct.maximum(t, zero)", "tile=ct.maximum(_same(t), zero)", 1)
    assert "_same(t)" in src
    (d / "kernel.py").write_text(src)
    un = analyze.analyse(d)["unsupported"]
    # (a construct cuTile Python compiles: one it refuses, such as `try`, is the kernel's)
    line = src.splitlines().index("    u = ct.cosh(t)") + 1
    assert un and "cosh" in un[0]["construct"] and un[0]["line"] == line and un[0]["owner"] == "tool", un


def _unit(src: str, shape, ndim: int = 1) -> bool:
    import ast
    fn = ast.parse(src).body[0]
    return frontend.unit_array(fn, "ct", "S", ndim, shape)


def test_a_one_element_array_read_by_views_only_is_a_constant_shape():
    """cuTile Python's launcher compiles an extent-1 dimension as a constant; the port does the
    same only for a rank-1 array the manifest fixes at [1] and the kernel reads or writes through
    ct.load / ct.store alone (frontend.unit_array)."""
    load = "def k(S, X):\n    s = ct.load(S, index=(0,), shape=(1,))\n    ct.store(X, index=(0,), tile=s)\n"
    assert _unit(load, [1])
    assert not _unit(load, ["N"]) and not _unit(load, [2]) and not _unit(load, [True])
    assert not _unit(load, [1, 1], ndim=2)                       # rank 1 only
    assert not _unit(load, None)                                  # no tensors entry: unknown
    for other in ("    v = ct.gather(S, 0)\n",                    # a pointer tile of it
                  "    ct.scatter(S, 0, s)\n",
                  "    n = S.shape[0]\n",                          # its run-time extent
                  "    helper(S)\n",                               # passed on
                  "    T = S\n"):                                  # an alias
        assert not _unit(load + other, [1]), other


def test_tg_attention_sink_start_q_is_a_tensor_of_constant_shape(tmp_path):
    """Start_q ([1], read by ct.load) becomes Tensor<i32, {[1]}> in the port and a shape_constant
    in the reference's signature; the one-element arrays tg_moe reads by ct.gather and
    tg_moe_align_block writes by ct.scatter stay run-time shapes (cutile 0.5.0 panics on their
    pointer tiles)."""
    from tileport.cpu import reference_ir
    d = _operator(tmp_path, "tg_attention_sink")
    model = frontend.load(d)
    k = model.kernel("_attention_sink_kernel")
    shapes = {p["name"]: p.get("static_shape") for p in k.params if p["kind"] == "array"}
    assert shapes == {"Q": None, "K": None, "V": None, "Sinks": None, "Out": None, "Start_q": [1]}
    assert "Start_q: &Tensor<i32, {[1]}>" in translate_model(model, k.name)[0]
    sig = reference_ir.signature_for(k.params, manifest.kernel_variants(model.manifest)[k.name][0])
    start_q = sig.parameters[[p["name"] for p in k.params].index("Start_q")]
    assert tuple(start_q.shape_constant) == (1,)
    assert tuple(sig.parameters[0].shape_constant) == (None,) * 4
    for op, name in (("tg_moe", "num_tokens_post_padded_ptr"),
                     ("tg_moe_align_block", "total_tokens_post_pad")):
        m = frontend.load(_operator(tmp_path, op))
        ps = [p for kk in m.kernels for p in kk.params if p["name"] == name]
        assert ps and all(p.get("static_shape") is None for p in ps), (op, ps)
