# check_kernel and gpu_route are checkpoints only where a route may say retry (an LLM writer or
# host builder with a cap above 1: tileport.flow.route.may_retry): after every checkpoint job
# Snakemake re-evaluates the jobs behind it and post-processes the whole DAG (296 times in a
# corpus run with the translator, where no route can retry). The two forms share one body.
CHECK_KERNEL = dict(
    input=dict(
        write="results/{op}/attempts/{kernel}/{n}/write.json",
        rust="results/{op}/attempts/{kernel}/{n}/rust/src/{kernel}.rs",
        # the reference Tile IR of every variant (<kernel>/<variant>.tileir + .json)
        ref="results/{op}/ref",
        template=["rust/port-template/Cargo.toml", "rust/port-template/Cargo.lock", "rust/irdump.rs"],
        prompt=lambda wc: (
            []
            if config["roles"]["ir_diagnoser"] == "deterministic"
            else [str(Path(workflow.basedir) / "prompts" / "ir_diagnoser.md")]
        ),
    ),
    output=dict(
        verdict="results/{op}/attempts/{kernel}/{n}/check.json",
        route="results/{op}/attempts/{kernel}/{n}/route.json",
    ),
    log="results/{op}/logs/check_kernel/{kernel}/{n}.log",
    job=job_params(
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("check_kernel"),
        # the content of the operator's files it reads: a change reruns it whatever the mtime
        content=content_of(op_inputs),
        tools=config["tools"],
        op_dir=op_dir,
        target=config["gpu_target"],
        variants=lambda wc: variants_of(wc.op, wc.kernel),
        diagnoser=config["roles"]["ir_diagnoser"],
        # the route's inputs beside check.json: the writer, and whether the cap decides this
        # attempt's route (tileport.flow.route.cap_decides: a cap change reruns that one check
        # alone, and none for the translator)
        backend=config["roles"]["kernel_writer"],
        at_cap=lambda wc: tp_route.cap_decides(
            config["roles"]["kernel_writer"], int(wc.n), config["attempts"]["write_kernel"]
        ),
        # what changes an LLM diagnoser's reply reruns the check (as for the writer)
        llm=lambda wc: (
            {}
            if config["roles"]["ir_diagnoser"] == "deterministic"
            else {k: config["llm"].get(k) for k in ("model", "max_tokens", "temperature", "effort")}
        ),
    ),
)

if ROUTES_MAY_RETRY["cpu"]:

    checkpoint check_kernel:
        """tileport's verdict on writer attempt {n}: cargo build, cutile Tile IR of every variant,
        structural diff against the reference Tile IR, IR diagnoser on each failing variant; then
        where the attempt goes next (route.json: accept / retry with attempt n+1 / stop: cap, env,
        blocked, a deterministic writer). One job for both (issue 32: the route was a job of its
        own, 196 process starts for a decision read off check.json)."""
        input:
            op_inputs,
            **CHECK_KERNEL["input"],
        output:
            **CHECK_KERNEL["output"],
        log:
            CHECK_KERNEL["log"],
        retries: retries("check_kernel")
        conda:
            "../envs/tileport.yaml"
        resources:
            attempt=lambda wc, attempt: attempt,
        params:
            job=CHECK_KERNEL["job"],
            io=job_io,
        shell:
            stage_command("check_kernel")

else:

    rule check_kernel:
        """As the checkpoint above, where no route can say retry (the translator, or a writer cap
        of 1): route.json says accept or stop, and accept_kernel reads attempt 1."""
        input:
            op_inputs,
            **CHECK_KERNEL["input"],
        output:
            **CHECK_KERNEL["output"],
        log:
            CHECK_KERNEL["log"],
        retries: retries("check_kernel")
        conda:
            "../envs/tileport.yaml"
        resources:
            attempt=lambda wc, attempt: attempt,
        params:
            job=CHECK_KERNEL["job"],
            io=job_io,
        shell:
            stage_command("check_kernel")


rule accept_kernel:
    """Publish the attempt the routes led to as the operator's kernel (read by every later stage)."""
    input:
        unpack(routed_attempt),
    output:
        rust="results/{op}/rust/src/{kernel}.rs",
        source_map="results/{op}/rust/src/{kernel}.rs.map.json",
        verdict="results/{op}/write_kernel/{kernel}.json",
        # the attempt's per-variant verdicts (check_kernel compiled and diffed it: never twice)
        rust_ir=directory("results/{op}/rust_ir/{kernel}"),
        ir_diff=directory("results/{op}/ir_diff/{kernel}"),
        diagnosis=directory("results/{op}/diagnosis/{kernel}"),
    log:
        "results/{op}/logs/accept_kernel/{kernel}.log",
    conda:
        "../envs/tileport.yaml"
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("accept_kernel"),
            tools=config["tools"],
            variants=lambda wc: variants_of(wc.op, wc.kernel),
        ),
        io=job_io,
    shell:
        stage_command("accept_kernel", attempt=False)


GPU_ROUTE = dict(
    prompt=lambda wc: (
        []
        if config["roles"]["ir_diagnoser"] == "deterministic"
        else [str(Path(workflow.basedir) / "prompts" / "ir_diagnoser.md")]
    ),
    job=job_params(
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("gpu_route"),
        tools=config["tools"],
        kernels=lambda wc: kernels_of(wc.op),
        writer=config["roles"]["kernel_writer"],
        cap=config["attempts"]["write_kernel"],
        host_builder=config["roles"]["host_builder"],
        host_cap=config["attempts"]["host_shim"],
        op_dir=op_dir,
        diagnoser=config["roles"]["ir_diagnoser"],
        # what changes an LLM IR diagnoser's reply reruns the route (as for check_kernel)
        llm=lambda wc: (
            {}
            if config["roles"]["ir_diagnoser"] == "deterministic"
            else {k: config["llm"].get(k) for k in ("model", "max_tokens", "temperature", "effort")}
        ),
    ),
)

if ROUTES_MAY_RETRY["gpu"]:

    checkpoint gpu_route:
        """Where GPU round {r} of an operator goes: accept / retry (a kernel's next writer attempt,
        tested in round r+1's own results tree) / stop (cap, env, not run, a deterministic role)."""
        input:
            unpack(round_inputs),
            prompt=GPU_ROUTE["prompt"],
        output:
            route="results/{op}/rounds/{r}/route.json",
        log:
            "results/{op}/logs/gpu_route/{r}.log",
        conda:
            "../envs/tileport.yaml"
        params:
            job=GPU_ROUTE["job"],
            io=job_io,
        shell:
            stage_command("gpu_route", attempt=False)

else:

    rule gpu_route:
        """As the checkpoint above, where no route can say retry (deterministic writer and host
        builder, or caps of 1): round 1's route says accept or stop."""
        input:
            unpack(round_inputs),
            prompt=GPU_ROUTE["prompt"],
        output:
            route="results/{op}/rounds/{r}/route.json",
        log:
            "results/{op}/logs/gpu_route/{r}.log",
        conda:
            "../envs/tileport.yaml"
        params:
            job=GPU_ROUTE["job"],
            io=job_io,
        shell:
            stage_command("gpu_route", attempt=False)


rule round_start:
    """GPU round {r} >= 2 gets the operator's analysis in its own results tree."""
    input:
        analysis="results/{op}/analysis.json",
        previous=lambda wc: f"results/{wc.op}/rounds/{int(wc.r) - 1}/route.json",
    output:
        analysis="results/{op}/rounds/{r}/{op}/analysis.json",
    log:
        "results/{op}/logs/round_start/{r}.log",
    conda:
        "../envs/tileport.yaml"
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("round_start"),
            tools=config["tools"],
        ),
        io=job_io,
    shell:
        stage_command("round_start", attempt=False)


rule round_kernel:
    """Publish the writer attempt GPU round {r} >= 2 tests into that round's results tree."""
    input:
        unpack(round_attempt),
        previous=lambda wc: f"results/{wc.op}/rounds/{int(wc.r) - 1}/route.json",
    output:
        rust="results/{op}/rounds/{r}/{op}/rust/src/{kernel}.rs",
        source_map="results/{op}/rounds/{r}/{op}/rust/src/{kernel}.rs.map.json",
        verdict="results/{op}/rounds/{r}/{op}/write_kernel/{kernel}.json",
        rust_ir=directory("results/{op}/rounds/{r}/{op}/rust_ir/{kernel}"),
        ir_diff=directory("results/{op}/rounds/{r}/{op}/ir_diff/{kernel}"),
        diagnosis=directory("results/{op}/rounds/{r}/{op}/diagnosis/{kernel}"),
    log:
        "results/{op}/logs/round_kernel/{r}/{kernel}.log",
    conda:
        "../envs/tileport.yaml"
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("accept_kernel"),
            tools=config["tools"],
            variants=lambda wc: variants_of(wc.op, wc.kernel),
        ),
        io=job_io,
    shell:
        stage_command("accept_kernel", attempt=False, rule="round_kernel")


rule final_round:
    """The operator's last GPU round (the routes followed from round 1): results/{op}/final.json."""
    input:
        unpack(final_inputs),
    output:
        final="results/{op}/final.json",
    log:
        "results/{op}/logs/final_round.log",
    conda:
        "../envs/tileport.yaml"
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("final_round"),
            tools=config["tools"],
        ),
        io=job_io,
    shell:
        stage_command("final_round", attempt=False)
