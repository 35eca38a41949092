//! The day each man page's text last changed, for its `.TH` line. Written
//! by the regeneration of the generated files (see docs/building.md), which
//! keeps a page's date while its text stays the same; not edited by hand.

/// Each page's name and date (YYYY-MM-DD).
pub const DATES: &[(&str, &str)] = &[
    ("backoff", "2026-12-06"),
    ("backoff-schedule", "2026-12-06"),
    ("backoff-simulate", "2026-12-06"),
    ("backoff-budget", "2026-12-06"),
    ("backoff-breaker", "2026-12-06"),
    ("backoff-throttle", "2026-12-06"),
    ("backoff-lock", "2026-12-06"),
    ("backoff-once", "2026-12-06"),
];
