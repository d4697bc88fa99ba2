rule write_kernel:
    """Kernel writer, attempt {n} (backend from config roles.kernel_writer): cuTile Python -> cuTile Rust.

    Attempt n > 1 exists only when route n-1 said retry; its prompt quotes that route's feedback
    (the failure, the IR diff and the IR diagnoser's advice). Every attempt has its own folder."""
    input:
        op_inputs,
        analysis="results/{op}/analysis.json",
        # an LLM writer is shown the reference Tile IR of the kernel's first variant
        ref_ir=writer_ref_ir,
        prompt=writer_prompt,
        previous=previous_route,
    output:
        rust="results/{op}/attempts/{kernel}/{n}/rust/src/{kernel}.rs",
        source_map="results/{op}/attempts/{kernel}/{n}/rust/src/{kernel}.rs.map.json",
        verdict="results/{op}/attempts/{kernel}/{n}/write.json",
    log:
        "results/{op}/logs/write_kernel/{kernel}/{n}.log",
    # a job the scheduler killed is run again (the loop's attempts are the {n} targets)
    retries: retries("write_kernel")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("write_kernel"),
            # the content of the operator's files it reads: a change reruns it whatever the mtime
            content=content_of(op_inputs),
            tools=config["tools"],
            op_dir=op_dir,
            attempt=lambda wc: int(wc.n),
            variants=lambda wc: variants_of(wc.op, wc.kernel),
            backend=config["roles"]["kernel_writer"],
            target=config["gpu_target"],
            # only what changes the LLM's reply reruns the writer (a paid call); timeouts, retries,
            # prices and the replay folder are read from snakemake.config by the script
            llm=lambda wc: (
                {}
                if config["roles"]["kernel_writer"] == "translator"
                else {k: config["llm"].get(k) for k in ("model", "max_tokens", "temperature", "effort")}
            ),
        ),
        io=job_io,
    shell:
        stage_command("write_kernel")
