rule import_source:
    """Importer: the operator's cuTile Python kernels read as text (ast, never imported) from the
    installed wheel its manifest's `source:` names, with the helpers and module-level names they
    use, into results/{op}/src/kernel.py (+ line map, verdict PASS/BLOCKED/ERROR)."""
    input:
        manifest=lambda wc: str(OPERATORS_DIR / wc.op / "manifest.yaml"),
        # the wheel's files it reads: a new pin reruns the operators whose files changed
        wheel=source_files,
    output:
        kernel="results/{op}/src/kernel.py",
        source_map="results/{op}/src/kernel.py.map.json",
        verdict="results/{op}/src/import.json",
    log:
        "results/{op}/logs/import_source.log",
    conda:
        "../envs/tileport.yaml"
    params:
        job=job_params(
            # the code the job runs (its import closure), by content: an edit reruns it
            code=code("import_source"),
            # the content of the operator's files it reads: a change reruns it whatever the mtime
            content=content_of(lambda wc: [str(OPERATORS_DIR / wc.op / "manifest.yaml")]),
            tools=config["tools"],
            op_dir=op_dir,
            # read when the job runs (the wheel's sha256 for kernel.py's header), not an input: a new
            # pin alone reruns nothing; the reinstalled files that changed do
            pin=SOURCES_PIN,
        ),
        io=job_io,
    shell:
        stage_command("import_source", attempt=False)
