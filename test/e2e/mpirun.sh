#!/usr/bin/env bash
# mpirun for tests: each run gets its own OpenMPI session directory, so that
# tests running in parallel never race on the shared one in /tmp (which
# shows up as "ORTE_ERROR_LOG ... session_dir.c"). As root it needs
# --allow-run-as-root; tests use more ranks than cores; -q drops help banners
# so that the model's own error lines are what tests see.
set -u
session=$(mktemp -d "${TMPDIR:-/tmp}/pcc-mpirun.XXXXXX")
trap 'rm -rf "$session"' EXIT
flags=(--oversubscribe -q --mca orte_tmpdir_base "$session")
if [ "$(id -u)" -eq 0 ]; then flags+=(--allow-run-as-root); fi
# Containers often forbid the cross-process memory copies OpenMPI's shared
# memory transport tries first; plain copies work everywhere.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun "${flags[@]}" "$@"
