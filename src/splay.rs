//! `--splay`: the wait before a run's first attempt, in `[0, window)`,
//! the same on every run of one job on one host and different from host
//! to host, so that a fleet's cron jobs that all fire at :00 spread over
//! the window, each host keeping its own start time (systemd's
//! `RandomizedDelaySec` with `FixedRandomDelay`). A host is its machine
//! id and its host name together: hosts cloned from one image share the
//! id, and their names keep them apart. Pure: both are read by
//! `sys::machine`.

use std::time::Duration;

/// The longest window `--splay` takes: a job that runs less often than
/// daily has no herd to spread within a day, and a longer wait would more
/// likely be a mistyped unit.
pub const MAX_WINDOW: Duration = Duration::from_hours(24);

/// Where a host's place in the window comes from: its machine id and host
/// name, or `--seed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The machine's id (`/etc/machine-id`; empty where there is none) and
    /// its host name.
    Machine {
        /// The machine's id.
        id: Vec<u8>,
        /// Its host name.
        host: Vec<u8>,
    },
    /// `--seed`: the same wait wherever the run is.
    Seed(u64),
}

/// The wait before the first attempt of the job `job` (`--name`, else the
/// program's name) on the host `source` names: the same for the same
/// inputs, in every version of backoff since the host name was mixed in,
/// and spread evenly over `[0, window)` across hosts and jobs.
pub fn offset(window: Duration, source: &Source, job: &str) -> Duration {
    // A byte no name holds keeps "ab"+"c" and "a"+"bc" apart.
    let key = match source {
        Source::Machine { id, host } => fnv1a(fnv1a(fnv1a(FNV_OFFSET, id), &[0xff]), host),
        Source::Seed(seed) => fnv1a(FNV_OFFSET, &seed.to_le_bytes()),
    };
    let key = fnv1a(fnv1a(key, &[0xff]), job.as_bytes());
    window.mul_f64(fraction(mix(key)))
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The 64-bit FNV-1a hash of `bytes`, from `hash`.
fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(hash, |h, &b| (h ^ u64::from(b)).wrapping_mul(FNV_PRIME))
}

/// `SplitMix64`'s finaliser: every bit of `x` moves every bit of the result,
/// which FNV alone does not do for its high bits.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The top 53 bits of `x` as a fraction in `[0, 1)`.
// Exact: 53 bits fit an f64's mantissa.
#[allow(clippy::cast_precision_loss)]
fn fraction(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_mins(2);

    fn machine(id: &str) -> Source {
        on(id, "web1")
    }

    fn on(id: &str, host: &str) -> Source {
        Source::Machine {
            id: id.as_bytes().to_vec(),
            host: host.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_same_host_and_job_wait_the_same_and_within_the_window() {
        let host = machine("4f1c9a0d2b7e4c6a8e5f3d2c1b0a9f8e");
        let a = offset(WINDOW, &host, "sync");
        assert_eq!(a, offset(WINDOW, &host, "sync"));
        assert!(a < WINDOW);
        assert_ne!(a, offset(WINDOW, &host, "backup"));
        assert_ne!(a, offset(WINDOW, &machine("another"), "sync"));
        assert_eq!(offset(Duration::ZERO, &host, "sync"), Duration::ZERO);
    }

    #[test]
    fn the_values_are_fixed_for_every_version() {
        // A fleet upgraded host by host keeps its spread: these are the
        // published FNV-1a and SplitMix64 values, and one host's wait
        // (24,490 ms before the host name was mixed in).
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(mix(1), 0x5692_161d_100b_05e5);
        let host = machine("4f1c9a0d2b7e4c6a8e5f3d2c1b0a9f8e");
        assert_eq!(offset(WINDOW, &host, "sync").as_millis(), 70_795);
    }

    #[test]
    fn hosts_cloned_from_one_image_are_kept_apart_by_their_names() {
        let id = "4f1c9a0d2b7e4c6a8e5f3d2c1b0a9f8e";
        let a = offset(WINDOW, &on(id, "web1"), "sync");
        assert_eq!(a, offset(WINDOW, &on(id, "web1"), "sync"));
        assert_ne!(a, offset(WINDOW, &on(id, "web2"), "sync"));
        // The id and the name do not run into each other.
        assert_ne!(
            offset(WINDOW, &on("ab", "c"), "sync"),
            offset(WINDOW, &on("a", "bc"), "sync")
        );
        // A host with no id is placed by its name.
        assert_ne!(
            offset(WINDOW, &on("", "web1"), "sync"),
            offset(WINDOW, &on("", "web2"), "sync")
        );
    }

    #[test]
    fn a_seed_overrides_the_machine_and_names_stay_apart() {
        let seeded = offset(WINDOW, &Source::Seed(7), "sync");
        assert_eq!(seeded, offset(WINDOW, &Source::Seed(7), "sync"));
        assert_ne!(seeded, offset(WINDOW, &Source::Seed(8), "sync"));
        assert_ne!(
            offset(WINDOW, &machine("ab"), "c"),
            offset(WINDOW, &machine("a"), "bc")
        );
    }

    #[test]
    fn hosts_spread_evenly_over_the_window() {
        // 10,000 hosts in 10 slices of the window: each holds about 1,000.
        let mut slices = [0u32; 10];
        for host in 0..10_000 {
            let d = offset(WINDOW, &machine(&format!("{host:032x}")), "sync");
            let slice = d.as_nanos() * 10 / WINDOW.as_nanos();
            slices[usize::try_from(slice).unwrap()] += 1;
        }
        assert!(
            slices.iter().all(|&n| (880..1120).contains(&n)),
            "{slices:?}"
        );
    }
}
