#!/usr/bin/env python3
"""Benchmarks of backoff, side by side with other retry tools.

Measures the promises of SPEC.md section 13, for the everyday build (and,
in sections 1 and 2, the static release artefact beside it):

   1. start-up                       8. timeout precision
   2. cost per attempt               9. copy throughput with output rules
   3. CPU used while waiting        10. memory with large held or replayed data
   4. signal latency during a delay 11. retry budget kept in a file
   5. sleep overshoot               12. retry budget kept in Redis
   6. peak resident memory          13. `backoff simulate` with its defaults
   7. CPU of a timer during an attempt 14. memory over a long run of attempts

Sections 9 and 10 use a file of text lines (1 GiB, 256 MiB with --quick)
that is made once in the temporary directory and kept for later runs.
Section 12 starts a redis-server of its own on a free loopback port, with
nothing saved to disk, and stops it at the end; without redis-server it is
skipped.

Prints a report, one section per measurement, then a summary table. It never
judges by exit status: a missed promise is reported as such and the script
still exits 0. Only a broken setup (no backoff binary, a bad option) makes it
fail. Standard library only; `bench/run.sh` is the usual way in.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import pty
import select
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

# The promises of SPEC.md section 13, as numbers. Start-up and per-attempt
# costs are promised as ratios to peers measured in the same run.
PROMISE_START_VS_ATTEMPT = 1.0  # the everyday build's overhead, to attempt-cli's
PROMISE_START_VS_RETRY = 3.0  # the everyday build's overhead, to C retry's
PROMISE_STATIC_VS_RETRY = 1.3  # the release artefact's overhead, to C retry's
PROMISE_ATTEMPT_VS_RETRY = 1.5  # the cost of an attempt, to C retry's
PROMISE_WAIT_CPU_MS = 5.0
PROMISE_SIGNAL_MS = 10.0
PROMISE_OVERSHOOT_MS = 2.0
PROMISE_RSS_KIB = 6 * 1024
PROMISE_TIMER_CPU_MS = 5.0
PROMISE_TIMEOUT_LATE_MS = 2.0
PROMISE_COPY_RATIO = 0.8
PROMISE_BIG_RSS_KIB = 16 * 1024
PROMISE_BUDGET_MS = 1.0  # the bench's own bound on a budget's bookkeeping
PROMISE_SIMULATE_S = 3.0
# Over a long run, the peak RSS grows by at most 5% or 256 KiB, whichever is
# more: what a run keeps per attempt is bounded.
PROMISE_LONG_RSS_RATIO = 0.05
PROMISE_LONG_RSS_KIB = 256
PROMISE_LONG_RSS = "+5% or +256 KiB"

# A regular expression that matches no line of the data the copy runs pass.
NEVER_MATCHES = "never-matches-zq"

# Attempts in the cost-per-attempt run.
ATTEMPTS = 1000

# Where `attempt` (crate attempt-cli) may live besides PATH.
ATTEMPT_FALLBACK = "/opt/peers/bin/attempt"

# Dispositions a child must get back: Python ignores these itself, and an
# ignored disposition survives exec (subprocess restores them the same way).
RESTORED_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(signal, name)
)


# ---------------------------------------------------------------------------
# Settings and the tools under test
# ---------------------------------------------------------------------------


@dataclass
class Settings:
    """How hard each measurement works; `--quick` lowers everything."""

    # Many short rounds: a slow spell of a shared machine then weighs on
    # every command alike.
    overhead_runs: int = 5000
    overhead_warmup: int = 10  # per round
    overhead_rounds: int = 25
    attempts_runs: int = 24
    attempts_warmup: int = 1  # per round
    attempts_rounds: int = 4
    wait_delay_s: float = 10.0
    signal_reps: int = 20
    sleep_reps: int = 20
    rss_reps: int = 5
    timeout_reps: int = 20
    copy_bytes: int = 1 << 30  # 1 GiB
    copy_runs: int = 7
    big_rss_reps: int = 3
    simulate_runs: int = 5
    # Attempts of the long run of section 14 (100 000 take minutes per tool
    # on a loaded 2-core machine), and runs of its short one.
    long_attempts: int = 30000
    long_rss_reps: int = 3


@dataclass
class Tool:
    """A retry wrapper and the command lines that ask it for each scenario."""

    name: str
    path: str
    # Runs `true` once, with the tool's defaults.
    once: Callable[[], list[str]]
    # Runs `child` for `n` attempts, no delay between them, as quietly as it can.
    failing: Callable[[int, list[str]], list[str]]
    # Runs `false` for 4 attempts with a short delay (defaults otherwise).
    few: Callable[[], list[str]]
    # What differs from backoff's configuration, by section ("attempts", "rss").
    notes: dict[str, str] = field(default_factory=dict)


def make_backoff(path: str, name: str = "backoff") -> Tool:
    return Tool(
        name=name,
        path=path,
        once=lambda: [path, "--", "true"],
        failing=lambda n, child: [
            path, "--base", "0s", "--cap", "0s", "--jitter", "none",
            "--max-retries", str(n - 1), "-q", "--", *child,
        ],
        few=lambda: [path, "--max-retries", "3", "--base", "1ms", "--", "false"],
    )


def make_retry(path: str) -> Tool:
    # Debian's retry: `-t N` counts attempts (not retries), `-d S` takes whole
    # seconds only, and it has no quiet mode (its lines go to /dev/null here).
    return Tool(
        name="retry",
        path=path,
        once=lambda: [path, "--", "true"],
        failing=lambda n, child: [path, "-t", str(n), "-d", "0", "--", *child],
        few=lambda: [path, "-t", "4", "-d", "0", "--", "false"],
        notes={
            "attempts": "retry has no quiet mode: its message per attempt goes to /dev/null",
            "rss": "retry takes whole seconds only: its 4-attempt run uses -d 0, not 1 ms",
        },
    )


def make_attempt(path: str) -> Tool:
    # attempt-cli: the `fixed` schedule with `-w 0` is a zero delay, `-a N`
    # counts attempts, and a non-zero exit status is retried by default.
    return Tool(
        name="attempt",
        path=path,
        once=lambda: [path, "--", "true"],
        failing=lambda n, child: [
            path, "fixed", "-w", "0", "-a", str(n), "-qq", "--", *child,
        ],
        few=lambda: [path, "fixed", "-w", "1ms", "-a", "4", "-qq", "--", "false"],
    )


def probe(argv: list[str]) -> str | None:
    """Runs a short command; its stdout and stderr, or None if it cannot run."""
    try:
        p = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (p.stdout + p.stderr).decode(errors="replace")


def find_peers() -> tuple[list[Tool], list[str]]:
    """The peers that are installed, and a line for each one that is not."""
    peers, missing = [], []

    retry = os.environ.get("RETRY_BIN") or shutil.which("retry")
    if not retry or not os.access(retry, os.X_OK):
        missing.append("retry: not installed (looked in $RETRY_BIN and PATH); skipped")
    else:
        # Other tools share the name; only Debian's has this syntax.
        help_text = probe([retry, "--help"]) or ""
        if "--times" in help_text and "--until" in help_text:
            peers.append(make_retry(retry))
        else:
            missing.append(f"retry: {retry} is not Debian's retry (no --times/--until); "
                           "skipped")

    attempt = (
        os.environ.get("ATTEMPT_BIN")
        or shutil.which("attempt")
        or (ATTEMPT_FALLBACK if os.access(ATTEMPT_FALLBACK, os.X_OK) else None)
    )
    if attempt and probe([attempt, "--version"]) is not None:
        peers.append(make_attempt(attempt))
    else:
        missing.append(
            "attempt: not installed (looked in $ATTEMPT_BIN, PATH and "
            f"{ATTEMPT_FALLBACK}); skipped"
        )
    return peers, missing


# ---------------------------------------------------------------------------
# Running things
# ---------------------------------------------------------------------------


def spawn(argv: list[str], stdout: int | None = None, stderr: int | None = None) -> int:
    """Starts argv directly (PATH lookup, no shell) and returns its pid.

    stdin is /dev/null; stdout and stderr go to the given file descriptors,
    or to /dev/null.
    """
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)]
    for fd, target in ((1, stdout), (2, stderr)):
        if target is None:
            actions.append((os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0))
        else:
            actions.append((os.POSIX_SPAWN_DUP2, target, fd))
    return os.posix_spawnp(
        argv[0], argv, os.environ, file_actions=actions, setsigdef=RESTORED_SIGNALS
    )


@dataclass
class Usage:
    """CPU and wall time of one finished process, its descendants included."""

    user_ms: float
    sys_ms: float
    wall_ms: float
    status: int

    @property
    def cpu_ms(self) -> float:
        return self.user_ms + self.sys_ms


def run_usage(argv: list[str]) -> Usage:
    """Runs argv to its end and returns the resources it used.

    wait4 gives the same figures as getrusage(RUSAGE_CHILDREN) taken around
    the run, but for this one child (and the children it reaped) only.
    """
    t0 = time.perf_counter()
    pid = spawn(argv)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    return Usage(ru.ru_utime * 1e3, ru.ru_stime * 1e3, wall * 1e3, status)


def run_usage_on_terminal(argv: list[str]) -> tuple[Usage, bytes]:
    """Runs argv to its end on a new pseudo-terminal (its stdin, stdout and
    stderr, and its controlling terminal), reading all it writes there, and
    returns the resources it used and what it wrote."""
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    out = bytearray()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's other side was closed
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    return Usage(ru.ru_utime * 1e3, ru.ru_stime * 1e3, wall * 1e3, status), bytes(out)


@dataclass
class Timing:
    """hyperfine's statistics for one command, in milliseconds."""

    mean: float
    stddev: float
    median: float
    min: float
    max: float
    # The mean of each round, in the order the rounds ran.
    round_means: list[float] = field(default_factory=list)


class Hyperfine:
    """Runs hyperfine without a shell (-N) and reads its JSON export.

    The runs are split into rounds, each a separate hyperfine call with the
    commands in a rotated order, and the times of all rounds are pooled: a
    slow spell of a noisy machine then hits every command alike instead of
    whichever one hyperfine happened to be running.
    """

    def __init__(self, path: str):
        self.path = path

    def run(
        self,
        commands: list[tuple[str, list[str]]],
        runs: int,
        warmup: int,
        rounds: int = 1,
        ignore_failure: bool = False,
    ) -> dict[str, Timing]:
        times: dict[str, list[float]] = {name: [] for name, _ in commands}
        means: dict[str, list[float]] = {name: [] for name, _ in commands}
        per_round = max(2, -(-runs // rounds))  # ceiling division
        for i in range(rounds):
            order = commands[i % len(commands):] + commands[:i % len(commands)]
            for name, t in self._once(order, per_round, warmup, ignore_failure).items():
                times[name] += t
                means[name].append(statistics.fmean(t) * 1e3)
        return {
            name: Timing(
                mean=statistics.fmean(t) * 1e3,
                stddev=statistics.stdev(t) * 1e3 if len(t) > 1 else 0.0,
                median=statistics.median(t) * 1e3,
                min=min(t) * 1e3,
                max=max(t) * 1e3,
                round_means=means[name],
            )
            for name, t in times.items()
        }

    def _once(
        self,
        commands: list[tuple[str, list[str]]],
        runs: int,
        warmup: int,
        ignore_failure: bool,
    ) -> dict[str, list[float]]:
        """One hyperfine call; each command's run times in seconds."""
        with tempfile.TemporaryDirectory() as tmp:
            export = os.path.join(tmp, "hyperfine.json")
            argv = [
                self.path, "-N", "--style", "none",
                "--warmup", str(warmup), "--runs", str(runs),
                "--export-json", export,
            ]
            if ignore_failure:
                argv.append("--ignore-failure")
            for name, command in commands:
                argv += ["--command-name", name, shlex.join(command)]
            p = subprocess.run(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, check=False,
            )
            if p.returncode != 0:
                raise RuntimeError(f"hyperfine failed: {p.stderr.decode(errors='replace')}")
            with open(export, encoding="utf-8") as f:
                return {r["command"]: r["times"] for r in json.load(f)["results"]}


# ---------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the summary table."""

    measure: str
    backoff: str
    promise: str
    verdict: str
    peers: dict[str, str] = field(default_factory=dict)


def header(title: str) -> None:
    print()
    print(title)
    print("-" * len(title))


def table(rows: list[list[str]], indent: str = "  ") -> None:
    """Prints rows as columns: the first left-aligned, the rest right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        print(indent + "  ".join(cells).rstrip())


def timing_cells(argv: list[str], r: Timing, digits: int) -> list[str]:
    """A hyperfine result's first table cells: command, mean, sd and median in ms."""
    return [shlex.join(argv), *(f"{v:.{digits}f}" for v in (r.mean, r.stddev, r.median))]


def verdict_below(value: float, limit: float, unit: str) -> str:
    """'met' when value < limit, else how far above the limit it is."""
    if value < limit:
        return "met"
    return f"MISSED by {value - limit:.2f} {unit}"


def verdict_ratios(ratios: dict[str, float]) -> str:
    """'met' when backoff beats every peer (every ratio below 1)."""
    if not ratios:
        return "no peer"
    worse = [n for n, r in ratios.items() if r >= 1]
    return "met" if not worse else "MISSED vs " + ", ".join(worse)


def verdict_at_most(r: float, limit: float) -> str:
    """'met' when the ratio r is at most limit."""
    return "met" if r <= limit else f"MISSED ({r:.2f}x > {limit:g}x)"


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def duration_arg(seconds: float) -> str:
    """A duration in backoff's syntax: whole seconds, else milliseconds."""
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms"


def describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return "killed by " + signal.Signals(os.WTERMSIG(status)).name
    return f"exit {os.WEXITSTATUS(status)}"


# ---------------------------------------------------------------------------
# 1. Invocation overhead
# ---------------------------------------------------------------------------


def bench_overhead(cfg: Settings, tools: list[Tool], static: Tool | None,
                   hf: Hyperfine | None, summary: list[Row]):
    header("1. Start-up: run `true` once")
    if hf is None:
        print("  skipped: hyperfine is not installed")
        return
    print(f"  hyperfine -N, {cfg.overhead_runs} runs each in {cfg.overhead_rounds} rounds "
          f"of rotated order, {cfg.overhead_warmup} warmup runs per round")
    # `env true` is a reference, not a peer: env only execs the command (no
    # fork, no wait), so it shows what one more exec costs on this machine,
    # the least any wrapper that runs a program can add.
    env = shutil.which("env")
    reference = [("env true (reference)", [env, "true"])] if env else []
    builds = [tools[0], *([static] if static else [])]
    peers = tools[1:]
    commands = [("true (direct)", ["true"]), *reference,
                *((t.name, t.once()) for t in [*builds, *peers])]
    res = hf.run(commands, cfg.overhead_runs, cfg.overhead_warmup, cfg.overhead_rounds)

    direct = res["true (direct)"]
    e = res[reference[0][0]] if reference else None
    over = {name: res[name].mean - direct.mean for name, _ in commands}
    rows = [["command", "mean ms", "± sd", "median ms", "minus true ms", "minus env true ms"]]
    for name, argv in commands:
        r = res[name]
        rows.append([*timing_cells(argv, r, 3),
                     f"{over[name]:+.3f}" if r is not direct else "",
                     f"{r.mean - e.mean:+.3f}" if e and r is not direct and r is not e else ""])
    table(rows)
    print()
    print("  overhead = a wrapper's mean minus that of `true` run directly; ratios are of "
          "overheads")
    if e:
        print(f"  one more exec (`env true` minus `true`): {over[reference[0][0]]:+.3f} ms")
    by_peer = {t.name: t for t in peers}
    promises = [(tools[0], "attempt", PROMISE_START_VS_ATTEMPT),
                (tools[0], "retry", PROMISE_START_VS_RETRY)]
    if static:
        promises.append((static, "retry", PROMISE_STATIC_VS_RETRY))
    for build in builds:
        b = res[build.name]
        per_round = sorted(x - y for x, y in zip(b.round_means, direct.round_means))
        spread = (f"; {per_round[0]:+.3f} to {per_round[-1]:+.3f} ms over the "
                  f"{len(per_round)} rounds" if len(per_round) > 1 else "")
        beyond = f", {b.mean - e.mean:+.3f} ms beyond `env true`" if e else ""
        print(f"  {build.name}: overhead {over[build.name]:+.3f} ms{beyond}{spread}")
        summary.append(Row(f"start-up: {build.name} -- true, overhead", f"{over[build.name]:.3f} ms",
                           "", "(detail)",
                           {t.name: f"{over[t.name]:.3f} ms" for t in peers}))
        if e:
            summary.append(Row("  beyond one exec (`env true`)", f"{b.mean - e.mean:.3f} ms", "",
                               "(detail)",
                               {t.name: f"{res[t.name].mean - e.mean:.3f} ms" for t in peers}))
    for build, peer, limit in promises:
        if peer not in by_peer:
            summary.append(Row(f"start-up: {build.name} / {peer}", "n/a",
                               f"<= {limit:g}x", f"not measured: {peer} is not installed"))
            continue
        r = ratio(over[build.name], over[peer])
        print(f"  {build.name} / {peer}: {r:.2f}x (promise <= {limit:g}x)")
        summary.append(Row(f"start-up: {build.name} / {peer}", f"{r:.2f}x", f"<= {limit:g}x",
                           verdict_at_most(r, limit)))
    if e:
        summary.append(Row("  one exec (`env true` - `true`)",
                           f"{over[reference[0][0]]:.3f} ms", "", "(reference)"))


# ---------------------------------------------------------------------------
# 2. Cost per attempt
# ---------------------------------------------------------------------------


def count_attempts(tool: Tool) -> tuple[int, float]:
    """Runs the tool's no-delay configuration with a child that counts itself.

    Returns the number of attempts made and the wall time in seconds (the
    child is a shell, so this run is slower than the timed one).
    """
    return count_attempts_argv(lambda child: tool.failing(ATTEMPTS, child))


def count_attempts_argv(argv: Callable[[list[str]], list[str]],
                        status: int = 1) -> tuple[int, float]:
    """count_attempts for the command line that argv(child) builds, the
    child exiting with status."""
    with tempfile.TemporaryDirectory() as tmp:
        counter = os.path.join(tmp, "attempts")
        child = ["sh", "-c", f'echo x >> "$0"; exit {status}', counter]
        t0 = time.perf_counter()
        try:
            subprocess.run(argv(child), stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=60, check=False)
        except subprocess.TimeoutExpired:
            pass  # counted below: fewer attempts than asked means a delay
        wall = time.perf_counter() - t0
        try:
            with open(counter, encoding="utf-8") as f:
                return sum(1 for _ in f), wall
        except FileNotFoundError:
            return 0, wall


def bench_attempts(cfg: Settings, tools: list[Tool], static: Tool | None,
                   hf: Hyperfine | None, summary: list[Row]):
    header(f"2. Cost per attempt: {ATTEMPTS} failing attempts of `false`, no delay")
    if hf is None:
        print("  skipped: hyperfine is not installed")
        return

    # Each tool must really make ATTEMPTS attempts without sleeping between
    # them; a child that appends a line to a file per attempt shows both.
    made: dict[str, int] = {}
    also = [static] if static else []
    measured = [*tools[:1], *also, *tools[1:]]
    print("  check: each configuration below, with a counting child (sh) instead of false:")
    for t in measured:
        n, wall = count_attempts(t)
        made[t.name] = n
        ok = "ok" if n == ATTEMPTS else f"NOT {ATTEMPTS}: per-attempt figures divide by {n}"
        per = wall / n * 1e3 if n else float("nan")
        print(f"    {t.name:8} {n} attempts in {wall:.2f} s ({per:.2f} ms each, "
              f"so any delay is below that): {ok}")
    for t in tools:
        if "attempts" in t.notes:
            print(f"  note: {t.notes['attempts']}")

    # A shell loop that runs the `false` binary ATTEMPTS times is the
    # reference: spawning and reaping the child, with next to nothing around it.
    false = shutil.which("false") or "/bin/false"
    loop = f'i=0; while [ $i -lt {ATTEMPTS} ]; do {shlex.quote(false)}; i=$((i+1)); done'
    reference = ("sh loop (reference)", ["sh", "-c", loop])
    commands = [(t.name, t.failing(ATTEMPTS, ["false"])) for t in measured] + [reference]
    print(f"  hyperfine -N, {cfg.attempts_runs} runs each in {cfg.attempts_rounds} rounds "
          f"of rotated order, {cfg.attempts_warmup} warmup run(s) per round; per-attempt "
          "figures use the median")
    res = hf.run(commands, cfg.attempts_runs, cfg.attempts_warmup, cfg.attempts_rounds,
                 ignore_failure=True)

    made[reference[0]] = ATTEMPTS
    per_us = {n: res[n].median * 1e3 / max(made[n], 1) for n in res}
    floor_us = per_us[reference[0]]
    rows = [["command", "mean ms", "± sd", "median ms", "µs/attempt", "minus loop µs"]]
    for name, argv in commands:
        r = res[name]
        rows.append([*timing_cells(argv, r, 1), f"{per_us[name]:.1f}",
                     f"{per_us[name] - floor_us:+.1f}"])
    table(rows)
    print()
    print("  'minus loop' is what a tool spends per attempt beyond a shell loop that just")
    print("  runs the same binary")
    ratios = {t.name: ratio(per_us["backoff"], per_us[t.name]) for t in tools[1:]}
    for name, r in ratios.items():
        print(f"  backoff / {name}: {r:.2f}x per attempt")
    for a in also:
        print(f"  {a.name}: " + ", ".join(
            f"/ {t.name}: {ratio(per_us[a.name], per_us[t.name]):.2f}x" for t in tools[1:]))

    summary.append(Row("per attempt: 1000 x false, no delay", f"{per_us['backoff']:.1f} µs",
                       "", "(detail)", {n: f"{per_us[n]:.1f} µs" for n in ratios}))
    if "retry" in ratios:
        summary.append(Row("per attempt: backoff / retry", f"{ratios['retry']:.2f}x",
                           f"<= {PROMISE_ATTEMPT_VS_RETRY:g}x",
                           verdict_at_most(ratios["retry"], PROMISE_ATTEMPT_VS_RETRY)))
    else:
        summary.append(Row("per attempt: backoff / retry", "n/a",
                           f"<= {PROMISE_ATTEMPT_VS_RETRY:g}x",
                           "not measured: retry is not installed"))
    for a in also:
        summary.append(Row(f"  {a.name}", f"{per_us[a.name]:.1f} µs", "", "(not judged)",
                           {t.name: f"{ratio(per_us[a.name], per_us[t.name]):.2f}x"
                            for t in tools[1:]}))
    summary.append(Row("  sh loop running false (reference)", f"{floor_us:.1f} µs", "",
                       "(reference)"))


# ---------------------------------------------------------------------------
# 3. CPU while waiting
# ---------------------------------------------------------------------------


def bench_wait_cpu(cfg: Settings, backoff: Tool, summary: list[Row]):
    d = duration_arg(cfg.wait_delay_s)
    header(f"3. CPU while waiting: one delay of {d}")
    waiting = [backoff.path, "--base", d, "--cap", d, "--jitter", "none",
               "--max-retries", "1", "--", "false"]
    once = [backoff.path, "--max-retries", "0", "--", "false"]

    w = run_usage(waiting)
    # The run that waits also runs `false` twice; the same run without the
    # delay and its second attempt is subtracted (median of a few runs).
    base = [run_usage(once) for _ in range(5)]
    bare = [run_usage(["false"]) for _ in range(5)]
    base_cpu = median([u.cpu_ms for u in base])
    bare_cpu = median([u.cpu_ms for u in bare])
    diff = w.cpu_ms - base_cpu

    table([
        ["run", "wall ms", "user ms", "sys ms", "user+sys ms"],
        [shlex.join(waiting), f"{w.wall_ms:.1f}", f"{w.user_ms:.2f}", f"{w.sys_ms:.2f}",
         f"{w.cpu_ms:.2f}"],
        [shlex.join(once) + "  (median of 5)", f"{median([u.wall_ms for u in base]):.1f}",
         f"{median([u.user_ms for u in base]):.2f}", f"{median([u.sys_ms for u in base]):.2f}",
         f"{base_cpu:.2f}"],
        ["false  (median of 5)", f"{median([u.wall_ms for u in bare]):.1f}",
         f"{median([u.user_ms for u in bare]):.2f}", f"{median([u.sys_ms for u in bare]):.2f}",
         f"{bare_cpu:.2f}"],
    ])
    print()
    print("  times include the `false` children (wait4 counts reaped descendants)")
    print(f"  CPU of the delay = waiting run minus single run: {diff:.2f} ms "
          f"(this still holds one more attempt, about {bare_cpu:.2f} ms of `false`); "
          f"promise < {PROMISE_WAIT_CPU_MS} ms")
    print(f"  exit: {describe_status(w.status)}")
    summary.append(Row(f"CPU of a {d} delay", f"{diff:.2f} ms", f"< {PROMISE_WAIT_CPU_MS} ms",
                       verdict_below(diff, PROMISE_WAIT_CPU_MS, "ms")))

    # The same on a terminal, where a status line counts the delay down.
    print()
    tw, shown = run_usage_on_terminal(waiting)
    tbase = [run_usage_on_terminal(once)[0] for _ in range(5)]
    tbase_cpu = median([u.cpu_ms for u in tbase])
    tdiff = tw.cpu_ms - tbase_cpu
    updates = shown.count(b"; retrying in ")
    print(f"  on a terminal (pty): waiting run {tw.cpu_ms:.2f} ms, single run {tbase_cpu:.2f} ms "
          f"(median of 5); {updates} lines with the time left were drawn")
    print(f"  CPU of the counted-down delay: {tdiff:.2f} ms; promise < {PROMISE_WAIT_CPU_MS} ms")
    summary.append(Row(f"CPU of a {d} delay, counted down on a terminal", f"{tdiff:.2f} ms",
                       f"< {PROMISE_WAIT_CPU_MS} ms",
                       verdict_below(tdiff, PROMISE_WAIT_CPU_MS, "ms")))


# ---------------------------------------------------------------------------
# 4. Signal latency
# ---------------------------------------------------------------------------


def signal_latency_once(argv: list[str]) -> tuple[float | None, str]:
    """Starts backoff, waits for its 'retrying in' line, sends SIGTERM.

    Returns the time from kill() to the end of waitpid() in ms (None when the
    line never came) and how the process ended.
    """
    r, w = os.pipe()
    try:
        pid = spawn(argv, stderr=w)
    finally:
        os.close(w)
    seen, deadline = b"", time.monotonic() + 5.0
    try:
        while b"retrying in" not in seen or not seen.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                break
            chunk = os.read(r, 4096)
            if not chunk:
                break
            seen += chunk
        if b"retrying in" not in seen:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            return None, "no 'retrying in' line within 5 s; " + describe_status(status)
        # The line is written just before the delay begins; a moment later
        # backoff is certainly inside its wait.
        time.sleep(0.05)
        t0 = time.perf_counter()
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        return (time.perf_counter() - t0) * 1e3, describe_status(status)
    finally:
        os.close(r)


def bench_signal(cfg: Settings, backoff: Tool, summary: list[Row]):
    header("4. Signal latency: SIGTERM during a 30 s delay")
    argv = [backoff.path, "--base", "30s", "--cap", "30s", "--jitter", "none",
            "--max-retries", "1", "--", "false"]
    print(f"  {shlex.join(argv)}")
    print(f"  {cfg.signal_reps} runs; timed from kill(SIGTERM) until waitpid returns")
    latencies, endings = [], {}
    for _ in range(cfg.signal_reps):
        ms, how = signal_latency_once(argv)
        endings[how] = endings.get(how, 0) + 1
        if ms is not None:
            latencies.append(ms)
    if not latencies:
        print("  no run reached its delay: " + ", ".join(endings))
        summary.append(Row("signal during a delay, max", "n/a", f"< {PROMISE_SIGNAL_MS} ms",
                           "not measured"))
        return
    med, worst = median(latencies), max(latencies)
    print(f"  median {med:.3f} ms, min {min(latencies):.3f} ms, max {worst:.3f} ms; "
          f"promise < {PROMISE_SIGNAL_MS} ms")
    print("  endings: " + ", ".join(f"{how} x{n}" for how, n in endings.items()))
    summary.append(Row("signal during a delay, median / max", f"{med:.2f} / {worst:.2f} ms",
                       f"< {PROMISE_SIGNAL_MS} ms",
                       verdict_below(worst, PROMISE_SIGNAL_MS, "ms")))


# ---------------------------------------------------------------------------
# 5. Sleep overshoot
# ---------------------------------------------------------------------------

# Each attempt prints the wall clock in ns and fails. Attempt 1 prints it as
# its last act, attempt 2 as its first, so the gap between the two lines is
# the delay plus a fixed cost: the shell's exit, backoff's turnaround, the
# start of the next shell and of `date`.
STAMP = ["sh", "-c", "date +%s%N; exit 1"]


def stamp_gap_ms(backoff: Tool, delay: str) -> float | None:
    """The gap in ms between the two attempts' timestamps, or None."""
    argv = [backoff.path, "--base", delay, "--cap", delay, "--jitter", "none",
            "--max-retries", "1", "-q", "--", *STAMP]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, timeout=10, check=False)
    lines = p.stdout.split()
    try:
        first, second = (int(x) for x in lines)
    except ValueError:
        return None
    return (second - first) / 1e6


def bench_sleep(cfg: Settings, backoff: Tool, summary: list[Row]):
    header("5. Sleep overshoot: a 100 ms delay")
    print(f"  child: {shlex.join(STAMP)} (wall clock, ns)")
    print("  gap = second attempt's stamp minus the first's; the fixed part of the gap")
    print("  (shell exit, backoff's turnaround, spawning sh and date) is measured by the")
    print("  same run with --base 0s --cap 0s, which sleeps not at all; runs alternate")
    gaps_100, gaps_0 = [], []
    for _ in range(cfg.sleep_reps):
        for delay, gaps in (("100ms", gaps_100), ("0s", gaps_0)):
            g = stamp_gap_ms(backoff, delay)
            if g is not None:
                gaps.append(g)
    if not gaps_100 or not gaps_0:
        print("  skipped: `date +%s%N` gave no usable timestamps on this system")
        summary.append(Row("sleep overshoot, median", "n/a", f"< {PROMISE_OVERSHOOT_MS} ms",
                           "not measured"))
        return
    spawn_cost = median(gaps_0)
    raw = [g - 100.0 for g in gaps_100]
    overshoot = [g - spawn_cost for g in raw]
    table([
        ["", "median ms", "min ms", "max ms"],
        ["gap, delay 0s (fixed cost)", f"{spawn_cost:.3f}", f"{min(gaps_0):.3f}",
         f"{max(gaps_0):.3f}"],
        ["gap, delay 100ms, minus 100 ms", f"{median(raw):.3f}", f"{min(raw):.3f}",
         f"{max(raw):.3f}"],
        ["overshoot (the above minus fixed cost)", f"{median(overshoot):.3f}",
         f"{min(overshoot):.3f}", f"{max(overshoot):.3f}"],
    ])
    print()
    print(f"  {len(gaps_100)} + {len(gaps_0)} runs; promise: median overshoot "
          f"< {PROMISE_OVERSHOOT_MS} ms")
    med = median(overshoot)
    summary.append(Row("sleep overshoot of 100ms, median", f"{med:.3f} ms",
                       f"< {PROMISE_OVERSHOOT_MS} ms",
                       verdict_below(med, PROMISE_OVERSHOOT_MS, "ms")))


# ---------------------------------------------------------------------------
# 6. Peak RSS
# ---------------------------------------------------------------------------


def find_gnu_time() -> str | None:
    """GNU time, if it is here and reports %M."""
    path = os.environ.get("TIME_BIN") or "/usr/bin/time"
    if not os.access(path, os.X_OK):
        return None
    with tempfile.NamedTemporaryFile("r") as out:
        probe([path, "-o", out.name, "-f", "%M", "true"])
        return path if out.read().strip().isdigit() else None


def peak_rss_kib(gnu_time: str, argv: list[str]) -> int | None:
    """The largest resident set of argv and its descendants, in KiB."""
    with tempfile.NamedTemporaryFile("r") as out:
        subprocess.run([gnu_time, "-o", out.name, "-f", "%M", *argv],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30, check=False)
        # GNU time puts "Command exited with non-zero status" first.
        lines = out.read().split()
    return int(lines[-1]) if lines and lines[-1].isdigit() else None


def python_spawned_rss_kib() -> int:
    """ru_maxrss that wait4 reports for `true` started by this Python."""
    _, _, ru = os.wait4(spawn(["true"]), 0)
    return ru.ru_maxrss // (1024 if sys.platform == "darwin" else 1)


def bench_rss(cfg: Settings, tools: list[Tool], summary: list[Row]):
    header("6. Peak RSS")
    gnu_time = find_gnu_time()
    if gnu_time is None:
        print("  skipped: needs GNU time (/usr/bin/time or $TIME_BIN) with -f %M")
        return
    # ru_maxrss counts the memory image a process replaced by exec, so every
    # child of this Python would report at least Python's own size. GNU time
    # is a small C launcher: its own size is the floor, shown by the direct
    # runs of true and false, and must stay below the wrappers' figures.
    print(f"  max of {cfg.rss_reps} runs of `{gnu_time} -f %M` (wait4 ru_maxrss, KiB, "
          "descendants included)")
    print(f"  (started from Python, even `true` reports {python_spawned_rss_kib()} KiB, "
          "Python's own size: hence the C launcher)")

    def peak(argv: list[str]) -> int | None:
        values = [v for v in (peak_rss_kib(gnu_time, argv) for _ in range(cfg.rss_reps))
                  if v is not None]
        return max(values) if values else None

    floor = {name: peak([name]) for name in ("true", "false")}
    rows = [["command", "peak KiB"]]
    rows += [[f"{name} (direct: the child's own size)", str(v)] for name, v in floor.items()]
    results: dict[str, dict[str, int | None]] = {}
    for t in tools:
        results[t.name] = {"once": peak(t.once()), "few": peak(t.few())}
        rows.append([shlex.join(t.once()), str(results[t.name]["once"])])
        rows.append([shlex.join(t.few()), str(results[t.name]["few"])])
    table(rows)

    child_max = max(v for v in floor.values() if v is not None)
    for t in tools:
        for kind, v in results[t.name].items():
            if v is not None and v <= child_max:
                print(f"  note: {t.name} ({kind}) is no bigger than its child; "
                      "the figure may be the child's")
    for t in tools:
        if "rss" in t.notes:
            print(f"  note: {t.notes['rss']}")

    b = results["backoff"]
    print()
    print(f"  promise: backoff < {PROMISE_RSS_KIB} KiB")
    for t in tools[1:]:
        p = results[t.name]
        if b["once"] and p["once"] and b["few"] and p["few"]:
            print(f"  backoff / {t.name}: {ratio(b['once'], p['once']):.2f}x (true), "
                  f"{ratio(b['few'], p['few']):.2f}x (4 attempts of false)")

    for kind, label in (("once", "peak RSS: -- true"), ("few", "peak RSS: 4 x false")):
        v = b[kind]
        peers = {
            t.name: f"{results[t.name][kind]} KiB ({ratio(v, results[t.name][kind]):.2f}x)"
            for t in tools[1:] if v and results[t.name][kind]
        }
        summary.append(Row(label, f"{v} KiB" if v else "n/a", f"< {PROMISE_RSS_KIB} KiB",
                           verdict_below(v, PROMISE_RSS_KIB, "KiB") if v else "not measured",
                           peers))


# ---------------------------------------------------------------------------
# 7. CPU of a timer during an attempt
# ---------------------------------------------------------------------------


def bench_timer_cpu(cfg: Settings, backoff: Tool, summary: list[Row]):
    d = cfg.wait_delay_s
    secs = f"{d:g}"
    # The limit must not fire: a minute, or twice the attempt when that is longer.
    limit = "1m" if d < 30 else duration_arg(2 * d)
    header(f"7. CPU of a timer: one {secs} s attempt under --timeout {limit}, "
           f"and under --idle-timeout {limit}")
    # wait4 counts the reaped `sleep` too. Its CPU does not depend on how long
    # it sleeps (one nanosleep), so `sleep 0` alone stands for it; the same
    # backoff run with `sleep 0` also takes out backoff's start and exit.
    bare = [run_usage(["sleep", "0"]) for _ in range(5)]
    bare_cpu = median([u.cpu_ms for u in bare])
    rows = [["run", "wall ms", "user ms", "sys ms", "user+sys ms"]]
    found = []
    for flag in ("--timeout", "--idle-timeout"):
        waiting = [backoff.path, flag, limit, "--max-retries", "0", "--", "sleep", secs]
        short = [backoff.path, flag, limit, "--max-retries", "0", "--", "sleep", "0"]
        # The median of 3 runs: a single run's CPU figure moves by a clock
        # tick.
        w = sorted((run_usage(waiting) for _ in range(3)), key=lambda u: u.cpu_ms)[1]
        base = [run_usage(short) for _ in range(5)]
        base_cpu = median([u.cpu_ms for u in base])
        rows.append([shlex.join(waiting) + "  (median of 3)", f"{w.wall_ms:.1f}", f"{w.user_ms:.2f}",
                     f"{w.sys_ms:.2f}", f"{w.cpu_ms:.2f}"])
        rows.append([shlex.join(short) + "  (median of 5)",
                     f"{median([u.wall_ms for u in base]):.1f}",
                     f"{median([u.user_ms for u in base]):.2f}",
                     f"{median([u.sys_ms for u in base]):.2f}", f"{base_cpu:.2f}"])
        found.append((flag, w, w.cpu_ms - bare_cpu, w.cpu_ms - base_cpu))
    rows.append(["sleep 0  (median of 5)", f"{median([u.wall_ms for u in bare]):.1f}",
                 f"{median([u.user_ms for u in bare]):.2f}",
                 f"{median([u.sys_ms for u in bare]):.2f}", f"{bare_cpu:.2f}"])
    table(rows)
    print()
    print("  times include the `sleep` child (wait4 counts reaped descendants)")
    for flag, w, own, timer in found:
        print(f"  {flag}: backoff's own CPU = timed run minus `sleep 0` alone: {own:.2f} ms "
              f"(start, spawn, timer, exit); promise < {PROMISE_TIMER_CPU_MS} ms")
        print(f"  {flag}: of which the {secs} s under a timer = timed run minus the same "
              f"run of `sleep 0`: {timer:.2f} ms; exit: {describe_status(w.status)}")
        summary.append(Row(f"CPU of backoff during a {secs} s attempt with {flag}",
                           f"{own:.2f} ms", f"< {PROMISE_TIMER_CPU_MS} ms",
                           verdict_below(own, PROMISE_TIMER_CPU_MS, "ms")))
        summary.append(Row("  of which waiting under the timer", f"{timer:.2f} ms", "",
                           "(detail)"))


# ---------------------------------------------------------------------------
# 8. Timeout precision
# ---------------------------------------------------------------------------


def bench_timeout(cfg: Settings, backoff: Tool, summary: list[Row]):
    header("8. Timeout precision: --timeout 200ms on `sleep 5`")
    fired = [backoff.path, "--timeout", "200ms", "--max-retries", "0", "--", "sleep", "5"]
    prompt = [backoff.path, "--timeout", "1m", "--max-retries", "0", "--", "true"]
    print(f"  timed:     {shlex.join(fired)}")
    print(f"  reference: {shlex.join(prompt)}")
    print(f"  {cfg.timeout_reps} runs each, alternating; wall time from spawn to the end of "
          "wait4")
    print("  lateness = wall time - 200 ms - median wall time of the reference (spawn,")
    print("  start, exit and reaping, which the timed run pays too)")
    walls, refs, endings = [], [], {}
    for _ in range(cfg.timeout_reps):
        u = run_usage(fired)
        walls.append(u.wall_ms)
        how = describe_status(u.status)
        endings[how] = endings.get(how, 0) + 1
        refs.append(run_usage(prompt).wall_ms)
    fixed = median(refs)
    late = [w - 200.0 - fixed for w in walls]
    table([
        ["", "median ms", "min ms", "max ms"],
        ["reference (exits at once)", f"{fixed:.3f}", f"{min(refs):.3f}", f"{max(refs):.3f}"],
        ["timed run minus 200 ms", f"{median(walls) - 200:.3f}", f"{min(walls) - 200:.3f}",
         f"{max(walls) - 200:.3f}"],
        ["lateness (the above minus reference)", f"{median(late):.3f}", f"{min(late):.3f}",
         f"{max(late):.3f}"],
    ])
    print()
    print("  the lateness also holds the end of the timed-out child (SIGTERM to its")
    print("  process group, its death and reaping) but not the run of `true`, which the")
    print("  reference holds: it can come out a fraction of a millisecond below zero")
    print("  endings of the timed runs: " + ", ".join(f"{h} x{n}" for h, n in endings.items()))
    med, worst = median(late), max(late)
    print(f"  promise: median lateness < {PROMISE_TIMEOUT_LATE_MS} ms")
    summary.append(Row("timeout 200ms fires late by, median / max",
                       f"{med:.2f} / {worst:.2f} ms", f"< {PROMISE_TIMEOUT_LATE_MS} ms (median)",
                       verdict_below(med, PROMISE_TIMEOUT_LATE_MS, "ms")))


# ---------------------------------------------------------------------------
# 9. Copy throughput with output rules
# ---------------------------------------------------------------------------


def text_block() -> bytes:
    """10000 distinct log-like lines of exactly 100 bytes each, 1 MB in all.

    No line holds an x, a z or a q, so neither NEVER_MATCHES nor `x` match:
    a matcher has to read every line to the end.
    """
    lines = []
    for i in range(10000):
        head = (f"{i:010d} GET /api/v1/items/{i % 9973:05d} status=200 "
                f"bytes={(i * 7919) % 100000:05d} ms={(i * 31) % 1000:03d} agent=bench/1.0 ")
        lines.append(head.ljust(99, ".")[:99] + "\n")
    block = "".join(lines).encode()
    assert len(block) == 10000 * 100 and not set(b"xzq") & set(block)
    return block


def lines_file(size: int) -> str:
    """A file of `size` bytes of text lines, made once and kept in the temp dir."""
    path = os.path.join(tempfile.gettempdir(), f"backoff-bench-lines-{size}")
    block = text_block()
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == size and f.read(len(block)) == block[:size]:
                return path
    except FileNotFoundError:
        pass
    part = path + f".{os.getpid()}.part"
    with open(part, "wb") as f:
        left = size
        while left > 0:
            f.write(block[:left])
            left -= len(block)
    os.replace(part, path)
    return path


def mib(n: int) -> str:
    """A size in MiB, or in GiB when it is a whole number of them."""
    if n >= 1 << 30 and n % (1 << 30) == 0:
        return f"{n >> 30} GiB"
    return f"{n / (1 << 20):g} MiB"


def bytes_through(script: str) -> int | None:
    """What `script` writes to its stdout, counted by `wc -c`."""
    p = subprocess.run(["sh", "-c", script + " | wc -c"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    try:
        return int(p.stdout.strip())
    except ValueError:
        return None


def bench_copy(cfg: Settings, backoff: Tool, data: str, summary: list[Row]):
    size = cfg.copy_bytes
    header(f"9. Copy throughput: {mib(size)} through output rules, --idle-timeout and "
           "--hold-stdout")
    b, q = shlex.quote(backoff.path), shlex.quote
    zeros = f"head -c {size} /dev/zero"
    lines = f"cat {q(data)}"
    sink = "cat > /dev/null"
    # (data, producer, backoff's options or None for the plain pipeline)
    cases = [
        ("zeros", zeros, None),
        ("zeros", zeros, ["--stop-if-output", NEVER_MATCHES]),
        ("zeros", zeros, ["--idle-timeout", "1h"]),
        ("lines", lines, None),
        ("lines", lines, ["--stop-if-output", NEVER_MATCHES]),
        ("lines", lines, ["--idle-timeout", "1h"]),
        ("lines", lines, ["--hold-stdout"]),
    ]
    scripts: dict[str, str] = {}
    for kind, producer, opts in cases:
        if opts is None:
            scripts[f"{kind}: plain"] = f"{producer} | {sink}"
        else:
            scripts[f"{kind}: backoff {' '.join(opts)}"] = (
                f"{b} {shlex.join(opts)} -- {producer} | {sink}")
    # References: an extra cat in the middle is the least any tool that reads
    # the output and passes it on adds (one more pipe to cross); the other
    # does with cat what --hold-stdout does: the data goes into a temporary
    # file, then from the file into the pipe.
    for kind, producer in (("zeros", zeros), ("lines", lines)):
        scripts[f"{kind}: cat in between (reference)"] = f"{producer} | cat | {sink}"
    scripts["lines: via a temp file (reference)"] = (
        't=$(mktemp) && ' + lines + ' > "$t" && cat "$t" | ' + sink
        + '; s=$?; rm -f "$t"; exit $s')

    # The same pipelines again with every process on one CPU: how a pipe's
    # two ends share the CPUs changes the plain pipeline's speed a lot.
    taskset = shutil.which("taskset")
    cpu = min(os.sched_getaffinity(0))
    variants: dict[str, list[str]] = {}
    for name, script in scripts.items():
        kind, rest = name.split(": ", 1)
        variants[f"{kind}, all CPUs: {rest}"] = ["sh", "-c", script]
        if taskset:
            variants[f"{kind}, 1 CPU: {rest}"] = [taskset, "-c", str(cpu), "sh", "-c", script]

    print(f"  data: zeros from /dev/zero (no newline at all), and {data}, 100-byte")
    print(f"  text lines (no line matches {NEVER_MATCHES!r}); the page cache holds the file")
    print(f"  consumer: `{sink}` behind a pipe; each pipeline runs under `sh -c`, once free")
    if taskset:
        print(f"  to use all CPUs, once under `taskset -c {cpu}` (every process on one CPU)")
    else:
        print("  to use all CPUs (taskset is not installed: no one-CPU runs)")
    print(f"  {cfg.copy_runs} runs of each, in rotated order; figures use the median")
    for name, script in scripts.items():
        if "backoff" in name:
            n = bytes_through(script.rsplit(" | ", 1)[0])
            ok = "ok" if n == size else "WRONG"
            print(f"  check: {name} passes {n} bytes of {size}: {ok}")

    names = list(variants)
    walls: dict[str, list[float]] = {n: [] for n in names}
    failed: dict[str, int] = {}
    for i in range(cfg.copy_runs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            u = run_usage(variants[name])
            walls[name].append(u.wall_ms)
            if u.status != 0:
                failed[name] = failed.get(name, 0) + 1
    med = {n: median(w) for n, w in walls.items()}

    def plain_of(name: str) -> str:
        return name.split(": ", 1)[0] + ": plain"

    def cat_in_place_of(name: str) -> str | None:
        # cat doing backoff's job in the same place: passing the output on
        # between the command and the consumer, or (--hold-stdout) storing
        # it in a temporary file and then passing it on.
        group, rest = name.split(": ", 1)
        if not rest.startswith("backoff "):
            return None
        if "--hold-stdout" in rest:
            return f"{group}: via a temp file (reference)"
        return f"{group}: cat in between (reference)"

    rows = [["pipeline", "median ms", "min ms", "max ms", "MiB/s", "vs plain",
             "vs cat in its place"]]
    for name in sorted(names, key=lambda n: ("1 CPU" in n, names.index(n))):
        like = cat_in_place_of(name)
        rows.append([name, f"{med[name]:.0f}", f"{min(walls[name]):.0f}",
                     f"{max(walls[name]):.0f}", f"{size / (1 << 20) / (med[name] / 1e3):.0f}",
                     f"{ratio(med[plain_of(name)], med[name]):.2f}x",
                     f"{ratio(med[like], med[name]):.2f}x" if like else ""])
    table(rows)
    print()
    for name, script in scripts.items():
        print(f"  {name}: sh -c {q(script)}")
    for name, n in failed.items():
        print(f"  note: {name} exited non-zero in {n} run(s)")
    print("  'vs plain' = throughput of the pipeline / throughput of the plain one on the")
    print("  same data and CPUs = plain time / its time. 'vs cat in its place' = the same")
    print("  against cat doing backoff's job in the same place: between the command and")
    print("  the consumer (`... | cat | ...`), or for --hold-stdout storing the output in a")
    print(f"  temporary file and then passing it on. The promise (>= {PROMISE_COPY_RATIO}x the")
    print("  throughput of cat) is judged against the latter; 'vs plain' is shown beside it.")

    for name in sorted(names, key=lambda n: ("1 CPU" in n, names.index(n))):
        kind, rest = name.split(": ", 1)
        r = ratio(med[plain_of(name)], med[name])
        like = cat_in_place_of(name)
        if like:
            what = rest.split(" ")[1]
            r_like = ratio(med[like], med[name])
            verdict = "met" if r_like >= PROMISE_COPY_RATIO else (
                f"MISSED by {PROMISE_COPY_RATIO - r_like:.2f}x")
            summary.append(Row(f"copy {mib(size)} of {kind}, {what}, vs cat in its place",
                               f"{r_like:.2f}x", f">= {PROMISE_COPY_RATIO}x", verdict))
            summary.append(Row("  the same vs plain (nothing in between)",
                               f"{r:.2f}x", "", "(detail)"))
        elif "reference" in rest:
            summary.append(Row(f"  {kind}: {rest.removesuffix(' (reference)')}",
                               f"{r:.2f}x", "", "(reference)"))


# ---------------------------------------------------------------------------
# 10. Memory with large held or replayed data
# ---------------------------------------------------------------------------


def peak_rss_big_kib(gnu_time: str, argv: list[str], stdin: str | None) -> int | None:
    """Like peak_rss_kib, with stdin from a file and room for a long run."""
    with tempfile.NamedTemporaryFile("r") as out:
        with open(stdin or os.devnull, "rb") as inp:
            subprocess.run([gnu_time, "-o", out.name, "-f", "%M", *argv],
                           stdin=inp, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=600, check=False)
        lines = out.read().split()
    return int(lines[-1]) if lines and lines[-1].isdigit() else None


def bench_big_rss(cfg: Settings, backoff: Tool, data: str, summary: list[Row]):
    size = os.path.getsize(data)
    header(f"10. Peak RSS with {mib(size)} held or replayed")
    gnu_time = find_gnu_time()
    if gnu_time is None:
        print("  skipped: needs GNU time (/usr/bin/time or $TIME_BIN) with -f %M")
        summary.append(Row("peak RSS, held / replayed data", "n/a",
                           f"< {PROMISE_BIG_RSS_KIB} KiB", "not measured"))
        return
    print(f"  max of {cfg.big_rss_reps} run(s) of `{gnu_time} -f %M` (KiB, descendants "
          "included); stdout /dev/null")
    print(f"  data: {data} (text lines, none matches 'x')")
    b = backoff.path
    runs = [
        ("cat FILE (the child alone)", ["cat", data], None, False),
        ("backoff --hold-stdout -- cat FILE", [b, "--hold-stdout", "--", "cat", data], None,
         True),
        ("backoff --replay-stdin -- cat < FILE", [b, "--replay-stdin", "--", "cat"], data,
         True),
        ("backoff --hold-stdout --stop-if-output x -- cat FILE",
         [b, "--hold-stdout", "--stop-if-output", "x", "--", "cat", data], None, True),
        ("backoff --replay-stdin --stop-if-output x -- cat < FILE",
         [b, "--replay-stdin", "--stop-if-output", "x", "--", "cat"], data, True),
    ]
    rows = [["command", "peak KiB"]]
    for label, argv, stdin, judged in runs:
        values = [v for v in (peak_rss_big_kib(gnu_time, argv, stdin)
                              for _ in range(cfg.big_rss_reps)) if v is not None]
        v = max(values) if values else None
        rows.append([label, str(v) if v is not None else "n/a"])
        if judged:
            summary.append(Row(f"peak RSS: {label.removeprefix('backoff ')}",
                               f"{v} KiB" if v else "n/a", f"< {PROMISE_BIG_RSS_KIB} KiB",
                               verdict_below(v, PROMISE_BIG_RSS_KIB, "KiB") if v
                               else "not measured"))
    table(rows)
    print()
    print(f"  FILE = {data}; promise: backoff < {PROMISE_BIG_RSS_KIB} KiB whatever the size")


# ---------------------------------------------------------------------------
# 14. Memory over a long run
# ---------------------------------------------------------------------------


def bench_long_rss(cfg: Settings, tools: list[Tool], missing: list[str], summary: list[Row]):
    short, long = ATTEMPTS, cfg.long_attempts
    header(f"14. Memory over a long run: peak RSS for {short} and {long} attempts, no delay")
    gnu_time = find_gnu_time()
    if gnu_time is None:
        print("  skipped: needs GNU time (/usr/bin/time or $TIME_BIN) with -f %M")
        summary.append(Row(f"peak RSS growth, {short} to {long} attempts", "n/a",
                           PROMISE_LONG_RSS, "not measured"))
        return
    backoff, peers = tools[0], tools[1:]
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        b = backoff.path
        no_delay = ["--base", "0s", "--cap", "0s", "--jitter", "none", "-q"]
        # (label, argv for n attempts and a child, the child's exit status, judged)
        runs: list[tuple[str, Callable[[int, list[str]], list[str]], int, bool]] = [
            ("backoff -- false", backoff.failing, 1, True),
            ("backoff --report FILE -- false",
             lambda n, child: [b, *no_delay, "--attempts", str(n), "--report", report,
                               "--", *child], 1, True),
            ("backoff --until-failure N -- true",
             lambda n, child: [b, *no_delay, "--until-failure", str(n), "--", *child], 0,
             True),
            *((t.name + " -- false", t.failing, 1, False) for t in peers),
        ]
        print(f"  `{gnu_time} -f %M` (KiB, descendants included): the maximum of "
              f"{cfg.long_rss_reps} run(s) at {short}, 1 run at {long}; output to /dev/null")
        print(f"  backoff's delays: {shlex.join(no_delay)} (0s: no wait at all; 1ns measures "
              "the same)")
        print(f"  check: each configuration at {short}, with a counting child (sh) instead "
              "of false or true:")
        for label, argv, status, _ in runs:
            n, wall = count_attempts_argv(lambda child, argv=argv: argv(short, child),
                                          status)
            ok = "ok" if n == short else f"NOT {short}"
            print(f"    {label:34} {n} runs of the child in {wall:.2f} s: {ok}")
        for line in missing:
            print(f"  {line}")

        rows = [["command", f"peak KiB at {short}", f"at {long}", "growth", "ratio",
                 "s at " + str(long)]]
        judged_rows: list[Row] = []
        peer_growth: dict[str, str] = {}
        for label, argv, status, judged in runs:
            child = ["false"] if status else ["true"]
            at_short = [v for v in (peak_rss_big_kib(gnu_time, argv(short, child), None)
                                    for _ in range(cfg.long_rss_reps)) if v is not None]
            t0 = time.perf_counter()
            at_long = peak_rss_big_kib(gnu_time, argv(long, child), None)
            wall = time.perf_counter() - t0
            p_short = max(at_short) if at_short else None
            if p_short is None or at_long is None:
                rows.append([label, str(p_short), str(at_long), "n/a", "n/a", f"{wall:.0f}"])
                if judged:
                    judged_rows.append(Row(f"peak RSS growth: {label}", "n/a",
                                           PROMISE_LONG_RSS, "not measured"))
                continue
            growth, r = at_long - p_short, ratio(at_long, p_short)
            rows.append([label, str(p_short), str(at_long), f"{growth:+d} KiB", f"{r:.3f}x",
                         f"{wall:.0f}"])
            if judged:
                allowed = max(p_short * PROMISE_LONG_RSS_RATIO, PROMISE_LONG_RSS_KIB)
                verdict = ("met" if growth <= allowed
                           else f"MISSED by {growth - allowed:.0f} KiB")
                judged_rows.append(Row(f"peak RSS growth: {label.removeprefix('backoff ')}",
                                       f"{r:.3f}x ({growth:+d} KiB)", PROMISE_LONG_RSS,
                                       verdict))
            else:
                # A peer's growth goes in its column of the row of the same run.
                peer_growth[label.split()[0]] = f"{r:.3f}x ({growth:+d} KiB)"
    if judged_rows:
        judged_rows[0].peers = peer_growth
    summary.extend(judged_rows)
    table(rows)
    for t in peers:
        if "attempts" in t.notes:
            print(f"  note: {t.notes['attempts']}")
    print()
    print(f"  ratio = peak at {long} / peak at {short}; N in the commands is the number of "
          "attempts (runs for --until-failure)")
    print(f"  promise: backoff's peak at {long} attempts within {PROMISE_LONG_RSS}"
          f" of its peak at {short}")


# ---------------------------------------------------------------------------
# 11 and 12. Retry budget bookkeeping: a file, and Redis
# ---------------------------------------------------------------------------

# More tokens than the runs below take, so that no retry is ever refused:
# each run of ATTEMPTS attempts takes ATTEMPTS - 1 tokens.
BUDGET_BURST = 100000


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the time of asking)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_command(port: int, *args: str, timeout: float = 2.0):
    """Sends one command to Redis on 127.0.0.1:port and returns its reply.

    A minimal RESP client: enough for PING, KEYS and GET. Raises OSError when
    nothing answers.
    """
    request = f"*{len(args)}\r\n".encode()
    for a in args:
        b = a.encode()
        request += b"$%d\r\n%s\r\n" % (len(b), b)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        f = s.makefile("rb")

        def reply():
            line = f.readline()
            if not line.endswith(b"\r\n"):
                raise OSError("redis: connection closed")
            kind, rest = line[:1], line[1:-2].decode()
            if kind in (b"+", b"-"):
                return rest
            if kind == b":":
                return int(rest)
            if kind == b"$":
                n = int(rest)
                if n < 0:
                    return None
                data = f.read(n + 2)
                return data[:-2].decode(errors="replace")
            if kind == b"*":
                return [reply() for _ in range(max(int(rest), 0))]
            raise OSError(f"redis: unexpected reply {line!r}")

        return reply()


class RedisServer:
    """A throwaway redis-server on a free loopback port, with nothing on disk.

    Started by start(), stopped by stop(); its working directory is a fresh
    temporary directory, removed at the end.
    """

    def __init__(self, path: str):
        self.path = path
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.dir = ""
        self.version = ""

    def start(self) -> str | None:
        """Starts the server; None when it answers PING, else why it did not."""
        self.dir = tempfile.mkdtemp(prefix="backoff-bench-redis-")
        log_path = os.path.join(self.dir, "redis.log")
        why = "not started"
        for _ in range(3):  # another process may take the port first
            self.port = free_loopback_port()
            with open(log_path, "wb") as log:
                self.proc = subprocess.Popen(
                    [self.path, "--port", str(self.port), "--bind", "127.0.0.1",
                     "--save", "", "--appendonly", "no", "--dir", self.dir,
                     "--daemonize", "no"],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                )
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    if redis_command(self.port, "PING", timeout=0.5) == "PONG":
                        info = redis_command(self.port, "INFO", "server")
                        for line in (info or "").splitlines():
                            if line.startswith("redis_version:"):
                                self.version = line.split(":", 1)[1].strip()
                        return None
                except OSError:
                    pass
                time.sleep(0.05)
            with open(log_path, encoding="utf-8", errors="replace") as f:
                tail = f.read().strip().splitlines()[-1:]
            why = "did not answer PING within 5 s" + (f": {tail[0]}" if tail else "")
            self._end()
        return why

    def _end(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def stop(self) -> None:
        self._end()
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def budget_tokens_in_file(budget_dir: str) -> str:
    """The budget files of a directory and what they hold, for the report."""
    parts = []
    for name in sorted(os.listdir(budget_dir)):
        with open(os.path.join(budget_dir, name), encoding="utf-8", errors="replace") as f:
            parts.append(f"{name}: {f.read().strip()!r}")
    return "; ".join(parts) or "no file"


def tokens_left(text: str) -> float | None:
    """Tokens in a budget's state, when its last field is a count of micro-tokens."""
    last = text.split()[-1].strip("'\"") if text.split() else ""
    return int(last) / 1e6 if last.isdigit() else None


def bench_budget(cfg: Settings, backoff: Tool, hf: Hyperfine | None, summary: list[Row]):
    header(f"11. Retry budget in a file: {ATTEMPTS} failing attempts, no delay")
    redis_path = os.environ.get("REDIS_SERVER_BIN") or shutil.which("redis-server")
    if hf is None:
        print("  skipped: hyperfine is not installed")
        header("12. Retry budget in Redis")
        print("  skipped: hyperfine is not installed")
        summary.append(Row("budget in a file: added per attempt", "n/a",
                           f"< {PROMISE_BUDGET_MS:g} ms", "not measured"))
        summary.append(Row("budget in Redis: added per retry decision", "n/a",
                           f"< {PROMISE_BUDGET_MS:g} ms (median)", "not measured"))
        return

    budget_dir = tempfile.mkdtemp(prefix="backoff-bench-budget-")
    redis: RedisServer | None = None
    redis_skip = None
    try:
        if not redis_path or not os.access(redis_path, os.X_OK):
            redis_skip = "redis-server is not installed (looked in $REDIS_SERVER_BIN and PATH)"
        else:
            redis = RedisServer(redis_path)
            why = redis.start()
            if why is not None:
                redis_skip = f"{redis_path} {why}"
                redis.stop()
                redis = None

        def plain(child: list[str]) -> list[str]:
            return backoff.failing(ATTEMPTS, child)

        def with_budget(extra: list[str]) -> Callable[[list[str]], list[str]]:
            def argv(child: list[str]) -> list[str]:
                a = backoff.failing(ATTEMPTS, child)
                i = a.index("--base")
                return a[:i] + extra + ["--budget-burst", str(BUDGET_BURST)] + a[i:]
            return argv

        configs: list[tuple[str, Callable[[list[str]], list[str]]]] = [
            ("no budget", plain),
            ("budget in a file", with_budget(["--budget", "bench-file", "--budget-dir",
                                            budget_dir])),
        ]
        if redis is not None:
            store = f"redis://127.0.0.1:{redis.port}"
            configs.append(("budget in Redis", with_budget(["--budget", "bench-redis",
                                                            "--budget-store", store])))

        print(f"  budget directory: {budget_dir} (fresh, empty); --budget-burst {BUDGET_BURST}")
        if redis is not None:
            print(f"  Redis: {redis.path} (version {redis.version or '?'}) on 127.0.0.1:"
                  f"{redis.port}, started for this run with --save '' --appendonly no "
                  f"--dir {redis.dir}")
        else:
            print(f"  Redis: {redis_skip}; section 12 is skipped")

        # Every configuration must make ATTEMPTS attempts with no delay: the
        # budget must never run out. Checked before and after the timed runs.
        def check(when: str) -> dict[str, int]:
            made = {}
            print(f"  check {when}: each configuration with a counting child (sh) instead "
                  "of false:")
            for name, argv in configs:
                n, wall = count_attempts_argv(argv)
                made[name] = n
                ok = "ok" if n == ATTEMPTS else f"NOT {ATTEMPTS}"
                print(f"    {name:17} {n} attempts in {wall:.2f} s: {ok}")
            return made

        made = check("before")
        commands = [(name, argv(["false"])) for name, argv in configs]
        print(f"  hyperfine -N, {cfg.attempts_runs} runs each in {cfg.attempts_rounds} rounds "
              f"of rotated order, {cfg.attempts_warmup} warmup run(s) per round")
        res = hf.run(commands, cfg.attempts_runs, cfg.attempts_warmup, cfg.attempts_rounds,
                     ignore_failure=True)
        after = check("after")
        for name in made:
            made[name] = min(made[name], after[name])

        # The state each budget was left in: no success, so every retry of
        # every run took one token (runs = 2 checks + warmups + timed runs).
        budget_runs = 2 + cfg.attempts_rounds * cfg.attempts_warmup + \
            cfg.attempts_rounds * max(2, -(-cfg.attempts_runs // cfg.attempts_rounds))
        expected = BUDGET_BURST - budget_runs * (ATTEMPTS - 1)
        states = {"budget in a file": budget_tokens_in_file(budget_dir)}
        if redis is not None:
            try:
                keys = redis_command(redis.port, "KEYS", "*bench-redis*") or []
                states["budget in Redis"] = "; ".join(
                    f"{k}: {redis_command(redis.port, 'GET', k)!r}" for k in keys) or "no key"
            except OSError as e:
                states["budget in Redis"] = f"could not read: {e}"
        for name, state in states.items():
            left = tokens_left(state)
            agrees = ("" if left is None else
                      f" = {left:g} tokens left; {expected} expected if each of the "
                      f"{budget_runs} runs took {ATTEMPTS - 1}: "
                      + ("ok" if abs(left - expected) < 1e-6 else "DIFFERENT"))
            print(f"  state after, {name}: {state}{agrees}")
    finally:
        if redis is not None:
            redis.stop()
            print(f"  Redis on port {redis.port} stopped")
        shutil.rmtree(budget_dir, ignore_errors=True)

    rows = [["command", "mean ms", "± sd", "median ms", "min ms", "max ms"]]
    for name, argv in commands:
        r = res[name]
        rows.append([*timing_cells(argv, r, 1), f"{r.min:.1f}", f"{r.max:.1f}"])
    table(rows)
    base = res["no budget"]

    # 11: a file.
    f = res["budget in a file"]
    per_attempt_us = (f.median - base.median) * 1e3 / ATTEMPTS
    per_attempt_mean_us = (f.mean - base.mean) * 1e3 / ATTEMPTS
    r = ratio(f.median, base.median)
    print()
    print(f"  file budget, added per attempt: {per_attempt_us:+.1f} µs (median run time, "
          f"difference / {ATTEMPTS}), {per_attempt_mean_us:+.1f} µs (mean)")
    print(f"  total with / without --budget: {r:.3f}x (median), "
          f"{ratio(f.mean, base.mean):.3f}x (mean); promise < {PROMISE_BUDGET_MS:g} ms per "
          "attempt")
    if made["budget in a file"] != ATTEMPTS:
        print("  note: the file budget run did not make every attempt: the figure is wrong")
    summary.append(Row("budget in a file: added per attempt", f"{per_attempt_us:.1f} µs",
                       f"< {PROMISE_BUDGET_MS:g} ms",
                       verdict_below(per_attempt_us / 1e3, PROMISE_BUDGET_MS, "ms")))
    summary.append(Row("  total with / without --budget", f"{r:.3f}x", "", "(detail)"))

    # 12: Redis.
    header("12. Retry budget in Redis: the same runs, with --budget-store")
    if redis_skip is not None:
        print(f"  skipped: {redis_skip}")
        summary.append(Row("budget in Redis: added per retry decision", "n/a",
                           f"< {PROMISE_BUDGET_MS:g} ms (median)", "not measured"))
        return
    d = res["budget in Redis"]
    decisions = ATTEMPTS - 1
    med_us = (d.median - base.median) * 1e3 / decisions
    mean_us = (d.mean - base.mean) * 1e3 / decisions
    r = ratio(d.median, base.median)
    print(f"  measured in the same hyperfine calls as section 11 (table above); "
          f"{decisions} retry decisions per run")
    print(f"  Redis budget, added per retry decision: {med_us:+.1f} µs (median run times, "
          f"difference / {decisions}), {mean_us:+.1f} µs (mean)")
    print(f"  against the file budget: {(d.median - f.median) * 1e3 / decisions:+.1f} µs "
          "per decision (medians)")
    print(f"  total with / without --budget: {r:.3f}x (median); promise < "
          f"{PROMISE_BUDGET_MS:g} ms (median)")
    if made["budget in Redis"] != ATTEMPTS:
        print("  note: the Redis budget run did not make every attempt: the figure is wrong")
    summary.append(Row("budget in Redis: added per retry decision, median",
                       f"{med_us:.1f} µs", f"< {PROMISE_BUDGET_MS:g} ms (median)",
                       verdict_below(med_us / 1e3, PROMISE_BUDGET_MS, "ms")))
    summary.append(Row("  the same from the means", f"{mean_us:.1f} µs", "", "(detail)"))
    summary.append(Row("  total with / without --budget", f"{r:.3f}x", "", "(detail)"))


# ---------------------------------------------------------------------------
# 13. Simulation
# ---------------------------------------------------------------------------

def bench_simulate(cfg: Settings, backoff: Tool, summary: list[Row]):
    argv = [backoff.path, "simulate", "--seed", "1", "--format", "csv"]
    header("13. Simulation: `backoff simulate` with its defaults")
    # The defaults are 19 client counts x 5 strategies x 100 runs: the CSV
    # has one line per client count and strategy.
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    rows_out = list(csv.reader(io.StringIO(p.stdout.decode(errors="replace"))))[1:]
    clients = {r[0] for r in rows_out if r}
    strategies = {r[-1] for r in rows_out if r}
    ok = p.returncode == 0 and len(clients) == 19 and len(strategies) == 5 and \
        len(rows_out) == 95
    print(f"  {shlex.join(argv)} > /dev/null")
    print(f"  check: exit {p.returncode}, {len(rows_out)} CSV rows, {len(clients)} client "
          f"counts x {len(strategies)} strategies: {'ok' if ok else 'NOT the defaults'}")
    cpus = len(os.sched_getaffinity(0))
    print(f"  1 warmup run, then {cfg.simulate_runs} runs timed from spawn to the end of "
          f"wait4 (stdout /dev/null); {cpus} CPUs usable")
    run_usage(argv)
    runs = [run_usage(argv) for _ in range(cfg.simulate_runs)]
    walls = [u.wall_ms / 1e3 for u in runs]
    cpu = [u.cpu_ms / 1e3 for u in runs]
    table([
        ["", "median s", "min s", "max s"],
        ["wall", f"{median(walls):.3f}", f"{min(walls):.3f}", f"{max(walls):.3f}"],
        ["user+sys CPU", f"{median(cpu):.3f}", f"{min(cpu):.3f}", f"{max(cpu):.3f}"],
    ])
    med = median(walls)
    print()
    print(f"  CPU / wall: {median(cpu) / med:.2f} (how many CPUs it kept busy); "
          f"promise: median wall < {PROMISE_SIMULATE_S:g} s on a 2-core machine")
    bad = [describe_status(u.status) for u in runs if u.status != 0]
    if bad:
        print("  note: runs ended with " + ", ".join(bad))
    summary.append(Row("simulate, defaults (19 x 5 x 100), median wall", f"{med:.3f} s",
                       f"< {PROMISE_SIMULATE_S:g} s", verdict_below(med, PROMISE_SIMULATE_S, "s")))
    summary.append(Row("  its CPU (user+sys), median", f"{median(cpu):.3f} s", "", "(detail)"))


# ---------------------------------------------------------------------------
# Summary and entry point
# ---------------------------------------------------------------------------


def print_summary(summary: list[Row], tools: list[Tool]) -> None:
    header("Summary (peer columns: the peer's figure and backoff / peer)")
    peers = [t.name for t in tools[1:]]
    rows = [["measure", "backoff", "promise", "verdict", *peers]]
    for r in summary:
        rows.append([r.measure, r.backoff, r.promise, r.verdict,
                     *(r.peers.get(p, "-") for p in peers)])
    table(rows)


def settings_from(args: argparse.Namespace) -> Settings:
    cfg = Settings()
    if args.quick:
        cfg = Settings(overhead_runs=300, overhead_warmup=10, overhead_rounds=3,
                       attempts_runs=4, attempts_warmup=1, attempts_rounds=2,
                       wait_delay_s=1.0, signal_reps=10, sleep_reps=10, rss_reps=2,
                       timeout_reps=10, copy_bytes=256 << 20, copy_runs=3, big_rss_reps=1,
                       simulate_runs=3, long_attempts=10000, long_rss_reps=1)
    if args.wait_delay is not None:
        cfg.wait_delay_s = args.wait_delay
    elif os.environ.get("BENCH_WAIT_DELAY"):
        cfg.wait_delay_s = float(os.environ["BENCH_WAIT_DELAY"])
    if args.long_attempts is not None:
        if args.long_attempts <= ATTEMPTS:
            raise SystemExit(f"bench: --long-attempts must be more than {ATTEMPTS}")
        cfg.long_attempts = args.long_attempts
    if not cfg.wait_delay_s > 0:
        raise SystemExit("bench: the wait delay must be a positive number of seconds")
    return cfg


def settle(paths: list[str]) -> str:
    """Writes out each binary and drops it from the page cache, so that every
    program timed is read back from disk as an installed program is after a
    reboot: a binary the linker has just written stays in the page cache in
    the pieces it was written in, and its page faults then cost more than
    those of a file read back. Returns a line for the report."""
    if not hasattr(os, "posix_fadvise"):
        return "page cache: left as it is (no posix_fadvise here)"
    failed = []
    for path in dict.fromkeys(paths):
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        except OSError as e:
            failed.append(f"{path} ({e.strerror})")
    if failed:
        return "page cache: could not drop " + ", ".join(failed)
    return ("page cache: backoff, the peers, `true` and `env` were dropped from it, "
            "to be read back from disk")


# The sections' names for --only, in the order they run (sections 1 to 13,
# then 14). bench/run.sh adds them to the report's file name.
SECTIONS = ("start", "attempts", "wait-cpu", "signal", "sleep", "rss", "timer-cpu",
            "timeout", "copy", "big-rss", "budget", "simulate", "memory")


def section_list(text: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown section {', '.join(map(repr, unknown)) or repr(text)}; "
            f"the sections are {', '.join(SECTIONS)}")
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backoff", default=os.environ.get("BACKOFF_BIN"),
                        help="backoff binary to measure (default: $BACKOFF_BIN)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer runs, a 1 s wait delay and 256 MiB of copied data, "
                             "for a fast look")
    parser.add_argument("--wait-delay", type=float, metavar="SECONDS",
                        help="delay of the CPU-while-waiting run and length of the "
                             "timed attempt of the timer-CPU run "
                             "(default: $BENCH_WAIT_DELAY or 10)")
    parser.add_argument("--static", metavar="PATH",
                        help="the release artefact (dist/build-static.sh), measured beside "
                             "the everyday build in the start-up and per-attempt sections")
    parser.add_argument("--only", type=section_list, metavar="NAMES",
                        help="run only these sections, comma-separated, in the report's "
                             "order: " + ", ".join(SECTIONS))
    parser.add_argument("--long-attempts", type=int, metavar="N",
                        help="attempts of the long run of the memory section "
                             "(default 30000; 10000 with --quick)")
    args = parser.parse_args()
    if not args.backoff or not os.access(args.backoff, os.X_OK):
        parser.error(f"no executable backoff binary: {args.backoff!r}")
    cfg = settings_from(args)

    # Policy settings in the environment would change what is measured.
    for name in [n for n in os.environ if n.startswith("BACKOFF_")]:
        del os.environ[name]

    backoff = make_backoff(os.path.abspath(args.backoff))
    static = None
    if args.static:
        if not os.access(args.static, os.X_OK):
            parser.error(f"--static wants an executable file: {args.static!r}")
        static = make_backoff(os.path.abspath(args.static), "backoff (static)")
    peers, missing = find_peers()
    tools = [backoff, *peers]
    hf_path = shutil.which("hyperfine")
    hf = Hyperfine(hf_path) if hf_path else None

    print("backoff benchmarks (SPEC.md section 13)")
    print(f"  backoff:   {backoff.path} ({(probe([backoff.path, '--version']) or '?').strip()}),"
          " the everyday build")
    if static:
        print(f"  backoff (static): {static.path}, the release artefact")
    else:
        print("  backoff (static): not measured (no --static; bench/run.sh builds it when "
              "it can)")
    for t in peers:
        version = (probe([t.path, "--version"]) or "?").strip().splitlines()
        print(f"  {t.name + ':':10} {t.path} ({version[0] if version else '?'})")
    for line in missing:
        print(f"  {line}")
    hf_version = (probe([hf_path, "--version"]) or "?").strip() if hf_path else "not installed"
    print(f"  hyperfine: {hf_version}")
    print(f"  machine:   {os.cpu_count()} CPUs, {os.uname().sysname} {os.uname().release}, "
          f"load average {os.getloadavg()[0]:.2f} (a busy machine gives noisy figures)")
    references = [p for p in (shutil.which("true"), shutil.which("env")) if p]
    print(f"  {settle([t.path for t in [*tools, *([static] if static else [])]] + references)}")

    summary: list[Row] = []
    t0 = time.monotonic()
    only = set(args.only) if args.only else set(SECTIONS)
    if only != set(SECTIONS):
        print(f"  sections:  only {', '.join(n for n in SECTIONS if n in only)} "
              "(--only)")
    data = lines_file(cfg.copy_bytes) if only & {"copy", "big-rss"} else ""
    sections: dict[str, Callable[[], None]] = {
        "start": lambda: bench_overhead(cfg, tools, static, hf, summary),
        "attempts": lambda: bench_attempts(cfg, tools, static, hf, summary),
        "wait-cpu": lambda: bench_wait_cpu(cfg, backoff, summary),
        "signal": lambda: bench_signal(cfg, backoff, summary),
        "sleep": lambda: bench_sleep(cfg, backoff, summary),
        "rss": lambda: bench_rss(cfg, tools, summary),
        "timer-cpu": lambda: bench_timer_cpu(cfg, backoff, summary),
        "timeout": lambda: bench_timeout(cfg, backoff, summary),
        "copy": lambda: bench_copy(cfg, backoff, data, summary),
        "big-rss": lambda: bench_big_rss(cfg, backoff, data, summary),
        "budget": lambda: bench_budget(cfg, backoff, hf, summary),
        "simulate": lambda: bench_simulate(cfg, backoff, summary),
        "memory": lambda: bench_long_rss(cfg, tools, missing, summary),
    }
    for name in SECTIONS:
        if name in only:
            sections[name]()
    print_summary(summary, tools)
    print(f"\n  (benchmarks took {time.monotonic() - t0:.0f} s, load average "
          f"{os.getloadavg()[0]:.2f} at the end; the verdicts do not change the exit status)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
