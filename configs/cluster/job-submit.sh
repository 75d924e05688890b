#!/usr/bin/env bash
# Submit one sweep as a Ray job to a running cluster (any Ray cluster: KubeRay, VMs, a laptop).
#
#   RAY_ADDRESS=http://HEAD:8265 configs/cluster/job-submit.sh
#
# The working directory is shipped to the cluster; the nodes need sweeper's dependencies
# (the image in rayjob.yaml has them). The sweep runs on the head, so --out is a path there.
# Waits for the job and exits 1 when it fails.
#
# Settings (environment): RAY_ADDRESS (the cluster's jobs API), SWEEP_OUT (results folder
# on the head), SWEEP_DEVICE, SWEEP_TOP, SWEEP_TIMEOUT, SWEEP_EXTRA (more sweep flags, e.g.
# "--source zoo"), SWEEP_JOB_ID (the submission id), SWEEP_WORKING_DIR (what is shipped).
#
# Token authentication (on by default since Ray 2.59): Ray's clients read the cluster's
# token from RAY_AUTH_TOKEN, else the file RAY_AUTH_TOKEN_PATH names, else ~/.ray/auth_token
# (where `ray start` on this machine left it; `ray get-auth-token` on the head prints it).
# `ray job submit` sends it only with RAY_AUTH_MODE=token: set here when a token is at hand
# and the mode is unset. The token never goes into the job's runtime_env or command line
# (both are stored and shown by the cluster); the job runs on the head, whose environment
# already holds it.
set -euo pipefail

if [[ -z "${RAY_AUTH_MODE:-}" && ( -n "${RAY_AUTH_TOKEN:-}" || -n "${RAY_AUTH_TOKEN_PATH:-}" || -s "${HOME:-~}/.ray/auth_token" ) ]]; then
    export RAY_AUTH_MODE=token
fi

device="${SWEEP_DEVICE:-trnsim}"
# Nothing to pip-install: the nodes' own environment runs the sweep.
runtime_env='{"env_vars": {"RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "0"}}'

# shellcheck disable=SC2086  # SWEEP_EXTRA holds several flags on purpose
ray job submit \
    --address "${RAY_ADDRESS:-http://127.0.0.1:8265}" \
    --submission-id "${SWEEP_JOB_ID:-sweep-${device}-$(date -u +%Y%m%d-%H%M%S)}" \
    --working-dir "${SWEEP_WORKING_DIR:-.}" \
    --runtime-env-json "${runtime_env}" \
    -- sweep --top "${SWEEP_TOP:-1000}" --device "${device}" --executor ray --address auto \
        --timeout "${SWEEP_TIMEOUT:-600}" --retries 2 --num-cpus 1 \
        --out "${SWEEP_OUT:-/results/${device}/adhoc}" ${SWEEP_EXTRA:-}
