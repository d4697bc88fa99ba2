"""The Snakemake profiles: what they ask of a scheduler, checked without one (the cluster itself is
exercised by tests/test_slurm.py under make test-slurm)."""
import re

import pytest
import yaml

from conftest import REPO
from tileport import yamlio

RULES = {m[1] for f in (REPO / "rules").glob("*.smk") for m in re.finditer(r"^(?:rule|checkpoint) (\w+):", f.read_text(), re.M)}
GPU_RULES = {"gpu_test", "bench"}


def profile(name):
    return yamlio.load_file(REPO / "profiles" / name / "config.yaml")


def rule_resources(rule):
    """The ``resources:`` block of one rule, as text."""
    for f in (REPO / "rules").glob("*.smk"):
        m = re.search(rf"^(?:rule|checkpoint) {rule}:\n(.*?)(?=^rule |^checkpoint |\Z)", f.read_text(), re.M | re.S)
        if m:
            r = re.search(r"^    resources:\n((?:        .*\n)+)", m[1], re.M)
            return r[1] if r else ""
    raise KeyError(rule)


def test_only_gpu_rules_ask_for_a_gpu():
    assert GPU_RULES <= RULES
    for rule in sorted(RULES):
        asks = re.search(r"^\s+(gpu|gres|gpu_model)\s*=", rule_resources(rule), re.M)
        assert bool(asks) == (rule in GPU_RULES), rule
    slurm = profile("slurm")
    assert not {"gpu", "gres", "gpu_model"} & set(slurm["default-resources"])
    for rule, res in slurm["set-resources"].items():
        if rule not in GPU_RULES:
            assert not {"gpu", "gres", "gpu_model"} & set(res), rule


def test_slurm_profile_names_real_rules_and_sane_resources():
    slurm = profile("slurm")
    assert slurm["executor"] == "slurm" and slurm["rerun-incomplete"] is True
    # a misspelt rule in set-resources would be ignored by Snakemake without a word
    assert set(slurm["set-resources"]) <= RULES, set(slurm["set-resources"]) - RULES
    assert {"rust_build", "host_build", "gpu_test", "bench"} <= set(slurm["set-resources"])
    for res in [slurm["default-resources"], *slurm["set-resources"].values()]:
        assert isinstance(res.get("runtime", 1), int) and isinstance(res.get("mem_mb", 1), int)
    # placeholders are comments, never values a site would submit by accident
    text = (REPO / "profiles" / "slurm" / "config.yaml").read_text()
    assert "ACCOUNT" in text and "GPU_PARTITION" in text
    assert not [k for k in slurm["default-resources"] if k in ("slurm_account", "slurm_partition")]


def test_local_rules_exist_and_are_cheap():
    text = (REPO / "Snakefile").read_text()
    block = re.search(r"^localrules:\n((?:    \w+,\n)+)", text, re.M)
    local = set(re.findall(r"(\w+),", block[1]))
    assert local == {"all", "summary", "route", "accept_kernel", "ir_diagnose", "perf_diagnose",
                     "gpu_route", "round_start", "round_kernel", "final_round"}
    assert local - {"all"} <= RULES
    assert not local & (GPU_RULES | {"rust_build", "host_build", "rust_ir", "reference_ir", "check_kernel"})


def test_default_profile_suits_a_cluster_too_and_make_run_limits_local_gpu_jobs():
    # Snakemake merges the workflow profile (profiles/default) into --profile profiles/slurm runs
    # and its keys win: a global resource limit there would allow one GPU job on the whole cluster
    d = profile("default")
    assert "executor" not in d and d["rerun-incomplete"] is True and d["keep-going"] is True
    assert not {"resources", "jobs", "default-resources", "set-resources"} & set(d)
    slurm = profile("slurm")
    assert not {k for k in d if k in slurm and d[k] != slurm[k]}
    make = (REPO / "Makefile").read_text()
    assert "--resources gpu=$(GPUS)" in make and "GPUS ?= 1" in make


def test_make_run_command_is_a_valid_snakemake_call():
    """The README's main command, as make runs it, parses (a dry run): --resources takes every
    word after it, so a target placed after it once broke make run."""
    import subprocess

    out = subprocess.run(["make", "-n", "run"], cwd=REPO, capture_output=True, text=True).stdout
    line = next(x for x in out.splitlines() if "/snakemake --cores" in x)
    assert line.split()[-2:] == ["--resources", "gpu=1"]
    p = subprocess.run(line + " -n --quiet rules", shell=True, cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
