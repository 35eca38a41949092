#!/usr/bin/env bash
# The simulator's cron table: what a fleet's cron at :00 does to a service
# and to the store of the lock and the once-per record, run plainly, with
# --splay, --lock and --once-per (`backoff simulate --model cron`), for
#
#   the defaults                    1000 hosts, a 5s job, 100 requests/s, --splay 2m
#   a larger fleet                  10000 hosts, 500 requests/s, a 30s job, --splay 10m
#
# each with --seed 2015 (the guide's), and the wall time of each run (the
# simulator's promise: its defaults in under 3 s on a 2-core machine).
#
# Usage, from anywhere:
#   bench/cron.sh
#
# It builds `cargo build --release` (in $CARGO_TARGET_DIR when set). The
# report is printed and kept in bench/results/YYYY-MM-DD-HHMM-cron.txt
# (UTC).

set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

if [ $# -gt 0 ]; then
    echo "usage: bench/cron.sh" >&2
    exit 2
fi
cargo build --locked --release >&2
backoff=$(realpath "${CARGO_TARGET_DIR:-target}/release/backoff")

# `table ARGS...`: the table of `backoff simulate --model cron ARGS`, and
# the wall time of the run.
table() {
    local start end
    echo "\$ backoff simulate --model cron $*"
    start=$(date +%s%N)
    "$backoff" simulate --model cron "$@"
    end=$(date +%s%N)
    echo "(wall time: $(((end - start) / 1000000)) ms)"
    echo
}

stamp=$(date -u +%Y-%m-%d-%H%M)
report="bench/results/$stamp-cron.txt"
{
    echo "backoff simulate --model cron, $(date -u '+%Y-%m-%d %H:%M') UTC"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "machine: $(nproc) CPUs, $(uname -sr)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    table --seed 2015
    table --seed 2015 --clients 10000 --capacity 500 --job 30s --splay 10m
} | tee "$report"
echo "kept in $report" >&2
