//! The cron model of `backoff simulate --model cron`: the herd before the
//! first attempt. H hosts whose cron fires the same job at :00 of every
//! period (an hour), each run making one request to a service of fixed
//! capacity, and what `--splay`, `--lock` and `--once-per` make of it.
//!
//! Cron starts a host's run within the first second of the period (at a
//! place drawn from the seed; clocks and daemons differ by that much). With
//! `--splay W` the run then waits the host's own offset in `[0, W)`, from
//! the real `--splay`'s function of the host's machine id, its name and
//! the job's name, so that each host keeps its place from period to
//! period. A run sends one request to the service, whose FIFO queue it
//! works through at `capacity` requests a second; the job's run ends `job`
//! after its request is answered.
//!
//! The store of the lock and of the once-per record takes every request at
//! once (its requests are small), and they are counted: taking the lock,
//! reading the record, writing it, letting the lock go, one request each.
//! Under `--lock` (with `--lock-exit 0`) a run that finds the lock held
//! skips; one that takes it runs the job and lets it go at its end. Under
//! `--once-per` a run takes the lock (a run that finds it held skips:
//! the holder does the period's job), then reads the record: a success
//! already recorded for the period makes it let go of the lock and skip;
//! else it runs the job, records its success and lets go. The model's
//! jobs all succeed. Every period is the same (each host keeps its place),
//! so the model runs one.

use std::fmt::Write as _;
use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::splay::{self, Source};

/// The job's name, which places every host in the window with its
/// machine id and host name, as `--name` does.
pub const JOB: &str = "job";

/// How the hosts' crontab lines run the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Every host runs the job at :00.
    Plain,
    /// Each host waits its place in the splay window, then runs.
    Splay,
    /// A host that finds the lock held skips the period.
    Lock,
    /// Both.
    SplayLock,
    /// A host skips when the period's success is recorded, or when the
    /// lock is held.
    OncePer,
    /// Both.
    SplayOncePer,
}

impl Gate {
    /// Every way, in the order of the outputs.
    pub const ALL: [Gate; 6] = [
        Gate::Plain,
        Gate::Splay,
        Gate::Lock,
        Gate::SplayLock,
        Gate::OncePer,
        Gate::SplayOncePer,
    ];

    /// Whether the host waits its place in the window first.
    pub fn splayed(self) -> bool {
        matches!(self, Gate::Splay | Gate::SplayLock | Gate::SplayOncePer)
    }

    /// backoff's options that make it, for the window `splay`.
    pub fn options(self, splay: Duration) -> String {
        let w = humantime::format_duration(splay).to_string();
        match self {
            Gate::Plain => "(none)".to_owned(),
            Gate::Splay => format!("--splay {w}"),
            Gate::Lock => "--lock".to_owned(),
            Gate::SplayLock => format!("--splay {w} --lock"),
            Gate::OncePer => "--once-per hour".to_owned(),
            Gate::SplayOncePer => format!("--splay {w} --once-per hour"),
        }
    }
}

/// How often the model's cron fires: every hour, at :00.
pub const PERIOD: Duration = Duration::from_hours(1);

/// The parameters of the cron model, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// Hosts.
    pub hosts: u32,
    /// Requests a second the service answers.
    pub capacity: f64,
    /// How long a run lasts after the service has answered its request.
    pub job: Duration,
    /// `--splay`'s window.
    pub splay: Duration,
    /// The ways to run the job, in output order.
    pub gates: Vec<Gate>,
    /// Seed of the hosts' machine ids and of cron's start within the
    /// first second.
    pub seed: u64,
}

/// One host: when cron starts its run, and its place in the window.
#[derive(Debug, Clone, Copy)]
struct Host {
    /// Seconds after :00 that cron starts the run.
    cron: f64,
    /// Its `--splay` offset, in seconds.
    offset: f64,
}

/// The fleet: every host's machine id is 16 bytes from the seed and its
/// name `hostN`, as a fleet of machines has.
fn hosts(setup: &Setup) -> Vec<Host> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(setup.seed);
    (0..setup.hosts)
        .map(|n| {
            let id: [u8; 16] = rng.random();
            let id = id.iter().fold(String::new(), |mut hex, b| {
                let _ = write!(hex, "{b:02x}");
                hex
            });
            let source = Source::Machine {
                id: id.into_bytes(),
                host: format!("host{n}").into_bytes(),
            };
            Host {
                cron: rng.random::<f64>(),
                offset: splay::offset(setup.splay, &source, JOB).as_secs_f64(),
            }
        })
        .collect()
}

/// What one way of running the job measured over a period.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The way.
    pub gate: Gate,
    /// Runs of the job in the period.
    pub runs: u64,
    /// Runs that skipped the period (the lock held, or the period done).
    pub skipped: u64,
    /// The requests the service received, at the seconds they came.
    pub service: Vec<f64>,
    /// The requests the store received, at the seconds they came.
    pub store: Vec<f64>,
    /// The longest a request waited in the service's queue, in seconds.
    pub longest_wait: f64,
    /// Seconds from :00 to the end of the period's last run.
    pub done: f64,
}

impl Outcome {
    /// The most requests the service received within one second.
    pub fn service_peak(&self) -> usize {
        peak(&self.service)
    }

    /// The most requests the store received within one second.
    pub fn store_peak(&self) -> usize {
        peak(&self.store)
    }
}

/// The most of the sorted times `at` within any second `[t, t + 1)`.
pub fn peak(at: &[f64]) -> usize {
    let mut most = 0;
    let mut from = 0;
    for (i, &t) in at.iter().enumerate() {
        while at[from] <= t - 1.0 {
            from += 1;
        }
        most = most.max(i + 1 - from);
    }
    most
}

/// One period with the hosts run `gate`'s way.
fn run(setup: &Setup, gate: Gate, fleet: &[Host]) -> Outcome {
    let mut starts: Vec<f64> = fleet
        .iter()
        .map(|h| h.cron + if gate.splayed() { h.offset } else { 0.0 })
        .collect();
    starts.sort_by(f64::total_cmp);
    let locked = gate != Gate::Plain && gate != Gate::Splay;
    let once = matches!(gate, Gate::OncePer | Gate::SplayOncePer);
    let per_request = 1.0 / setup.capacity;
    let job = setup.job.as_secs_f64();
    let mut out = Outcome {
        gate,
        runs: 0,
        skipped: 0,
        service: Vec::new(),
        store: Vec::new(),
        longest_wait: 0.0,
        done: 0.0,
    };
    // When the service is free again; until when the lock is held; when the
    // period's success was recorded.
    let mut free = 0.0_f64;
    let mut held_until = f64::NEG_INFINITY;
    let mut recorded = false;
    for t in starts {
        if locked {
            out.store.push(t);
            if t < held_until {
                out.skipped += 1;
                continue;
            }
        }
        if once {
            out.store.push(t);
            if recorded {
                out.store.push(t);
                out.skipped += 1;
                continue;
            }
        }
        out.runs += 1;
        out.service.push(t);
        let answered = free.max(t) + per_request;
        free = answered;
        out.longest_wait = out.longest_wait.max(answered - per_request - t);
        let end = answered + job;
        out.done = out.done.max(end);
        if once {
            out.store.push(end);
            recorded = true;
        }
        if locked {
            out.store.push(end);
            held_until = end;
        }
    }
    out.store.sort_by(f64::total_cmp);
    out
}

/// Runs every way of the setup on one fleet, in output order.
pub fn simulate(setup: &Setup) -> Vec<Outcome> {
    let fleet = hosts(setup);
    setup.gates.iter().map(|&g| run(setup, g, &fleet)).collect()
}

/// The model's parameters, in one line.
fn line(s: &Setup) -> String {
    let show = |d: Duration| humantime::format_duration(d).to_string();
    format!(
        "cron: {} hosts whose cron fires at :00 every hour; a job of {} after one request to a \
         service of {} requests/s; splay {}; seed {}",
        s.hosts,
        show(s.job),
        s.capacity,
        show(s.splay),
        s.seed
    )
}

/// Seconds, as the tables write them.
fn seconds(s: f64) -> String {
    format!("{s:.2}")
}

/// The cron model's table: a row per way of running the job.
pub fn table(setup: &Setup, outcomes: &[Outcome]) -> String {
    let mut rows = vec![
        [
            "options",
            "runs",
            "skipped",
            "service_peak/s",
            "store_peak/s",
            "longest_wait_s",
            "done_s",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for o in outcomes {
        rows.push(vec![
            o.gate.options(setup.splay),
            o.runs.to_string(),
            o.skipped.to_string(),
            o.service_peak().to_string(),
            o.store_peak().to_string(),
            seconds(o.longest_wait),
            seconds(o.done),
        ]);
    }
    let mut out = line(setup);
    out.push('\n');
    out.push_str(&crate::simulate::table::aligned(&rows));
    out
}

/// The cron model's CSV: a row per way of running the job.
pub fn csv(setup: &Setup, outcomes: &[Outcome]) -> String {
    let mut out = String::from(
        "options,runs,skipped,service_peak_per_second,store_peak_per_second,longest_wait_seconds,done_seconds,store_requests\n",
    );
    for o in outcomes {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{:.3},{:.3},{}",
            o.gate.options(setup.splay),
            o.runs,
            o.skipped,
            o.service_peak(),
            o.store_peak(),
            o.longest_wait,
            o.done,
            o.store.len()
        );
    }
    out
}

/// The seconds each series covers in `per_second`: from :00 to the end
/// of the last run, whole.
pub fn horizon(outcomes: &[Outcome]) -> usize {
    let last = outcomes
        .iter()
        .flat_map(|o| o.store.last().into_iter().chain(o.service.last()))
        .fold(0.0_f64, |a, &b| a.max(b));
    // At most a day of seconds and a few: the cast loses nothing.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let seconds = last.floor() as usize + 1;
    seconds
}

/// The requests of each second of `at`, over `seconds` seconds.
pub fn per_second(at: &[f64], seconds: usize) -> Vec<f64> {
    let mut out = vec![0.0; seconds];
    for &t in at {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let s = t.max(0.0).floor() as usize;
        if let Some(n) = out.get_mut(s) {
            *n += 1.0;
        }
    }
    out
}

/// The cron model's JSON: its parameters, and per way the measures and
/// the requests of every second to the service and to the store.
pub fn json(setup: &Setup, outcomes: &[Outcome]) -> String {
    let seconds = horizon(outcomes);
    let doc = serde_json::json!({
        "model": "cron",
        "hosts": setup.hosts,
        "capacity": setup.capacity,
        "job_seconds": setup.job.as_secs_f64(),
        "splay_seconds": setup.splay.as_secs_f64(),
        "seed": setup.seed,
        "rows": outcomes.iter().map(|o| serde_json::json!({
            "options": o.gate.options(setup.splay),
            "runs": o.runs,
            "skipped": o.skipped,
            "service_peak_per_second": o.service_peak(),
            "store_peak_per_second": o.store_peak(),
            "longest_wait_seconds": o.longest_wait,
            "done_seconds": o.done,
            "store_requests": o.store.len(),
            "service_per_s": per_second(&o.service, seconds),
            "store_per_s": per_second(&o.store, seconds),
        })).collect::<Vec<_>>(),
    });
    format!("{doc:#}\n")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn small() -> Setup {
        Setup {
            hosts: 200,
            capacity: 50.0,
            job: Duration::from_secs(2),
            splay: Duration::from_mins(1),
            gates: Gate::ALL.to_vec(),
            seed: 3,
        }
    }

    fn outcome(s: &Setup, gate: Gate) -> Outcome {
        run(s, gate, &hosts(s))
    }

    #[test]
    fn the_peak_counts_the_busiest_second() {
        assert_eq!(peak(&[]), 0);
        assert_eq!(peak(&[0.0, 0.5, 0.99, 1.0, 1.5, 3.0]), 3);
        assert_eq!(peak(&[0.0, 0.5, 0.99, 1.0, 1.49, 3.0]), 4);
        assert_eq!(peak(&[0.0, 2.0, 4.0]), 1);
    }

    #[test]
    fn every_host_runs_at_once_without_splay_and_the_queue_holds_them() {
        let s = small();
        let o = outcome(&s, Gate::Plain);
        assert_eq!((o.runs, o.skipped), (200, 0));
        assert_eq!(o.service_peak(), 200);
        assert_eq!(o.store_peak(), 0);
        // 200 requests within a second, answered at 50 a second: the last
        // waits about 3 s.
        assert!((2.5..4.0).contains(&o.longest_wait), "{o:?}");
    }

    #[test]
    fn the_splay_spreads_the_same_runs_over_its_window() {
        let s = small();
        let o = outcome(&s, Gate::Splay);
        assert_eq!(o.runs, 200);
        // About 200 / 60 a second: a few, far below the herd.
        assert!(o.service_peak() <= 15, "{}", o.service_peak());
        assert!(o.longest_wait < 0.1, "{o:?}");
        assert!(o.done > 50.0 && o.done < 61.0 + 2.0, "{o:?}");
    }

    #[test]
    fn a_lock_under_splay_runs_the_job_again_and_once_per_runs_it_once() {
        let s = small();
        let lock = outcome(&s, Gate::Lock);
        assert_eq!(lock.runs, 1, "all at once: the lock is held for them all");
        let splay_lock = outcome(&s, Gate::SplayLock);
        // A run of about 2 s in a window of 60 s: the lock is free again
        // many times.
        assert!(splay_lock.runs > 10, "{splay_lock:?}");
        assert_eq!(splay_lock.runs + splay_lock.skipped, 200);
        for gate in [Gate::OncePer, Gate::SplayOncePer] {
            let o = outcome(&s, gate);
            assert_eq!((o.runs, o.skipped), (1, 199), "{gate:?}");
            // Every host's reads are requests to the store.
            assert!(o.store.len() >= 200 + 2, "{gate:?}");
        }
        let herd = outcome(&s, Gate::OncePer).store_peak();
        let spread = outcome(&s, Gate::SplayOncePer).store_peak();
        assert!(herd >= 200 && spread < herd / 5, "{herd} {spread}");
    }

    #[test]
    fn the_places_are_the_real_splays_and_the_seed_keeps_them() {
        let s = small();
        let a = hosts(&s);
        let b = hosts(&s);
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| x.offset.to_bits() == y.offset.to_bits()
                    && x.cron.to_bits() == y.cron.to_bits())
        );
        assert!(a.iter().all(|h| h.offset < 60.0 && h.cron < 1.0));
        let mut other = small();
        other.seed = 4;
        assert!(
            a.iter()
                .zip(&hosts(&other))
                .any(|(x, y)| x.offset.to_bits() != y.offset.to_bits())
        );
        assert_eq!(simulate(&s), simulate(&s));
    }
}
