#!/usr/bin/env bash
# Benchmarks of backoff (SPEC.md section 13), side by side with other retry
# tools: invocation overhead, cost per attempt, CPU while waiting, signal
# latency, sleep overshoot, peak RSS, CPU of a timer, timeout precision, copy
# throughput with output rules or --hold-stdout, peak RSS with large held or
# replayed data, the cost of a retry budget kept in a file or in Redis, and
# the time of `backoff simulate`. The work is done by bench/bench.py.
#
# Usage, from anywhere:
#   bench/run.sh [--quick] [--wait-delay SECONDS]
#
#   --quick               fewer runs, a 1 s wait delay and 256 MiB of copied
#                         data instead of 1 GiB, for a fast look
#   --wait-delay SECONDS  delay of the CPU-while-waiting run and length of the
#                         attempt in the timer-CPU run (default 10)
#
# The copy and memory sections keep a file of text lines (1 GiB, or 256 MiB
# with --quick) in the temporary directory ($TMPDIR or /tmp), made once; the
# --hold-stdout runs need as much free space there again.
#
# Environment:
#   BACKOFF_BIN       the backoff binary to measure. By default, the static musl
#                     build (README, "Building") when the musl target and a musl C
#                     compiler are installed, with the default glibc build shown
#                     beside it as "backoff (glibc)"; otherwise the glibc build
#                     alone. Each is built with cargo when missing.
#   BACKOFF_ALSO      LABEL=PATH: another backoff binary to show beside the one
#                     measured, as "backoff (LABEL)", in the overhead and
#                     per-attempt sections (no verdicts)
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

also=${BACKOFF_ALSO:-}
if [[ -n ${BACKOFF_BIN:-} ]]; then
    # A path given by the caller is taken relative to where they stand.
    bin=$BACKOFF_BIN
    [[ $bin == /* ]] || bin=$caller_dir/$bin
    if [[ ! -x $bin ]]; then
        echo "bench: BACKOFF_BIN=$BACKOFF_BIN is not an executable file" >&2
        exit 2
    fi
else
    # Built without CARGO_TARGET_DIR, so that the binaries land where they
    # are looked for. .cargo/config.toml builds for the host as an explicit
    # target, so the default build lands under target/HOST/release.
    host=$(rustc -vV | sed -n 's/^host: //p')
    bin=$repo_root/target/$host/release/backoff
    if [[ ! -x $bin ]]; then
        echo "bench: $bin is missing; running cargo build --release" >&2
        env -u CARGO_TARGET_DIR cargo build --release >&2
    fi
    musl=${host%-gnu}-musl
    if [[ $host == *-linux-gnu ]] \
        && rustup target list --installed 2>/dev/null | grep -qx "$musl" \
        && command -v "${host%%-*}-linux-musl-gcc" >/dev/null; then
        musl_bin=$repo_root/target/$musl/release/backoff
        if [[ ! -x $musl_bin ]]; then
            echo "bench: $musl_bin is missing; running cargo build --release --target $musl" >&2
            env -u CARGO_TARGET_DIR cargo build --release --target "$musl" >&2
        fi
        [[ -n $also ]] || also="glibc=$bin"
        bin=$musl_bin
    elif [[ $host == *-linux-gnu ]]; then
        echo "bench: the static musl build is not measured: it needs" \
            "\`rustup target add $musl\` and a musl C compiler (Debian: musl-tools)" >&2
    fi
fi

if ! command -v python3 >/dev/null; then
    echo "bench: python3 is required" >&2
    exit 2
fi
# hyperfine is optional: without it the timing sections say they are skipped.

exec python3 "$repo_root/bench/bench.py" --backoff "$bin" ${also:+--also "$also"} "$@"
