# tileport -- the two commands of the README:
#   make run    install what is missing (idempotent), then run the main job
#   make test   install what is missing, then make lint, then run the test suite
#   make lint   the static checks alone (ruff, snakefmt --check, snakemake --lint)
# and a third for papers:
#   make report the run's figures and LaTeX tables (results/paper/) and Snakemake's report
#               (results/report.html; make report REPORT=results/report.zip for a zip)
#   make publish  the same from a published run's measurements (PUBLISHED=docs/results/h200)
SHELL := /bin/bash
# One virtual environment per machine, Python and pinned requirements, shared by every clone
# there (the cargo target and the Tile IR / SASS caches are too): cuda-tile's debug locations
# name its own files, so a clone with its own environment exported every reference again and
# compiled the SASS of those that inline its helpers again. `.venv` in the checkout links to it.
# VENV=.venv (or any folder) keeps one of the checkout's own.
# Where it lies is tileport.core.toolchain.shared_env's answer (stdlib only, so the machine's
# python3 runs it before any install).
ifeq ($(origin VENV),undefined)
VENV := $(shell python3 -c 'from tileport.core.toolchain import shared_env; print(shared_env())')
endif
$(if $(VENV),,$(error tileport: python3 (>= 3.11) could not name the environment: see the error above))
PY := $(VENV)/bin/python
# the environment is named by the content of what is installed in it: a stamp per folder
STAMP := $(VENV)/.installed
$(if $(word 2,$(VENV)),$(error tileport: the environment's path has a space, which make cannot quote: '$(VENV)' (set XDG_CACHE_HOME or VENV to a path without one)))
CORES ?= all
# GPU jobs at once on this machine (1: a benchmark never shares the GPU with another GPU job)
GPUS ?= 1
# Snakemake's scheduler looks at twice as many ready jobs per selection as the machine has cores,
# not at all of them: before each selection it re-evaluates the params and stats the inputs of
# every ready job it looks at, which for the whole corpus (hundreds ready at once) cost more than
# the jobs (2026-12-06, the corpus rerun in place on 2 cores: 775 s looking at all, 647 s at 32,
# 555 s at 8, 509 s at 4; docs/architecture.md#jobs-and-their-cost). Local runs only: on a
# cluster (--profile profiles/slurm) it would cap the jobs submitted per round.
SCHED ?= --scheduler-subsample $(shell echo $$(( 2 * $$(nproc) )))

# Snakemake's report: one self-contained HTML page (or .zip) with every figure and table
REPORT ?= results/report.html

.PHONY: run test lint test-slurm test-nvidia install system-deps report test-deps publish

run: install
	@# a run killed earlier (SIGKILL, SIGHUP) leaves Snakemake's lock: removed when no Snakemake
	@# process works here any more, never under a live run (tileport/core/runlock.py)
	@$(PY) -m tileport.core.runlock --snakemake $(VENV)/bin/snakemake
	@# a routing record (checkpoint output) deleted by hand: Snakemake would not rebuild it;
	@# rebuild just those files first (tileport/flow/route_files.py)
	@missing=$$($(PY) -m tileport.flow.route_files results); if [ -n "$$missing" ]; then \
	  echo "tileport: rebuilding missing routing records:" $$missing; \
	  $(VENV)/bin/snakemake --cores $(CORES) $$missing $$($(PY) -m tileport.flow.route_files --rebuild-args config.yaml) || exit 1; \
	fi
	@# an operator's results deleted after the summary was written: Snakemake would report
	@# nothing to be done (snakemake/snakemake#3879); build their final rounds as targets first
	@gone=$$($(PY) -m tileport.flow.route_files --operators results); if [ -n "$$gone" ]; then \
	  echo "tileport: rebuilding deleted operators' results:" $$gone; \
	  $(VENV)/bin/snakemake --cores $(CORES) $$gone $(SCHED) --resources gpu=$(GPUS) || exit 1; \
	fi
	$(VENV)/bin/snakemake --cores $(CORES) results/summary.csv $(SCHED) --resources gpu=$(GPUS)
	@# Snakemake 9 may leave jobs behind chained checkpoints (check_kernel -> gpu_route, where a
	@# route may retry) for a next run after it updates the DAG (snakemake/snakemake#3862): finish
	@# them, at most twice more; not after a run whose log (the newest) shows no such update
	@log=$$(ls -t .snakemake/log/*.snakemake.log 2>/dev/null | head -1); \
	if [ -n "$$log" ] && ! grep -q "Updating checkpoint dependencies" "$$log"; then exit 0; fi; \
	for pass in 2 3; do \
	  $(VENV)/bin/snakemake -n --cores $(CORES) results/summary.csv 2>&1 | grep -q "Nothing to be done" && break; \
	  echo "tileport: jobs left after the run (chained checkpoints): pass $$pass"; \
	  $(VENV)/bin/snakemake --cores $(CORES) results/summary.csv $(SCHED) --resources gpu=$(GPUS) || exit 1; \
	done
	@$(PY) -m tileport.report.summary results/summary.csv
	@$(PY) -m tileport.report.coverage results/summary.csv --out results/coverage.md >/dev/null \
	  && echo "tileport: every TileGym @ct.kernel and how far it got: results/coverage.md"

# pytest workers (pytest-xdist): CI has 2 cores. A test file runs whole on one worker
# (--dist loadfile), so a module's shared fixture (a workflow run, a crate build) is built once;
# tests/conftest.py's scheduler keeps test_host.py and test_ffi.py on one worker (they share the
# host library fixture) and sends the longest files out first, so both workers finish together;
# cargo builds of both workers take turns on the shared target dir's lock. TEST_JOBS=0: one process.
TEST_JOBS ?= 2

test: install lint test-deps
	$(PY) -m pytest -q -n $(TEST_JOBS) --dist loadfile tests

# the static checks (make test runs them first; a finding fails the target). Each runs even when
# an earlier one found something, so one run shows every finding:
#   ruff check        the Python of tileport/, scripts/ and tests/ (rules and exclusions: ruff.toml)
#   snakefmt --check  the Snakefile and rules/*.smk are formatted as snakefmt (and black, for the
#                     Python inside them) would write them (line length: pyproject.toml
#                     [tool.snakefmt]); to reformat: $(VENV)/bin/snakefmt Snakefile rules/*.smk
#   snakemake --lint  Snakemake's own advice on the workflow (a rule without log:, a path built by
#                     string concatenation, ...); it loads the workflow as a run would (config.yaml),
#                     with a failing scontrol first on PATH: Slurm's executor plugin otherwise asks a
#                     controller for its config at import, 9 s where Slurm's client has no
#                     controller (docs/configuration.md), as the tests do (tests/conftest.py)
# the venv's bin/ first on PATH: snakefmt formats shell: directives with the shfmt of the venv
lint: install
	@rc=0; export PATH="$(abspath $(VENV))/bin:$$PATH"; \
	echo "tileport lint: ruff check tileport scripts tests"; \
	$(VENV)/bin/ruff check tileport scripts tests || rc=1; \
	echo "tileport lint: snakefmt --check Snakefile rules/*.smk"; \
	$(VENV)/bin/snakefmt --check Snakefile rules/*.smk || rc=1; \
	echo "tileport lint: snakemake --lint"; \
	noslurm=$$(mktemp -d); printf '#!/bin/sh\nexit 1\n' > $$noslurm/scontrol; chmod +x $$noslurm/scontrol; \
	PATH="$$noslurm:$$PATH" $(VENV)/bin/snakemake --lint || rc=1; rm -rf $$noslurm; \
	if [ $$rc != 0 ]; then echo "tileport lint: failed (findings above)" >&2; fi; \
	exit $$rc

# the report: the main job, then the figure and table rules, then Snakemake's report page --
# rebuilt only when a figure, a table, a caption or the report rules changed (a rerun with
# nothing changed does nothing)
report: run
	$(VENV)/bin/snakemake --cores $(CORES) paper --resources gpu=$(GPUS)
	@$(MAKE) --no-print-directory $(REPORT)

results/report.html results/report.zip: $(wildcard results/paper/*.* results/paper/figures/* results/report/tables/*) \
		$(wildcard report/*.rst) rules/report.smk
	$(VENV)/bin/snakemake --report $@ paper

# a published run (docs/results/<run>/): its committed GPU measurements copied into results/ (only
# where they differ, test.json before bench.*, so a rerun changes nothing; an operator tested but
# not benchmarked holds test.json alone), the report built from
# them, and its figures, tables, summaries and report page copied back into the folder
PUBLISHED ?= docs/results/h200
publish:
	$(MAKE) --no-print-directory run
	@for d in $(PUBLISHED)/ops/*/; do op=$$(basename $$d); test -d results/$$op || { echo "tileport: $$op is not an operator of this checkout" >&2; exit 1; }; \
	  for f in test.json bench.json bench.csv; do test -f $$d/$$f || continue; cmp -s $$d/$$f results/$$op/$$f || cp $$d/$$f results/$$op/$$f; done; done
	$(MAKE) --no-print-directory report
	mkdir -p $(PUBLISHED)/paper
	cp -r results/paper/. $(PUBLISHED)/paper/
	cp results/summary.csv results/summary_ops.csv $(REPORT) $(PUBLISHED)/
	@for d in $(PUBLISHED)/ops/*/; do cp results/$$(basename $$d)/perf_diagnosis.json $$d; done

# what the report's tests use: Debian's chromium (headless check of results/report.html) and
# pdfLaTeX with booktabs (the tables compile); measured on a 2-core machine: about 35 s and
# 60 s of apt-get install when missing
test-deps:
	@if ! command -v chromium >/dev/null || ! command -v pdflatex >/dev/null || ! kpsewhich booktabs.sty >/dev/null 2>&1; then \
	  echo "tileport: installing chromium, texlive-latex-base and texlive-latex-recommended (Debian) for the report's tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends \
	    chromium texlive-latex-base texlive-latex-recommended; \
	fi

# the cluster test (CI runs it after make test): a real one-node Slurm cluster on this machine
# (installs Debian's slurm-wlm + munge, needs root or sudo), the workflow through profiles/slurm
test-slurm: install
	.ci/slurm-cluster up
	$(PY) -m pytest -q -p no:cacheprovider tests/test_slurm.py --slurm; rc=$$?; .ci/slurm-cluster down; exit $$rc

# slow, not part of make test: builds NVIDIA's shipped crate (tilegym ops/cutile_rs) with cutile 0.2.0
# and with tileport's pin, in its own cargo target dirs (about 2 min per pin set cold on 2 idle cores,
# under a minute warm), and runs the IR dump + IR diff of one of its kernels against the reference
test-nvidia: install
	$(PY) -m pytest -q tests/test_nv_port.py --nvidia

install: system-deps $(STAMP)
	@# the checkout's .venv links to the shared environment; a folder of its own (made before) is
	@# left alone, said once per command: .venv/bin/snakemake there runs another environment
	@if [ "$(abspath $(VENV))" != "$(abspath .venv)" ]; then \
	  if [ -L .venv ] || [ ! -e .venv ]; then ln -sfn "$(VENV)" .venv; \
	  else echo "tileport: .venv is a folder of its own, make uses $(VENV): remove .venv to have it linked there (or run make VENV=.venv)" >&2; fi; \
	elif [ -L .venv ]; then \
	  echo "tileport: VENV=.venv, but .venv links to $$(readlink .venv) (the shared environment): remove the link to make one in the checkout" >&2; exit 1; \
	fi

# libclang for cutile's bindgen (Debian libclang-dev); cargo must already be on the machine.
system-deps:
	@command -v cargo >/dev/null || { echo "tileport: cargo not found (install Rust >= 1.89)" >&2; exit 1; }
	@if ! ldconfig -p | grep -q 'libclang[-.0-9]*\.so'; then \
	  echo "tileport: installing libclang-dev (Debian) for cutile's bindgen"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q libclang-dev; \
	fi

# The stamp is written last, under a lock (two clones may install at once): an environment
# without it (an install killed or failed half-way) is made again from nothing, so a half-made
# one is never kept (pip's own cache makes that quick). requirements-sources.txt: hash-pinned,
# without dependencies (tileport reads these wheels' modules as text, never imports them).
$(STAMP):
	@python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "tileport: needs Python >= 3.11 as python3" >&2; exit 1; }
	@mkdir -p "$$(dirname "$(abspath $(VENV))")"
	@flock -n "$(abspath $(VENV)).lock" true || echo "tileport: waiting for another install into $(VENV)"
	@flock "$(abspath $(VENV)).lock" bash -c 'set -e; test -f "$@" && exit 0; \
	  echo "tileport: installing the pinned requirements into $(VENV)"; \
	  rm -rf "$(abspath $(VENV))"; python3 -m venv "$(VENV)"; \
	  "$(PY)" -m pip install -q --disable-pip-version-check -r requirements.lock; \
	  "$(PY)" -m pip install -q --disable-pip-version-check --no-deps --require-hashes -r requirements-sources.txt; \
	  touch "$@"'
