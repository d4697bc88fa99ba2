rule reference_ir:
    """Export the cuTile Python reference's Tile IR (bytecode + tileirdisasm text) on the CPU."""
    input:
        op_inputs,
        analysis="results/{op}/analysis.json",
        code=code("reference_ir"),
    output:
        bytecode="results/{op}/ref/{kernel}/{variant}.tileirbc",
        text="results/{op}/ref/{kernel}/{variant}.tileir",
        verdict="results/{op}/ref/{kernel}/{variant}.json",
    log:
        "results/{op}/logs/reference_ir/{kernel}/{variant}.log",
    retries: retries("reference_ir")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        # the content of the operator's files it reads: a change reruns it whatever the mtime
        content=content_of(op_inputs),
        tools=config["tools"],
        op_dir=op_dir,
    script:
        "../scripts/reference_ir.py"
