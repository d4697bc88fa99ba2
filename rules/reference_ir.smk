rule reference_ir:
    """Export the cuTile Python reference's Tile IR (bytecode + tileirdisasm text) on the CPU."""
    input:
        op_inputs,
        analysis="results/{op}/analysis.json",
    output:
        bytecode="results/{op}/ref/{kernel}/{variant}.tileirbc",
        text="results/{op}/ref/{kernel}/{variant}.tileir",
        verdict="results/{op}/ref/{kernel}/{variant}.json",
    log:
        "results/{op}/logs/reference_ir/{kernel}/{variant}.log",
    retries: retries("reference_ir")
    resources:
        attempt=lambda wc, attempt: attempt,
    script:
        "../scripts/reference_ir.py"
