//! The `backoff` binary: parse, run, exit.
//!
//! On Linux with glibc it has its own C `main` rather than Rust's `fn main`:
//! the standard library's start-up would also set up a guard against stack
//! overflow for the main thread (a read of `/proc/self/maps`, an alternate
//! signal stack and two signal handlers, a dozen system calls at every
//! start) only to print a nicer message if the stack overflows. What else
//! that start-up does is done here: closed standard descriptors are opened on
//! /dev/null, SIGPIPE is ignored, and a panic exits with 101. The arguments
//! come from glibc, which hands them to the standard library before `main`.

#![cfg_attr(all(target_os = "linux", target_env = "gnu"), no_main)]

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    // A closed stdout would otherwise be taken by the first pipe backoff
    // opens.
    backoff_cli::spawn::open_missing_stdio();
    // Writing to a closed pipe gives EPIPE, not death; commands get the
    // default disposition back when they start.
    backoff_cli::signals::ignore_sigpipe();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match std::panic::catch_unwind(move || backoff_cli::main_with_args(args)) {
        Ok(exit) => exit.exit(),
        // The panic message is printed already.
        Err(_) => std::process::exit(101),
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() {
    backoff_cli::main_with_args(std::env::args_os().collect()).exit();
}
