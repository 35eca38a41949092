# What bench/lock.sh, bench/overlap.sh, bench/traces.sh and bench/rss.sh share, sourced by
# them after `set -euo pipefail` and `cd` to the repository:
# `bench_setup NAME ARGS...`
# reads --quick (sets $quick and $runs: 200, or 30), checks for hyperfine,
# builds `cargo build --release` (sets $backoff) and makes a work directory
# ($work) removed at exit with the processes listed in $pids;
# `http_server NAME` starts a python3 HTTP server that answers 200 to every
# GET and POST (its body read) and sets $server to its http://127.0.0.1:PORT;
# `redis_server` starts a redis-server that keeps nothing on a free loopback
# port and sets $redis_port to it (empty, and nothing started, without
# redis-server).

bench_setup() {
    bench_args "$@"
    local name=$1
    command -v hyperfine >/dev/null || {
        echo "bench/$name.sh: hyperfine is needed (apt-get install hyperfine)" >&2
        exit 2
    }
    cargo build --locked --release >&2
    backoff=$(realpath "${CARGO_TARGET_DIR:-target}/release/backoff")
    work=$(mktemp -d "${TMPDIR:-/tmp}/backoff-$name-bench.XXXXXX")
    pids=()
    trap bench_cleanup EXIT
}

# `bench_args NAME ARGS...` reads --quick alone: sets $quick and $runs
# (200, or 30).
bench_args() {
    local name=$1
    shift
    quick=false
    for arg in "$@"; do
        case $arg in
        --quick) quick=true ;;
        *)
            echo "usage: bench/$name.sh [--quick]" >&2
            exit 2
            ;;
        esac
    done
    runs=200
    if $quick; then runs=30; fi
}

bench_cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf -- "$work"
}

http_server() {
    local name=$1
    cat >"$work/$name.py" <<'EOF'
import http.server, socketserver, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self):
        n = int(self.headers.get("Content-Length", 0))
        if n:
            self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_POST = answer
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
EOF
    python3 "$work/$name.py" "$work/$name.port" &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$work/$name.port" ] && break; sleep 0.05; done
    server="http://127.0.0.1:$(cat "$work/$name.port")"
}

redis_server() {
    redis_port=
    command -v redis-server >/dev/null || return 0
    redis_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
        --dir "$work" >/dev/null 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
        sleep 0.05
    done
}
