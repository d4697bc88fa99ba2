# NVIDIA's shipped cuTile Rust ports (tilegym ops/cutile_rs/) as the yardstick: tileport/nvidia/port.py.
# They run for the operators whose manifest imports a TileGym kernel NVIDIA ported (source: +
# rust/nvidia/ports.yaml); `snakemake results/nvidia/shipped/build.json` builds the crate alone.


rule nv_build:
    """Copy NVIDIA's crate out of the installed tilegym wheel and build it (cdylib + nv-irdump) with one pin set."""
    input:
        crate=tp_nv.crate_inputs(),
        lock=lambda wc: str(tp_nv.LOCKS[wc.pins]),
        template=["rust/irdump.rs", "rust/port-template/Cargo.toml"],
    output:
        verdict="results/nvidia/{pins}/build.json",
    log:
        "results/nvidia/logs/nv_build_{pins}.log",
    wildcard_constraints:
        pins="shipped|tileport",
    retries: retries("rust_build")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("nv_build"),
        tools=config["tools"],
    script:
        "../scripts/nv_build.py"


rule nv_ir:
    """Compile the NVIDIA entry that ports {kernel} to Tile IR for every variant (CPU, one process) + tileirdisasm."""
    input:
        op_inputs,
        ports="rust/nvidia/ports.yaml",
        build="results/nvidia/shipped/build.json",
        # tileport's cutile: the same kernel's IR under it is compared in details.other_pin
        other="results/nvidia/tileport/build.json",
    output:
        dir=directory("results/{op}/nv_ir/{kernel}"),
    log:
        "results/{op}/logs/nv_ir/{kernel}.log",
    retries: retries("rust_ir")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("nv_ir"),
        # the content of the operator's files it reads: a change reruns it whatever the mtime
        content=content_of(op_inputs),
        tools=config["tools"],
        op_dir=op_dir,
        target=config["gpu_target"],
        variants=lambda wc: [v for k, v in nv_variants(wc.op) if k == wc.kernel],
    script:
        "../scripts/nv_ir.py"


rule nv_ir_diff:
    """tileport's IR diff of NVIDIA's port against the cuTile Python reference, every variant of one kernel: does it pass the verifier?"""
    input:
        ref="results/{op}/ref",
        nv="results/{op}/nv_ir/{kernel}",
    output:
        dir=directory("results/{op}/nv_ir_diff/{kernel}"),
    log:
        "results/{op}/logs/nv_ir_diff/{kernel}.log",
    retries: retries("ir_diff")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("nv_ir_diff"),
        tools=config["tools"],
        variants=lambda wc: [v for k, v in nv_variants(wc.op) if k == wc.kernel],
    script:
        "../scripts/nv_ir_diff.py"
