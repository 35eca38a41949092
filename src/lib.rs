//! backoff runs a command and retries it with capped exponential backoff and
//! jitter.
//!
//! The crate is a pure core inside a thin shell. The core decides and
//! touches no OS facility: `policy` and `jitter` (the delays), `classify`
//! (success, retry or stop), `curl` and `wget` (what their arguments ask
//! for, read by `argv` as getopt reads them), `preset` (which preset a run uses, and what it cannot do for the
//! command at hand), `run`
//! (the retry loop, over small traits), `event` (what a run tells), `fleet`
//! (the rules of retry budgets and circuit breakers shared by processes),
//! `schedule`, `signal` (signal names) and `duration`. Around it: `cli` (the command line as clap sees it), `config`
//! (checked settings built from it), `exec` (running attempts: spawning, the
//! event-driven wait, copying and scanning output), `output` (the run's
//! output kept back until the run fails, or its end kept for a check-in), `sys` (every system
//! call std lacks, and every `unsafe`), `report` (every line and file
//! backoff writes), `store` (where budgets, breakers, throttles and locks are kept), `simulate`
//! (the jitter experiment), `generate` (the man pages and completions that
//! `--generate` prints), `exit` (exit statuses) and `app` (the wiring).

pub mod app;
pub mod argv;
pub mod classify;
pub mod cli;
pub mod config;
pub mod curl;
pub mod duration;
pub mod event;
pub mod exec;
pub mod exit;
pub mod fleet;
pub mod generate;
pub mod http;
pub mod jitter;
pub mod output;
pub mod ping;
pub mod policy;
pub mod preset;
pub mod push;
pub mod report;
pub mod run;
pub mod schedule;
pub mod signal;
pub mod simulate;
pub mod splay;
pub mod store;
pub mod sys;
pub mod trace;
pub mod wget;

pub use app::main_with_args;
