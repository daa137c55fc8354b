#!/usr/bin/env bash
# What security costs: the same build, a fresh local 3-node cluster (RF 3)
# per mode, plaintext ("plain") and secure ("secure": TLS on the shared port,
# a user signing in with SCRAM-SHA-256, --authorization with an ACL allowing
# it everything, an encrypted gossip), then `floe bench produce --batching`
# and `floe bench lookup --batch 500` against it. Modes alternate
# (plain secure secure plain by default) so drift in a noisy machine falls
# on both sides; the last lines compare the means.
#
#   bash deploy/bench-security.sh [OUT]          # default /tmp/floe-bench-security
#   MODES="plain secure" DUR=30s KEYS=200000 bash deploy/bench-security.sh
#   PROFILE=1 ...: CPU profiles of the nodes and of the client during each
#   lookup run, in OUT/{node1,node2,node3,client}-lookup-MODE-N.pprof
cd "$(dirname "$0")/.."
out=${1:-/tmp/floe-bench-security}
modes=${MODES:-plain secure secure plain}
dur=${DUR:-20s}
keys=${KEYS:-1000000}
set -eu
mkdir -p "$out"; rm -rf "$out"/n? "$out"/pids "$out"/certs "$out"/results.jsonl
CGO_ENABLED=0 go build -o "$out/floe" ./cmd/floe
floe=$out/floe
certs=$out/certs
"$floe" cert ca --dir "$certs" >/dev/null
for i in 1 2 3; do "$floe" cert node --dir "$certs" --id $i --host 127.0.0.1 >/dev/null; done
"$floe" cert user --dir "$certs" --name admin >/dev/null
"$floe" cert gossip-key --out "$certs/gossip.key" >/dev/null

stop() { for p in $(cat "$out"/pids 2>/dev/null); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -f "$out"/pids; }
trap stop EXIT

run() { # mode
  local mode=$1 sec=() cli=()
  rm -rf "$out"/n1 "$out"/n2 "$out"/n3
  if [ "$mode" = secure ]; then
    sec=(--tls-ca "$certs/ca.crt" --authorization --super-users user:admin --gossip-key-file "$certs/gossip.key")
  fi
  for i in 1 2 3; do
    local nodesec=()
    [ "$mode" = secure ] && nodesec=(--tls-cert "$certs/node$i.crt" --tls-key "$certs/node$i.key")
    "$floe" serve --id $i --roles meta,tablet --data-dir "$out/n$i" \
      --listen 127.0.0.1:79${i}0 --gossip 127.0.0.1:79${i}1 --http 127.0.0.1:79${i}2 \
      --join 127.0.0.1:7910,127.0.0.1:7920,127.0.0.1:7930 --bootstrap-expect 3 \
      ${sec[@]+"${sec[@]}"} ${nodesec[@]+"${nodesec[@]}"} >"$out/n$i-$mode-$((runs + 1)).log" 2>&1 &
    echo $! >>"$out/pids"
  done
  export FLOE_SERVER=127.0.0.1:7910,127.0.0.1:7920,127.0.0.1:7930
  unset FLOE_TLS_CA FLOE_TLS_CERT FLOE_TLS_KEY FLOE_USER FLOE_PASSWORD
  if [ "$mode" = secure ]; then
    export FLOE_TLS_CA=$certs/ca.crt FLOE_TLS_CERT=$certs/user-admin.crt FLOE_TLS_KEY=$certs/user-admin.key
  fi
  "$floe" cluster status --wait 60s >/dev/null
  for _ in $(seq 1 120); do
    [ "$("$floe" cluster status -o json | grep -o '"tablet"' | wc -l)" -ge 3 ] && break; sleep 0.5
  done
  if [ "$mode" = secure ]; then
    # the benchmarks run as a password user with an ACL, not as the
    # super-user: sign-in and authorization are what is measured
    FLOE_NEW_PASSWORD=bench-password "$floe" user create bench >/dev/null
    "$floe" acl add --principal user:bench --operation all --cluster >/dev/null
    unset FLOE_TLS_CERT FLOE_TLS_KEY
    export FLOE_USER=bench FLOE_PASSWORD=bench-password
  fi
  local pids; pids=$(paste -sd, "$out/pids")
  "$floe" bench produce --batching --duration "$dur" --node-pids "$pids" -o json \
    | sed "s/^{/{\"security\":\"$mode\",\"test\":\"produce-batching\",/" | tee -a "$out/results.jsonl"
  "$floe" bench lookup --load --keys "$keys" --duration 1s --batch 500 --replication 3 -o json >/dev/null
  runs=$((runs + 1))
  local prof=() curlpid=
  if [ -n "${PROFILE:-}" ]; then
    prof=(--cpuprofile "$out/client-lookup-$mode-$runs.pprof")
    local scheme=http curlsec=()
    [ "$mode" = secure ] && scheme=https curlsec=(--cacert "$certs/ca.crt" --cert "$certs/user-admin.crt" --key "$certs/user-admin.key")
    for i in 1 2 3; do
      curl -sf ${curlsec[@]+"${curlsec[@]}"} -o "$out/node$i-lookup-$mode-$runs.pprof" \
        "$scheme://127.0.0.1:79${i}2/debug/pprof/profile?seconds=$(( ${dur%s} - 2 ))" &
      curlpid="$curlpid $!"
    done
  fi
  "$floe" bench lookup --keys "$keys" --batch 500 --replication 3 --duration "$dur" --node-pids "$pids" -o json ${prof[@]+"${prof[@]}"} \
    | sed "s/^{/{\"security\":\"$mode\",\"test\":\"lookup-batch-500\",/" | tee -a "$out/results.jsonl"
  [ -z "$curlpid" ] || wait $curlpid || echo "a node's profile is missing" >&2
  stop
}

runs=0
for m in $modes; do run "$m"; done
trap - EXIT
rm -rf "$out"/n1 "$out"/n2 "$out"/n3

# means per mode and test, and the cost: 1 - secure/plain
awk '
  { mode=""; test=""; ops=""
    if (match($0, /"security":"[a-z]+"/)) mode=substr($0, RSTART+12, RLENGTH-13)
    if (match($0, /"test":"[a-z0-9-]+"/)) test=substr($0, RSTART+8, RLENGTH-9)
    if (match($0, /"ops_per_s":[0-9.]+/)) ops=substr($0, RSTART+12, RLENGTH-12)
    if (mode != "" && test != "" && ops != "") { sum[test, mode] += ops; n[test, mode]++; tests[test] = 1 } }
  END {
    for (t in tests) {
      p = n[t, "plain"] ? sum[t, "plain"] / n[t, "plain"] : 0
      s = n[t, "secure"] ? sum[t, "secure"] / n[t, "secure"] : 0
      if (p > 0 && s > 0) printf "%-18s plain %12.0f/s  secure %12.0f/s  cost %5.1f%%\n", t, p, s, 100 * (1 - s / p)
    }
  }' "$out/results.jsonl" | tee "$out/summary.txt"
