# tileport -- the two commands of the README:
#   make run    install what is missing (idempotent), then run the main job
#   make test   install what is missing, then run the test suite
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.lock | cut -c1-12)
CORES ?= all
# GPU jobs at once on this machine (1: a benchmark never shares the GPU with another GPU job)
GPUS ?= 1

.PHONY: run test test-slurm test-nvidia install system-deps

run: install
	$(VENV)/bin/snakemake --cores $(CORES) results/summary.csv --resources gpu=$(GPUS)
	@# Snakemake 9 may leave jobs behind chained checkpoints (route -> gpu_route) for a next run
	@# after it updates the DAG (snakemake/snakemake#3862): finish them, at most twice more
	@for pass in 2 3; do \
	  $(VENV)/bin/snakemake -n --cores $(CORES) results/summary.csv 2>&1 | grep -q "Nothing to be done" && break; \
	  echo "tileport: jobs left after the run (chained checkpoints): pass $$pass"; \
	  $(VENV)/bin/snakemake --cores $(CORES) results/summary.csv --resources gpu=$(GPUS) || exit 1; \
	done
	@$(PY) -m tileport.summary results/summary.csv

test: install
	$(PY) -m pytest -q tests

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

# libclang for cutile's bindgen (Debian libclang-dev); cargo must already be on the machine.
system-deps:
	@command -v cargo >/dev/null || { echo "tileport: cargo not found (install Rust >= 1.89)" >&2; exit 1; }
	@if ! ldconfig -p | grep -q 'libclang[-.0-9]*\.so'; then \
	  echo "tileport: installing libclang-dev (Debian) for cutile's bindgen"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q libclang-dev; \
	fi

$(STAMP): requirements.lock
	@python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "tileport: needs Python >= 3.11 as python3" >&2; exit 1; }
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.lock
	@rm -f $(VENV)/.installed-* && touch $@
