import json

import pytest

from tileport import verdict as V


def test_roundtrip(tmp_path):
    v = V.Verdict(stage="ir_diff", op="softmax", kernel="k", variant="f16-TILE1024",
                  verdict="FAIL", owner="kernel", summary="s",
                  findings=[V.Finding("reduction", "critical", "kernel", "combiner differs",
                                      ref=V.loc("a.tileir", 3, "maxf"), port=V.loc("b.tileir", 4, "minf"))])
    p = tmp_path / "v.json"
    V.write(v, p)
    doc = V.read(p)
    assert doc["schema"] == V.SCHEMA_ID and doc["findings"][0]["port"]["line"] == 4


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.update(verdict="MAYBE"), "verdict"),
    (lambda d: d.pop("owner"), "<root>"),
    (lambda d: d["findings"].append({"category": "math", "severity": "fatal", "owner": "kernel",
                                     "message": "x"}), "findings/0/severity"),
    (lambda d: d.update(extra=1), "<root>"),
])
def test_schema_rejects(mutate, field):
    d = V.Verdict(stage="s", op="o", verdict="PASS", summary="ok").to_dict()
    mutate(d)
    with pytest.raises(V.VerdictError, match=f"verdict field '{field}'"):
        V.validate(d, "x.json")


def test_read_reports_bad_json_with_line(tmp_path):
    p = tmp_path / "v.json"
    p.write_text('{\n "schema": \n')
    with pytest.raises(V.VerdictError, match=r"v.json:\d+: not JSON"):
        V.read(p)
    with pytest.raises(V.VerdictError, match="no verdict file"):
        V.read(tmp_path / "missing.json")


def test_failed_write_keeps_previous_file(tmp_path):
    p = tmp_path / "v.json"
    V.write(V.Verdict(stage="s", op="o", verdict="PASS", summary="first"), p)
    bad = V.Verdict(stage="s", op="o", verdict="NOPE", summary="second")
    with pytest.raises(V.VerdictError):
        V.write(bad, p)
    assert json.loads(p.read_text())["summary"] == "first"
