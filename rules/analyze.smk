rule analyze:
    """Parse kernel.py (ast, no GPU) and the manifest into analysis.json (verdict PASS/BLOCKED/ERROR)."""
    input:
        op_inputs,
        code=code("analyze", "manifest", "constructs"),
    output:
        "results/{op}/analysis.json",
    log:
        "results/{op}/logs/analyze.log",
    params:
        tools=config["tools"],
        op_dir=op_dir,
    retries: retries("analyze")
    resources:
        attempt=lambda wc, attempt: attempt,
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/analyze.py"
