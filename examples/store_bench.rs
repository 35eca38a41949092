//! How far the shared stores of retry budgets and circuit breakers scale:
//! decisions per second and their latency against the number of processes
//! deciding at once on one key, through backoff's own store code.
//!
//! Run by `bench/stores.sh`, which builds it, starts a Redis of its own and
//! keeps the report (bench/README.md says more):
//!
//!     store_bench matrix [--store LABEL=WHERE]... [--procs 1,10,100,500]
//!                        [--total DECISIONS] [--max-secs SECONDS]
//!                        [--redis-pid PID]
//!
//! `WHERE` is a budget directory (an absolute path, mode 0700) or a
//! `redis://` URL (also `rediss://` and `redis+cluster://`). For each store,
//! each kind of decision and each process count N, the program starts N
//! copies of itself (`store_bench worker ...`) that each open the store, make
//! one call that changes nothing (which connects, for Redis), say they are
//! ready, and wait on a pipe that the parent closes when all are: then each
//! makes `DECISIONS / N` decisions on one key (or stops after `SECONDS`),
//! timing each with `Instant`, and writes its latencies to its stdout.
//!
//! - A budget decision is `take` of a token for a retry. The bucket holds
//!   exactly one token per decision and 1000 more, so none is ever refused,
//!   and at the end the level must be the burst less one token (a million
//!   millionths) per decision granted, exactly: anything else aborts.
//! - A lock decision is one run through `--lock`: the acquisition and the
//!   release of a lock of the worker's own (a key per process), which must
//!   be free every time, and at the end.
//! - A breaker decision is one run through `--breaker`: `admit` before the
//!   run and `record` of its success after it, timed together, since every
//!   run makes both calls. The circuit stays closed, and every `admit` must
//!   let the run start: anything else aborts.
//!
//! The rate is every decision made over the wall time of the whole batch,
//! from the release of the barrier to the end of the last worker's loop. A
//! call the store could not answer within its 30 s timeout is counted as an
//! error and not timed. With `--redis-pid`, the CPU time that the Redis
//! server used during each Redis batch is given per decision: what one
//! decision costs the server, wherever its clients run.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use backoff_cli::event::{BreakerNews, LockNews};
use backoff_cli::fleet::breaker::{Admission, Breaker, Circuit, RunEnd};
use backoff_cli::fleet::bucket::{Bucket, UNIT};
use backoff_cli::fleet::throttle::Throttle;
use backoff_cli::report::Warnings;
use backoff_cli::run::{CircuitBreaker, RunLock};
use backoff_cli::store::file::StateDir;
use backoff_cli::store::{
    BreakerStore, FailMode, Kind as Shareable, Location, LockLimits, LockStore, Refill, Settings,
    Shared, Store, ThrottleStore, Unwatched,
};

/// Long enough that a call waits out any queue rather than fail.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Tokens in the bucket beyond one per decision.
const SPARE_TOKENS: u64 = 1000;

/// A breaker that the bench never opens: every run succeeds.
const BREAKER: Breaker = Breaker {
    failures: 5,
    cooldown_ms: 300_000,
};

/// What is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `take` of a retry budget.
    Budget,
    /// `admit` and `record` of a circuit breaker.
    Breaker,
    /// `admit` and `accept` of an adaptive throttle.
    Throttle,
    /// `--lock`: the acquisition and the release of a lock of the
    /// process's own (a key per process: locks of many jobs taken at once).
    Lock,
    /// No call at all: what waking the processes of a round costs alone.
    Nothing,
}

/// Every kind, in the order measured.
const KINDS: [Kind; 4] = [Kind::Budget, Kind::Breaker, Kind::Throttle, Kind::Lock];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Budget => "budget",
            Kind::Breaker => "breaker",
            Kind::Throttle => "throttle",
            Kind::Lock => "lock",
            Kind::Nothing => "nothing",
        }
    }

    fn parse(s: &str) -> Result<Kind, String> {
        match s {
            "budget" => Ok(Kind::Budget),
            "breaker" => Ok(Kind::Breaker),
            "throttle" => Ok(Kind::Throttle),
            "lock" => Ok(Kind::Lock),
            "nothing" => Ok(Kind::Nothing),
            _ => Err(format!("unknown kind '{s}'")),
        }
    }
}

/// A budget, a breaker or a throttle, opened as `backoff --budget`,
/// `--breaker` or `--throttle` opens it, with fail mode closed: a corrupt
/// state is an error here, never a fresh one.
enum Opened {
    Budget(Store),
    Breaker(BreakerStore),
    Throttle(ThrottleStore),
    Lock(LockStore),
    Nothing,
}

/// A throttle whose window holds every decision of a batch: its counts
/// can be checked at the end. The backend accepts every attempt, and the
/// window starts with spare accepts, so none is ever skipped.
const THROTTLE: Throttle = Throttle {
    window_ms: 600_000,
    k_milli: 2000,
};

/// Whether `place` names a Redis server rather than a directory.
fn is_redis(place: &str) -> bool {
    place.contains("://")
}

/// The state `key` of kind `K` with `limits` at `place` (a directory or a
/// Redis URL).
fn open<K: Shareable>(place: &str, key: &str, limits: K::Limits) -> Result<Shared<K>, String> {
    let location = if is_redis(place) {
        Location::Redis(place.to_owned())
    } else {
        Location::Dir(StateDir::Given(PathBuf::from(place)))
    };
    let settings = Settings {
        timeout: TIMEOUT,
        fail: FailMode::Closed,
        warnings: Warnings::default(),
    };
    Shared::open(key, limits, location, settings).map_err(|e| format!("{e:?}"))
}

impl Opened {
    /// The store of `kind` for `key` at `place`; a budget holds `burst`
    /// tokens.
    fn open(kind: Kind, place: &str, key: &str, burst: u64) -> Result<Opened, String> {
        Ok(match kind {
            Kind::Budget => {
                let bucket = Bucket {
                    burst: burst * UNIT,
                    ratio: UNIT / 10,
                };
                Opened::Budget(open(place, key, bucket)?)
            }
            Kind::Breaker => Opened::Breaker(open(place, key, BREAKER)?),
            Kind::Throttle => Opened::Throttle(open(place, key, THROTTLE)?),
            Kind::Lock => {
                let own = format!("{key}-{}", std::process::id());
                let limits = LockLimits {
                    lease: backoff_cli::fleet::lock::Lease {
                        ttl: Duration::from_secs(30),
                        kill_after: Duration::from_secs(5),
                    },
                    fail: backoff_cli::store::FailMode::Closed,
                    replace: false,
                    slots: 1,
                };
                Opened::Lock(open(place, &own, limits)?)
            }
            Kind::Nothing => Opened::Nothing,
        })
    }

    /// Fills the bucket, or closes the circuit.
    fn reset(&self) -> Result<(), String> {
        match self {
            Opened::Budget(s) => s.reset(Refill::Given).map(|_| ()),
            Opened::Breaker(s) => s.reset().map(drop),
            // Then `SPARE_TOKENS` accepts: with more accepts than
            // processes deciding at once, the attempts of a fresh window,
            // admitted before any is accepted, are not skipped.
            Opened::Throttle(t) => t.reset().and_then(|_| {
                (0..SPARE_TOKENS).try_for_each(|_| t.backend().accept(&mut Unwatched))
            }),
            Opened::Lock(l) => l.reset(true).map(drop),
            Opened::Nothing => Ok(()),
        }
        .map_err(|e| e.to_string())
    }

    /// A call that changes nothing: for Redis it connects and loads the
    /// script, so that the timed decisions do not.
    fn look(&self) -> Result<(), String> {
        match self {
            Opened::Budget(s) => s.level().map(drop),
            Opened::Breaker(s) => s.show().map(drop),
            Opened::Throttle(t) => t.show().map(drop),
            Opened::Lock(l) => l.show().map(drop),
            Opened::Nothing => Ok(()),
        }
        .map_err(|e| e.to_string())
    }

    /// One decision.
    fn decide(&self) -> Decided {
        match self {
            Opened::Budget(s) => match s.backend().take(&mut Unwatched) {
                Ok(true) => Decided::Done,
                Ok(false) => Decided::Wrong("a retry was refused: the bucket ran dry".into()),
                Err(e) => Decided::Failed(e.to_string()),
            },
            Opened::Breaker(s) => match s.admit(&mut Unwatched) {
                Ok(BreakerNews::Admitted {
                    admission: Admission::Run,
                    ..
                }) => match s.record(RunEnd::Succeeded, None, &mut Unwatched) {
                    Some(_) => Decided::Done,
                    None => Decided::Failed("the run's end was not recorded".into()),
                },
                Ok(BreakerNews::Admitted { admission, .. }) => Decided::Wrong(format!(
                    "a run was not let through a closed circuit: {}",
                    admission.name()
                )),
                Ok(_) => Decided::Failed("the breaker's store was unavailable".into()),
                Err(sig) => Decided::Failed(format!("interrupted by signal {sig}")),
            },
            Opened::Nothing => Decided::Done,
            Opened::Lock(l) => {
                match l.acquire("bench", Duration::ZERO, None, &mut Unwatched, &mut |_| {}) {
                    Ok(LockNews::Held { .. }) => {
                        l.release(&mut Unwatched, None);
                        Decided::Done
                    }
                    Ok(LockNews::Busy { .. }) => {
                        Decided::Wrong("a lock of the process's own was held by another".into())
                    }
                    Ok(_) => Decided::Failed("the lock's store was unavailable".into()),
                    Err(sig) => Decided::Failed(format!("interrupted by signal {sig}")),
                }
            }
            // Any draw: with every attempt accepted, none is skipped.
            Opened::Throttle(t) => match t.backend().admit(0.5, &mut Unwatched) {
                Ok((decision, _)) if decision.send => match t.backend().accept(&mut Unwatched) {
                    Ok(()) => Decided::Done,
                    Err(e) => Decided::Failed(e.to_string()),
                },
                Ok(_) => Decided::Wrong("an attempt the backend accepts was skipped".into()),
                Err(e) => Decided::Failed(e.to_string()),
            },
        }
    }
}

/// How one decision went.
enum Decided {
    /// As expected.
    Done,
    /// The store gave no answer.
    Failed(String),
    /// An answer that a correct store cannot give here.
    Wrong(String),
}

/// The time now, in Unix nanoseconds: the one clock the parent and its
/// workers share.
fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// What a worker reports.
struct Worker {
    /// When its loop started and ended, in Unix nanoseconds.
    started_ns: u64,
    ended_ns: u64,
    /// Decisions made as expected.
    done: u64,
    /// Calls the store did not answer.
    failed: u64,
    /// Answers a correct store cannot give here.
    wrong: u64,
    /// The latency of each decision done, in nanoseconds.
    latencies: Vec<u64>,
}

/// `store_bench worker KIND WHERE KEY DECISIONS BURST MAX_MS`: one process
/// of a batch.
fn worker(args: &[String]) -> Result<(), String> {
    let [kind, place, key, decisions, burst, max_ms] = args else {
        return Err("usage: store_bench worker KIND WHERE KEY DECISIONS BURST MAX_MS".into());
    };
    let number = |s: &str| s.parse::<u64>().map_err(|e| format!("'{s}': {e}"));
    let decisions = number(decisions)?;
    let max = Duration::from_millis(number(max_ms)?);
    let store = Opened::open(Kind::parse(kind)?, place, key, number(burst)?)?;
    store.look()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    // The barrier: the parent closes the pipe when every worker is ready.
    let mut byte = [0; 1];
    while std::io::stdin()
        .read(&mut byte)
        .map_err(|e| e.to_string())?
        != 0
    {}

    let started_ns = unix_ns();
    let start = Instant::now();
    let mut latencies = Vec::with_capacity(usize::try_from(decisions).unwrap_or(0));
    let (mut failed, mut wrong) = (0, 0);
    for _ in 0..decisions {
        if start.elapsed() >= max {
            break;
        }
        let t = Instant::now();
        let decided = store.decide();
        let took = t.elapsed();
        match decided {
            Decided::Done => latencies.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX)),
            Decided::Failed(why) => {
                if failed == 0 {
                    eprintln!("store_bench: worker {}: {why}", std::process::id());
                }
                failed += 1;
            }
            Decided::Wrong(why) => {
                eprintln!("store_bench: worker {}: {why}", std::process::id());
                wrong += 1;
            }
        }
    }
    let ended_ns = unix_ns();

    let mut text = format!(
        "{started_ns} {ended_ns} {} {failed} {wrong}\n",
        latencies.len()
    );
    for l in &latencies {
        let _ = writeln!(text, "{l}");
    }
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())
}

/// Reads what a worker wrote after its ready line.
fn read_worker(out: &mut BufReader<ChildStdout>) -> Result<Worker, String> {
    let mut text = String::new();
    out.read_to_string(&mut text).map_err(|e| e.to_string())?;
    let mut lines = text.lines();
    let head: Vec<u64> = lines
        .next()
        .unwrap_or_default()
        .split(' ')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("a worker's report: {e}"))?;
    let [started_ns, ended_ns, done, failed, wrong] = head[..] else {
        return Err("a worker's report has no summary line".into());
    };
    let latencies: Vec<u64> = lines
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("a worker's latencies: {e}"))?;
    if latencies.len() as u64 != done {
        return Err("a worker's report lacks latencies".into());
    }
    Ok(Worker {
        started_ns,
        ended_ns,
        done,
        failed,
        wrong,
        latencies,
    })
}

/// Workers that are killed and reaped if the batch ends early.
struct Batch(Vec<Child>);

impl Drop for Batch {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One measured batch.
struct Cell {
    label: String,
    kind: Kind,
    procs: u64,
    each: u64,
    done: u64,
    failed: u64,
    wall: Duration,
    /// From the release to the start of the last worker's loop.
    last_start: Duration,
    median_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    /// Whether some worker stopped at the time limit.
    capped: bool,
    /// The CPU time of the store's server during the batch.
    server_cpu: Option<Duration>,
}

impl Cell {
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    fn rate(&self) -> f64 {
        self.done as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// The nearest-rank percentile of sorted values, `permille` thousandths
/// of the way up.
fn percentile(sorted: &[u64], permille: usize) -> u64 {
    let rank = (permille * sorted.len()).div_ceil(1000);
    sorted.get(rank.max(1) - 1).copied().unwrap_or(0)
}

/// The CPU time that process `pid` has used, all its threads, from
/// `/proc/PID/stat` (in ticks of 10 ms, Linux's `USER_HZ`).
fn cpu_time(pid: u32) -> Result<Duration, String> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    // The fields after the command's name, which is in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => Ok(Duration::from_millis((user + system) * 10)),
        _ => Err(format!("{path}: no CPU times")),
    }
}

/// Runs `procs` workers of `kind` against `place`, each making `each`
/// decisions for at most `max`, and checks the store's state after them;
/// `server` is the process of the store, whose CPU time is measured.
fn cell(
    label: &str,
    place: &str,
    kind: Kind,
    procs: u64,
    each: u64,
    max: Duration,
    server: Option<u32>,
) -> Result<Cell, String> {
    let key = format!("store-bench-{}-{procs}", kind.name());
    let burst = procs * each + SPARE_TOKENS;
    let store = Opened::open(kind, place, &key, burst)?;
    store.reset()?;

    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let (barrier, release) = std::io::pipe().map_err(|e| e.to_string())?;
    let mut batch = Batch(Vec::new());
    let args = [
        "worker".to_owned(),
        kind.name().to_owned(),
        place.to_owned(),
        key.clone(),
        each.to_string(),
        burst.to_string(),
        max.as_millis().to_string(),
    ];
    for _ in 0..procs {
        let stdin = barrier.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(&exe)
            .args(&args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start worker {} of {procs}: {e}", batch.0.len() + 1))?;
        batch.0.push(child);
    }
    drop(barrier);
    let mut outs = Vec::new();
    for child in &mut batch.0 {
        let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut line = String::new();
        out.read_line(&mut line).map_err(|e| e.to_string())?;
        if line != "ready\n" {
            return Err(format!("a worker did not get ready ({place})"));
        }
        outs.push(out);
    }
    let server_before = server.map(cpu_time).transpose()?;
    let released_ns = unix_ns();
    drop(release);

    let workers: Vec<Worker> = outs.iter_mut().map(read_worker).collect::<Result<_, _>>()?;
    let server_cpu = match (server, server_before) {
        (Some(pid), Some(before)) => Some(cpu_time(pid)?.saturating_sub(before)),
        _ => None,
    };
    for child in &mut batch.0 {
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("a worker ended with {status}"));
        }
    }
    batch.0.clear();

    let done: u64 = workers.iter().map(|w| w.done).sum();
    let failed: u64 = workers.iter().map(|w| w.failed).sum();
    let wrong: u64 = workers.iter().map(|w| w.wrong).sum();
    let ended_ns = workers
        .iter()
        .map(|w| w.ended_ns)
        .max()
        .unwrap_or(released_ns);
    let last_start_ns = workers
        .iter()
        .map(|w| w.started_ns)
        .max()
        .unwrap_or(released_ns);
    if wrong > 0 {
        return Err(format!(
            "{label} {} with {procs} processes: {wrong} answers a correct store cannot give",
            kind.name()
        ));
    }
    check_state(&store, burst, done, failed)
        .map_err(|why| format!("{label} {} with {procs} processes: {why}", kind.name()))?;

    let mut latencies: Vec<u64> = workers.into_iter().flat_map(|w| w.latencies).collect();
    latencies.sort_unstable();
    Ok(Cell {
        label: label.to_owned(),
        kind,
        procs,
        each,
        done,
        failed,
        wall: Duration::from_nanos(ended_ns.saturating_sub(released_ns)),
        last_start: Duration::from_nanos(last_start_ns.saturating_sub(released_ns)),
        median_ns: percentile(&latencies, 500),
        p99_ns: percentile(&latencies, 990),
        max_ns: latencies.last().copied().unwrap_or(0),
        capped: done + failed < procs * each,
        server_cpu,
    })
}

/// The tokens counted exactly: the level is the burst less one token per
/// decision granted, to the millionth; the circuit is still closed.
fn check_state(store: &Opened, burst: u64, done: u64, failed: u64) -> Result<(), String> {
    match store {
        Opened::Budget(s) => {
            let level = s.level().map_err(|e| e.to_string())?.micros;
            let expected = (burst - done) * UNIT;
            if level != expected {
                return Err(format!(
                    "the bucket holds {level} millionths of a token after {done} retries granted \
                     ({failed} failed), not {expected}: tokens were lost or made"
                ));
            }
        }
        Opened::Breaker(s) => {
            let (circuit, _) = s.show().map_err(|e| e.to_string())?;
            if circuit != Circuit::default() {
                return Err(format!("the circuit is not closed: {circuit:?}"));
            }
        }
        Opened::Nothing => {}
        Opened::Lock(l) => {
            let state = l.show().map_err(|e| e.to_string())?;
            if state.held {
                return Err("a lock is still held after its run let go".into());
            }
        }
        Opened::Throttle(t) => {
            let (window, now_ms) = t.show().map_err(|e| e.to_string())?;
            let c = window.counts(now_ms);
            let accepts = c.accepts.saturating_sub(SPARE_TOKENS);
            let exact = failed == 0 && c.requests == done && accepts == done;
            if c.skips != 0 || accepts < done || !(exact || failed > 0) {
                return Err(format!(
                    "the window counts {} requests, {} skips and {} accepts after {done} \
                     decisions ({failed} failed): attempts were lost or made",
                    c.requests, c.skips, c.accepts
                ));
            }
        }
    }
    Ok(())
}

/// `store_bench rounds-worker KIND WHERE KEY BURST FD,FD...`: one process
/// of a batch of rounds. Each round it waits for the end of file on that
/// round's pipe (inherited, at the descriptor named), makes one decision
/// and says how it went on one line: `START_NS END_NS LATENCY_NS OUTCOME`
/// (0 as expected, 1 no answer, 2 a wrong one).
fn rounds_worker(args: &[String]) -> Result<(), String> {
    use std::os::fd::FromRawFd;
    let [kind, place, key, burst, fds] = args else {
        return Err("usage: store_bench rounds-worker KIND WHERE KEY BURST FD,FD...".into());
    };
    let burst = burst
        .parse::<u64>()
        .map_err(|e| format!("'{burst}': {e}"))?;
    let fds: Vec<i32> = fds
        .split(',')
        .map(|f| f.parse::<i32>().map_err(|e| format!("'{f}': {e}")))
        .collect::<Result<_, _>>()?;
    let store = Opened::open(Kind::parse(kind)?, place, key, burst)?;
    store.look()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    let cpu_before = own_cpu_ns();
    for fd in fds {
        // SAFETY: the parent left the read end of this round's pipe open
        // across exec at this number, for this process to read and close.
        let mut barrier = unsafe { std::fs::File::from_raw_fd(fd) };
        let mut byte = [0; 1];
        while barrier.read(&mut byte).map_err(|e| e.to_string())? != 0 {}
        drop(barrier);
        let started_ns = unix_ns();
        let t = Instant::now();
        let decided = store.decide();
        let took = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let outcome = match decided {
            Decided::Done => 0,
            Decided::Failed(why) => {
                eprintln!("store_bench: worker {}: {why}", std::process::id());
                1
            }
            Decided::Wrong(why) => {
                eprintln!("store_bench: worker {}: {why}", std::process::id());
                2
            }
        };
        writeln!(out, "{started_ns} {} {took} {outcome}", unix_ns())
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())?;
    }
    // The CPU time of the rounds: waking, deciding, saying so.
    writeln!(out, "cpu {}", own_cpu_ns().saturating_sub(cpu_before))
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The CPU time this process has used, all its threads, in nanoseconds.
fn own_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct,
    // which getrusage fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes only the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &raw mut usage) } != 0 {
        return 0;
    }
    let ns = |t: libc::timeval| {
        u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_usec).unwrap_or(0) * 1000
    };
    ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// The time a Redis server has spent running scripts, from `INFO
/// commandstats`: the calls of `EVAL` and `EVALSHA`, and their
/// microseconds.
#[cfg(feature = "redis")]
fn script_time(url: &str) -> Result<(u64, u64), String> {
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let mut con = client.get_connection().map_err(|e| e.to_string())?;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    let (mut calls, mut usec) = (0, 0);
    for line in info.lines() {
        let Some(stats) = line
            .strip_prefix("cmdstat_evalsha:")
            .or_else(|| line.strip_prefix("cmdstat_eval:"))
        else {
            continue;
        };
        for field in stats.split(',') {
            match field.split_once('=') {
                Some(("calls", n)) => calls += n.parse::<u64>().map_err(|e| e.to_string())?,
                Some(("usec", n)) => usec += n.parse::<u64>().map_err(|e| e.to_string())?,
                _ => {}
            }
        }
    }
    Ok((calls, usec))
}

#[cfg(not(feature = "redis"))]
fn script_time(_: &str) -> Result<(u64, u64), String> {
    Err("built without the redis feature".into())
}

/// One measured batch of rounds: every process makes one decision at once,
/// round after round.
struct Rounds {
    label: String,
    kind: Kind,
    procs: u64,
    count: u64,
    failed: u64,
    median_ns: u64,
    p99_ns: u64,
    max_ns: u64,
    /// The median, over the rounds, of the time from a round's release to
    /// its last decision's end.
    round_ns: u64,
    /// For Redis: the server's time running scripts, per decision.
    server_ns: Option<u64>,
    /// The CPU time of a worker per round: waking, deciding, saying so.
    cpu_ns: u64,
}

/// A worker's line about a round: when its decision ended, how long it
/// took, and how it went.
fn read_round(out: &mut BufReader<ChildStdout>) -> Result<(u64, u64, u64), String> {
    let mut line = String::new();
    out.read_line(&mut line).map_err(|e| e.to_string())?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("a worker's round: {e}"))?;
    let [_, end_ns, took_ns, outcome] = fields[..] else {
        return Err(format!("a worker's round: {line:?}"));
    };
    Ok((end_ns, took_ns, outcome))
}

/// A pipe for each of `rounds` rounds, whose read ends the workers
/// inherit (the write ends stay here), and the read ends' numbers.
type Barriers = Vec<(std::io::PipeReader, std::io::PipeWriter)>;

fn barriers(rounds: u64) -> Result<(Barriers, String), String> {
    let mut barriers = Vec::new();
    for _ in 0..rounds {
        let (read, write) = std::io::pipe().map_err(|e| e.to_string())?;
        rustix::io::fcntl_setfd(&read, rustix::io::FdFlags::empty()).map_err(|e| e.to_string())?;
        barriers.push((read, write));
    }
    let fds: Vec<String> = barriers
        .iter()
        .map(|(r, _)| std::os::fd::AsRawFd::as_raw_fd(r).to_string())
        .collect();
    Ok((barriers, fds.join(",")))
}

/// A worker's last line: the CPU time of its rounds.
fn read_cpu(out: &mut BufReader<ChildStdout>) -> Result<u64, String> {
    let mut line = String::new();
    out.read_line(&mut line).map_err(|e| e.to_string())?;
    line.trim_end()
        .strip_prefix("cpu ")
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| format!("a worker's CPU time: {line:?}"))
}

/// Runs `rounds` rounds of `procs` workers of `kind` against `place`, each
/// round released when the last one is over, and checks the store's state
/// after them.
fn rounds(label: &str, place: &str, kind: Kind, procs: u64, rounds: u64) -> Result<Rounds, String> {
    let key = format!("store-bench-{}-rounds-{procs}", kind.name());
    let burst = procs * rounds + SPARE_TOKENS;
    let store = Opened::open(kind, place, &key, burst)?;
    store.reset()?;

    let (barriers, fds) = barriers(rounds)?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let args = [
        "rounds-worker".to_owned(),
        kind.name().to_owned(),
        place.to_owned(),
        key.clone(),
        burst.to_string(),
        fds,
    ];
    let mut batch = Batch(Vec::new());
    for _ in 0..procs {
        let child = Command::new(&exe)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start worker {} of {procs}: {e}", batch.0.len() + 1))?;
        batch.0.push(child);
    }
    let releases: Vec<_> = barriers.into_iter().map(|(_, w)| w).collect();
    let mut outs = Vec::new();
    for child in &mut batch.0 {
        let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut line = String::new();
        out.read_line(&mut line).map_err(|e| e.to_string())?;
        if line != "ready\n" {
            return Err(format!("a worker did not get ready ({place})"));
        }
        outs.push(out);
    }
    let before = is_redis(place).then(|| script_time(place)).transpose()?;
    let (mut latencies, mut spans) = (Vec::new(), Vec::new());
    let (mut done, mut failed) = (0, 0);
    for release in releases {
        let released_ns = unix_ns();
        drop(release);
        let mut last_ns = released_ns;
        for out in &mut outs {
            let (end_ns, took_ns, outcome) = read_round(out)?;
            last_ns = last_ns.max(end_ns);
            match outcome {
                0 => {
                    done += 1;
                    latencies.push(took_ns);
                }
                1 => failed += 1,
                _ => {
                    return Err(format!(
                        "{label} {} with {procs} processes: an answer a correct store cannot give",
                        kind.name()
                    ));
                }
            }
        }
        spans.push(last_ns - released_ns);
    }
    let after = is_redis(place).then(|| script_time(place)).transpose()?;
    let cpu_ns = outs.iter_mut().map(read_cpu).sum::<Result<u64, _>>()?;
    for child in &mut batch.0 {
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("a worker ended with {status}"));
        }
    }
    batch.0.clear();
    check_state(&store, burst, done, failed)
        .map_err(|why| format!("{label} {} rounds of {procs} processes: {why}", kind.name()))?;
    latencies.sort_unstable();
    spans.sort_unstable();
    let server_ns = match (before, after) {
        (Some((c0, u0)), Some((c1, u1))) if c1 > c0 => {
            Some((u1 - u0) * 1000 / (done + failed).max(1))
        }
        _ => None,
    };
    Ok(Rounds {
        label: label.to_owned(),
        kind,
        procs,
        count: rounds,
        failed,
        median_ns: percentile(&latencies, 500),
        p99_ns: percentile(&latencies, 990),
        max_ns: latencies.last().copied().unwrap_or(0),
        round_ns: percentile(&spans, 500),
        server_ns,
        cpu_ns: cpu_ns / (procs * rounds).max(1),
    })
}

const ROUNDS_HEADER: &str = "store        kind     procs rounds  alone_us  serial_us  limit_ms  median_us   p99_us   max_us  p99/limit  round_ms  cpu_us  cpu_ms  errors";

/// A row of rounds: `alone_ns`, one process's median decision alone.
#[allow(clippy::cast_precision_loss)] // latencies far below 2^52 ns
fn rounds_row(r: &Rounds, alone_ns: u64) -> String {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let serial_ns = r.server_ns.unwrap_or(alone_ns);
    let limit_ns = serial_ns * r.procs;
    format!(
        "{:<12} {:<8} {:>5} {:>6} {:>9} {:>10} {:>9.2} {:>10} {:>8} {:>8} {:>10} {:>9.2} {:>7} {:>7.2} {:>7}",
        r.label,
        r.kind.name(),
        r.procs,
        r.count,
        micros(alone_ns),
        micros(serial_ns),
        limit_ns as f64 / 1e6,
        micros(r.median_ns),
        micros(r.p99_ns),
        micros(r.max_ns),
        if limit_ns == 0 {
            "-".to_owned()
        } else {
            format!("{:.2}", r.p99_ns as f64 / limit_ns as f64)
        },
        r.round_ns as f64 / 1e6,
        micros(r.cpu_ns),
        (r.cpu_ns * r.procs) as f64 / 1e6 / cpus as f64,
        r.failed,
    )
}

/// Nanoseconds as microseconds, to three significant figures or so.
#[allow(clippy::cast_precision_loss)] // latencies far below 2^52 ns
fn micros(ns: u64) -> String {
    let us = ns as f64 / 1000.0;
    if us < 100.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

const HEADER: &str = "store        kind     procs   each  decisions  wall_s  decisions/s  vs_1  median_us   p99_us   max_us  errors  start_ms  server_us";

fn row(c: &Cell, one: Option<f64>) -> String {
    let vs = one.map_or_else(|| "-".to_owned(), |r| format!("{:.2}", c.rate() / r));
    format!(
        "{:<12} {:<8} {:>5} {:>6} {:>10} {:>7.2} {:>12.0} {:>5} {:>10} {:>8} {:>8} {:>7} {:>9.1} {:>10}{}",
        c.label,
        c.kind.name(),
        c.procs,
        c.each,
        c.done,
        c.wall.as_secs_f64(),
        c.rate(),
        vs,
        micros(c.median_ns),
        micros(c.p99_ns),
        micros(c.max_ns),
        c.failed,
        c.last_start.as_secs_f64() * 1000.0,
        c.server_cpu.map_or_else(
            || "-".to_owned(),
            |cpu| micros(u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX) / c.done.max(1))
        ),
        if c.capped { "  (time limit)" } else { "" }
    )
}

/// `store_bench matrix ...`: every store, kind and process count.
fn matrix(args: &[String]) -> Result<(), String> {
    let mut stores: Vec<(String, String)> = Vec::new();
    let mut procs = vec![1, 10, 100, 500];
    let mut total = 20_000;
    let mut max = Duration::from_secs(8);
    let mut redis_pid = None;
    let mut round_count = 20;
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let number = |s: &str| s.parse::<u64>().map_err(|e| format!("{flag} '{s}': {e}"));
        match flag.as_str() {
            "--store" => {
                let v = value()?;
                let (label, place) = v.split_once('=').ok_or("--store LABEL=WHERE")?;
                stores.push((label.to_owned(), place.to_owned()));
            }
            "--procs" => {
                procs = value()?.split(',').map(number).collect::<Result<_, _>>()?;
            }
            "--total" => total = number(value()?)?,
            "--max-secs" => max = Duration::from_secs(number(value()?)?),
            "--rounds" => round_count = number(value()?)?,
            "--redis-pid" => {
                let v = value()?;
                redis_pid = Some(v.parse::<u32>().map_err(|e| format!("{flag} '{v}': {e}"))?);
            }
            _ => return Err(format!("unknown option '{flag}'")),
        }
    }
    if procs.contains(&0) {
        return Err("--procs: a batch has at least one process".into());
    }
    let most = procs.iter().copied().max().unwrap_or(1);
    // One process's median decision alone, per store and kind.
    let mut alone = Vec::new();
    println!("{HEADER}");
    for (label, place) in &stores {
        for kind in KINDS {
            let mut one = None;
            for &n in &procs {
                let each = (total / n).max(1);
                eprintln!("store_bench: {label} {} with {n} processes", kind.name());
                let server = redis_pid.filter(|_| is_redis(place));
                let c = cell(label, place, kind, n, each, max, server)?;
                if n == 1 {
                    one = Some(c.rate());
                    alone.push((label.clone(), kind, c.median_ns));
                }
                println!("{}", row(&c, one));
            }
        }
    }
    if round_count == 0 {
        return Ok(());
    }
    println!();
    println!("{ROUNDS_HEADER}");
    if let Some((_, place)) = stores.first() {
        eprintln!("store_bench: no call in {round_count} rounds of {most} processes");
        let r = rounds("-", place, Kind::Nothing, most, round_count)?;
        println!("{}", rounds_row(&r, 0));
    }
    for (label, place) in &stores {
        for kind in KINDS {
            eprintln!(
                "store_bench: {label} {} in {round_count} rounds of {most} processes",
                kind.name()
            );
            let r = rounds(label, place, kind, most, round_count)?;
            let alone_ns = alone
                .iter()
                .find(|(l, k, _)| l == label && *k == kind)
                .map_or(0, |&(_, _, ns)| ns);
            println!("{}", rounds_row(&r, alone_ns));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ran = match args.first().map(String::as_str) {
        Some("worker") => worker(&args[1..]),
        Some("rounds-worker") => rounds_worker(&args[1..]),
        Some("matrix") => matrix(&args[1..]),
        _ => Err(
            "usage: store_bench matrix [--store LABEL=WHERE]... [--procs N,N...] \
                  [--total DECISIONS] [--max-secs SECONDS] [--rounds R] [--redis-pid PID]"
                .into(),
        ),
    };
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("store_bench: {why}");
            ExitCode::FAILURE
        }
    }
}
