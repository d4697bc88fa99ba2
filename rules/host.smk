rule host_shim:
    """Host builder (deterministic): C ABI shims results/{op}/host/ffi.rs + their signatures ffi.json."""
    input:
        analysis="results/{op}/analysis.json",
        verdicts=lambda wc: [f"results/{wc.op}/write_kernel/{k}.json" for k in kernels_of(wc.op)],
        source_maps=lambda wc: [f"results/{wc.op}/rust/src/{k}.rs.map.json" for k in kernels_of(wc.op)],
        code=code("host"),
    output:
        ffi_rs="results/{op}/host/ffi.rs",
        ffi_json="results/{op}/host/ffi.json",
        verdict="results/{op}/host/shim.json",
    log:
        "results/{op}/logs/host_shim.log",
    params:
        tools=config["tools"],
    retries: retries("host_shim")
    resources:
        attempt=lambda wc, attempt: attempt,
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/host_shim.py"


rule host_build:
    """One cdylib with every operator's shims and kernels: results/host/libtileport_host.so (release)."""
    input:
        shims=[f"results/{op}/host/{f}" for op in GPU_OPS for f in ("ffi.rs", "ffi.json", "shim.json")],
        builds=[f"results/{op}/rust/build.json" for op in GPU_OPS],
        kernels=[f"results/{op}/rust/src/{k}.rs" for op in GPU_OPS for k in kernels_of(op)],
        template=["rust/host-template/Cargo.toml", "rust/host-template/Cargo.lock", "rust/host/abi.rs"],
        code=code("host", "rust_ir"),
    output:
        library="results/host/libtileport_host.so",
        verdict="results/host/build.json",
    log:
        "results/logs/host_build.log",
    params:
        tools=config["tools"],
        ops=GPU_OPS,
    retries: retries("host_build")
    resources:
        attempt=lambda wc, attempt: attempt,
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/host_build.py"
