#!/usr/bin/env bash
# How far the shared stores of retry budgets, circuit breakers, adaptive
# throttles and locks scale: decisions per second and their latency (median, p99,
# max) against the number of processes deciding at once on one key (1, 10,
# 100, 500), and rounds in which 500 processes each make one decision at
# once, against the time those decisions need in series; for the
# file store on the local disk, the file store on tmpfs (/dev/shm) and
# Redis. The work is done by examples/store_bench.rs, through backoff's own
# store code; bench/README.md says what is measured and how.
#
# Usage, from anywhere:
#   bench/stores.sh [--quick]
#
#   --quick   a smoke run: 1, 10 and 100 processes, 2000 decisions a batch,
#             at most 2 s each, 5 rounds of 100 (about 20 s in all)
#
# The full run makes 100 000 decisions a batch (split among its processes),
# each batch stopped after 5 s, then 20 rounds of 500; it takes about 4
# minutes on a 2-core machine. A budget's tokens and a throttle's counts
# are checked exactly at the end of each batch and a breaker's circuit
# must still be closed: if not, the run aborts.
#
# It builds the example with `cargo build --release --example store_bench`
# (in $CARGO_TARGET_DIR when that is set), starts a redis-server of its own
# on a free loopback port (nothing written to disk) and stops it at the end.
# The report is printed and kept in bench/results/YYYY-MM-DD-HHMM-stores.txt
# (UTC; --quick runs get -stores-quick.txt).
#
# Environment:
#   REDIS_SERVER_BIN  redis-server, if not on PATH; without one, Redis is
#                     skipped and the report says so
#   STORE_BENCH_DIR   the directory of the on-disk file store (default: a
#                     fresh one in $TMPDIR or /tmp, which must be on a local
#                     disk, not tmpfs, to measure the disk)

set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

quick=false
for arg in "$@"; do
    case $arg in
    --quick) quick=true ;;
    *)
        echo "usage: bench/stores.sh [--quick]" >&2
        exit 2
        ;;
    esac
done

if $quick; then
    procs=1,10,100 total=2000 max_secs=2 rounds=5
else
    procs=1,10,100,500 total=100000 max_secs=5 rounds=20
fi
most=${procs##*,}

cargo build --locked --release --example store_bench >&2
target_dir=${CARGO_TARGET_DIR:-target}
[[ $target_dir == /* ]] || target_dir=$repo_root/$target_dir
bench=$target_dir/release/examples/store_bench

# Each process holds a few descriptors, and the parent one pipe per worker.
ulimit -n 4096 2>/dev/null || true
ulimit -u unlimited 2>/dev/null || ulimit -u 4096 2>/dev/null || true
if (($(ulimit -n) < most + 64)); then
    echo "bench: ulimit -n is $(ulimit -n), too few for $most processes" >&2
    exit 2
fi
if [[ $(ulimit -u) != unlimited ]] && (($(ulimit -u) < most + 64)); then
    echo "bench: ulimit -u is $(ulimit -u), too few for $most processes" >&2
    exit 2
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/backoff-stores.XXXXXX")
shm=
redis_pid=
cleanup() {
    [[ -n $redis_pid ]] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
    rm -rf -- "$scratch"
    [[ -n $shm ]] && rm -rf -- "$shm"
    return 0
}
trap cleanup EXIT

disk=${STORE_BENCH_DIR:-$scratch/disk}
mkdir -p -m 700 -- "$disk"
stores=(--store "file-disk=$disk")
notes=("file-disk: $disk ($(stat -f -c %T "$disk"))")
if [[ -d /dev/shm && -w /dev/shm ]]; then
    shm=$(mktemp -d /dev/shm/backoff-stores.XXXXXX)
    stores+=(--store "file-tmpfs=$shm")
    notes+=("file-tmpfs: $shm ($(stat -f -c %T "$shm"))")
else
    notes+=("file-tmpfs: skipped, /dev/shm is not writable")
fi

redis_server=${REDIS_SERVER_BIN:-$(command -v redis-server || true)}
if [[ -z $redis_server || ! -x $redis_server ]]; then
    notes+=("redis: skipped, redis-server is not installed (${REDIS_SERVER_BIN:-not on PATH}; set REDIS_SERVER_BIN)")
else
    # A free loopback port: one nobody answers on, and that the server then
    # takes (another try if something took it meanwhile).
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        port=$((20000 + RANDOM % 40000))
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            continue
        fi
        "$redis_server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$scratch" --maxclients 10000 --loglevel warning \
            >"$scratch/redis.log" 2>&1 &
        redis_pid=$!
        for _ in $(seq 50); do
            if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
                break 2
            fi
            kill -0 "$redis_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
        redis_pid=
    done
    if [[ -z $redis_pid ]]; then
        echo "bench: redis-server did not start (see below)" >&2
        cat "$scratch/redis.log" >&2
        exit 2
    fi
    stores+=(--store "redis=redis://127.0.0.1:$port/0" --redis-pid "$redis_pid")
    notes+=("redis: $("$redis_server" --version | cut -d' ' -f1-3) on 127.0.0.1:$port, no persistence")
fi

mkdir -p bench/results
results=bench/results/$(date -u +%Y-%m-%d-%H%M)-stores
$quick && results+=-quick
results+=.txt

if ! {
    echo "backoff store scaling, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src examples Cargo.toml Cargo.lock || echo ' (with uncommitted changes)')"
    echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), Linux $(uname -r)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%s\n' "${notes[@]}"
    echo "batches: $procs processes on one key, $total decisions split among them, each batch at most ${max_secs}s"
    echo "budget: take, a retry token per decision; breaker: admit + record (succeeded), one run per decision;"
    echo "throttle: admit + accept, one attempt per decision (none skipped)"
    echo "lock: acquire + release of a lock of the worker's own, one run per decision"
    echo "rounds: $most processes on one key, each making one decision at once, $rounds rounds"
    echo
    "$bench" matrix "${stores[@]}" --procs "$procs" --total "$total" --max-secs "$max_secs" \
        --rounds "$rounds" || exit 1
    echo
    echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "decisions/s: all decisions over the wall time of the batch; vs_1: that over the rate of 1 process"
    echo "latency: of each decision, nearest rank; start_ms: until the last process began after the release"
    echo "server_us: the Redis server's CPU time during the batch, per decision (10 ms ticks)"
    echo "tokens: each budget's level at the end was exactly the burst less one token per decision;"
    echo "  each throttle's window counted exactly one request and one accept per decision"
    echo "rounds: alone_us, one process's median decision (the 1-process batch above); serial_us, the time"
    echo "  a decision holds the store: alone_us for a file, the server's own time running the scripts"
    echo "  per decision for Redis (INFO commandstats, eval and evalsha); limit_ms, serial_us times the"
    echo "  processes: what a round needs in series; p99/limit, the p99 over that; round_ms, the median"
    echo "  time from a round's release to the end of its last decision; cpu_us, a process's CPU time"
    echo "  per round; cpu_ms, that times the processes over the CPUs: the least a round can take;"
    echo "  nothing: rounds of the same processes making no call"
} | tee "$results"; then
    rm -f -- "$results"
    echo "bench: aborted, and no report is kept" >&2
    exit 1
fi
echo "bench: the report is kept in $results" >&2
