#!/usr/bin/env bash
# The bench suite on a fresh local 3-node cluster (RF 3, acks=all, fsync
# on), then the peer kit (../shared/bench/peers, when present) back to
# back, so the ratios come from one run on one machine; last, the targets'
# table (floe bench compare, also in OUT/compare.txt). Before the nodes
# start, floe bench floor measures what the machine allows them.
#
#   bash deploy/bench-compare.sh [OUT]     # default /tmp/floe-bench-compare
#   SUITES="nats redis" DUR=5s CONC=1,64,128 bash deploy/bench-compare.sh
cd "$(dirname "$0")/.."
out=${1:-/tmp/floe-bench-compare}
set -eu
mkdir -p "$out"; rm -rf "$out"/n1 "$out"/n2 "$out"/n3 "$out"/pids "$out"/peers "$out"/floe.jsonl
CGO_ENABLED=0 go build -o "$out/floe" ./cmd/floe
# the machine's floor first, with nothing else running: an fdatasync with
# 1, 2 and 3 writers at once (the three nodes' logs share this disk) and
# the round trip between idle processes; floe bench compare shows the
# latency targets against the least an acks=all write can take here
"$out/floe" bench floor --dir "$out" --output json | tee "$out/floe.jsonl"
stop() { for p in $(cat "$out"/pids 2>/dev/null); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop EXIT
for i in 1 2 3; do
  "$out/floe" serve --id $i --roles meta,tablet --data-dir "$out/n$i" \
    --listen 127.0.0.1:79${i}0 --gossip 127.0.0.1:79${i}1 --http 127.0.0.1:79${i}2 \
    --join 127.0.0.1:7910,127.0.0.1:7920,127.0.0.1:7930 --bootstrap-expect 3 >"$out/n$i.log" 2>&1 &
  echo $! >>"$out/pids"
done
export FLOE_SERVER=127.0.0.1:7910,127.0.0.1:7920,127.0.0.1:7930
"$out/floe" cluster status --wait 60s >/dev/null
# ready means the registered tablet nodes are live; wait for all three to register
for _ in $(seq 1 120); do
  [ "$("$out/floe" cluster status -o json | grep -o '"tablet"' | wc -l)" -ge 3 ] && break; sleep 0.5
done
# --node-pids: each line carries the nodes' CPU time per op (and the
# client's), as the peer kit's lines carry their servers'
"$out/floe" bench suite --duration 10s --replication 3 --node-pids "$(paste -sd, "$out/pids")" -o json | tee -a "$out/floe.jsonl"
stop; trap - EXIT
# the nodes' data (gigabytes after the upsert tests) goes; their logs stay
rm -rf "$out"/n1 "$out"/n2 "$out"/n3; sync
if [ -x ../shared/bench/peers/run.sh ]; then
  SUITES="${SUITES:-phys nats redis}" DUR="${DUR:-5s}" CONC="${CONC:-1,64,128}" OUT="$out/peers" ../shared/bench/peers/run.sh
  # the targets, Floe's figure against its peer's from this run (exit 1
  # when one is not met; the table is the result either way)
  echo; "$out/floe" bench compare "$out/floe.jsonl" "$out/peers/results.jsonl" | tee "$out/compare.txt" || true
else
  echo "no ../shared/bench/peers/run.sh: peers not measured"
fi
