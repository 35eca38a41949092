//! The cron model's `--splay` window is at most its cron's period: a
//! wider one would start some of one tick's runs after the next tick,
//! which the model (one period) does not run, and its `--once-per hour`
//! row would count one run where the real option gives one an hour.

use crate::simulation::refused_in_one_line;
use crate::support::backoff;

#[test]
fn a_splay_window_wider_than_the_crons_period_is_refused() {
    for wide in ["61m", "3h", "24h"] {
        refused_in_one_line("cron", &["--splay", wide]);
    }
    backoff(["simulate", "--model", "cron", "--splay", "3h"])
        .assert()
        .stderr(predicates::str::contains("at most 1h"));
    backoff(["simulate", "--model", "cron", "--splay", "1h"])
        .assert()
        .success()
        .stdout(predicates::str::contains("--splay 1h --once-per hour"));
}
