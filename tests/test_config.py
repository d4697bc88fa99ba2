import copy

import pytest

from tileport.core import config, yamlio


@pytest.fixture
def cfg(repo):
    return yamlio.load_file(repo / "config.yaml")


def check(cfg, repo):
    return config.validate(cfg, repo / "schemas" / "config.schema.yaml")


def test_shipped_config_is_valid(cfg, repo):
    assert check(cfg, repo)["gpu_target"] == "sm_90"


@pytest.mark.parametrize("edit,expect", [
    (lambda c: c.update(gpu_target="hopper"), "key 'gpu_target': value 'hopper' -- expected a string matching"),
    (lambda c: c["attempts"].update(write_kernel=0), "key 'attempts/write_kernel': value 0 -- expected >= 1"),
    (lambda c: c["roles"].update(kernel_writer="gpt"), "key 'roles/kernel_writer': value 'gpt' -- expected one of"),
    (lambda c: c.update(colour="red"), "unknown key(s) ['colour']"),
    (lambda c: c.update(operators="softmax"), "key 'operators': value 'softmax' -- expected type array"),
])
def test_invalid_config_names_key_value_expected(cfg, repo, edit, expect):
    bad = copy.deepcopy(cfg)
    edit(bad)
    with pytest.raises(config.ConfigError) as e:
        check(bad, repo)
    assert expect in str(e.value)


def test_canonical_gives_one_spelling_per_meaning(cfg, repo):
    """Snakemake compares job parameters by repr: 20.0 vs 20 or another key order would rerun
    jobs whose inputs mean the same."""
    schema = yamlio.load_file(repo / "schemas" / "config.schema.yaml")
    assert config.canonical(cfg, schema) == cfg
    # the shipped values that are job parameters keep their repr (upgrading reruns nothing)
    for key in ("bench", "tools", "attempts", "gpu_target"):
        assert repr(config.canonical(cfg, schema)[key]) == repr(cfg[key])
    other = copy.deepcopy(cfg)
    other["bench"] = dict(reversed(list(other["bench"].items())))
    other["bench"]["warmup_ms"] = 20.0
    other["tools"] = dict(reversed(list(other["tools"].items())))
    other["attempts"]["write_kernel"] = 2.0
    for key in ("bench", "tools", "attempts"):
        assert repr(config.canonical(other, schema)[key]) == repr(cfg[key])
    assert type(config.canonical(other, schema)["attempts"]["write_kernel"]) is int
    assert config.canonical({"bench": {"threshold": 0.95}}, schema)["bench"]["threshold"] == 0.95


def test_tool_paths_compare_by_where_they_resolve(tmp_path, monkeypatch):
    defaults = {"tileirdisasm": tmp_path / "bin" / "tileirdisasm", "cuda_root": tmp_path / "cu13",
                "cargo_target_dir": tmp_path / "cache" / "cargo-target"}
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tileirdisasm").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "bin")
    monkeypatch.setenv("HOME", str(tmp_path))
    empty = {"tileirdisasm": "", "cuda_root": "", "cargo_target_dir": ""}
    # the default written out, relative, through ~ or a symbolic link: the default ("")
    same = {"tileirdisasm": str(tmp_path / "link" / "tileirdisasm"), "cuda_root": "cu13",
            "cargo_target_dir": "~/cache/cargo-target"}
    assert config.resolve_tools(same, tmp_path, defaults) == (empty, {})
    assert config.resolve_tools({}, tmp_path, defaults) == (empty, {})
    # another place: another tool (a parameter, so its stages rerun), another cache (never a
    # parameter: it reaches the jobs through the environment)
    other = {"tileirdisasm": "bin2/tileirdisasm", "cuda_root": "", "cargo_target_dir": "elsewhere"}
    params, env = config.resolve_tools(other, tmp_path, defaults)
    assert params == {**empty, "tileirdisasm": str(tmp_path / "bin2" / "tileirdisasm")}
    assert env == {"TILEPORT_CARGO_TARGET_DIR": str(tmp_path / "elsewhere")}
    # nothing found here for a default: any path given is kept
    params, _ = config.resolve_tools(same, tmp_path, {k: None for k in defaults})
    assert params["tileirdisasm"] == str(tmp_path / "bin" / "tileirdisasm")


def test_the_run_writes_its_bytecode_once_where_processes_may_not(tmp_path, monkeypatch):
    """Every job imports tileport in a new process; where PYTHONDONTWRITEBYTECODE is set, each
    compiled the package again (issue 32). The Snakefile's onstart writes it once
    (toolchain.compile_bytecode), whatever that variable says; a broken module is reported, not
    fatal."""
    import re
    import sys

    from conftest import REPO

    from tileport.core import toolchain

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    for d in ("tileport/flow", "scripts"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "tileport" / "flow" / "check.py").write_text("X = 1\n")
    (tmp_path / "scripts" / "stage.py").write_text("import sys\n")
    assert toolchain.compile_bytecode(tmp_path)
    assert list((tmp_path / "tileport" / "flow" / "__pycache__").glob("check.*.pyc"))
    assert list((tmp_path / "scripts" / "__pycache__").glob("stage.*.pyc"))
    (tmp_path / "scripts" / "broken.py").write_text("def f(:\n")
    assert toolchain.compile_bytecode(tmp_path) is False
    onstart = re.search(r"^onstart:\n((?:    .*\n)+)", (REPO / "Snakefile").read_text(), re.M)
    assert onstart and "compile_bytecode(workflow.basedir)" in onstart[1]
