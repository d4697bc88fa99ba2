# The mutation study (issue 36): how often each check catches a wrong port. CPU rules: mutation
# (per kernel), mutation_host (per kernel: the mutants' host library), mutation_summary (one); GPU rule: mutation_gpu (NOT_RUN without a GPU).
# Target: results/mutation/summary.csv. Logic: tileport/cpu/mutation.py, tileport/report/mutation.py.


rule mutation:
    """Mutants of one kernel's accepted port, each compiled and run past tileport's IR diff, the run-time pair, the SASS verdict and a grep-count check (CPU)."""
    input:
        op_inputs,
        build="results/{op}/rust/build.json",
        ref="results/{op}/ref",
        ir_diff="results/{op}/ir_diff/{kernel}",
        runtime="results/{op}/runtime",
    output:
        verdict="results/mutation/{op}/{kernel}.json",
        work=directory("results/mutation/{op}/{kernel}"),
    log:
        "results/{op}/logs/mutation/{kernel}.log",
    conda:
        "../envs/tileport.yaml"
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("mutation"),
        variants=lambda wc: variants_of(wc.op, wc.kernel),
        # the CPU study's settings only: the GPU column's (gpu_*) do not rerun it
        settings={k: v for k, v in config["mutation"].items() if not k.startswith("gpu_")},
        tools=config["tools"],
        op_dir=op_dir,
        target=config["gpu_target"],
    script:
        "../scripts/mutation.py"


rule mutation_host:
    """The kernel's compiling mutants (and the unmutated port m000) as one host library, each under its own shim symbols (tp_<op>__<mid>__<entry>), built with the committed host Cargo.lock (CPU)."""
    input:
        study="results/mutation/{op}/{kernel}.json",
        work="results/mutation/{op}/{kernel}",
        ffi="results/{op}/host/ffi.json",
        template="rust/host-template/Cargo.lock",
        abi="rust/host/abi.rs",
    output:
        verdict="results/mutation/{op}/{kernel}.host.json",
        host=directory("results/mutation/{op}/{kernel}.host"),
    log:
        "results/{op}/logs/mutation_host/{kernel}.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=code("mutation_host"),
        tools=config["tools"],
    script:
        "../scripts/mutation_host.py"


rule mutation_gpu:
    """The mutants' numeric test on a GPU (test shapes and unseen shapes), launched from the mutant host library: NOT_RUN without a GPU. It asks for no GPU resource: on a GPU node run python -m tileport.gpu.mutation_test --gpu required (docs/mutation-study.md)."""
    input:
        op_inputs,
        study="results/mutation/{op}/{kernel}.json",
        host="results/mutation/{op}/{kernel}.host.json",
        library="results/mutation/{op}/{kernel}.host",
    output:
        verdict="results/mutation/{op}/{kernel}.gpu.json",
    log:
        "results/{op}/logs/mutation_gpu/{kernel}.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=code("mutation_gpu"),
        tools=config["tools"],
        op_dir=op_dir,
        settings={k: v for k, v in config["mutation"].items() if k.startswith("gpu_")},
        seed=config["bench"]["seed"],
    script:
        "../scripts/mutation_gpu.py"


rule mutation_summary:
    """The study's tables: one row per mutant (summary.csv), catch rates per detector and kind, single-detector catches, false-positive rates (study.json, LaTeX), and the figure."""
    input:
        # every kernel of every operator whose manifest loads, as the other per-kernel rules
        studies=[f"results/mutation/{op}/{k}.json" for op in GPU_OPS for k in kernels_of(op)],
        gpu=[f"results/mutation/{op}/{k}.gpu.json" for op in GPU_OPS for k in kernels_of(op)],
    output:
        csv="results/mutation/summary.csv",
        study="results/mutation/study.json",
        tex="results/paper/mutation.tex",
        tex_csv="results/paper/mutation.csv",
        tex_html="results/paper/mutation.html",
        fig=report(
            "results/paper/figures/mutation.svg",
            caption="../report/figure_mutation.rst",
            category="Mutation study",
            labels={"figure": "catch rate per kind and detector"},
        ),
    log:
        "results/logs/mutation_summary.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=code("mutation_summary"),
    script:
        "../scripts/mutation_summary.py"


localrules:
    mutation_gpu,
    mutation_summary,
