rule check_kernel:
    """tileport's verdict on writer attempt {n}: cargo build, cutile Tile IR of every variant,
    structural diff against the reference Tile IR, IR diagnoser on each failing variant."""
    input:
        op_inputs,
        write="results/{op}/attempts/{kernel}/{n}/write.json",
        rust="results/{op}/attempts/{kernel}/{n}/rust/src/{kernel}.rs",
        ref=lambda wc: [f"results/{wc.op}/ref/{wc.kernel}/{v}.{ext}"
                        for v in variants_of(wc.op, wc.kernel) for ext in ("tileir", "json")],
        template=["rust/port-template/Cargo.toml", "rust/port-template/Cargo.lock", "rust/irdump.rs"],
        prompt=lambda wc: ([] if config["roles"]["ir_diagnoser"] == "deterministic"
                           else [str(Path(workflow.basedir) / "prompts" / "ir_diagnoser.md")]),
        code=code("route", "rust_ir", "ir_diff", "ir_diagnose", "ir_locs", "toolchain", "agents"),
    output:
        verdict="results/{op}/attempts/{kernel}/{n}/check.json",
    log:
        "results/{op}/logs/check_kernel/{kernel}/{n}.log",
    params:
        tools=config["tools"],
        op_dir=op_dir,
        target=config["gpu_target"],
        variants=lambda wc: variants_of(wc.op, wc.kernel),
        diagnoser=config["roles"]["ir_diagnoser"],
        # what changes an LLM diagnoser's reply reruns the check (as for the writer)
        llm=lambda wc: {} if config["roles"]["ir_diagnoser"] == "deterministic" else {
            k: config["llm"].get(k) for k in ("model", "max_tokens", "temperature", "effort")},
    retries: retries("check_kernel")
    resources:
        attempt=lambda wc, attempt: attempt,
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/check_kernel.py"


checkpoint route:
    """Where writer attempt {n} goes next: accept / retry (attempt n+1) / stop (cap, env, blocked)."""
    input:
        check="results/{op}/attempts/{kernel}/{n}/check.json",
        code=code("route"),
    output:
        route="results/{op}/attempts/{kernel}/{n}/route.json",
    log:
        "results/{op}/logs/route/{kernel}/{n}.log",
    params:
        tools=config["tools"],
        backend=config["roles"]["kernel_writer"],
        cap=config["attempts"]["write_kernel"],
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/route.py"


rule accept_kernel:
    """Publish the attempt the routes led to as the operator's kernel (read by every later stage)."""
    input:
        unpack(routed_attempt),
        code=code("route"),
    output:
        rust="results/{op}/rust/src/{kernel}.rs",
        source_map="results/{op}/rust/src/{kernel}.rs.map.json",
        verdict="results/{op}/write_kernel/{kernel}.json",
    log:
        "results/{op}/logs/accept_kernel/{kernel}.log",
    params:
        tools=config["tools"],
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/accept_kernel.py"
