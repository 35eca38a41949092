#!/usr/bin/env bash
# What --lock and --ping cost a run, side by side with flock(1) in the same
# run: the mean wall time of
#
#   true                                    the floor: one exec
#   flock -n FILE true                      util-linux's lock around a command
#   backoff -- true                         backoff alone
#   backoff --lock KEY -- true              a lock file, acquired and released
#   backoff --lock KEY (Redis) -- true      a lease in a local redis-server
#   backoff --lock KEY --ping URL -- true   the lock and both check-ins to a
#                                           local HTTP server
#   backoff --once-per day --lock KEY       the lock, the record read, the
#     -- true (run)                         command, the record written (the
#                                           record removed before each run)
#   backoff --once-per day ... (skip)       the lock and the record read: the
#                                           period is done, nothing runs
#   the same two on the Redis lease
#
# and the lock's cost as ratios: (backoff --lock) - (backoff) against
# (flock) - (true), the work each adds to the command it runs.
#
# Usage, from anywhere:
#   bench/lock.sh [--quick]
#
# It builds `cargo build --release` (in $CARGO_TARGET_DIR when set), runs
# hyperfine (Debian package hyperfine), starts a redis-server of its own on
# a free loopback port (skipped, and said, without one) and a python3 HTTP
# server for the check-ins, and stops them at the end. The report is printed
# and kept in bench/results/YYYY-MM-DD-HHMM-lock.txt (UTC; -lock-quick.txt
# with --quick).

set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

# shellcheck source=bench/common.sh
. bench/common.sh
bench_setup lock "$@"
http_server monitor
monitor="$server/bench-uuid"

redis_url=
redis_server
if [ -n "$redis_port" ]; then
    port=$redis_port
    redis_url="redis://127.0.0.1:$port"
    # A lock the store knows: the first run of a lock the store has no
    # trace of waits --lock-ttl before its command (see LOCKS), which the
    # warm-up would otherwise pay once.
    redis-cli -p "$port" hset backoff:lock:bench fence 1 >/dev/null
fi

mkdir -m 700 "$work/store"
names=(true flock backoff "backoff --lock")
commands=(
    "true"
    "flock -n $work/flock.lock true"
    "$backoff -- true"
    "$backoff --budget-dir $work/store --lock bench -- true"
)
# What runs before each run of a command, unmeasured: nothing, but for
# --once-per's runs that must find the period not done.
prepares=(true true true true)
if [ -n "$redis_url" ]; then
    names+=("backoff --lock (Redis)")
    commands+=("$backoff --budget-store $redis_url --budget-store-timeout 5s --lock bench -- true")
    prepares+=(true)
fi
names+=("backoff --lock --ping")
commands+=("$backoff --budget-dir $work/store --lock bench --ping $monitor -- true")
prepares+=(true)
names+=("backoff --once-per (run)" "backoff --once-per (skip)")
commands+=(
    "$backoff --budget-dir $work/store --lock benchrun --once-per day -- true"
    "$backoff --budget-dir $work/store --lock benchskip --once-per day -- true"
)
prepares+=("rm -f $work/store/benchrun.once" true)
if [ -n "$redis_url" ]; then
    redis-cli -p "$port" hset backoff:lock:benchrun fence 1 >/dev/null
    redis-cli -p "$port" hset backoff:lock:benchskip fence 1 >/dev/null
    names+=("backoff --once-per (Redis, run)" "backoff --once-per (Redis, skip)")
    commands+=(
        "$backoff --budget-store $redis_url --budget-store-timeout 5s --lock benchrun --once-per day -- true"
        "$backoff --budget-store $redis_url --budget-store-timeout 5s --lock benchskip --once-per day -- true"
    )
    prepares+=("redis-cli -p $port del backoff:once:benchrun" true)
fi

args=()
for i in "${!commands[@]}"; do
    args+=(--command-name "${names[$i]}" --prepare "${prepares[$i]}" "${commands[$i]}")
done
hyperfine -N --warmup 10 --runs "$runs" --style none \
    --export-json "$work/times.json" "${args[@]}" >/dev/null 2>&1

stamp=$(date -u +%Y-%m-%d-%H%M)
suffix=lock
$quick && suffix=lock-quick
report="bench/results/$stamp-$suffix.txt"
{
    echo "backoff --lock, --ping and --once-per, $(date -u '+%Y-%m-%d %H:%M') UTC"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "machine: $(nproc) CPUs, $(uname -sr)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "runs: $runs each (hyperfine -N, 10 warm-up runs)"
    [ -n "$redis_url" ] || echo "redis: redis-server not installed; the Redis lease is not measured"
    echo
    python3 - "$work/times.json" <<'EOF'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
ms = lambda name: results[name]["mean"] * 1000
print(f"{'command':26} {'mean_ms':>8} {'stddev_ms':>9} {'median_ms':>9}")
for name, r in results.items():
    print(f"{name:26} {r['mean']*1000:8.3f} {r['stddev']*1000:9.3f} {r['median']*1000:9.3f}")
print()
flock = ms("flock") - ms("true")
lock = ms("backoff --lock") - ms("backoff")
print(f"flock(1)'s cost over true:            {flock:.3f} ms")
print(f"--lock's cost over backoff -- true:   {lock:.3f} ms  ({lock / flock:.2f}x flock's)")
if "backoff --lock (Redis)" in results:
    redis = ms("backoff --lock (Redis)") - ms("backoff")
    print(f"a Redis lease's cost (acquire, renewal thread, release): {redis:.3f} ms  ({redis / flock:.2f}x flock's)")
ping = ms("backoff --lock --ping") - ms("backoff --lock")
print(f"--ping's cost (start and end check-ins, local server): {ping:.3f} ms")
for store, lock in [("", "backoff --lock"), ("Redis, ", "backoff --lock (Redis)")]:
    if lock not in results:
        continue
    for path in ["run", "skip"]:
        once = ms(f"backoff --once-per ({store}{path})") - ms(lock)
        print(f"--once-per's cost over {lock} ({path}): {once:.3f} ms")
EOF
} | tee "$report"
echo "kept in $report" >&2
