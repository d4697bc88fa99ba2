"""tileport.core.job: a stage script reads the job Snakemake would have pickled for it, handed
over as JSON on its command line (rules/common.smk's job_params / stage_command)."""
import json
import subprocess
import sys

import pytest
from snakemake.iocontainers import InputFiles, OutputFiles, Wildcards

from tileport.core import job


def _namedlist(cls, **named):
    nl = cls()
    for name, value in named.items():
        start = len(nl)
        if isinstance(value, list):
            nl.extend(value)
            nl._set_name(name, start, end=len(nl))
        else:
            nl.append(value)
            nl._set_name(name, start)
    return nl


def test_the_job_reads_as_snakemake_gave_it(tmp_path, monkeypatch):
    wc = _namedlist(Wildcards, op="relu", kernel="relu_kernel")
    inp = _namedlist(InputFiles, write="a/write.json", nv=[], previous=["r1.json", "r2.json"], index="i.json")
    out = _namedlist(OutputFiles, verdict="v.json", rust_ir="dir")
    values = job.params(code="abc", variants=lambda wc: [f"{wc.op}-f16"], tools={"cargo": ""})(wc)
    files = job.io(wc, inp, out)
    monkeypatch.setenv(job.CONFIG_ENV, str(job.write_config({"llm": {"model": "m"}}, tmp_path)))
    j = job.current(["--rule", "check_kernel", "--threads", "2", "--attempt", "3", "--log", "l.log", "--",
                     values, files])
    assert j.rule == "check_kernel" and j.threads == 2 and j.resources.attempt == 3 and j.log[0] == "l.log"
    assert j.wildcards.op == "relu" and dict(j.wildcards.items()) == {"op": "relu", "kernel": "relu_kernel"}
    assert j.input.write == "a/write.json" and j.input.nv == [] and j.input.previous == ["r1.json", "r2.json"]
    assert j.input.index == "i.json"            # a name that is also a list method
    assert list(j.input) == ["a/write.json", "r1.json", "r2.json", "i.json"]
    assert j.output["rust_ir"] == "dir" and dict(j.output.items()) == {"verdict": "v.json", "rust_ir": "dir"}
    assert j.params.variants == ["relu-f16"] and j.params.code == "abc"
    assert j.params.tools == {"cargo": ""} and j.config["llm"]["model"] == "m"
    with pytest.raises(AttributeError, match="no item named 'missing'"):
        j.output.missing
    with pytest.raises(KeyError, match="no item named 'missing'"):
        j.output["missing"]


def test_a_parameter_json_cannot_carry_is_named():
    wc = _namedlist(Wildcards, op="relu")
    with pytest.raises(TypeError, match=r"\['when'\]"):
        job.params(when=object())(wc)
    # a function of the job's files would be a "derived" parameter, which Snakemake's rerun
    # trigger skips: refused when the rule is defined
    with pytest.raises(TypeError, match="'results': a function of the wildcards alone"):
        job.params(results=lambda wc, input: input.analysis)


def test_the_values_are_a_rerun_trigger_and_the_files_are_not():
    """Snakemake 9 leaves out of its parameter trigger every parameter function taking input,
    output, threads or resources: ``job`` must not be one, ``io`` is one."""
    from snakemake.rules import Rule

    assert not Rule._is_deriving_function(job.params(code="abc"))
    assert Rule._is_deriving_function(job.io)


def test_the_config_is_written_once_per_content(tmp_path, monkeypatch):
    monkeypatch.delenv(job.CONFIG_ENV, raising=False)
    a = job.write_config({"gpu": "auto"}, tmp_path)
    assert job.write_config({"gpu": "auto"}, tmp_path) == a
    b = job.write_config({"gpu": "off"}, tmp_path)
    assert a != b and json.loads(b.read_text()) == {"gpu": "off"}
    assert job.os.environ[job.CONFIG_ENV] == str(b)
    with pytest.raises(TypeError, match="cannot be handed to the jobs as JSON"):
        job.write_config({"gpu": object()}, tmp_path)


def test_a_script_started_outside_the_workflow_says_how_to_run_it(tmp_path, monkeypatch):
    monkeypatch.delenv(job.CONFIG_ENV, raising=False)
    with pytest.raises(SystemExit, match="TILEPORT_CONFIG is not set"):
        job.current(["--rule", "r", "--log", "l", "--", "{}", '{"input": {"values": [], "names": {}}, '
                     '"output": {"values": [], "names": {}}, "wildcards": {}}'])
    r = subprocess.run([sys.executable, "-c", "from tileport.core import job; job.current()",
                        "--rule", "r", "{}", "not json"], capture_output=True, text=True)
    assert r.returncode != 0 and "a job argument is not JSON" in r.stderr


def test_stage_commands_are_told_from_other_processes():
    assert job.is_stage_command(["python", "/w/scripts/analyze.py", "--rule", "analyze", "{}"])
    assert job.is_stage_command(["/bin/bash", "-c", 'set -e; python "/w/scripts/x.py" --rule x --log l {}'])
    assert not job.is_stage_command(["python", "/w/scripts/analyze.py"])
    assert not job.is_stage_command(["cargo", "build", "--rule"])
