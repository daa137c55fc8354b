#!/usr/bin/env bash
# What a year of daily partitions costs: a local cluster of three nodes
# (meta,tablet), a table partitioned by day with PARTS partitions of
# BUCKETS buckets at replication 3 (365 × 8 = 2,920 buckets, 8,760
# replicas), made one partition at a time; `floe bench partitions` prints
# the creates' latency, DDL beside them, a new consumer of the newest
# partition, and each node idle (CPU, memory, descriptors). Then the
# writer side: `floe bench produce --batching` into an unpartitioned table,
# with the partition column, then the same rows spread over 24 hourly
# partitions, back to back.
#
#   bash deploy/bench-partitions.sh [OUT]          # default /tmp/floe-bench-partitions
#   PARTS=365 BUCKETS=8 IDLE=60s DUR=20s bash deploy/bench-partitions.sh
cd "$(dirname "$0")/.."
out=${1:-/tmp/floe-bench-partitions}
parts=${PARTS:-365}
buckets=${BUCKETS:-8}
idle=${IDLE:-60s}
dur=${DUR:-20s}
set -eu
mkdir -p "$out"; rm -rf "$out"/n? "$out"/pids "$out"/*.json
CGO_ENABLED=0 go build -o "$out/floe" ./cmd/floe
floe=$out/floe

stop() { for p in $(cat "$out"/pids 2>/dev/null); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -f "$out"/pids; }
trap stop EXIT

start() { # id roles [flags]
  local id=$1 roles=$2; shift 2
  "$floe" serve --id "$id" --roles "$roles" --data-dir "$out/n$id" \
    --listen 127.0.0.1:79${id}0 --gossip 127.0.0.1:79${id}1 --http 127.0.0.1:79${id}2 \
    --join 127.0.0.1:7910,127.0.0.1:7920,127.0.0.1:7930 "$@" >"$out/n$id.log" 2>&1 &
  echo $! >>"$out/pids"
}

export FLOE_SERVER=127.0.0.1:7910,127.0.0.1:7920,127.0.0.1:7930
for i in 1 2 3; do start $i meta,tablet --bootstrap-expect 3; done
"$floe" cluster status --wait 60s >/dev/null
pids=$(paste -sd, "$out/pids")
"$floe" bench partitions --table bench.daily --partitions "$parts" --buckets "$buckets" --replication 3 \
  --idle "$idle" --node-pids "$pids" | tee "$out/partitions.txt"
"$floe" table drop bench.daily >/dev/null   # its buckets would share the disk with the writers below

bench() { # label flags...
  local label=$1; shift
  "$floe" bench produce --batching --duration "$dur" --node-pids "$pids" -o json "$@" \
    | sed "s/^{/{\"run\":\"$label\",/" | tee -a "$out/produce.json"
}
bench flat --table bench.flat --partitions 24 --unpartitioned
bench hourly --table bench.hourly --partitions 24
awk '
  { run=""; ops=""
    if (match($0, /"run":"[a-z]+"/)) run=substr($0, RSTART+7, RLENGTH-8)
    if (match($0, /"ops_per_s":[0-9.]+/)) ops=substr($0, RSTART+12, RLENGTH-12)
    if (run != "" && ops != "") v[run] = ops }
  END { printf "produce --batching: unpartitioned %.0f/s, over 24 hourly partitions %.0f/s: %.2fx\n", v["flat"], v["hourly"], v["hourly"] / v["flat"] }
' "$out/produce.json" | tee "$out/summary.txt"
