rule reference_ir:
    """Export the cuTile Python reference's Tile IR (bytecode + tileirdisasm text) on the CPU: one
    job per operator, every kernel and variant in one process, into results/{op}/ref/<kernel>/<variant>.*"""
    input:
        op_inputs,
        analysis="results/{op}/analysis.json",
    output:
        dir=directory("results/{op}/ref"),
    log:
        "results/{op}/logs/reference_ir.log",
    retries: retries("reference_ir")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("reference_ir"),
            # the content of the operator's files it reads: a change reruns it whatever the mtime
            content=content_of(op_inputs),
            tools=config["tools"],
            op_dir=op_dir,
            # {kernel: [variant id]}
            variants=lambda wc: {k: variants_of(wc.op, k) for k in kernels_of(wc.op)},
        ),
        io=job_io,
    shell:
        stage_command("reference_ir")
