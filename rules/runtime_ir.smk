rule runtime_ir:
    """The Tile IR and SASS (sm_90, sm_100) that run on both sides for every variant and perf shape of every kernel of one operator: each launcher's facts, the run-time IR diff, SASS parity, as launched and matched (CPU). Into results/{op}/runtime/<kernel>.json (verdict) + <kernel>/ (artefacts)."""
    input:
        op_inputs,
        analysis="results/{op}/analysis.json",
        build="results/{op}/rust/build.json",
        # the hint-free IR diff of every variant (<kernel>/<variant>.json)
        ir_diffs=lambda wc: [f"results/{wc.op}/ir_diff/{k}" for k in kernels_of(wc.op)],
    output:
        dir=directory("results/{op}/runtime"),
    log:
        "results/{op}/logs/runtime_ir.log",
    conda:
        "../envs/tileport.yaml"
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("runtime_ir"),
            # {kernel: [variant id]}
            variants=lambda wc: {k: variants_of(wc.op, k) for k in kernels_of(wc.op)},
            # the content of the operator's files it reads: a change reruns it whatever the mtime
            content=content_of(op_inputs),
            tools=config["tools"],
            op_dir=op_dir,
            target=config["gpu_target"],
        ),
        io=job_io,
    shell:
        stage_command("runtime_ir", attempt=False)
