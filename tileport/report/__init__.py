"""The report for a paper: data read from the verdicts, figures (matplotlib), tables (LaTeX
booktabs, CSV, HTML) and the provenance of the measurements.

Built by ``rules/report.smk`` (``make report``), in three layers, each a file target:

* :mod:`tileport.report.data` -- tidy tables under ``results/report/data/`` read from
  ``summary.csv``, ``summary_ops.csv`` and the GPU verdicts (``bench.json``, ``test.json``) of
  each operator's last GPU round: per-config times, per-operator geomeans with bootstrap
  intervals (:mod:`tileport.report.interval`), kernel x stage coverage, LLM use, provenance;
* :mod:`tileport.report.figures` -- one module per figure, PDF + SVG + PNG under
  ``results/paper/figures/``;
* :mod:`tileport.report.tables` -- ``results/paper/<table>.tex`` / ``.csv`` and an HTML copy
  for Snakemake's report, numbers with three significant digits, times in µs.

:mod:`tileport.report.browser` renders the finished ``results/report.html`` in headless
Chromium (what a reader sees) and checks its figures.
"""
