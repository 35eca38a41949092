#!/usr/bin/env bash
# What exporting traces costs a run, side by side with the peers in the
# same run: the mean wall time of
#
#   retry -- true                        Debian's retry, one attempt (if installed)
#   backoff -- true                      export off (no endpoint)
#   backoff -- true, traced              export on: spans sent in protobuf
#                                        to a local OTLP/HTTP receiver
#   backoff -- true, traced json+gzip    export on: OTLP/JSON, gzipped
#   backoff (3 attempts)                 a run that fails twice, export off
#   backoff (3 attempts), traced         the same, export on
#
# each started through env(1), which sets the variables (so every command
# pays the same extra exec), and the export's cost as ratios: on / off.
#
# Usage, from anywhere:
#   bench/traces.sh [--quick]
#
# It builds `cargo build --release` (in $CARGO_TARGET_DIR when set), runs
# hyperfine (Debian package hyperfine) and a python3 HTTP server that
# answers 200 to every export (it does not decode them: its own time is
# part of what is measured, as a collector's would be), and stops it at the
# end. The report is printed and kept in
# bench/results/YYYY-MM-DD-HHMM-traces.txt (UTC; -traces-quick.txt with
# --quick).

set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

# shellcheck source=bench/common.sh
. bench/common.sh
bench_setup traces "$@"
http_server receiver
endpoint="$server"

off="env OTEL_EXPORTER_OTLP_ENDPOINT="
on="env OTEL_EXPORTER_OTLP_ENDPOINT=$endpoint"
json="env OTEL_EXPORTER_OTLP_ENDPOINT=$endpoint OTEL_EXPORTER_OTLP_PROTOCOL=http/json OTEL_EXPORTER_OTLP_COMPRESSION=gzip"
three="--base 1ms --cap 1ms --jitter none --max-retries 2 -q -- sh -c"
names=()
commands=()
retry_bin=${RETRY_BIN:-$(command -v retry || true)}
if [ -n "$retry_bin" ]; then
    names+=("retry -- true")
    commands+=("$off $retry_bin --times=1 -- true")
fi
names+=("backoff -- true" "backoff -- true, traced" "backoff -- true, traced json+gzip"
    "backoff (3 attempts)" "backoff (3 attempts), traced")
commands+=(
    "$off $backoff -- true"
    "$on $backoff -- true"
    "$json $backoff -- true"
    "$off $backoff $three exit\ 1"
    "$on $backoff $three exit\ 1"
)

args=()
for i in "${!commands[@]}"; do
    args+=(--command-name "${names[$i]}" "${commands[$i]}")
done
hyperfine -N -i --warmup 10 --runs "$runs" --style none \
    --export-json "$work/times.json" "${args[@]}" >/dev/null 2>&1

stamp=$(date -u +%Y-%m-%d-%H%M)
suffix=traces
$quick && suffix=traces-quick
report="bench/results/$stamp-$suffix.txt"
{
    echo "backoff's traces (OTLP/HTTP export), $(date -u '+%Y-%m-%d %H:%M') UTC"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "machine: $(nproc) CPUs, $(uname -sr)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "runs: $runs each (hyperfine -N, 10 warm-up runs), each through env(1)"
    [ -n "$retry_bin" ] || echo "retry: Debian's retry is not installed (apt-get install retry); not measured"
    echo
    python3 - "$work/times.json" <<'EOF'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
ms = lambda name: results[name]["mean"] * 1000
print(f"{'command':36} {'mean_ms':>8} {'stddev_ms':>9} {'median_ms':>9}")
for name, r in results.items():
    print(f"{name:36} {r['mean']*1000:8.3f} {r['stddev']*1000:9.3f} {r['median']*1000:9.3f}")
print()
base = ms("backoff -- true")
for name in ["backoff -- true, traced", "backoff -- true, traced json+gzip"]:
    print(f"{name + ' / off:':44} {ms(name) / base:.2f}x  (+{ms(name) - base:.3f} ms)")
three = ms("backoff (3 attempts)")
t = ms("backoff (3 attempts), traced")
print(f"{'3 attempts, traced / off:':44} {t / three:.2f}x  (+{t - three:.3f} ms)")
if "retry -- true" in results:
    print(f"{'backoff -- true, traced / retry -- true:':44} {ms('backoff -- true, traced') / ms('retry -- true'):.2f}x")
EOF
} | tee "$report"
echo "kept in $report" >&2
