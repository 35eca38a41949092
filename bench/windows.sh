#!/usr/bin/env bash
# What backoff costs on Windows, as far as Wine can tell: the mean wall
# time of
#
#   cmd /c exit 0                          Wine starting cmd.exe alone
#   backoff.exe -- cmd /c exit 0           one attempt through backoff
#   backoff.exe (3 attempts) -- cmd ...    a run that fails twice
#
# all under Wine (one warm wineserver), and beside them, in the same run,
# the Linux build doing the same with sh, and Debian's retry (if
# installed). Under Wine the absolute times mean little (every process
# start goes through the Wine server): what is reported is each build's
# cost over starting the command alone, and the cost of one more attempt,
# and their ratio Windows / Linux, a rough one.
#
# Usage, from anywhere:
#   bench/windows.sh [--quick]
#
# It builds `cargo build --release` for Linux and for x86_64-pc-windows-gnu
# (MinGW-w64: apt-get install gcc-mingw-w64-x86-64), needs Wine (apt-get
# install wine64 wine) and hyperfine, and builds the bcryptprimitives.dll
# stand-in Wine 8 needs (tests/windows/). The report is printed and kept
# in bench/results/YYYY-MM-DD-HHMM-windows.txt (UTC; -windows-quick.txt
# with --quick).

set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

# shellcheck source=bench/common.sh
. bench/common.sh
bench_setup windows "$@"
runs=50
if $quick; then runs=20; fi
for tool in wine x86_64-w64-mingw32-gcc; do
    command -v "$tool" >/dev/null || {
        echo "bench/windows.sh: $tool is needed (apt-get install wine64 wine gcc-mingw-w64-x86-64)" >&2
        exit 2
    }
done
triple=x86_64-pc-windows-gnu
cargo build --locked --release --target "$triple" >&2
cp "${CARGO_TARGET_DIR:-target}/$triple/release/backoff.exe" "$work/"
x86_64-w64-mingw32-gcc -O2 -shared -o "$work/bcryptprimitives.dll" \
    tests/windows/bcryptprimitives.c -ladvapi32
export WINEPREFIX="$work/wine" WINEDEBUG=-all
wine cmd /c exit 0 >/dev/null 2>&1 || true
wineserver -p || true
three="--base 1ms --cap 1ms --jitter none --max-retries 2 -q"

names=("wine: cmd /c exit 0" "wine: backoff.exe -- cmd" "wine: backoff.exe (3 attempts)"
    "linux: sh -c exit" "linux: backoff -- sh" "linux: backoff (3 attempts)")
commands=(
    "wine cmd /c exit 0"
    "wine $work/backoff.exe -- cmd /c exit 0"
    "wine $work/backoff.exe $three -- cmd /c exit 1"
    "sh -c exit\ 0"
    "$backoff -- sh -c exit\ 0"
    "$backoff $three -- sh -c exit\ 1"
)
retry_bin=${RETRY_BIN:-$(command -v retry || true)}
if [ -n "$retry_bin" ]; then
    names+=("linux: retry -- sh")
    commands+=("$retry_bin --times=1 -- sh -c exit\ 0")
fi
args=()
for i in "${!commands[@]}"; do
    args+=(--command-name "${names[$i]}" "${commands[$i]}")
done
hyperfine -N -i --warmup 3 --runs "$runs" --style none \
    --export-json "$work/times.json" "${args[@]}" >/dev/null 2>&1
wineserver -k || true

stamp=$(date -u +%Y-%m-%d-%H%M)
suffix=windows
$quick && suffix=windows-quick
report="bench/results/$stamp-$suffix.txt"
{
    echo "backoff on Windows (under Wine $(wine --version 2>/dev/null | tr -d '\r')) and on Linux, $(date -u '+%Y-%m-%d %H:%M') UTC"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "machine: $(nproc) CPUs, $(uname -sr)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "runs: $runs each (hyperfine -N, 3 warm-up runs)"
    [ -n "$retry_bin" ] || echo "retry: Debian's retry is not installed (apt-get install retry); not measured"
    echo
    python3 - "$work/times.json" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
ms = lambda name: results[name]["mean"] * 1000
print(f"{'command':34} {'mean_ms':>8} {'stddev_ms':>9} {'median_ms':>9}")
for name, r in results.items():
    print(f"{name:34} {r['mean']*1000:8.2f} {r['stddev']*1000:9.2f} {r['median']*1000:9.2f}")
print()
rows = {}
for side, alone in [("wine", "wine: cmd /c exit 0"), ("linux", "linux: sh -c exit")]:
    one = [n for n in results if n.startswith(side + ": backoff") and "3 attempts" not in n][0]
    three = side + ": backoff" + (".exe" if side == "wine" else "") + " (3 attempts)"
    start = ms(one) - ms(alone)
    attempt = (ms(three) - ms(one)) / 2
    rows[side] = (start, attempt)
    print(f"{side:6} backoff's start-up over the command alone: {start:8.2f} ms;"
          f" one more attempt: {attempt:8.2f} ms")
print()
print(f"Windows (Wine) / Linux: start-up {rows['wine'][0] / rows['linux'][0]:.1f}x,"
      f" per attempt {rows['wine'][1] / rows['linux'][1]:.1f}x (rough: Wine's process starts dominate)")
if "linux: retry -- sh" in results:
    print(f"{'linux: backoff -- sh / retry -- sh:':44} {ms('linux: backoff -- sh') / ms('linux: retry -- sh'):.2f}x")
PY
} | tee "$report"
echo "kept in $report" >&2
