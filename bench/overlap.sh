#!/usr/bin/env bash
# What --lock-limit costs a run beside --lock alone, in a lock file and in a
# Redis lease: the mean wall time of
#
#   backoff --lock KEY -- true                       the plain lock
#   backoff --lock KEY --lock-limit 4 -- true        a semaphore, its slots free
#   backoff --lock KEY --lock-limit 4 -- true        the same with 3 of its 4
#     (3 held)                                       slots held by other runs
#
# each in the files of one host and in a local redis-server, and the
# semaphore's cost over the plain lock.
#
# Usage, from anywhere:
#   bench/overlap.sh [--quick]
#
# It builds `cargo build --release` (in $CARGO_TARGET_DIR when set), runs
# hyperfine (Debian package hyperfine), starts a redis-server of its own on
# a free loopback port (skipped, and said, without one) and the runs that
# hold the slots, and stops them at the end. The report is printed and kept
# in bench/results/YYYY-MM-DD-HHMM-overlap.txt (UTC; -overlap-quick.txt
# with --quick).

set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

# shellcheck source=bench/common.sh
. bench/common.sh
bench_setup overlap "$@"

mkdir -m 700 "$work/store"
stores=("--budget-dir $work/store")
labels=("file")
redis_server
if [ -n "$redis_port" ]; then
    port=$redis_port
    # Locks the store knows: the first run of one the store has no trace
    # of waits --lock-ttl before its command (see LOCKS).
    for key in backoff:lock:bench backoff:slots:bench backoff:slots:held; do
        redis-cli -p "$port" hset "$key" fence 1 >/dev/null
    done
    stores+=("--budget-store redis://127.0.0.1:$port --budget-store-timeout 5s")
    labels+=("Redis")
fi

names=()
commands=()
for i in "${!stores[@]}"; do
    store=${stores[$i]}
    # Three runs hold three of the four slots of `held` for the whole bench.
    for _ in 1 2 3; do
        # shellcheck disable=SC2086 # $store is several words
        "$backoff" $store --lock held --lock-limit 4 -- sleep 3600 2>/dev/null &
        pids+=($!)
    done
    for _ in $(seq 200); do
        # shellcheck disable=SC2086
        held=$("$backoff" lock show held $store --format json |
            python3 -c 'import json,sys; print(sum(s["held"] for s in json.load(sys.stdin)["slots"]))')
        [ "$held" = 3 ] && break
        sleep 0.05
    done
    names+=("lock (${labels[$i]})" "lock-limit 4 (${labels[$i]})" "lock-limit 4, 3 held (${labels[$i]})")
    commands+=(
        "$backoff $store --lock bench -- true"
        "$backoff $store --lock bench --lock-limit 4 -- true"
        "$backoff $store --lock held --lock-limit 4 -- true"
    )
done

args=()
for i in "${!commands[@]}"; do
    args+=(--command-name "${names[$i]}" "${commands[$i]}")
done
hyperfine -N --warmup 10 --runs "$runs" --style none \
    --export-json "$work/times.json" "${args[@]}" >/dev/null 2>&1

stamp=$(date -u +%Y-%m-%d-%H%M)
suffix=overlap
$quick && suffix=overlap-quick
report="bench/results/$stamp-$suffix.txt"
{
    echo "backoff --lock-limit beside --lock, $(date -u '+%Y-%m-%d %H:%M') UTC"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "machine: $(nproc) CPUs, $(uname -sr)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "runs: $runs each (hyperfine -N, 10 warm-up runs)"
    [ ${#stores[@]} -gt 1 ] || echo "redis: redis-server not installed; the Redis leases are not measured"
    echo
    python3 - "$work/times.json" <<'EOF'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
ms = lambda name: results[name]["mean"] * 1000
print(f"{'command':32} {'mean_ms':>8} {'stddev_ms':>9} {'median_ms':>9}")
for name, r in results.items():
    print(f"{name:32} {r['mean']*1000:8.3f} {r['stddev']*1000:9.3f} {r['median']*1000:9.3f}")
print()
for store in ("file", "Redis"):
    plain = f"lock ({store})"
    if plain not in results:
        continue
    free = ms(f"lock-limit 4 ({store})") - ms(plain)
    held = ms(f"lock-limit 4, 3 held ({store})") - ms(plain)
    print(f"{store}: --lock-limit 4 over --lock: {free:+.3f} ms with its slots free, {held:+.3f} ms with 3 of 4 held")
EOF
} | tee "$report"
echo "kept in $report" >&2
