"""The kept ``cargo check`` (tileport.cpu.cargo_check): what its key holds, what it keeps."""
import os
import sys

import pytest

from tileport.cpu import cargo_check

NAMES = ["tileport-port-relu-0123abcd", "tileport_port_relu_0123abcd"]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(cargo_check.CACHE_ENV, raising=False)
    monkeypatch.delenv("RUSTFLAGS", raising=False)


def crate(root, names=NAMES, kernel="pub fn relu() {}\n"):
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text(f'[package]\nname = "{names[0]}"\n[lib]\nname = "{names[1]}"\n')
    (root / "Cargo.lock").write_text(f'[[package]]\nname = "{names[0]}"\n')
    (root / "src" / "lib.rs").write_text("pub mod relu_kernel;\n")
    (root / "src" / "relu_kernel.rs").write_text(kernel)
    (root / "src" / "relu_kernel.rs.map.json").write_text(f'{{"kernel_py": "{root}/kernel.py"}}')
    return root


def cmd_for(root):
    return ["cargo", "check", "--lib", "--manifest-path", str(root / "Cargo.toml")]


def test_the_same_crate_in_another_checkout_has_the_same_key(tmp_path):
    env = dict(os.environ)
    a = crate(tmp_path / "a")
    b = crate(tmp_path / "b", ["tileport-port-relu-89abcdef", "tileport_port_relu_89abcdef"])
    assert cargo_check.key(a, cmd_for(a), env, NAMES) == cargo_check.key(
        b, cmd_for(b), env, ["tileport-port-relu-89abcdef", "tileport_port_relu_89abcdef"])


def test_what_rustc_reads_changes_the_key(tmp_path, monkeypatch):
    a = crate(tmp_path / "a")
    k0 = cargo_check.key(a, cmd_for(a), dict(os.environ), NAMES)
    (a / "src" / "relu_kernel.rs.map.json").write_text("{}")     # rustc never reads it
    assert cargo_check.key(a, cmd_for(a), dict(os.environ), NAMES) == k0
    (a / "src" / "relu_kernel.rs").write_text("pub fn relu() { let _x = 1; }\n")
    k1 = cargo_check.key(a, cmd_for(a), dict(os.environ), NAMES)
    assert k1 != k0
    assert cargo_check.key(a, cmd_for(a) + ["--release"], dict(os.environ), NAMES) != k1
    # every variable cargo reads as a setting, not where its target directory lies
    for var, value in (("RUSTFLAGS", "-D warnings"), ("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS", "-Dwarnings"),
                       ("CARGO_BUILD_RUSTC_WRAPPER", "/bin/false"), ("RUSTC_BOOTSTRAP", "1")):
        assert cargo_check.key(a, cmd_for(a), {**os.environ, var: value}, NAMES) != k1, var
    assert cargo_check.key(a, cmd_for(a), {**os.environ, "CARGO_TARGET_DIR": "/elsewhere"}, NAMES) == k1
    # cargo reads .cargo/config.toml from the working folder up (also with --manifest-path)
    work = tmp_path / "work"
    (work / ".cargo").mkdir(parents=True)
    (work / ".cargo" / "config.toml").write_text('[build]\nrustflags = ["-D", "warnings"]\n')
    monkeypatch.chdir(work)
    assert cargo_check.key(a, cmd_for(a), dict(os.environ), NAMES) != k1


def test_other_names_in_the_places_of_the_package_and_library_give_another_key(tmp_path):
    a = crate(tmp_path / "a")
    b = crate(tmp_path / "b", ["tileport-port-relu-89abcdef", "tileport-port-relu-89abcdef"])
    assert cargo_check.key(a, cmd_for(a), dict(os.environ), NAMES) != cargo_check.key(
        b, cmd_for(b), dict(os.environ), ["tileport-port-relu-89abcdef", "tileport_port_relu_89abcdef"])


@pytest.mark.parametrize("change", ["build.rs", "path dependency", "patch", "include_str", "path attribute", "env"])
def test_a_crate_that_reads_more_than_the_key_is_never_kept(tmp_path, change):
    a = crate(tmp_path / "a")
    rs, toml = a / "src" / "relu_kernel.rs", a / "Cargo.toml"
    if change == "build.rs":
        (a / "build.rs").write_text("fn main() {}\n")
    elif change == "path dependency":
        toml.write_text(toml.read_text() + '[dependencies]\ncutile = { path = "../cutile" }\n')
    elif change == "patch":
        toml.write_text(toml.read_text() + '[patch.crates-io]\ncutile = { git = "https://example.org/c" }\n')
    else:
        line = {"include_str": 'const T: &str = include_str!("t.txt");',
                "path attribute": '#[path = "k.inc"] mod k;', "env": 'const T: &str = env!("T");'}[change]
        rs.write_text(rs.read_text() + line + "\n")
    assert cargo_check.key(a, cmd_for(a), dict(os.environ), NAMES) is None
    runs, cmd = counting(tmp_path, 0)
    for n in (1, 2):
        assert cargo_check.check(a, cmd, dict(os.environ), NAMES, tmp_path / "lock").kept is None
        assert runs.read_text() == "x" * n


def test_a_crate_changed_while_cargo_read_it_is_not_kept(tmp_path):
    a = crate(tmp_path / "a")
    runs, cmd = counting(tmp_path, 0)
    rs = a / "src" / "relu_kernel.rs"
    cmd[-1] = f"open({str(rs)!r}, 'a').write('// edited\\n'); " + cmd[-1]
    cargo_check.check(a, cmd, dict(os.environ), NAMES, tmp_path / "lock")
    rs.write_text("pub fn relu() {}\n")             # the text the check was keyed by
    assert cargo_check.check(a, counting(tmp_path, 0)[1], dict(os.environ), NAMES, tmp_path / "lock").kept is None


def test_a_tool_that_cannot_start_is_named_in_the_key_not_raised(tmp_path):
    got = cargo_check._versions({"PATH": str(tmp_path)})
    assert got[0].startswith("cargo: ") and got[1].startswith("rustc: ")


def counting(tmp_path, rc):
    """A stand-in for cargo that counts its runs in ``runs`` and exits ``rc``."""
    runs = tmp_path / "runs"
    code = f"import sys; open({str(runs)!r}, 'a').write('x'); print('checked'); sys.exit({rc})"
    return runs, [sys.executable, "-c", code]


def test_a_passing_check_is_kept_and_read_back(tmp_path):
    a = crate(tmp_path / "a")
    runs, cmd = counting(tmp_path, 0)
    first = cargo_check.check(a, cmd, dict(os.environ), NAMES, tmp_path / "lock")
    assert (first.returncode, first.kept, first.stdout) == (0, None, "checked\n")
    b = crate(tmp_path / "b", ["tileport-port-relu-89abcdef", "tileport_port_relu_89abcdef"])
    again = cargo_check.check(b, [*cmd[:-1], cmd[-1]], dict(os.environ),
                              ["tileport-port-relu-89abcdef", "tileport_port_relu_89abcdef"], tmp_path / "lock")
    assert (again.returncode, again.stdout) == (0, "checked\n") and again.kept
    assert runs.read_text() == "x"
    (a / "src" / "relu_kernel.rs").write_text("pub fn relu() { let _x = 1; }\n")
    assert cargo_check.check(a, cmd, dict(os.environ), NAMES, tmp_path / "lock").kept is None
    assert runs.read_text() == "xx"


def test_a_failing_check_runs_every_time(tmp_path):
    a = crate(tmp_path / "a")
    runs, cmd = counting(tmp_path, 101)
    for n in (1, 2):
        got = cargo_check.check(a, cmd, dict(os.environ), NAMES, tmp_path / "lock")
        assert (got.returncode, got.kept) == (101, None)
        assert runs.read_text() == "x" * n


def test_the_cache_can_be_turned_off_and_a_broken_entry_is_run_around(tmp_path, monkeypatch):
    from tileport.core import toolchain
    a = crate(tmp_path / "a")
    runs, cmd = counting(tmp_path, 0)
    monkeypatch.setenv(cargo_check.CACHE_ENV, "off")
    cargo_check.check(a, cmd, dict(os.environ), NAMES, tmp_path / "lock")
    assert not (toolchain.cache_root() / cargo_check.KIND).exists()
    monkeypatch.delenv(cargo_check.CACHE_ENV)
    cargo_check.check(a, cmd, dict(os.environ), NAMES, tmp_path / "lock")
    entry, = (toolchain.cache_root() / cargo_check.KIND).glob("*.json")
    entry.write_text(entry.read_text()[:-5])
    assert cargo_check.check(a, cmd, dict(os.environ), NAMES, tmp_path / "lock").kept is None
    assert runs.read_text() == "xxx"


@pytest.mark.parametrize("value, off", [("off", True), ("OFF", True), ("0", True), ("no", True), ("", False),
                                        ("on", False), ("1", False)])
def test_the_words_that_turn_a_cache_off(monkeypatch, value, off):
    """tileport.core.toolchain.cache_off: the one reading of every TILEPORT_*_CACHE variable."""
    from tileport.core import toolchain
    monkeypatch.setenv(cargo_check.CACHE_ENV, value)
    assert toolchain.cache_off(cargo_check.CACHE_ENV) is off
