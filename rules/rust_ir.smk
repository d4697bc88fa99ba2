rule rust_build:
    """Assemble {root}/{op}/rust (root: results, or a GPU round's tree) as a crate (template + committed Cargo.lock) and build its IR dumper."""
    input:
        kernels=lambda wc: [f"{wc.root}/{wc.op}/rust/src/{k}.rs" for k in kernels_of(wc.op)],
        verdicts=lambda wc: [f"{wc.root}/{wc.op}/write_kernel/{k}.json" for k in kernels_of(wc.op)],
        template=["rust/port-template/Cargo.toml", "rust/port-template/Cargo.lock", "rust/irdump.rs"],
    output:
        verdict="{root}/{op}/rust/build.json",
    log:
        "{root}/{op}/logs/rust_build.log",
    retries: retries("rust_build")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("rust_build"),
            tools=config["tools"],
            op_dir=op_dir,
        ),
        io=job_io,
    shell:
        stage_command("rust_build")
