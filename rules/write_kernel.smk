rule write_kernel:
    """Kernel writer (backend from config roles.kernel_writer): cuTile Python AST -> cuTile Rust module."""
    input:
        op_inputs,
        analysis="results/{op}/analysis.json",
        code=code("write_kernel", "analyze", "constructs"),
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
        cap=config["attempts"]["write_kernel"],
    retries: retries("write_kernel")
    resources:
        attempt=lambda wc, attempt: attempt,
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/write_kernel.py"
