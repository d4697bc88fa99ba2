import json
from pathlib import Path

import pytest

from tileport.core import verdict as tp_verdict


def test_roundtrip(tmp_path):
    v = tp_verdict.Verdict(stage="ir_diff", op="softmax", kernel="k", variant="f16-TILE1024",
                  verdict="FAIL", owner="kernel", summary="s",
                  findings=[tp_verdict.Finding("reduction", "critical", "kernel", "combiner differs",
                                               ref=tp_verdict.loc("a.tileir", 3, "maxf"),
                                               port=tp_verdict.loc("b.tileir", 4, "minf"))])
    p = tmp_path / "v.json"
    tp_verdict.write(v, p)
    doc = tp_verdict.read(p)
    assert doc["schema"] == tp_verdict.SCHEMA_ID and doc["findings"][0]["port"]["line"] == 4


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.update(verdict="MAYBE"), "verdict"),
    (lambda d: d.pop("owner"), "<root>"),
    (lambda d: d["findings"].append({"category": "math", "severity": "fatal", "owner": "kernel",
                                     "message": "x"}), "findings/0/severity"),
    (lambda d: d.update(extra=1), "<root>"),
])
def test_schema_rejects(mutate, field):
    d = tp_verdict.Verdict(stage="s", op="o", verdict="PASS", summary="ok").to_dict()
    mutate(d)
    with pytest.raises(tp_verdict.VerdictError, match=f"verdict field '{field}'"):
        tp_verdict.validate(d, "x.json")


def test_read_reports_bad_json_with_line(tmp_path):
    p = tmp_path / "v.json"
    p.write_text('{\n "schema": \n')
    with pytest.raises(tp_verdict.VerdictError, match=r"v.json:\d+: not JSON"):
        tp_verdict.read(p)
    with pytest.raises(tp_verdict.VerdictError, match="no verdict file"):
        tp_verdict.read(tmp_path / "missing.json")


def test_failed_write_keeps_previous_file(tmp_path):
    p = tmp_path / "v.json"
    tp_verdict.write(tp_verdict.Verdict(stage="s", op="o", verdict="PASS", summary="first"), p)
    bad = tp_verdict.Verdict(stage="s", op="o", verdict="NOPE", summary="second")
    with pytest.raises(tp_verdict.VerdictError):
        tp_verdict.write(bad, p)
    assert json.loads(p.read_text())["summary"] == "first"



def test_written_files_get_the_umask_mode(tmp_path):
    """mkstemp's 0600 is not kept: a written verdict is as readable as any file the user writes."""
    import os
    import subprocess
    import sys

    from tileport.core.verdict import atomic_write_text

    um = os.umask(0)
    os.umask(um)
    atomic_write_text(tmp_path / "b.txt", "y")
    assert (tmp_path / "b.txt").stat().st_mode & 0o777 == 0o666 & ~um
    # another umask (read when tileport.core.verdict is imported): a fresh interpreter
    code = ("import os; os.umask(0o027); from tileport.core.verdict import atomic_write_text as w; "
            f"w({str(tmp_path / 'a.txt')!r}, 'x')")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(Path(__file__).parent.parent))
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o640


def test_brief_cuts_at_a_word_boundary_never_inside_a_number():
    from tileport.core.verdict import brief

    text = "worst at index [1, 22, 3975, 12]: port -0.078125 vs expected 0.00142669677734375 (allowed)"
    assert brief(text, 1000) == text
    out = brief(text, 70)
    assert len(out) <= 70 and out.endswith(" …") and "0.078125" in out and "expected 0." not in out
    assert brief("x" * 400, 300) == "x" * 299 + "…"          # one word longer than the width
    assert brief("a  b\n c", 300) == "a b c"
    with pytest.raises(ValueError):
        brief("abc", 1)
