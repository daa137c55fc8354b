#!/usr/bin/env bash
# What a throttled rebalance costs writers: a local cluster of three nodes
# (meta,tablet) holding a ballast table (RF 3) filled for FILL, then a
# fourth tablet node joins; `floe bench produce --batching` runs for DUR
# without a move ("alone"), then again while `floe cluster rebalance
# --execute --throttle THROTTLE` copies replicas of the ballast to the new
# node ("rebalancing"), then once more after the moves are cancelled
# ("after"). The last line compares the rebalancing run with the mean of
# the two others, and says how far the moves got (floe_move_bytes_total
# of node 4).
#
#   bash deploy/bench-rebalance.sh [OUT]          # default /tmp/floe-bench-rebalance
#   DUR=30s FILL=20s THROTTLE=20MB bash deploy/bench-rebalance.sh
cd "$(dirname "$0")/.."
out=${1:-/tmp/floe-bench-rebalance}
dur=${DUR:-30s}
fill=${FILL:-20s}
throttle=${THROTTLE:-20MB}
set -eu
mkdir -p "$out"; rm -rf "$out"/n? "$out"/pids "$out"/results.jsonl
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
tablets() { "$floe" cluster status -o json | grep -o '"tablet"' | wc -l; }
wait_tablets() { for _ in $(seq 1 120); do [ "$(tablets)" -ge "$1" ] && return 0; sleep 0.5; done; echo "only $(tablets) tablet nodes" >&2; exit 1; }

export FLOE_SERVER=127.0.0.1:7910,127.0.0.1:7920,127.0.0.1:7930
for i in 1 2 3; do start $i meta,tablet --bootstrap-expect 3; done
"$floe" cluster status --wait 60s >/dev/null
wait_tablets 3
echo "filling the ballast table for $fill" >&2
"$floe" bench produce --table bench.ballast --buckets 8 --batching --duration "$fill" -o json >"$out/fill.json"
"$floe" bench produce --table bench.records --buckets 6 --duration 1s -o json >/dev/null
start 4 tablet
wait_tablets 4
pids=$(paste -sd, "$out/pids")

bench() { # label
  "$floe" bench produce --table bench.records --batching --duration "$dur" --node-pids "$pids" -o json \
    | sed "s/^{/{\"run\":\"$1\",/" | tee -a "$out/results.jsonl"
}
bench alone
"$floe" cluster rebalance --plan >"$out/plan.txt"
"$floe" cluster rebalance --execute --throttle "$throttle" >"$out/execute.txt"
bench rebalancing
"$floe" reassign status >"$out/status-after-bench.txt"
moved=$(curl -sf http://127.0.0.1:7942/metrics | awk '/^floe_move_bytes_total/ {s += $2} END {printf "%.0f", s}')
"$floe" reassign cancel --all >"$out/cancel.txt"
for _ in $(seq 1 120); do
  "$floe" reassign status | grep -q '^no move running' && break; sleep 0.5
done
bench after

awk -v moved="${moved:-0}" -v throttle="$throttle" '
  { run=""; ops=""
    if (match($0, /"run":"[a-z]+"/)) run=substr($0, RSTART+7, RLENGTH-8)
    if (match($0, /"ops_per_s":[0-9.]+/)) ops=substr($0, RSTART+12, RLENGTH-12)
    if (run != "" && ops != "") v[run] = ops }
  END {
    base = (v["alone"] + v["after"]) / 2
    printf "produce --batching: alone %.0f/s, after %.0f/s, during a rebalance throttled to %s %.0f/s: %.2fx; node 4 copied %.0f MB meanwhile\n",
      v["alone"], v["after"], throttle, v["rebalancing"], v["rebalancing"] / base, moved / 1e6
  }' "$out/results.jsonl" | tee "$out/summary.txt"
