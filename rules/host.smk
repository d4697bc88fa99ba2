rule host_shim:
    """Host builder (backend from config roles.host_builder): C ABI shims {root}/{op}/host/ffi.rs
    + their signatures ffi.json. In a GPU round's tree it reads the route that asked for it."""
    input:
        analysis="results/{op}/analysis.json",
        previous=lambda wc: (
            [] if wc.root == "results" else [f"results/{wc.op}/rounds/{root_round(wc.root) - 1}/route.json"]
        ),
        prompt=lambda wc: (
            []
            if config["roles"]["host_builder"] == "deterministic"
            else [str(Path(workflow.basedir) / "prompts" / "host_builder.md")]
        ),
        verdicts=lambda wc: [f"{wc.root}/{wc.op}/write_kernel/{k}.json" for k in kernels_of(wc.op)],
        source_maps=lambda wc: [f"{wc.root}/{wc.op}/rust/src/{k}.rs.map.json" for k in kernels_of(wc.op)],
    output:
        ffi_rs="{root}/{op}/host/ffi.rs",
        ffi_json="{root}/{op}/host/ffi.json",
        verdict="{root}/{op}/host/shim.json",
    log:
        "{root}/{op}/logs/host_shim.log",
    retries: retries("host_shim")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("host_shim"),
            tools=config["tools"],
            backend=config["roles"]["host_builder"],
            round=lambda wc: root_round(wc.root),
            llm=lambda wc: (
                {}
                if config["roles"]["host_builder"] == "deterministic"
                else {k: config["llm"].get(k) for k in ("model", "max_tokens", "temperature", "effort")}
            ),
        ),
        io=job_io,
    shell:
        stage_command("host_shim")


rule host_build:
    """One cdylib with every operator's shims and kernels: results/host/libtileport_host.so (release);
    a GPU round's tree (results/{op}/rounds/{r}) gets its own library with that operator alone."""
    input:
        shims=lambda wc: [
            f"{wc.root}/{op}/host/{f}" for op in root_ops(wc.root) for f in ("ffi.rs", "ffi.json", "shim.json")
        ],
        builds=lambda wc: [f"{wc.root}/{op}/rust/build.json" for op in root_ops(wc.root)],
        kernels=lambda wc: [f"{wc.root}/{op}/rust/src/{k}.rs" for op in root_ops(wc.root) for k in kernels_of(op)],
        template=["rust/host-template/Cargo.toml", "rust/host-template/Cargo.lock", "rust/host/abi.rs"],
    output:
        library="{root}/host/libtileport_host.so",
        verdict="{root}/host/build.json",
    log:
        "{root}/logs/host_build.log",
    retries: retries("host_build")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("host_build"),
        tools=config["tools"],
        ops=lambda wc: root_ops(wc.root),
    script:
        "../scripts/host_build.py"
