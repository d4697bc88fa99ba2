"""The Snakemake profiles: what they ask of a scheduler, checked without one (the cluster itself is
exercised by tests/test_slurm.py under make test-slurm)."""
import os
import pwd
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from tileport.core import yamlio
from tileport.flow import route_files

# a rule may be defined inside an if / else (check_kernel and gpu_route: a checkpoint or a rule)
RULES = set(route_files.rule_names(REPO / "rules"))
GPU_RULES = {"gpu_test", "bench"}


def profile(name):
    return yamlio.load_file(REPO / "profiles" / name / "config.yaml")


def indent(line):
    return len(line) - len(line.lstrip())


def rule_resources(rule):
    """The ``resources:`` block of one rule (its first definition), as text: the lines indented
    under the directive, at whatever depth the rule is defined."""
    for f in (REPO / "rules").glob("*.smk"):
        lines = f.read_text().splitlines()
        for i, line in enumerate(lines):
            if not re.match(rf"^\s*(?:rule|checkpoint) {rule}:$", line):
                continue
            out, at = [], None
            for body in lines[i + 1:]:
                if body.strip() and indent(body) <= indent(line):
                    break                               # the rule ends
                if at is None:
                    at = indent(body) if body.strip() == "resources:" else None
                elif body.strip() and indent(body) > at:
                    out.append(body)
                elif body.strip():
                    break                               # the next directive
            return "\n".join(out)
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
    assert local == {"all", "import_source", "summary", "accept_kernel", "perf_diagnose",
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
    line = next(x for x in out.splitlines() if "/snakemake --cores" in x and "results/summary.csv" in x)
    assert line.split()[-2:] == ["--resources", "gpu=1"]
    p = subprocess.run(line + " -n --quiet rules", shell=True, cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]


# --- what sbatch receives, through Snakemake's real SLURM executor and a recording stand-in ------
STANDIN = {
    # records its arguments and refuses the job: the test reads what would have been submitted
    "sbatch": 'printf "%s\\n" "$*" >> "$SBATCH_RECORD"\necho "sbatch: error: test stand-in" >&2\nexit 1\n',
    "sacctmgr": "echo acct\n",          # the account check of the executor
}


def site_profile(dst, gres=None, **gpu_extra):
    """A copy of profiles/slurm as the README tells a site to make one: an account, a GPU
    partition, and optionally ``gres`` (and other resources) for both GPU rules."""
    import shutil

    shutil.copytree(REPO / "profiles" / "slurm", dst)
    prof = yamlio.load_file(dst / "config.yaml")
    prof["default-resources"]["slurm_account"] = "acct"
    for rule in GPU_RULES:
        prof["set-resources"][rule]["slurm_partition"] = "gpu"
        if gres:
            prof["set-resources"][rule]["gres"] = gres
        prof["set-resources"][rule].update(gpu_extra)
    (dst / "config.yaml").write_text(yaml.safe_dump(prof, sort_keys=False))
    return dst


def sbatch_args(wd, profile, tmp_path) -> tuple[int, str, dict]:
    """Submit one job of each GPU rule through ``--profile`` (relu's gpu_test, softmax's bench:
    independent jobs, so one failed submission does not hold back the other):
    (exit status, output, {rule: the arguments sbatch got}). Inputs are placeholders and no
    other rule may run."""
    import os
    import subprocess
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("sbatch", "sacctmgr", "sinfo", "squeue", "sacct", "scancel", "sshare", "scontrol"):
        (bin_dir / name).write_text("#!/bin/sh\n" + STANDIN.get(name, "exit 1\n"))
        (bin_dir / name).chmod(0o755)
    record = tmp_path / "sbatch.txt"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SBATCH_RECORD": str(record)}
    exe = os.path.join(os.path.dirname(sys.executable), "snakemake")
    p = subprocess.run([exe, "--profile", str(profile), "results/relu/test.json", "results/softmax/bench.json",
                        "--forcerun", "results/relu/test.json", "--allowed-rules", *sorted(GPU_RULES),
                        "--slurm-init-seconds-before-status-checks", "1"],
                       cwd=wd, env=env, capture_output=True, text=True, timeout=300)
    calls = record.read_text().splitlines() if record.exists() else []
    by_rule = {re.search(r"--comment rule_(\w+?)_wildcards", c)[1]: c.split(" --wrap")[0] for c in calls}
    return p.returncode, p.stdout + p.stderr, by_rule


@pytest.fixture(scope="module")
def gpu_job_wd(tmp_path_factory):
    """A workflow copy with relu and softmax whose GPU jobs' inputs exist (placeholders)."""
    from conftest import copy_workflow

    wd = copy_workflow(tmp_path_factory.mktemp("sbatch"), ["relu", "softmax"])
    for op in ("relu", "softmax"):
        for f in ("analysis.json", "host/ffi.rs", "host/ffi.json", f"rust/src/{op}_kernel.rs", "test.json"):
            (wd / "results" / op / f).parent.mkdir(parents=True, exist_ok=True)
            (wd / "results" / op / f).write_text("{}\n")
    for f in ("libtileport_host.so", "build.json"):
        (wd / "results" / "host").mkdir(parents=True, exist_ok=True)
        (wd / "results" / "host" / f).write_text("{}\n")
    return wd


def test_shipped_slurm_profile_asks_for_gpus(gpu_job_wd, tmp_path):
    rc, out, args = sbatch_args(gpu_job_wd, site_profile(tmp_path / "site"), tmp_path)
    assert set(args) == GPU_RULES, out[-3000:]
    for rule, a in args.items():
        assert "--gpus=1" in a.split() and "--gres" not in a, (rule, a)


def test_gres_only_site_gets_gres_alone(gpu_job_wd, tmp_path):
    """README recipe for a site that accepts only --gres: ``gres: "gpu:h200:1"`` under the GPU
    rules. The rule's own gpu=1 must then not reach sbatch as --gpus (issue 16)."""
    rc, out, args = sbatch_args(gpu_job_wd, site_profile(tmp_path / "site", gres="gpu:h200:1"), tmp_path)
    assert set(args) == GPU_RULES, out[-3000:]
    for rule, a in args.items():
        assert "--gres=gpu:h200:1" in a.split() and "--gpus" not in a, (rule, a)


def test_gres_and_gpu_together_is_an_error_at_load(gpu_job_wd, tmp_path):
    rc, out, args = sbatch_args(gpu_job_wd, site_profile(tmp_path / "site", gres="gpu:h200:1", gpu_model="h200"),
                                tmp_path)
    assert rc != 0 and args == {}
    for rule in sorted(GPU_RULES):
        assert f"set-resources: {rule}: gres 'gpu:h200:1' and gpu_model 'h200' would both" in out, out[-3000:]


def test_set_resources_for_a_rule_that_does_not_exist_is_an_error(gpu_job_wd):
    """Snakemake ignores a misspelt rule under set-resources without a word."""
    import os
    import subprocess
    import sys

    exe = os.path.join(os.path.dirname(sys.executable), "snakemake")
    p = subprocess.run([exe, "-n", "--cores", "1", "results/relu/test.json", "--set-resources", "bnech:runtime=5",
                        "--set-threads", "gpu_tset=2"], cwd=gpu_job_wd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-2000:]
    assert "set-resources: ['bnech'] name no rule" in out and "set-threads: ['gpu_tset'] name no rule" in out


def test_make_installs_the_environment_toolchain_names(tmp_path, monkeypatch):
    """make's VENV is tileport.core.toolchain.shared_env's answer (one owner of where the shared
    environment lies): under an absolute XDG_CACHE_HOME, and under ~/.cache when it is relative
    (the XDG spec) or HOME is unset (the password database)."""
    from tileport.core import toolchain

    def make_venv(env):
        out = subprocess.run(["make", "-n", "-p", "install"], cwd=REPO, capture_output=True, text=True,
                             env=env).stdout
        return next(ln.split(" := ", 1)[1] for ln in out.splitlines() if ln.startswith("VENV := "))

    base = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "VENV")}
    xdg = {**base, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert make_venv(xdg).startswith(str(tmp_path / "xdg" / "tileport" / "venv") + "/")
    home = {**base, "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": "rel"}
    assert make_venv(home).startswith(str(tmp_path / "home" / ".cache" / "tileport" / "venv") + "/")
    no_home = {k: v for k, v in base.items() if k != "HOME"}
    assert make_venv(no_home).startswith(pwd.getpwuid(os.getuid()).pw_dir + "/.cache/tileport/venv/")
    # the same folder as Python names it (the id: this Python and both requirement files)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert toolchain.shared_env(REPO).parent == Path(make_venv(xdg)).parent
    assert len(Path(make_venv(xdg)).name) == 12


def test_the_cache_root_ignores_a_relative_xdg_cache_home(tmp_path, monkeypatch):
    """XDG_CACHE_HOME relative (the XDG spec: ignore it) falls back to ~/.cache; an absolute one
    is used."""
    from tileport.core import toolchain

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", "rel")
    assert toolchain.cache_root() == tmp_path / "home" / ".cache" / "tileport"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert toolchain.cache_root() == tmp_path / "xdg" / "tileport"
