#!/bin/bash
# Trim the checkout's working tree to what a GPU call needs: the device tool sends the tracked and
# untracked-not-ignored files plus the carried .gpu (57 MiB of it the cu13 toolchain), 64 MiB in all.
# Keeps tileport/, schemas, config and the operators named in .gpu/pending.tsv. Undo: git checkout -- .
cd "$(git rev-parse --show-toplevel)" || exit 1
KEEP=" $(cut -f1 .gpu/pending.tsv | tr '\n' ' ') "
rm -rf docs tests benchmarks report prompts rust rules scripts profiles envs Makefile README.md Snakefile .ci
for o in operators/*; do n=$(basename "$o"); case "$KEEP" in *" $n "*) ;; *) rm -rf "$o";; esac; done
{ git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 cat 2>/dev/null | wc -c
du -sb .gpu
