//! Integration tests: the real binary against real processes and signals.

mod docs;
mod environment;
mod limits;
mod processes;
mod retrying;
mod schedule;
mod signals;
mod support;
mod usage;
