rule perf_diagnose:
    """Perf diagnoser (deterministic): likely cause + evidence when an operator is below threshold, and a cause for every config outside +-3 % either way."""
    input:
        bench="{root}/{op}/bench.json",
        # one folder per kernel, a verdict per variant inside
        ir_diffs=lambda wc: [f"{wc.root}/{wc.op}/ir_diff/{k}" for k in kernels_of(wc.op)],
        kernels=lambda wc: [f"{wc.root}/{wc.op}/rust/src/{k}.rs" for k in kernels_of(wc.op)],
        # the run-time Tile IR and SASS of the first round's ports (a GPU round rewrites no IR of
        # its own here): the evidence an outlier's cause is named from
        runtime=lambda wc: [f"results/{wc.op}/runtime"] if wc.root == "results" and kernels_of(wc.op) else [],
        prompt=lambda wc: (
            []
            if config["roles"]["perf_diagnoser"] == "deterministic"
            else [str(Path(workflow.basedir) / "prompts" / "perf_diagnoser.md")]
        ),
    output:
        verdict="{root}/{op}/perf_diagnosis.json",
    log:
        "{root}/{op}/logs/perf_diagnose.log",
    retries: retries("perf_diagnose")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("perf_diagnose"),
            tools=config["tools"],
            threshold=config["bench"]["threshold"],
            loop_threshold=config["bench"]["loop_threshold"],
            results="results",
            round=lambda wc: root_round(wc.root),
            backend=config["roles"]["perf_diagnoser"],
            llm=lambda wc: (
                {}
                if config["roles"]["perf_diagnoser"] == "deterministic"
                else {k: config["llm"].get(k) for k in ("model", "max_tokens", "temperature", "effort")}
            ),
        ),
        io=job_io,
    shell:
        stage_command("perf_diagnose")
