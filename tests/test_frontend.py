"""One front end for the analyser and the translator (issue 13): both read the operator's one
kernel model, so they cannot disagree. Run over every operator of the checkout: the own ones and
the TileGym ones (their kernels imported from the installed wheel by the importer). CPU only,
no cargo: about 15 s on 2 cores."""
import shutil
from pathlib import Path

import pytest

from tileport import analyze as A
from tileport import frontend as F
from tileport import importer as I
from tileport import source as S
from tileport.translate import Unsupported, translate_entries, translate_model

REPO = Path(__file__).resolve().parent.parent
OPS = sorted(p.name for p in (REPO / "operators").iterdir() if (p / "manifest.yaml").is_file())


def _operator(tmp_path: Path, op: str) -> Path:
    """A copy of operators/<op> under tmp_path, with its kernels imported when it has `source:`."""
    d = tmp_path / "operators" / op
    shutil.copytree(REPO / "operators" / op, d)
    if S.source_of(d) is not None:
        k = S.imported_kernel_py(d)
        doc = I.run(d, k, str(k) + ".map.json", k.parent / "import.json", op, REPO / "requirements-sources.txt")
        if doc["verdict"] not in ("PASS", "PASS_WITH_NOTES"):
            pytest.skip(f"{op}: the import did not pass ({doc['summary']}): nothing to analyse")
    return d


@pytest.mark.parametrize("op", OPS)
def test_analyser_and_translator_agree(tmp_path, op):
    """A kernel the analyser passes is one the translator translates; a kernel the translator
    cannot translate is one the analyser reports, with the same construct, file and line."""
    d = _operator(tmp_path, op)
    details = A.analyse(d)
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
    model = F.load(d)
    want = translate_entries(d, "softmax_kernel")
    (d / "kernel.py").unlink()
    (d / "manifest.yaml").unlink()
    assert translate_model(model, "softmax_kernel") == want


def test_a_construct_the_translator_lacks_in_a_helper_is_reported_with_its_line(op_copy):
    """The translator inlines helper functions; a construct it lacks inside one is the analyser's
    finding too (before the front end the analyser saw only the kernel's own body)."""
    d = op_copy("relu")
    src = (d / "kernel.py").read_text()
    src = src.replace("\n\n@ct.kernel\n", "\n\ndef _same(t):\n    try:\n        pass\n    finally:\n        pass\n    return t\n\n\n@ct.kernel\n", 1)
    src = src.replace("tile=ct.maximum(t, zero)", "tile=ct.maximum(_same(t), zero)", 1)
    assert "_same(t)" in src
    (d / "kernel.py").write_text(src)
    un = A.analyse(d)["unsupported"]
    line = src.splitlines().index("    try:") + 1
    assert un and un[0]["construct"].startswith("try") and un[0]["line"] == line and un[0]["owner"] == "tool"
