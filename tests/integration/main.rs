//! Integration tests: the real binary against real processes and signals.

mod breaker;
mod budget;
mod ci;
mod cluster;
mod completions;
mod docs;
mod environment;
mod fleet;
mod hooks;
mod http;
mod idle;
mod limits;
mod live;
mod observe;
mod processes;
mod retrying;
mod schedule;
mod servers;
mod signals;
mod simulation;
mod stalled;
mod streams;
mod support;
mod timestamps;
mod usage;
mod waiting;
