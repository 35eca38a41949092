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

quick=false
for arg in "$@"; do
    case $arg in
    --quick) quick=true ;;
    *)
        echo "usage: bench/traces.sh [--quick]" >&2
        exit 2
        ;;
    esac
done
runs=200
$quick && runs=30

command -v hyperfine >/dev/null || {
    echo "bench/traces.sh: hyperfine is needed (apt-get install hyperfine)" >&2
    exit 2
}
cargo build --locked --release >&2
backoff=$(realpath "${CARGO_TARGET_DIR:-target}/release/backoff")

work=$(mktemp -d "${TMPDIR:-/tmp}/backoff-traces-bench.XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf -- "$work"
}
trap cleanup EXIT

# The receiver: 200 to every POST, its body read.
cat >"$work/receiver.py" <<'EOF'
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        if n:
            self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
EOF
python3 "$work/receiver.py" "$work/receiver.port" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/receiver.port" ] && break; sleep 0.05; done
endpoint="http://127.0.0.1:$(cat "$work/receiver.port")"

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
