rule gpu_test:
    """GPU functional test: port vs cuTile Python reference vs PyTorch semantics, every variant x test shape."""
    input:
        op_inputs,
        reference=op_reference,
        analysis="{root}/{op}/analysis.json",
        ffi_rs="{root}/{op}/host/ffi.rs",
        ffi_json="{root}/{op}/host/ffi.json",
        kernels=lambda wc: [f"{wc.root}/{wc.op}/rust/src/{k}.rs" for k in kernels_of(wc.op)],
        # the shared library is rebuilt when any operator changes: its mtime must not rerun the
        # other operators' GPU stages (the stage checks that the library holds this operator's
        # current sources by hash)
        library=ancient("{root}/host/libtileport_host.so"),
        host_build=ancient("{root}/host/build.json"),
        # NVIDIA's shipped port of the operator's kernels, when it imports ones NVIDIA ported
        nv=nv_gpu_inputs,
    output:
        verdict="{root}/{op}/test.json",
    log:
        "{root}/{op}/logs/gpu_test.log",
    retries: retries("gpu_test")
    conda:
        "../envs/tileport.yaml"
    resources:
        gpu=gpu_count("gpu_test"),
        attempt=lambda wc, attempt: attempt,
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("gpu_test"),
            # the content of the operator's files it reads: a change reruns it whatever the mtime
            content=content_of(op_inputs, op_reference),
            tools=config["tools"],
            op_dir=op_dir,
            seed=config["bench"]["seed"],
        ),
        io=job_io,
    shell:
        stage_command("gpu_test")
