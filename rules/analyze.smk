rule analyze:
    """Analyser: the front end's model of kernel.py (ast, no GPU) and the manifest, each kernel
    translated (no cargo) to find the constructs the translator lacks, into analysis.json (verdict
    PASS/BLOCKED/ERROR); an LLM analyser (config roles.analyser) adds checked notes for the writer."""
    input:
        op_inputs,
        prompt=lambda wc: (
            []
            if config["roles"]["analyser"] == "deterministic"
            else [str(Path(workflow.basedir) / "prompts" / "analyser.md")]
        ),
    output:
        "results/{op}/analysis.json",
    log:
        "results/{op}/logs/analyze.log",
    retries: retries("analyze")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("analyze"),
            # the content of the operator's files it reads: a change reruns it whatever the mtime
            content=content_of(op_inputs),
            tools=config["tools"],
            op_dir=op_dir,
            backend=config["roles"]["analyser"],
            # the translator checks every kernel for the GPU architecture the port is compiled for
            target=config["gpu_target"],
            llm=lambda wc: (
                {}
                if config["roles"]["analyser"] == "deterministic"
                else {k: config["llm"].get(k) for k in ("model", "max_tokens", "temperature", "effort")}
            ),
        ),
        io=job_io,
    shell:
        stage_command("analyze")
