# tileport -- the two commands of the README:
#   make run    install what is missing (idempotent), then run the main job
#   make test   install what is missing, then run the test suite
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.lock | cut -c1-12)
# the kernel sources tileport reads as text (tilegym): their own stamp, so a new pin reinstalls
# only them
SRC_STAMP := $(VENV)/.sources-$(shell sha1sum requirements-sources.txt | cut -c1-12)
CORES ?= all
# GPU jobs at once on this machine (1: a benchmark never shares the GPU with another GPU job)
GPUS ?= 1

.PHONY: run test test-slurm install system-deps

run: install
	@# a run killed earlier (SIGKILL, SIGHUP) leaves Snakemake's lock: removed when no Snakemake
	@# process works here any more, never under a live run (tileport/runlock.py)
	@$(PY) -m tileport.runlock --snakemake $(VENV)/bin/snakemake
	@# a routing record (checkpoint output) deleted by hand: Snakemake would not rebuild it;
	@# rebuild just those files first (tileport/route_files.py)
	@missing=$$($(PY) -m tileport.route_files results); if [ -n "$$missing" ]; then \
	  echo "tileport: rebuilding missing routing records:" $$missing; \
	  $(VENV)/bin/snakemake --cores $(CORES) $$missing --allowed-rules route gpu_route || exit 1; \
	fi
	$(VENV)/bin/snakemake --cores $(CORES) results/summary.csv --resources gpu=$(GPUS)
	@# Snakemake 9 may leave jobs behind chained checkpoints (route -> gpu_route) for a next run
	@# after it updates the DAG (snakemake/snakemake#3862): finish them, at most twice more
	@for pass in 2 3; do \
	  $(VENV)/bin/snakemake -n --cores $(CORES) results/summary.csv 2>&1 | grep -q "Nothing to be done" && break; \
	  echo "tileport: jobs left after the run (chained checkpoints): pass $$pass"; \
	  $(VENV)/bin/snakemake --cores $(CORES) results/summary.csv --resources gpu=$(GPUS) || exit 1; \
	done
	@$(PY) -m tileport.summary results/summary.csv
	@$(PY) -m tileport.coverage results/summary.csv --out results/coverage.md >/dev/null \
	  && echo "tileport: every TileGym @ct.kernel and how far it got: results/coverage.md"

test: install
	$(PY) -m pytest -q tests

# the cluster test (CI runs it after make test): a real one-node Slurm cluster on this machine
# (installs Debian's slurm-wlm + munge, needs root or sudo), the workflow through profiles/slurm
test-slurm: install
	.ci/slurm-cluster up
	$(PY) -m pytest -q -p no:cacheprovider tests/test_slurm.py --slurm; rc=$$?; .ci/slurm-cluster down; exit $$rc

install: system-deps $(STAMP) $(SRC_STAMP)

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

# hash-pinned, without dependencies: tileport reads these wheels' modules as text, never imports them
$(SRC_STAMP): requirements-sources.txt $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --require-hashes -r requirements-sources.txt
	@rm -f $(VENV)/.sources-* && touch $@
