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
    params:
        tools=config["tools"],
        op_dir=op_dir,
    retries: retries("reference_ir")
    resources:
        attempt=lambda wc, attempt: attempt,
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/reference_ir.py"
