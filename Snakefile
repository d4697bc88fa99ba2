# tileport: port cuTile Python operators to cuTile Rust and prove each port faithful.
# Main job: snakemake --cores all results/summary.csv   (see README.md)
from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "rules/common.smk"


wildcard_constraints:
    op="[a-z][a-z0-9_]*",
    kernel="[A-Za-z_][A-Za-z0-9_]*",
    variant="[A-Za-z0-9_-]+",
    n="[1-9][0-9]*",
    r="[1-9][0-9]*",
    # where a stage's files live: results/ (round 1) or a later GPU round's tree
    root="results|results/[a-z][a-z0-9_]*/rounds/[1-9][0-9]*",


include: "rules/import_source.smk"
include: "rules/analyze.smk"
include: "rules/reference_ir.smk"
include: "rules/write_kernel.smk"
include: "rules/route.smk"
include: "rules/rust_ir.smk"
include: "rules/runtime_ir.smk"
include: "rules/nv_port.smk"
include: "rules/host.smk"
include: "rules/gpu_test.smk"
include: "rules/bench.smk"
include: "rules/perf_diagnose.smk"
include: "rules/summary.smk"
include: "rules/report.smk"
include: "rules/mutation.smk"


# every job is a new Python process importing tileport: its bytecode written once, before the
# jobs (tileport.core.toolchain.compile_bytecode), not compiled again by each job
onstart:
    tp_toolchain.compile_bytecode(workflow.basedir)


# cheap and many (verdict collection): on a cluster they run on the submit host, not as jobs
localrules:
    all,
    import_source,
    summary,
    accept_kernel,
    gpu_route,
    round_start,
    round_kernel,
    final_round,
    perf_diagnose,


rule all:
    default_target: True
    input:
        "results/summary.csv",


# every rule is defined: a profile's set-resources / set-threads may name only these
check_profile_rule_names()
