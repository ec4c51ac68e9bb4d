#!/usr/bin/env bash
# The whole chain on one machine: the catalogue simulator, the receiver with
# its embedded NATS and two named interests, one subscriber per interest,
# `register apply` making the one PUSH subscription that covers both, a
# handful of products (each sent twice, as the catalogue may), and the
# fetcher storing each product, verified, into a directory that is kept.
# Run it with `make demo`; it stops everything it started when it ends.
#
# DEMO_BIN (a directory holding receiver, register, cdse-sim, subscribe and
# fetcher: no build) and DEMO_SIM_ADDR, DEMO_RECEIVER_ADDR, DEMO_ADMIN_ADDR,
# DEMO_NATS_ADDR, DEMO_FETCHER_ADMIN_ADDR (host:port) let test/docs run it
# beside other tests; DEMO_PRODUCTS is the fetcher's directory (default: a
# new one under /tmp, kept after the demo).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DEMO_BIN:-bin}
[ -n "${DEMO_BIN:-}" ] || make -s build
sim=${DEMO_SIM_ADDR:-127.0.0.1:8090}
rcv=${DEMO_RECEIVER_ADDR:-127.0.0.1:8080}
admin=${DEMO_ADMIN_ADDR:-127.0.0.1:9090}
nats=${DEMO_NATS_ADDR:-127.0.0.1:4222}
fadmin=${DEMO_FETCHER_ADMIN_ADDR:-127.0.0.1:9091}
products=${DEMO_PRODUCTS:-$(mktemp -d "${TMPDIR:-/tmp}/cdse-demo-products.XXXXXX")}
# The fetcher never creates its target directory: the demo does.
mkdir -p "$products"
data=$(mktemp -d)
pids=()
# On failure the logs are printed before the directory goes: a demo that
# failed must say why.
cleanup() {
  local rc=$?
  kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true
  if [ "$rc" != 0 ]; then
    for f in "$data"/*.log; do [ -s "$f" ] && { echo "== $(basename "$f") (last lines):" >&2; tail -n 20 "$f" >&2; }; done
    echo "make demo FAILED (exit $rc)" >&2
  fi
  rm -rf "$data"
  exit "$rc"
}
trap cleanup EXIT

# The demo's addresses must be free: beside a running `make run`, the
# demo's receiver could not bind, and its checks would have talked to the
# other receiver and passed.
for addr in "$sim" "$rcv" "$admin" "$nats" "$fadmin"; do
  if (exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}") 2>/dev/null; then
    echo "something already listens on $addr (a make run or another demo left running?): stop it, or set DEMO_SIM_ADDR, DEMO_RECEIVER_ADDR, DEMO_ADMIN_ADDR, DEMO_NATS_ADDR, DEMO_FETCHER_ADMIN_ADDR" >&2
    exit 1
  fi
done
# alive PID NAME: fails loudly when a process the demo started has ended.
alive() { kill -0 "$1" 2>/dev/null || { echo "$2 is not running (its log follows)" >&2; return 1; }; }

wait_for() { for _ in $(seq 100); do curl -fs "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "timeout waiting for $1" >&2; return 1; }
# metric NAME: the sum of a receiver metric's series.
metric() { curl -fs "http://$admin/metrics" | awk -v m="$1" 'index($0, m) == 1 && $0 !~ /^#/ { s += $NF } END { print s + 0 }'; }

cat >"$data/interests.yaml" <<'EOF'
interests:
  # Sentinel-2, created or reprocessed, with at most 50 % cloud.
  - name: s2-clear
    events: [created, modified]
    filter: >-
      Collection/Name eq 'SENTINEL-2'
      and Attributes/OData.CSC.DoubleAttribute/any(att:att/Name eq 'cloudCover' and att/OData.CSC.DoubleAttribute/Value le 50.00)
  # Every Sentinel-1 ground-range product, sensed in the last 30 days.
  - name: s1-grd
    filter: Collection/Name eq 'SENTINEL-1' and contains(Name,'_GRDH_')
    maxSensingAge: 30d
EOF
echo "== interests ($data/interests.yaml):"
sed 's/^/   /' "$data/interests.yaml"

echo "== catalogue simulator on $sim"
SIM_PASSWORD=demo-password "$bin/cdse-sim" --addr "$sim" >"$data/sim.log" 2>&1 & pids+=($!)
echo "== receiver on $rcv (embedded NATS on $nats, admin on $admin)"
# Download links point at the simulator's catalogue, as they would at the real one.
# The embedded NATS server gives the fetcher a login of its own.
NATS_EMBEDDED_FETCHER_USER=fetcher NATS_EMBEDDED_FETCHER_PASSWORD=demo-fetcher-password \
RECEIVER_ADDR=$rcv RECEIVER_ADMIN_ADDR=$admin NATS_EMBEDDED_ADDR=$nats INTERESTS_FILE="$data/interests.yaml" \
  CDSE_CATALOGUE_URL=http://$sim/odata/v1 RECEIVER_DATA_DIR="$data/receiver" LOG_LEVEL=warn \
  "$bin/receiver" --config configs/dev.yaml >"$data/receiver.log" 2>&1 & pids+=($!)
receiver_pid=$!
wait_for "http://$admin/readyz"
alive "$receiver_pid" "the demo's receiver"
echo "== one subscriber per interest (examples/subscribe --interest NAME), one line per message:"
export NATS_URL=nats://$nats
for i in s2-clear s1-grd; do
  "$bin/subscribe" --interest $i > >(tee "$data/$i.out") & pids+=($!)
done

export CDSE_USERNAME=demo@example.org CDSE_PASSWORD=demo-password
export CDSE_TOKEN_URL=http://$sim/auth/realms/CDSE/protocol/openid-connect/token
export CDSE_CATALOGUE_URL=http://$sim/odata/v1
export RECEIVER_USERNAME=cdse RECEIVER_PASSWORD=dev-password-change-me
echo "== register apply: the one subscription covering both interests"
"$bin/register" apply --interests "$data/interests.yaml" --endpoint "http://$rcv/notifications" --insecure-endpoint
echo "== the simulator publishes 4 Sentinel-2, 2 Sentinel-1 and 1 Sentinel-3 product (outside the subscription), and sends each twice"
curl -fs -X POST "http://$sim/sim/config" -d '{"duplicateSends":true}' >/dev/null
curl -fs -X POST "http://$sim/sim/products" -d '{"mission":"S2","count":4}' >/dev/null
curl -fs -X POST "http://$sim/sim/products" -d '{"mission":"S1","count":2}' >/dev/null
curl -fs -X POST "http://$sim/sim/products" -d '{"mission":"S3","count":1}' >/dev/null
# Every send answered (the simulator has none left in flight) ...
for _ in $(seq 100); do
  curl -fs "http://$sim/sim/stats" | grep -q '"pushPending":0,' && break
  sleep 0.1
done
# ... and each interest's subscriber has printed what was routed to it.
for i in s2-clear s1-grd; do
  for _ in $(seq 100); do
    [ "$(wc -l <"$data/$i.out")" -ge "$(metric "cdse_receiver_interest_routed_total{interest=\"$i\"}")" ] && break
    sleep 0.1
  done
done
alive "$receiver_pid" "the demo's receiver"

echo "== the fetcher (admin on $fadmin) stores each product of the stream into $products, verified"
export NATS_USER=fetcher NATS_PASSWORD=demo-fetcher-password FETCH_ADMIN_ADDR=$fadmin
FETCH_TARGET="file://$products" FETCH_START=all CDSE_DOWNLOAD_URL=http://$sim/odata/v1 LOG_LEVEL=warn \
  "$bin/fetcher" >"$data/fetcher.log" 2>&1 & pids+=($!)
fetcher_pid=$!
wait_for "http://$fadmin/readyz"
# Done when its consumer has nothing waiting nor in flight, and it has
# stored something (/status, which `fetcher status` prints).
fetched=
for _ in $(seq 300); do
  st=$(curl -fs "http://$fadmin/status" || true)
  grep -q '"waiting": 0,' <<<"$st" && grep -q '"inFlight": 0' <<<"$st" && grep -q '"verified": true' <<<"$st" && { fetched=1; break; }
  sleep 0.1
done
alive "$fetcher_pid" "the demo's fetcher"
[ -n "$fetched" ] || { echo "the fetcher did not store the products within 30 s" >&2; exit 1; }
echo "== fetcher status:"
"$bin/fetcher" status | sed 's/^/   /'
echo "== simulator: $(curl -fs "http://$sim/sim/stats")"
echo "== receiver: $(curl -fs "http://$admin/metrics" | grep -E '^cdse_receiver_(notifications_total\{event="created"|interest_routed_total|interest_unmatched_total\{event="created")' | tr '\n' ' ')"
echo "== the Sentinel-3 product and any Sentinel-2 one above 50 % cloud are outside the subscription (the interests' union): the catalogue never sends them"
echo "== fetcher fetched list (what was stored, where, verified or not):"
list=$("$bin/fetcher" fetched list)
sed 's/^/   /' <<<"$list"
# The table's last two columns are VERIFIED ("true", or "true
# (unchanged)" for a product found stored already) and URL.
verified=$(awk 'NR > 1 && ($(NF-1) == "true" || ($(NF-2) == "true" && $(NF-1) == "(unchanged)")) { print $NF }' <<<"$list")
if [ -s "$data/fetcher.log" ]; then
  echo "== the fetcher's warnings ($data/fetcher.log):"
  sed 's/^/   /' "$data/fetcher.log"
fi
file=$(head -n 1 <<<"$verified")
file=${file#file://}
[ -f "$file" ] || { echo "no verified file stored (fetched list above)" >&2; exit 1; }
echo "== $(wc -l <<<"$verified") products stored in $products, each verified against the catalogue's checksums (kept: rm -rf $products removes them); one of them:"
echo "verified file: $file"
