"""rust/host/abi.rs's own Rust tests (`cargo test` on a crate of abi.rs alone, release profile,
shared target dir; no GPU): the per-thread cache of borrowed tensors."""
import subprocess

from tileport.core import toolchain
from tileport.host import shim as host


def test_abi_rust_tests(tmp_path):
    """The tensors of a kernel's arrays are made once and reused while the arrays fit the cache
    (17 arrays: tg_mamba2 compute_da_db_dc_ddt_kernel, which 16 round-robin slots re-made on every
    call); another pointer, layout, element type or context gets a tensor of its own; more arrays
    than slots are still borrowed right; scratch for unread arrays without memory is registered
    per device and slot (tp_set_scratch)."""
    crate = tmp_path / "abi"
    (crate / "src").mkdir(parents=True)
    pkg, lib_name = host.package_names(crate)
    (crate / "Cargo.toml").write_text((host.HOST_TEMPLATE / "Cargo.toml").read_text()
                                      .replace('name = "tileport-host"', f'name = "{pkg}"')
                                      .replace('name = "tileport_host"', f'name = "{lib_name}"'))
    (crate / "Cargo.lock").write_text((host.HOST_TEMPLATE / "Cargo.lock").read_text()
                                      .replace('name = "tileport-host"\n', f'name = "{pkg}"\n'))
    (crate / "src" / "abi.rs").write_text(host.ABI_RS.read_text())
    (crate / "src" / "lib.rs").write_text("#![allow(non_snake_case)]\npub mod abi;\n")
    proc = subprocess.run(["cargo", "test", "--release", "--locked", "--lib", "--quiet"], cwd=crate,
                          capture_output=True, text=True,
                          env=toolchain.cargo_env(toolchain.default_target_dir()))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "4 passed" in proc.stdout, proc.stdout
