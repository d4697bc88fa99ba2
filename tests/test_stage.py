"""tileport.core.stage: a job of a whole operator (issue 32: reference_ir and runtime_ir run one
job per operator) still ends every kernel and variant in a verdict that names them."""
from types import SimpleNamespace

from tileport.core import stage
from tileport.core.verdict import Verdict, read, write


class _Named(dict):
    """Snakemake's Namedlist as the wrappers use it: items(), attribute access, iteration over values."""

    def __getattr__(self, name):
        return self[name]

    def __iter__(self):
        return iter(self.values())


def _smk(tmp_path, wildcards, **outputs):
    return SimpleNamespace(params=SimpleNamespace(tools={}), resources=SimpleNamespace(attempt=1),
                           output=_Named({k: str(tmp_path / v) for k, v in outputs.items()}),
                           wildcards=_Named(wildcards), log=[str(tmp_path / "job.log")])


def test_a_crash_in_an_operator_job_ends_each_kernel_and_variant_left_in_its_own_error(tmp_path):
    smk = _smk(tmp_path, {"op": "opx"}, dir="ref")
    out = tmp_path / "ref"
    each = {("k1", "v1"): out / "k1" / "v1.json", ("k2", "v2"): out / "k2" / "v2.json"}
    # the job ends (a verdict for each), it does not fail: the operator's other stages go on
    with stage.guarded(smk, "reference_ir", each=each):
        (out / "k1").mkdir(parents=True)
        write(Verdict(stage="reference_ir", op="opx", kernel="k1", variant="v1", verdict="PASS",
                      owner=None, summary="done"), out / "k1" / "v1.json")
        raise RuntimeError("boom")
    assert read(out / "k1" / "v1.json")["verdict"] == "PASS"
    d = read(out / "k2" / "v2.json")
    assert (d["verdict"], d["owner"], d["kernel"], d["variant"]) == ("ERROR", "tool", "k2", "v2")
    assert "boom" in d["summary"] and out.is_dir()


def test_a_variant_that_crashes_is_named_with_its_kernel(tmp_path):
    # variant ids repeat across an operator's kernels, and the job's log is the operator's
    smk = _smk(tmp_path, {"op": "opx"}, dir="ref")
    v = tmp_path / "ref" / "k2" / "f16-T1.json"
    v.parent.mkdir(parents=True)
    with stage.guarded(smk, "reference_ir", each={("k2", "f16-T1"): v}):
        with stage.each_variant(smk, "reference_ir", "f16-T1", v, kernel="k2"):
            raise RuntimeError("no export")
    d = read(v)
    assert (d["kernel"], d["variant"]) == ("k2", "f16-T1")
    assert "reference_ir crashed on k2/f16-T1: RuntimeError: no export" in d["summary"]


def test_a_kernel_that_crashes_ends_in_an_error_naming_it_and_the_next_kernel_goes_on(tmp_path):
    smk = _smk(tmp_path, {"op": "opx"}, dir="runtime")
    out = tmp_path / "runtime"
    out.mkdir()
    ran = []
    with stage.guarded(smk, "runtime_ir", each={("k1", None): out / "k1.json", ("k2", None): out / "k2.json"}):
        for k in ("k1", "k2"):
            with stage.each_variant(smk, "runtime_ir", None, out / f"{k}.json", kernel=k):
                if k == "k1":
                    raise ValueError("no facts")
                ran.append(k)
                write(Verdict(stage="runtime_ir", op="opx", kernel=k, verdict="PASS", owner=None,
                              summary="ok"), out / f"{k}.json")
    d = read(out / "k1.json")
    assert (d["verdict"], d["kernel"], d["variant"]) == ("ERROR", "k1", None)
    assert "runtime_ir crashed on k1: ValueError: no facts" in d["summary"]
    assert ran == ["k2"] and read(out / "k2.json")["verdict"] == "PASS"
