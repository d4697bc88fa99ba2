rule analyze:
    """Parse kernel.py (ast, no GPU) and the manifest into analysis.json (verdict PASS/BLOCKED/ERROR)."""
    input:
        op_inputs,
    output:
        "results/{op}/analysis.json",
    log:
        "results/{op}/logs/analyze.log",
    retries: retries("analyze")
    resources:
        attempt=lambda wc, attempt: attempt,
    script:
        "../scripts/analyze.py"
