# The report for a paper (make report): data read from the verdicts, one rule per figure and per
# table, all marked for Snakemake's report (snakemake --report results/report.html paper).
# Logic: tileport/report/ (build.py dispatches each rule); captions: report/*.rst.
from tileport.core import provenance as tp_provenance


report: "../report/workflow.rst"


RDATA = "results/report/data"
FIG = "results/paper/figures"
PAPER = "results/paper"
# the report modules every job runs (their edits rerun it); a figure job also imports its own
# figure module by name (tileport.report.build.FIGURE_MODULES)
REPORT_CODE = code("report")
GPU_CAT = "GPU stages (gpu_test, bench)"
COVERAGE_CAT = "Coverage (analyze ... bench)"


rule report_configs:
    """Per-config device, loop and host times of every operator's last GPU round (bench.json)."""
    input:
        summary="results/summary.csv",
        finals=summary_inputs,
    output:
        csv=f"{RDATA}/configs.csv",
    log:
        "results/logs/report/configs.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=REPORT_CODE,
        results=lambda wc, input: str(Path(input.summary).parent),
    script:
        "../scripts/report.py"


rule report_operators:
    """Per-operator geomean ratio with its 95 % bootstrap interval (and loop time and the loop
    gate's counts when measured)."""
    input:
        configs=f"{RDATA}/configs.csv",
        summary_ops="results/summary_ops.csv",
        # the loop gate's one definition (tileport.gpu.bench.loop_class)
    output:
        csv=f"{RDATA}/operators.csv",
    log:
        "results/logs/report/operators.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=REPORT_CODE,
        loop_threshold=config["bench"]["loop_threshold"],
    script:
        "../scripts/report.py"


rule report_coverage:
    """Kernel x stage verdicts (worst over each kernel's variants) from summary.csv."""
    input:
        summary="results/summary.csv",
    output:
        csv=f"{RDATA}/coverage.csv",
    log:
        "results/logs/report/coverage.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=REPORT_CODE,
        threshold=config["bench"]["threshold"],
    script:
        "../scripts/report.py"


rule report_llm:
    """LLM calls, tokens and writer attempts per kernel from summary.csv / summary_ops.csv."""
    input:
        summary="results/summary.csv",
        summary_ops="results/summary_ops.csv",
    output:
        csv=f"{RDATA}/llm.csv",
    log:
        "results/logs/report/llm.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=REPORT_CODE,
    script:
        "../scripts/report.py"


rule report_provenance:
    """Provenance recorded by the GPU stages in their verdicts, plus the CPU side's at report time."""
    input:
        summary="results/summary.csv",
        finals=summary_inputs,
    output:
        json=f"{RDATA}/provenance.json",
    log:
        "results/logs/report/provenance.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=REPORT_CODE,
        results=lambda wc, input: str(Path(input.summary).parent),
        threshold=config["bench"]["threshold"],
        # a changed configuration is a changed provenance
        config_sha256=tp_provenance.config_sha256(config),
    script:
        "../scripts/report.py"


rule figure_ratio:
    """The per-config ratio's distribution (ECDF), as launched and matched, with the +-1 % and
    +-2 % bands."""
    input:
        data=f"{RDATA}/configs.csv",
        provenance=f"{RDATA}/provenance.json",
    output:
        pdf=f"{FIG}/ratio.pdf",
        svg=report(
            f"{FIG}/ratio.svg",
            caption="../report/ratio.rst",
            category=GPU_CAT,
            subcategory="figures",
            labels={"figure": "ratio", "format": "SVG (PDF, PNG beside it)"},
        ),
        png=f"{FIG}/ratio.png",
    log:
        "results/logs/report/figure_ratio.log",
    conda:
        "../envs/tileport.yaml"
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("report", "report.figures.ratio"),
    script:
        "../scripts/report.py"


rule figure_times:
    input:
        data=f"{RDATA}/configs.csv",
        provenance=f"{RDATA}/provenance.json",
    output:
        pdf=f"{FIG}/times.pdf",
        svg=report(
            f"{FIG}/times.svg",
            caption="../report/times.rst",
            category=GPU_CAT,
            subcategory="figures",
            labels={"figure": "times", "format": "SVG (PDF, PNG beside it)"},
        ),
        png=f"{FIG}/times.png",
    log:
        "results/logs/report/figure_times.log",
    conda:
        "../envs/tileport.yaml"
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("report", "report.figures.times"),
    script:
        "../scripts/report.py"


rule figure_host_overhead:
    input:
        data=f"{RDATA}/configs.csv",
        provenance=f"{RDATA}/provenance.json",
    output:
        pdf=f"{FIG}/host_overhead.pdf",
        svg=report(
            f"{FIG}/host_overhead.svg",
            caption="../report/host_overhead.rst",
            category=GPU_CAT,
            subcategory="figures",
            labels={"figure": "host_overhead", "format": "SVG (PDF, PNG beside it)"},
        ),
        png=f"{FIG}/host_overhead.png",
    log:
        "results/logs/report/figure_host_overhead.log",
    conda:
        "../envs/tileport.yaml"
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("report", "report.figures.host"),
    script:
        "../scripts/report.py"


rule figure_coverage_matrix:
    input:
        data=f"{RDATA}/coverage.csv",
        provenance=f"{RDATA}/provenance.json",
    output:
        pdf=f"{FIG}/coverage_matrix.pdf",
        svg=report(
            f"{FIG}/coverage_matrix.svg",
            caption="../report/coverage_matrix.rst",
            category=COVERAGE_CAT,
            subcategory="figures",
            labels={"figure": "coverage_matrix", "format": "SVG (PDF, PNG beside it)"},
        ),
        png=f"{FIG}/coverage_matrix.png",
    log:
        "results/logs/report/figure_coverage_matrix.log",
    conda:
        "../envs/tileport.yaml"
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("report", "report.figures.coverage"),
    script:
        "../scripts/report.py"


rule figure_llm_roles:
    input:
        data=f"{RDATA}/llm.csv",
        provenance=f"{RDATA}/provenance.json",
    output:
        pdf=f"{FIG}/llm_roles.pdf",
        svg=report(
            f"{FIG}/llm_roles.svg",
            caption="../report/llm_roles.rst",
            category="LLM roles (write_kernel, diagnosers, host builder, analyser)",
            subcategory="figures",
            labels={"figure": "llm_roles", "format": "SVG (PDF, PNG beside it)"},
        ),
        png=f"{FIG}/llm_roles.png",
    log:
        "results/logs/report/figure_llm_roles.log",
    conda:
        "../envs/tileport.yaml"
    params:
        # the code the job runs (its import closure), by content: an edit reruns it
        code=code("report", "report.figures.llm"),
    script:
        "../scripts/report.py"


rule table_operators:
    input:
        data=f"{RDATA}/operators.csv",
        provenance=f"{RDATA}/provenance.json",
    output:
        tex=f"{PAPER}/operators.tex",
        csv=f"{PAPER}/operators.csv",
        html=report(
            f"results/report/tables/operators.html",
            caption="../report/table_operators.rst",
            category=GPU_CAT,
            subcategory="tables",
            labels={"table": "operators", "format": "HTML (LaTeX, CSV in results/paper/)"},
        ),
    log:
        "results/logs/report/table_operators.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=REPORT_CODE,
        loop_threshold=config["bench"]["loop_threshold"],
    script:
        "../scripts/report.py"


rule table_loop_gate:
    """Per config, the loop gate's evidence: the configs below the loop threshold or undecided,
    with loop ratio, interval, loop and host time per call, and the counts."""
    input:
        data=f"{RDATA}/configs.csv",
        provenance=f"{RDATA}/provenance.json",
    output:
        tex=f"{PAPER}/loop_gate.tex",
        csv=f"{PAPER}/loop_gate.csv",
        html=report(
            f"results/report/tables/loop_gate.html",
            caption="../report/table_loop_gate.rst",
            category=GPU_CAT,
            subcategory="tables",
            labels={"table": "loop_gate", "format": "HTML (LaTeX, CSV in results/paper/)"},
        ),
    log:
        "results/logs/report/table_loop_gate.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=REPORT_CODE,
        loop_threshold=config["bench"]["loop_threshold"],
    script:
        "../scripts/report.py"


rule table_outliers:
    """Every config outside parity +-3 % on either reading, with the cause perf_diagnose named."""
    input:
        data=f"{RDATA}/configs.csv",
        provenance=f"{RDATA}/provenance.json",
    output:
        tex=f"{PAPER}/outliers.tex",
        csv=f"{PAPER}/outliers.csv",
        html=report(
            f"results/report/tables/outliers.html",
            caption="../report/table_outliers.rst",
            category=GPU_CAT,
            subcategory="tables",
            labels={"table": "outliers", "format": "HTML (LaTeX, CSV in results/paper/)"},
        ),
    log:
        "results/logs/report/table_outliers.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=REPORT_CODE,
    script:
        "../scripts/report.py"


rule table_coverage:
    input:
        data=f"{RDATA}/coverage.csv",
        provenance=f"{RDATA}/provenance.json",
    output:
        tex=f"{PAPER}/coverage.tex",
        csv=f"{PAPER}/coverage.csv",
        html=report(
            f"results/report/tables/coverage.html",
            caption="../report/table_coverage.rst",
            category=COVERAGE_CAT,
            subcategory="tables",
            labels={"table": "coverage", "format": "HTML (LaTeX, CSV in results/paper/)"},
        ),
    log:
        "results/logs/report/table_coverage.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=REPORT_CODE,
    script:
        "../scripts/report.py"


rule table_provenance:
    input:
        provenance=f"{RDATA}/provenance.json",
    output:
        tex=f"{PAPER}/provenance.tex",
        csv=f"{PAPER}/provenance.csv",
        html=report(
            f"results/report/tables/provenance.html",
            caption="../report/table_provenance.rst",
            category="Provenance",
            subcategory="tables",
            labels={"table": "provenance", "format": "HTML (LaTeX, CSV in results/paper/)"},
        ),
    log:
        "results/logs/report/table_provenance.log",
    conda:
        "../envs/tileport.yaml"
    params:
        code=REPORT_CODE,
    script:
        "../scripts/report.py"


rule paper:
    """Every figure and table of the report (make report's target; then snakemake --report)."""
    input:
        expand(
            f"{FIG}/{{name}}.{{ext}}",
            name=["ratio", "times", "host_overhead", "coverage_matrix", "llm_roles"],
            ext=["pdf", "svg", "png"],
        ),
        expand(
            f"{PAPER}/{{name}}.{{ext}}",
            name=["operators", "loop_gate", "outliers", "coverage", "provenance"],
            ext=["tex", "csv"],
        ),
        expand(
            "results/report/tables/{name}.html",
            name=["operators", "loop_gate", "outliers", "coverage", "provenance"],
        ),


# cheap (seconds each): on a cluster they run on the submit host
localrules:
    paper,
    report_configs,
    report_operators,
    report_coverage,
    report_llm,
    report_provenance,
    figure_ratio,
    figure_times,
    figure_host_overhead,
    figure_coverage_matrix,
    figure_llm_roles,
    table_operators,
    table_loop_gate,
    table_outliers,
    table_coverage,
    table_provenance,
