#!/usr/bin/env bash
# Peak RSS of `backoff -- true`, the everyday build, judged against the
# promise of SPEC.md section 13 (under 6 MiB) by the median of many runs,
# side by side with the peers in the same rounds, and where its pages are.
#
# Usage, from anywhere:
#   bench/rss.sh [--quick]
#
# Each round runs every command once, in an order rotated from round to
# round, under GNU time (`-f %M`: the largest resident set of the process
# and the children it reaped, in KiB): 200 rounds, 30 with --quick. The
# commands: `true` alone (GNU time's own floor with its child), `backoff --
# true`, `retry -- true` (Debian's retry) and `attempt -- true` (crate
# attempt-cli), and, when BACKOFF_BASELINE names one, an earlier build of
# backoff beside this one (the figures before a change). A peer that is not
# installed is skipped, and the report says so. Every binary is dropped
# from the page cache first, to be read back from disk as an installed
# program is (as bench/run.sh does).
#
# Then, where the pages of `backoff -- true` are: backoff's own mappings,
# read from /proc/PID/smaps by its command (`sh -c 'cat /proc/$PPID/smaps'`)
# while it runs, summed by kind (the binary's code, its read-only data, its
# relocated data, the heap, the stack, the shared libraries), the median of
# 20 runs for each build.
#
# It builds `cargo build --locked --release` (in $CARGO_TARGET_DIR when
# set), unless BACKOFF_BIN names the binary to measure. The report is
# printed and kept in bench/results/YYYY-MM-DD-HHMM-peak-rss.txt (UTC;
# -peak-rss-quick.txt with --quick).
#
# Environment:
#   BACKOFF_BIN       measure this binary instead of the everyday build
#   BACKOFF_BASELINE  an earlier build to measure beside it
#   RETRY_BIN         Debian's retry, if not on PATH
#   ATTEMPT_BIN       attempt (crate attempt-cli), if not on PATH or in /opt/peers/bin
#   TIME_BIN          GNU time, if not /usr/bin/time

set -euo pipefail

# Paths the caller gives are taken relative to where they stand.
[[ -n ${BACKOFF_BIN:-} ]] && BACKOFF_BIN=$(realpath -- "$BACKOFF_BIN")
[[ -n ${BACKOFF_BASELINE:-} ]] && BACKOFF_BASELINE=$(realpath -- "$BACKOFF_BASELINE")
repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

# shellcheck source=bench/common.sh
. bench/common.sh
bench_args rss "$@"

command -v python3 >/dev/null || {
    echo "bench/rss.sh: python3 is needed" >&2
    exit 2
}

if [[ -n ${BACKOFF_BIN:-} ]]; then
    backoff=$BACKOFF_BIN
else
    cargo build --locked --release >&2
    backoff=$(realpath "${CARGO_TARGET_DIR:-target}/release/backoff")
fi
baseline=${BACKOFF_BASELINE:-}
for bin in "$backoff" ${baseline:+"$baseline"}; do
    if [[ ! -x $bin ]]; then
        echo "bench/rss.sh: $bin is not an executable file" >&2
        exit 2
    fi
done

mkdir -p bench/results
stamp=$(date -u +%Y-%m-%d-%H%M)
suffix=peak-rss
$quick && suffix=peak-rss-quick
report="bench/results/$stamp-$suffix.txt"

BENCH_ROUNDS=$runs BENCH_BACKOFF=$backoff \
    BENCH_BASELINE=$baseline BENCH_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) \
    python3 -u - <<'EOF' | tee "$report"
import os, shutil, statistics, subprocess, sys, time

# bench.py's way of finding the peers and of reading a peak.
sys.path.insert(0, "bench")
import bench  # noqa: E402

rounds = int(os.environ["BENCH_ROUNDS"])
backoff = os.environ["BENCH_BACKOFF"]
baseline = os.environ["BENCH_BASELINE"]
PROMISE_KIB = 6 * 1024
# backoff reads BACKOFF_* variables (and tells of those it does not know):
# the runs measured see none.
for name in [n for n in os.environ if n.startswith("BACKOFF_")]:
    del os.environ[name]
gnu_time = bench.find_gnu_time()
if gnu_time is None:
    sys.exit("bench/rss.sh: GNU time is needed (apt-get install time, or TIME_BIN)")
peers, skipped = bench.find_peers()

# name -> the command line measured
commands = {"true": ["true"], "backoff": [backoff, "--", "true"]}
if baseline:
    commands["backoff (baseline)"] = [baseline, "--", "true"]
for peer in peers:
    commands[peer.name] = peer.once()


def version(path):
    text = bench.probe([path, "--version"]) or "?"
    return text.strip().splitlines()[0] if text.strip() else "?"


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


print(f"peak RSS of `backoff -- true`, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
print(f"  commit:    {os.environ['BENCH_COMMIT']}")
print(f"  backoff:   {backoff} ({os.path.getsize(backoff)} bytes)")
if baseline:
    print(f"  baseline:  {baseline} ({os.path.getsize(baseline)} bytes)")
for name in ("retry", "attempt"):
    if name in commands:
        print(f"  {name + ':':10} {commands[name][0]} ({version(commands[name][0])})")
for line in skipped:
    print(f"  skipped:   {line}")
print(f"  machine:   {os.cpu_count()} CPUs, {os.uname().sysname} {os.uname().release}, "
      f"load average {load()}")
print(f"  method:    {rounds} rounds, each command once per round in a rotated order, "
      f"under `{gnu_time} -f %M` (KiB, children included)")
print()

# Each binary is read back from disk as an installed one is after a reboot:
# how the page cache holds a file (in the pieces the linker wrote, or in
# the large blocks of a read) changes how many of its pages a fault maps.
settled = bench.settle([shutil.which(argv[0]) or argv[0] for argv in commands.values()])
if "could not" in settled or "as it is" in settled:
    print(f"  {settled}")
else:
    print("  page cache: every binary measured was dropped from it, to be read back from disk")
print()
names = list(commands)
peaks = {name: [] for name in names}
for r in range(rounds):
    order = names[r % len(names):] + names[:r % len(names)]
    for name in order:
        value = bench.peak_rss_kib(gnu_time, commands[name])
        if value is not None:
            peaks[name].append(value)


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


print(f"{'command':20} {'runs':>5} {'median KiB':>10} {'MiB':>6} {'min':>6} {'p10':>6} "
      f"{'p90':>6} {'max':>6}  under 6 MiB")
medians = {}
for name in names:
    v = peaks[name]
    if not v:
        print(f"{name:20} no figure")
        continue
    medians[name] = statistics.median(v)
    under = sum(1 for x in v if x < PROMISE_KIB)
    print(f"{name:20} {len(v):5} {medians[name]:10.0f} {medians[name] / 1024:6.2f} {min(v):6} "
          f"{quantile(v, 0.1):6} {quantile(v, 0.9):6} {max(v):6}  {under}/{len(v)}")
print()
b = medians.get("backoff")
if b:
    for name in names:
        if name not in ("backoff", "true") and name in medians:
            print(f"backoff / {name}: {b / medians[name]:.2f}x "
                  f"({b - medians[name]:+.0f} KiB)")
    verdict = "met" if b < PROMISE_KIB else "missed"
    print(f"promise: the median under {PROMISE_KIB} KiB (6 MiB): {b:.0f} KiB, {verdict}")
print()


def where(binary):
    """backoff's resident KiB by kind of mapping, while its command runs."""
    p = subprocess.run([binary, "--", "sh", "-c", "cat /proc/$PPID/smaps"],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False)
    real = os.path.realpath(binary)
    kinds = {}
    mapping = None  # (perms, path) of the mapping whose fields follow

    def add(kind, kib):
        kinds[kind] = kinds.get(kind, 0) + kib

    rss = 0
    for line in p.stdout.decode(errors="replace").splitlines():
        fields = line.split()
        if not fields:
            continue
        if not fields[0].endswith(":"):
            mapping = (fields[1], fields[5] if len(fields) > 5 else "")
        elif fields[0] == "Rss:":
            rss = int(fields[1])
        elif fields[0] == "Anonymous:":
            perms, path = mapping
            anonymous = int(fields[1])
            if path == real:
                # Pages backoff wrote: the relocated tables (.data.rel.ro,
                # the GOT) and .data; the others are read from the file.
                add("binary: relocated or written", anonymous)
                add("binary: code" if "x" in perms else "binary: read-only data",
                    rss - anonymous)
            elif path in ("[heap]", "[stack]"):
                add(path[1:-1], rss)
            elif ".so" in path:
                add("shared libraries (libc, libm, ld.so, libgcc_s)", rss)
            else:
                add("other", rss)
    return kinds


builds = [("backoff", backoff)] + ([("backoff (baseline)", baseline)] if baseline else [])
samples = {name: [where(path) for _ in range(20)] for name, path in builds}
kinds = sorted({k for s in samples.values() for run in s for k in run})
print("where backoff's pages are while `true` runs (median KiB of 20 runs; the peak comes later,")
print("at the end of the run):")
print(f"  {'kind':48}" + "".join(f"{name:>20}" for name, _ in builds))
for k in kinds + ["total"]:
    row = f"  {k:48}"
    for name, _ in builds:
        if k == "total":
            value = statistics.median(sum(run.values()) for run in samples[name])
        else:
            value = statistics.median(run.get(k, 0) for run in samples[name])
        row += f"{value:20.0f}"
    print(row)
print()
print(f"(load average at the end: {load()})")
EOF
echo "bench/rss.sh: the report is kept in $report" >&2
