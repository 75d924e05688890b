#!/usr/bin/env bash
# Nightly sweep on a Ray cluster, then a diff against the previous night, the history of
# every night, and a gate on the expected results a team checks in.
#
# Runs as the entrypoint of a Ray job (the RayCronJob in raycronjob.yaml, or
# `ray job submit -- bash configs/cluster/nightly.sh`). Only this driver writes the
# results, so only the head pod needs the shared results volume. A retried or re-run job
# for the same night resumes the same folder: every model is recorded exactly once.
#
# Settings (environment): SWEEP_RESULTS (shared folder), SWEEP_DEVICE, SWEEP_TOP,
# SWEEP_TIMEOUT, SWEEP_EXTRA (more sweep flags, e.g. "--catalog /data/hub.csv"),
# SWEEP_CACHE (the check cache shared by the nights; default: a cache folder beside them, so
# a night re-runs only the checks whose fingerprint changed), SWEEP_EXPECTED (an
# expected-results CSV written by `sweep expect`: the job fails when a model does worse
# than it; unset: no gate), SWEEP_RECHECK (a percentage of the checks the cache answers
# to run again, so that a verdict that flips under the same fingerprint is seen: the
# history's flake rate; unset: none), SWEEP_NIGHT (the night's folder name; default: today, UTC).
#
# Token authentication: the sweep joins the cluster (--address auto) with the token Ray's
# clients read: RAY_AUTH_TOKEN (KubeRay sets it, with RAY_AUTH_MODE=token, in every Ray
# container of a cluster with `authOptions: {mode: token}`), else RAY_AUTH_TOKEN_PATH,
# else ~/.ray/auth_token. This script passes it on only through that environment: never
# as a flag, never into a file.
set -euo pipefail

results="${SWEEP_RESULTS:-/results}/${SWEEP_DEVICE:-trnsim}"
night="${SWEEP_NIGHT:-$(date -u +%Y-%m-%d)}"
out="${results}/${night}"
mkdir -p "${results}"

# The latest earlier night that finished (has a report), if any.
previous="$(find "${results}" -mindepth 1 -maxdepth 1 -type d -name '20*' ! -name "${night}" \
    -exec test -e '{}/report.md' ';' -print | sort | tail -n 1)"

# shellcheck disable=SC2086  # SWEEP_EXTRA holds several flags on purpose
sweep --top "${SWEEP_TOP:-1000}" --device "${SWEEP_DEVICE:-trnsim}" \
    --executor ray --address auto \
    --timeout "${SWEEP_TIMEOUT:-600}" --retries 2 \
    --cache "${SWEEP_CACHE:-${results}/cache}" ${SWEEP_RECHECK:+--recheck "${SWEEP_RECHECK}"} \
    --out "${out}" --quiet ${SWEEP_EXTRA:-}

if [[ -n "${previous}" ]]; then
    sweep diff "${previous}" "${out}" > "${out}/diff.md"
    echo "diff against ${previous}: ${out}/diff.md"
fi
ln -sfn "${out}" "${results}/latest"

# Every night so far: history.md and history.html beside tonight's index.html.
sweep history "${results}" --out "${out}"

# The gate: exit 1 when a model does worse than the checked-in expectation (tonight's
# folder keeps what it said: which model, why, and the baseline lines to change).
if [[ -n "${SWEEP_EXPECTED:-}" ]]; then
    status=0
    sweep diff --expected "${SWEEP_EXPECTED}" "${out}" > "${out}/expected.txt" || status=$?
    cat "${out}/expected.txt"
    exit "${status}"
fi
