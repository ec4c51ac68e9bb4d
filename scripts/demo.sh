#!/usr/bin/env bash
# The whole chain on one machine: the catalogue simulator, the receiver with
# its embedded NATS, a subscriber printing one line per message, the register
# command creating the PUSH subscription, and a handful of products.
# Run it with `make demo`; it stops everything it started when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
data=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$data"; }
trap cleanup EXIT

wait_for() { for _ in $(seq 100); do curl -fs "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "timeout waiting for $1" >&2; return 1; }

echo "== catalogue simulator on 127.0.0.1:8090"
SIM_PASSWORD=demo-password bin/cdse-sim --addr 127.0.0.1:8090 >"$data/sim.log" 2>&1 & pids+=($!)
echo "== receiver on 127.0.0.1:8080 (embedded NATS on 127.0.0.1:4222, admin on 127.0.0.1:9090)"
# Download links point at the simulator's catalogue, as they would at the real one.
CDSE_CATALOGUE_URL=http://127.0.0.1:8090/odata/v1 RECEIVER_DATA_DIR="$data/receiver" LOG_LEVEL=warn bin/receiver --config configs/dev.yaml >"$data/receiver.log" 2>&1 & pids+=($!)
wait_for http://127.0.0.1:9090/readyz
echo "== subscriber (examples/subscribe), one line per message:"
bin/subscribe & pids+=($!)

export CDSE_USERNAME=demo@example.org CDSE_PASSWORD=demo-password
export CDSE_TOKEN_URL=http://127.0.0.1:8090/auth/realms/CDSE/protocol/openid-connect/token
export CDSE_CATALOGUE_URL=http://127.0.0.1:8090/odata/v1
export RECEIVER_USERNAME=cdse RECEIVER_PASSWORD=dev-password-change-me
echo "== register create"
bin/register create --endpoint http://127.0.0.1:8080/notifications --insecure-endpoint \
  --filter "Collection/Name eq 'SENTINEL-2' or Collection/Name eq 'SENTINEL-1'" --events created,modified
echo "== the simulator publishes 3 Sentinel-2, 1 Sentinel-1 and 1 Sentinel-3 product (filtered out), and sends each twice"
curl -fs -X POST http://127.0.0.1:8090/sim/config -d '{"duplicateSends":true}' >/dev/null
curl -fs -X POST http://127.0.0.1:8090/sim/products -d '{"mission":"S2","count":3}' >/dev/null
curl -fs -X POST http://127.0.0.1:8090/sim/products -d '{"mission":"S1","count":1}' >/dev/null
curl -fs -X POST http://127.0.0.1:8090/sim/products -d '{"mission":"S3","count":1}' >/dev/null
sleep 2
echo "== simulator: $(curl -fs http://127.0.0.1:8090/sim/stats)"
echo "== receiver: $(curl -fs http://127.0.0.1:9090/metrics | grep '^cdse_receiver_notifications_total{event="created"' | tr '\n' ' ')"
