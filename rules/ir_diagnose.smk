rule ir_diagnose:
    """IR diagnoser (deterministic): source lines + advice for each critical IR-diff finding."""
    input:
        op_inputs,
        diff="{root}/{op}/ir_diff/{kernel}/{variant}.json",
        rust="{root}/{op}/rust/src/{kernel}.rs",
        source_map="{root}/{op}/rust/src/{kernel}.rs.map.json",
        code=code("ir_diagnose"),
    output:
        verdict="{root}/{op}/diagnosis/{kernel}/{variant}.json",
    log:
        "{root}/{op}/logs/ir_diagnose/{kernel}/{variant}.log",
    retries: retries("ir_diagnose")
    conda:
        "../envs/tileport.yaml"
    resources:
        attempt=lambda wc, attempt: attempt,
    params:
        # the content of the operator's files it reads: a change reruns it whatever the mtime
        content=content_of(op_inputs),
        tools=config["tools"],
        op_dir=op_dir,
    script:
        "../scripts/ir_diagnose.py"
