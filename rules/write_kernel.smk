rule write_kernel:
    """Kernel writer (backend from config roles.kernel_writer): cuTile Python AST -> cuTile Rust module."""
    input:
        op_inputs,
        analysis="results/{op}/analysis.json",
        # an LLM writer is shown the reference Tile IR of the kernel's first variant
        ref_ir=writer_ref_ir,
        prompt=writer_prompt,
        code=code("write_kernel", "analyze", "constructs", "agents"),
    output:
        rust="results/{op}/rust/src/{kernel}.rs",
        source_map="results/{op}/rust/src/{kernel}.rs.map.json",
        verdict="results/{op}/write_kernel/{kernel}.json",
    log:
        "results/{op}/logs/write_kernel/{kernel}.log",
    params:
        tools=config["tools"],
        op_dir=op_dir,
        backend=config["roles"]["kernel_writer"],
        # LLM settings only matter to the LLM backends (editing them must not rerun the translator)
        # only what changes the LLM's reply reruns the writer (a paid call); timeouts, retries,
        # prices, the replay folder and the cap are read from snakemake.config by the script
        llm=lambda wc: {} if config["roles"]["kernel_writer"] == "translator" else {
            k: config["llm"].get(k) for k in ("model", "max_tokens", "temperature", "effort")},
    retries: retries("write_kernel")
    resources:
        attempt=lambda wc, attempt: attempt,
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/write_kernel.py"
