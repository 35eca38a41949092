//! The adaptive throttle kept in Redis, called through the library against
//! a real redis-server: its script decides exactly as the rules of
//! `fleet::throttle` do, at the server's time, and a state no run writes
//! is repaired (fail mode open) or refused (closed), never trusted.

use std::time::Duration;

use backoff_cli::fleet::throttle::{Decision, MAX_COUNT, SLOTS, Slot, Throttle, Window};
use backoff_cli::report::Warnings;
use backoff_cli::store::redis::{REDIS_IDLE_TTL, REDIS_THROTTLE_PREFIX, RedisThrottle};
use backoff_cli::store::{FailMode, StoreError, ThrottleBackend, Unwatched};

use crate::fleet::{Redis, redis_cli};

/// Slots of 83ms: a window passes within a test.
const QUICK: Throttle = Throttle {
    window_ms: 1000,
    k_milli: 2000,
};

/// Slots of a second.
const SLOW: Throttle = Throttle {
    window_ms: 12_000,
    k_milli: 1500,
};

/// Slots of ten seconds: a state written for now stays live in a test.
const LONG: Throttle = Throttle {
    window_ms: 120_000,
    k_milli: 1250,
};

/// Every call reaches the server, however loaded the machine.
const TIMEOUT: Duration = Duration::from_secs(10);

fn open(redis: &Redis, key: &str, rules: Throttle, fail: FailMode) -> RedisThrottle {
    RedisThrottle::new(&redis.url(), key, rules, TIMEOUT, fail, Warnings::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// One call of a step.
#[derive(Debug, Clone, Copy)]
enum Step {
    Admit(f64),
    Accept,
}

/// Whether two decisions are the same, the probability to the bit.
fn same(a: Decision, b: Decision) -> bool {
    a.send == b.send && a.counts == b.counts && a.probability.to_bits() == b.probability.to_bits()
}

/// Runs `step` on `store`, whose rules are `rules`, and checks that the
/// rules give exactly its answer and the window it leaves at some time of
/// the server's between the windows shown before and after it. The
/// window after, and the decision.
fn agrees(store: &RedisThrottle, rules: Throttle, step: Step) -> (Window, Option<Decision>) {
    let (before, t0) = store.show(&mut Unwatched).unwrap();
    let answer = match step {
        Step::Admit(draw) => Some(store.admit(draw, &mut Unwatched).unwrap()),
        Step::Accept => {
            store.accept(&mut Unwatched).unwrap();
            None
        }
    };
    let (after, t1) = store.show(&mut Unwatched).unwrap();
    assert!(t0 <= t1, "the server's clock went back: {t0} then {t1}");
    let found = (t0..=t1).any(|now| match (step, answer) {
        (Step::Admit(draw), Some((d, window_ms))) => {
            let (rd, rw) = rules.admit(before, now, draw);
            same(rd, d) && rw == after && window_ms == rules.window_of(rw.width_ms)
        }
        (Step::Accept, None) => rules.accept(before, now) == after,
        _ => false,
    });
    assert!(
        found,
        "{step:?} with {rules:?} from {before:?} between {t0} and {t1}: {answer:?}, then {after:?}"
    );
    (after, answer.map(|(d, _)| d))
}

/// A small generator of the test's own, seeded: the same steps every run.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number drawn uniformly from [0, 1), of 53 bits.
    #[allow(clippy::cast_precision_loss)] // 53 bits: exact
    fn draw(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn the_script_decides_every_step_exactly_as_the_rules_do() {
    let redis = Redis::start(None);
    let quick = open(&redis, "agree", QUICK, FailMode::Closed);
    let slow = open(&redis, "agree", SLOW, FailMode::Closed);
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let (mut sent, mut skipped, mut widths) = (0, 0, std::collections::BTreeSet::new());
    let mut step = |phase: &str, who: u64| {
        let (store, rules) = if rng.next() % 4 < who {
            (&slow, SLOW)
        } else {
            (&quick, QUICK)
        };
        // About four requests an accept: K = 2 skips some, K = 1.5 more.
        let call = if rng.next().is_multiple_of(5) {
            Step::Accept
        } else {
            Step::Admit(rng.draw())
        };
        let (after, decision) = agrees(store, rules, call);
        match decision {
            Some(d) if d.send => sent += 1,
            Some(_) => skipped += 1,
            None => {}
        }
        widths.insert((phase.to_owned(), after.width_ms));
    };
    // The quick throttle alone, then both in its width while its slots
    // count; after a window of silence, the slow one's width stands, and
    // the quick one counts in it.
    for _ in 0..150 {
        step("quick", 0);
    }
    for _ in 0..100 {
        step("both", 2);
    }
    std::thread::sleep(Duration::from_millis(1100));
    step("slow first", 4);
    for _ in 0..150 {
        step("then both", 2);
    }
    assert!(sent > 50 && skipped > 20, "sent {sent}, skipped {skipped}");
    let quick_width = QUICK.width_ms();
    let slow_width = SLOW.width_ms();
    assert!(
        widths.contains(&("both".to_owned(), quick_width)),
        "{widths:?}"
    );
    assert!(
        widths.contains(&("slow first".to_owned(), slow_width)),
        "{widths:?}"
    );
    assert!(
        !widths.contains(&("then both".to_owned(), quick_width)),
        "{widths:?}"
    );
}

/// Writes `w` at `key` as the store holds a window.
fn put(redis: &Redis, key: &str, w: &Window) {
    let numbers = w
        .slots
        .iter()
        .flat_map(|s| [s.index, s.requests, s.skips, s.accepts]);
    let text = std::iter::once(w.width_ms)
        .chain(numbers)
        .fold("v1".to_owned(), |text, n| text + " " + &n.to_string());
    let key = format!("{REDIS_THROTTLE_PREFIX}{key}");
    assert_eq!(redis_cli(redis, &["SET", &key, &text]), "OK");
}

/// The server's time, in Unix milliseconds.
fn server_now(store: &RedisThrottle) -> u64 {
    store.show(&mut Unwatched).unwrap().1
}

/// A window of slots `width` wide with `slot(age)` for each age of slot
/// before the one of `now` that it returns one for.
fn window_at(now: u64, width: u64, slot: impl Fn(u64) -> Option<Slot>) -> Window {
    let mut w = Window {
        width_ms: width,
        ..Window::default()
    };
    let current = now / width;
    // The older first: a younger slot takes its place in the ring.
    for age in (0..2 * SLOTS as u64).rev() {
        if let Some(s) = slot(age) {
            let index = current - age;
            let place = usize::try_from(index % SLOTS as u64).unwrap();
            w.slots[place] = Slot { index, ..s };
        }
    }
    w
}

#[test]
fn counts_at_their_limit_are_summed_exactly_and_stay_there() {
    let redis = Redis::start(None);
    let store = open(&redis, "large", LONG, FailMode::Closed);
    let now = server_now(&store);
    // Every slot full, or nearly: the largest sums a window has, still
    // below 2^53 (so that a double holds them and r / (r + 1) stays below
    // 1), the one of requests odd.
    let w = window_at(now, LONG.width_ms(), |age| {
        (age < SLOTS as u64).then(|| Slot {
            index: 0,
            requests: MAX_COUNT - age - u64::from(age == 5),
            skips: MAX_COUNT / 2 - age,
            accepts: MAX_COUNT / 3 + age,
        })
    });
    let exact: u64 = w.slots.iter().map(|s| s.requests).sum();
    assert!(
        exact < 1 << 53 && exact > 11 * MAX_COUNT && exact % 2 == 1,
        "{exact}"
    );
    put(&redis, "large", &w);
    let mut rng = XorShift(7);
    let mut seen = Vec::new();
    for _ in 0..20 {
        let (after, d) = agrees(&store, LONG, Step::Admit(rng.draw()));
        seen.push(d.map(|d| (d.send, d.counts.requests)));
        let (after_accept, _) = agrees(&store, LONG, Step::Accept);
        assert_eq!(after.width_ms, after_accept.width_ms);
    }
    // The first decision counted them all (but the oldest, if its slot
    // ended meanwhile), and the rules agreed, to the unit; the current slot
    // stays at its limit.
    assert!(seen[0].is_some_and(|(_, r)| r > 10 * MAX_COUNT), "{seen:?}");
    assert!(
        seen.iter().any(|d| d.is_some_and(|(send, _)| !send)),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|d| d.is_some_and(|(send, _)| send)),
        "{seen:?}"
    );
}

#[test]
fn slots_of_another_width_the_past_or_the_future_count_as_the_rules_say() {
    let redis = Redis::start(None);
    let quick = open(&redis, "kinds", QUICK, FailMode::Closed);
    let long = open(&redis, "kinds", LONG, FailMode::Closed);
    let slot = Slot {
        index: 0,
        requests: 40,
        skips: 7,
        accepts: 3,
    };
    let now = server_now(&quick);
    let width = LONG.width_ms();
    let states = [
        // Only slots older than a window: the writer's width.
        window_at(now, width, |age| (age >= SLOTS as u64).then_some(slot)),
        // Live slots of another width: theirs.
        window_at(now, width, |age| {
            (age < SLOTS as u64 && age % 3 == 1).then_some(slot)
        }),
        // A slot from the future (a clock stepped back) is not counted,
        // and one of the current place in the ring but a window ago is
        // replaced.
        window_at(now + 3 * width, width, |age| {
            (age == 0 || age == 2).then_some(slot)
        }),
        window_at(now, width, |age| (age == SLOTS as u64).then_some(slot)),
    ];
    let mut widths = Vec::new();
    for (i, state) in states.iter().enumerate() {
        for (store, rules) in [(&quick, QUICK), (&long, LONG)] {
            for draw in [0.0, 0.5, 0.999_999] {
                put(&redis, "kinds", state);
                let (after, _) = agrees(store, rules, Step::Admit(draw));
                put(&redis, "kinds", state);
                agrees(store, rules, Step::Accept);
                widths.push((i, rules.window_ms, after.width_ms));
            }
        }
    }
    assert!(
        widths.contains(&(0, QUICK.window_ms, QUICK.width_ms())),
        "{widths:?}"
    );
    assert!(widths.contains(&(1, QUICK.window_ms, width)), "{widths:?}");
}

/// How many states no run writes `hostile` has.
const HOSTILE: usize = 19;

/// Writes the `which`th state no run writes at `key`, through `cli` (which
/// runs redis-cli with the arguments it is given).
fn hostile(cli: &dyn Fn(&[&str]) -> String, key: &str, which: usize) {
    let full = format!("{REDIS_THROTTLE_PREFIX}{key}");
    let zeros = " 0 0 0 0".repeat(SLOTS - 1);
    let text = match which {
        0 => {
            cli(&["DEL", &full]);
            cli(&["LPUSH", &full, "v1"]);
            return;
        }
        1 => {
            cli(&["DEL", &full]);
            cli(&["HSET", &full, "width", "83"]);
            return;
        }
        2 => format!("v1 83 x 1 0 0{zeros}"),
        3 => format!("v1 83 +12 1 0 0{zeros}"),
        4 => format!("v1 83 12 1e3 0 0{zeros}"),
        5 => format!("v1 83 12 {} 0 0{zeros}", MAX_COUNT + 1),
        6 => format!("v1 83 12 {} 0 0{zeros}", "9".repeat(25)),
        // Slot 0 holding an interval of slot 1's place.
        7 => format!("v1 83 13 1 0 0{zeros}"),
        // More skips than requests.
        8 => format!("v1 83 12 1 2 0{zeros}"),
        9 => format!("v1 0 12 1 0 0{zeros}"),
        10 => format!("v1 216000001 12 1 0 0{zeros}"),
        11 => format!("v1 83 12 1 0 0{zeros} "),
        12 => format!("v1 83 12 1 0 0{}", " 0 0 0 0".repeat(SLOTS - 2)),
        13 => format!("v1  83 12 1 0 0{zeros}"),
        14 => format!("v2 83 12 1 0 0{zeros}"),
        15 => String::new(),
        16 => format!("v1 83{}", " 0".repeat(600)),
        17 => format!("v1 83 12 1 0 0{zeros} 0 0 0 0"),
        18 => format!("v1 {} 12 1 0 0{zeros}", "0".repeat(30)),
        _ => panic!("no hostile state {which}"),
    };
    cli(&["SET", &full, &text]);
}

/// The dump of `key` (its type, and a string's value), to see that it is
/// left alone.
fn dump(redis: &Redis, key: &str) -> (String, String) {
    let key = format!("{REDIS_THROTTLE_PREFIX}{key}");
    let kind = redis_cli(redis, &["TYPE", &key]);
    let value = if kind == "string" {
        redis_cli(redis, &["GET", &key])
    } else {
        String::new()
    };
    (kind, value)
}

fn corrupt(e: &StoreError) -> bool {
    matches!(e, StoreError::Failed(why) if why.contains("corrupt throttle state at backoff:throttle:bad"))
}

#[test]
fn a_state_no_run_writes_is_refused_when_closed_and_reset_repairs_it() {
    let redis = Redis::start(None);
    let cli = |args: &[&str]| redis_cli(&redis, args);
    let store = open(&redis, "bad", QUICK, FailMode::Closed);
    for which in 0..HOSTILE {
        hostile(&cli, "bad", which);
        let held = dump(&redis, "bad");
        let admitted = store.admit(0.5, &mut Unwatched);
        assert!(
            matches!(&admitted, Err(e) if corrupt(e)),
            "{which}: {admitted:?}"
        );
        let accepted = store.accept(&mut Unwatched);
        assert!(
            matches!(&accepted, Err(e) if corrupt(e)),
            "{which}: {accepted:?}"
        );
        let shown = store.show(&mut Unwatched);
        assert!(matches!(&shown, Err(e) if corrupt(e)), "{which}: {shown:?}");
        assert_eq!(dump(&redis, "bad"), held, "{which}: left alone");
        store.reset(&mut Unwatched).unwrap();
        let (w, _) = store.show(&mut Unwatched).unwrap();
        assert_eq!(w, Window::default(), "{which}");
    }
}

/// The port of the server `repairs_when_open` works on, in its process.
const REPAIRS_PORT: &str = "BACKOFF_TEST_THROTTLE_REDIS_PORT";

/// The calls of `a_state_no_run_writes_becomes_a_fresh_window_when_open`,
/// which runs them in a process of their own (this test binary again) to
/// read what they warn; alone, it does nothing.
#[test]
#[ignore = "run by a_state_no_run_writes_becomes_a_fresh_window_when_open"]
fn repairs_when_open() {
    let Ok(port) = std::env::var(REPAIRS_PORT) else {
        return;
    };
    let cli = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let url = format!("redis://127.0.0.1:{port}");
    let store = RedisThrottle::new(
        &url,
        "bad",
        QUICK,
        TIMEOUT,
        FailMode::Open,
        Warnings::default(),
    )
    .unwrap();
    for which in 0..HOSTILE {
        hostile(&cli, "bad", which);
        // Show tells the state as it is: it repairs nothing.
        let shown = store.show(&mut Unwatched);
        assert!(matches!(&shown, Err(e) if corrupt(e)), "{which}: {shown:?}");
        let (d, window_ms) = store
            .admit(0.5, &mut Unwatched)
            .unwrap_or_else(|e| panic!("{which}: {e}"));
        assert!(d.send && d.counts.requests == 0, "{which}: {d:?}");
        assert_eq!(window_ms, QUICK.window_ms);
        let (d, _) = store.admit(0.5, &mut Unwatched).unwrap();
        assert_eq!(d.counts.requests, 1, "{which}: {d:?}");
        hostile(&cli, "bad", which);
        store.accept(&mut Unwatched).unwrap();
        let (w, _) = store.show(&mut Unwatched).unwrap();
        let total = |f: fn(&Slot) -> u64| w.slots.iter().map(f).sum::<u64>();
        assert_eq!(
            (total(|s| s.requests), total(|s| s.accepts)),
            (0, 1),
            "{which}"
        );
    }
}

#[test]
fn a_state_no_run_writes_becomes_a_fresh_window_when_open() {
    let redis = Redis::start(None);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["throttle_redis::repairs_when_open", "--exact", "--ignored"])
        .args(["--nocapture", "--test-threads", "1"])
        .env(REPAIRS_PORT, redis.port().to_string())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{out:?}"
    );
    // Each state is repaired twice (by an admit, then by an accept), and
    // each repair is told once: the calls that follow find a sound state.
    let line = format!(
        "backoff: adaptive throttle store {}: corrupt throttle state at backoff:throttle:bad; starting a fresh window",
        redis.url()
    );
    assert_eq!(said.lines().collect::<Vec<_>>(), vec![line; 2 * HOSTILE]);
}

#[test]
fn the_key_is_a_line_of_digits_that_expires_after_the_idle_time_and_its_window() {
    let redis = Redis::start(None);
    let store = open(&redis, "format", LONG, FailMode::Closed);
    let key = format!("{REDIS_THROTTLE_PREFIX}format");
    // Show creates nothing.
    assert_eq!(store.show(&mut Unwatched).unwrap().0, Window::default());
    assert_eq!(redis_cli(&redis, &["EXISTS", &key]), "0");
    let (_, now) = store.show(&mut Unwatched).unwrap();
    store.admit(0.5, &mut Unwatched).unwrap();
    let text = redis_cli(&redis, &["GET", &key]);
    let words: Vec<&str> = text.split(' ').collect();
    assert_eq!(words.len(), 2 + 4 * SLOTS, "{text}");
    assert_eq!(words[..2], ["v1", "10000"]);
    let index = words[2..].chunks(4).find(|s| s[1] == "1").unwrap()[0];
    let index: u64 = index.parse().unwrap();
    assert!(index >= now / 10_000 && index <= now / 10_000 + 1, "{text}");
    let ttl: u64 = redis_cli(&redis, &["TTL", &key]).parse().unwrap();
    let longest = REDIS_IDLE_TTL.as_secs() + 120;
    assert!(ttl <= longest && ttl + 60 > longest, "{ttl}");
    store.reset(&mut Unwatched).unwrap();
    let text = redis_cli(&redis, &["GET", &key]);
    assert_eq!(text, format!("v1 0{}", " 0 0 0 0".repeat(SLOTS)));
}

#[test]
fn a_throttle_out_of_its_bounds_or_a_bad_draw_is_refused() {
    let redis = Redis::start(None);
    let bad = |rules| {
        RedisThrottle::new(
            &redis.url(),
            "x",
            rules,
            TIMEOUT,
            FailMode::Open,
            Warnings::default(),
        )
        .err()
    };
    assert!(
        bad(Throttle {
            window_ms: 999,
            ..QUICK
        })
        .is_some()
    );
    assert!(
        bad(Throttle {
            k_milli: 999,
            ..QUICK
        })
        .is_some()
    );
    assert!(bad(QUICK).is_none());
    let store = open(&redis, "x", QUICK, FailMode::Open);
    for draw in [1.0, -0.0001, f64::NAN, f64::INFINITY] {
        assert!(store.admit(draw, &mut Unwatched).is_err(), "{draw}");
    }
    // The smallest draw above zero reaches the script as it is.
    let (d, _) = store.admit(f64::from_bits(1), &mut Unwatched).unwrap();
    assert!(d.send);
}
