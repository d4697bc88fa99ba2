rule summary:
    """One row per (op, kernel, variant) with every stage's verdict: results/summary.csv."""
    input:
        summary_inputs,
    output:
        "results/summary.csv",
        "results/summary_ops.csv",
    log:
        "results/logs/summary.log",
    conda:
        "../envs/tileport.yaml"
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("summary"),
        tools=config["tools"],
        threshold=config["bench"]["threshold"],
        loop_threshold=config["bench"]["loop_threshold"],
        ops=OPS,
        variants=VARIANTS,
        manifest_errors=MANIFEST_ERRORS,
        skipped=SKIPPED,
    script:
        "../scripts/summary.py"
