rule rust_build:
    """Assemble {root}/{op}/rust (root: results, or a GPU round's tree) as a crate (template + committed Cargo.lock) and build its IR dumper."""
    input:
        kernels=lambda wc: [f"{wc.root}/{wc.op}/rust/src/{k}.rs" for k in kernels_of(wc.op)],
        verdicts=lambda wc: [f"{wc.root}/{wc.op}/write_kernel/{k}.json" for k in kernels_of(wc.op)],
        template=["rust/port-template/Cargo.toml", "rust/port-template/Cargo.lock", "rust/irdump.rs"],
        code=code("rust_build"),
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
        tools=config["tools"],
        op_dir=op_dir,
    script:
        "../scripts/rust_build.py"


rule rust_ir:
    """Compile one variant of the Rust port to Tile IR with cutile's compiler (CPU) + tileirdisasm."""
    input:
        op_inputs,
        build="{root}/{op}/rust/build.json",
        analysis="results/{op}/analysis.json",
        source_map="{root}/{op}/rust/src/{kernel}.rs.map.json",
        code=code("rust_ir"),
    output:
        bytecode="{root}/{op}/rust_ir/{kernel}/{variant}.tileirbc",
        text="{root}/{op}/rust_ir/{kernel}/{variant}.tileir",
        verdict="{root}/{op}/rust_ir/{kernel}/{variant}.json",
    log:
        "{root}/{op}/logs/rust_ir/{kernel}/{variant}.log",
    retries: retries("rust_ir")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        # the content of the operator's files it reads: a change reruns it whatever the mtime
        content=content_of(op_inputs),
        tools=config["tools"],
        op_dir=op_dir,
        target=config["gpu_target"],
    script:
        "../scripts/rust_ir.py"
