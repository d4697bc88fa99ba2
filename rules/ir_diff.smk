rule ir_diff:
    """Structural diff of the two Tile IRs as dataflow graphs: PASS / PASS_WITH_NOTES / FAIL."""
    input:
        ref="results/{op}/ref/{kernel}/{variant}.tileir",
        ref_verdict="results/{op}/ref/{kernel}/{variant}.json",
        port="{root}/{op}/rust_ir/{kernel}/{variant}.tileir",
        port_verdict="{root}/{op}/rust_ir/{kernel}/{variant}.json",
        code=code("ir_diff"),
    output:
        verdict="{root}/{op}/ir_diff/{kernel}/{variant}.json",
    log:
        "{root}/{op}/logs/ir_diff/{kernel}/{variant}.log",
    retries: retries("ir_diff")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        tools=config["tools"],
        op_dir=op_dir,
        target=config["gpu_target"],
    script:
        "../scripts/ir_diff.py"
