rule bench:
    """CUPTI benchmark: reference, port and torch interleaved per perf config -> bench.csv + verdict."""
    input:
        op_inputs,
        reference=op_reference,
        analysis="{root}/{op}/analysis.json",
        ffi_json="{root}/{op}/host/ffi.json",
        # benchmark only what the functional test checked
        test="{root}/{op}/test.json",
        library=ancient("{root}/host/libtileport_host.so"),
        host_build=ancient("{root}/host/build.json"),
        # NVIDIA's shipped port of the operator's kernels, when it imports ones NVIDIA ported
        nv=nv_gpu_inputs,
    output:
        csv="{root}/{op}/bench.csv",
        verdict="{root}/{op}/bench.json",
    log:
        "{root}/{op}/logs/bench.log",
    retries: retries("bench")
    conda:
        "../envs/tileport.yaml"
    resources:
        gpu=gpu_count("bench"),
        attempt=lambda wc, attempt: attempt,
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("bench"),
            # the content of the operator's files it reads: a change reruns it whatever the mtime
            content=content_of(op_inputs, op_reference),
            tools=config["tools"],
            op_dir=op_dir,
            # what changes a measurement (not gpu mode or the thresholds: the scripts read those from
            # snakemake.config, so switching them never reruns -- and wipes -- a GPU result)
            bench={k: v for k, v in config["bench"].items() if k not in ("threshold", "loop_threshold")},
        ),
        io=job_io,
    shell:
        stage_command("bench")
