rule perf_diagnose:
    """Perf diagnoser (deterministic): likely cause + evidence when an operator is below threshold."""
    input:
        bench="results/{op}/bench.json",
        ir_diffs=lambda wc: [f"results/{wc.op}/ir_diff/{k}/{v}.json" for k, v in VARIANTS[wc.op]],
        code=code("perf_diagnose", "stats"),
    output:
        verdict="results/{op}/perf_diagnosis.json",
    log:
        "results/{op}/logs/perf_diagnose.log",
    params:
        tools=config["tools"],
        threshold=config["bench"]["threshold"],
    retries: retries("perf_diagnose")
    resources:
        attempt=lambda wc, attempt: attempt,
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/perf_diagnose.py"
