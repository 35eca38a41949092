#!/usr/bin/env bash
# Benchmarks of backoff (SPEC.md section 13), side by side with other retry
# tools: start-up, cost per attempt, CPU while waiting, signal latency, sleep
# overshoot, peak RSS, CPU of a timer, timeout precision, copy throughput
# with output rules or --hold-stdout, peak RSS with large held or replayed
# data, the cost of a retry budget kept in a file or in Redis, the time of
# `backoff simulate`, and peak RSS over a long run of attempts. The work is
# done by bench/bench.py.
#
# Usage, from anywhere:
#   bench/run.sh [--quick] [--wait-delay SECONDS] [--only NAMES]
#                [--long-attempts N]
#
#   --quick               fewer runs, a 1 s wait delay and 256 MiB of copied
#                         data instead of 1 GiB, for a fast look
#   --wait-delay SECONDS  delay of the CPU-while-waiting run and length of the
#                         attempt in the timer-CPU run (default 10)
#   --only NAMES          only these sections, comma-separated (bench.py --help
#                         lists them); the report's name ends in -NAMES
#   --long-attempts N     attempts of the memory section's long run (default
#                         30000)
#
# It measures the everyday build (`cargo build --release`:
# target/release/backoff) and, when it can be built here, the release
# artefact of dist/build-static.sh beside it; both are brought up to date
# with cargo first. The report is printed and kept in
# bench/results/YYYY-MM-DD-HHMM.txt (UTC; --quick runs get a -quick suffix,
# --only runs the names of their sections).
#
# The copy and held-data memory sections keep a file of text lines (1 GiB, or 256 MiB
# with --quick) in the temporary directory ($TMPDIR or /tmp), made once; the
# --hold-stdout runs need as much free space there again.
#
# Environment:
#   BACKOFF_BIN       measure this binary instead of the everyday build
#   BACKOFF_STATIC    the release artefact to show beside it (default: built
#                     by dist/build-static.sh when its target and a musl C
#                     compiler are installed; "none" leaves it out)
#   ATTEMPT_BIN       attempt (crate attempt-cli), if not on PATH or in /opt/peers/bin
#   RETRY_BIN         Debian's retry, if not on PATH
#   TIME_BIN          GNU time, if not /usr/bin/time (used for peak RSS)
#   REDIS_SERVER_BIN  redis-server, if not on PATH; the Redis budget section
#                     starts its own on a free loopback port and stops it
#   BENCH_WAIT_DELAY  same as --wait-delay
#
# A peer that is not installed is skipped, and the report says so. The report
# states whether each promise is met, but the exit status does not depend on
# it: 0 after a complete report, non-zero only when the setup is broken.

set -euo pipefail

caller_dir=$PWD
repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

absolute() {
    # A path given by the caller is taken relative to where they stand.
    [[ $1 == /* ]] && echo "$1" || echo "$caller_dir/$1"
}

if [[ -n ${BACKOFF_BIN:-} ]]; then
    bin=$(absolute "$BACKOFF_BIN")
    if [[ ! -x $bin ]]; then
        echo "bench: BACKOFF_BIN=$BACKOFF_BIN is not an executable file" >&2
        exit 2
    fi
else
    # Built without CARGO_TARGET_DIR, so that the binary lands where it is
    # looked for.
    env -u CARGO_TARGET_DIR cargo build --locked --release >&2
    bin=$repo_root/target/release/backoff
fi

# --only NAMES runs some sections; the report's name then ends in them.
only=
args=("$@")
for i in "${!args[@]}"; do
    case ${args[i]} in
    --only=*) only=${args[i]#--only=} ;;
    --only) only=${args[i + 1]:-} ;;
    esac
done

static=
# Only sections 1 and 2 measure the release artefact.
if [[ -n $only && ,$only, != *,start,* && ,$only, != *,attempts,* ]]; then
    BACKOFF_STATIC=none
fi
case ${BACKOFF_STATIC:-} in
none) ;;
"")
    if ! static=$(env -u CARGO_TARGET_DIR dist/build-static.sh 2>/tmp/backoff-bench-static.log); then
        static=
        echo "bench: the release artefact is not measured: dist/build-static.sh failed" \
            "(see /tmp/backoff-bench-static.log)" >&2
    fi
    ;;
*)
    static=$(absolute "$BACKOFF_STATIC")
    ;;
esac

if ! command -v python3 >/dev/null; then
    echo "bench: python3 is required" >&2
    exit 2
fi
# hyperfine is optional: without it the timing sections say they are skipped.

mkdir -p bench/results
results=bench/results/$(date -u +%Y-%m-%d-%H%M)
[[ -n $only ]] && results+=-${only//,/-}
for arg in "$@"; do
    [[ $arg == --quick ]] && results+=-quick
done
results+=.txt
python3 -u "$repo_root/bench/bench.py" --backoff "$bin" ${static:+--static "$static"} "$@" \
    | tee "$results"
echo "bench: the report is kept in $results" >&2
