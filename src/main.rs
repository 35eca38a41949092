//! The `backoff` binary: parse, run, exit.
//!
//! It has its own C `main` rather than Rust's `fn main`: the standard
//! library's start-up would also set up a guard against stack overflow for
//! the main thread (a read of `/proc/self/maps`, an alternate signal stack
//! and two signal handlers, a dozen system calls at every start) only to
//! print a nicer message if the stack overflows. What else it does, ignoring
//! SIGPIPE, is done here.

#![no_main]

#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    // Writing to a closed pipe gives EPIPE, not death; commands get the
    // default disposition back when they start.
    backoff_cli::signals::ignore_sigpipe();
    backoff_cli::main_with_args(std::env::args_os().collect()).exit();
}
