#!/usr/bin/env bash
# Submit one sweep as a Ray job to a running cluster (any Ray cluster: KubeRay, VMs, a laptop).
#
#   RAY_ADDRESS=http://HEAD:8265 configs/cluster/job-submit.sh
#
# The working directory is shipped to the cluster; the nodes need sweeper's dependencies
# (the image in rayjob.yaml has them). The sweep runs on the head, so --out is a path there.
set -euo pipefail

ray job submit \
    --address "${RAY_ADDRESS:-http://127.0.0.1:8265}" \
    --submission-id "sweep-trnsim-$(date -u +%Y%m%d-%H%M%S)" \
    --working-dir . \
    --runtime-env-json '{"env_vars": {"RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "0"}}' \
    -- sweep --top 1000 --device trnsim --executor ray --address auto \
        --timeout 600 --retries 2 --num-cpus 1 --out /results/trnsim/adhoc
