//! The `backoff` binary: parse, run, exit.
//!
//! The standard library's start-up already does what a wrapper needs before
//! it runs anything: closed standard descriptors are opened on /dev/null (so
//! that the first pipe backoff opens is not taken for stdout), and SIGPIPE
//! is ignored (a write to a closed pipe fails with EPIPE instead of killing
//! backoff; commands get the default disposition back when they start).
//!
//! With musl, memory comes from dlmalloc instead of musl's own allocator,
//! which maps and unmaps pages for most allocations (ripgrep swaps the musl
//! allocator for the same reason).

#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() {
    backoff_cli::main_with_args(&std::env::args_os().collect::<Vec<_>>()).end();
}
