rule bench:
    """CUPTI benchmark: reference, port and torch interleaved per perf config -> bench.csv + verdict."""
    input:
        op_inputs,
        reference=op_reference,
        analysis="results/{op}/analysis.json",
        ffi_json="results/{op}/host/ffi.json",
        # benchmark only what the functional test checked
        test="results/{op}/test.json",
        library=ancient("results/host/libtileport_host.so"),
        host_build=ancient("results/host/build.json"),
        code=code("bench", "harness", "ffi", "cupti", "stats", "gpu_test"),
    output:
        csv="results/{op}/bench.csv",
        verdict="results/{op}/bench.json",
    log:
        "results/{op}/logs/bench.log",
    params:
        tools=config["tools"],
        op_dir=op_dir,
        # what changes a measurement (not gpu mode or threshold: the scripts read those from
        # snakemake.config, so switching them never reruns -- and wipes -- a GPU result)
        bench={k: v for k, v in config["bench"].items() if k != "threshold"},
    retries: retries("bench")
    resources:
        gpu=1,
        attempt=lambda wc, attempt: attempt,
    conda:
        "../envs/tileport.yaml"
    script:
        "../scripts/bench.py"
