rule runtime_ir:
    """The Tile IR and SASS (sm_90, sm_100) that run on both sides for every variant and perf shape of one kernel: each launcher's facts, the run-time IR diff, SASS parity, as launched and matched (CPU)."""
    input:
        op_inputs,
        analysis="results/{op}/analysis.json",
        build="results/{op}/rust/build.json",
        # the hint-free IR diff of every variant (<variant>.json)
        ir_diff="results/{op}/ir_diff/{kernel}",
    output:
        verdict="results/{op}/runtime/{kernel}.json",
        artefacts=directory("results/{op}/runtime/{kernel}"),
    log:
        "results/{op}/logs/runtime_ir/{kernel}.log",
    conda:
        "../envs/tileport.yaml"
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("runtime_ir"),
        variants=lambda wc: variants_of(wc.op, wc.kernel),
        # the content of the operator's files it reads: a change reruns it whatever the mtime
        content=content_of(op_inputs),
        tools=config["tools"],
        op_dir=op_dir,
        target=config["gpu_target"],
    script:
        "../scripts/runtime_ir.py"
