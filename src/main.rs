//! The `backoff` binary: parse, run, exit.
//!
//! On Linux it has its own C `main` rather than Rust's `fn main`: the
//! standard library's start-up would also set up a guard against stack
//! overflow for the main thread (a read of `/proc/self/maps` with glibc, an
//! alternate signal stack and two signal handlers, a dozen system calls at
//! every start) only to print a nicer message if the stack overflows. What
//! else that start-up does is done here: closed standard descriptors are
//! opened on /dev/null, SIGPIPE is ignored, and a panic exits with 101. The
//! arguments are read from `argv`.
//!
//! With musl, memory comes from dlmalloc instead of musl's own allocator,
//! which maps and unmaps pages for most allocations: backoff would spend more
//! time in those system calls and page faults than in parsing its command
//! line.

#![cfg_attr(target_os = "linux", no_main)]

#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

#[cfg(target_os = "linux")]
#[unsafe(no_mangle)]
extern "C" fn main(
    count: std::ffi::c_int,
    words: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    use std::os::unix::ffi::OsStrExt;

    // A closed stdout would otherwise be taken by the first pipe backoff
    // opens.
    backoff_cli::spawn::open_missing_stdio();
    // Writing to a closed pipe gives EPIPE, not death; commands get the
    // default disposition back when they start.
    backoff_cli::signals::ignore_sigpipe();
    // The standard library's own copy of the arguments exists with glibc
    // only: with musl it is made by the start-up skipped here.
    let args: Vec<std::ffi::OsString> = (0..usize::try_from(count).unwrap_or(0))
        .map(|i| {
            // SAFETY: the C runtime passes `count` (argc) valid pointers in
            // `words` (argv), each to a NUL-terminated string that lives as
            // long as the process.
            let arg = unsafe { std::ffi::CStr::from_ptr(*words.add(i)) };
            std::ffi::OsStr::from_bytes(arg.to_bytes()).to_owned()
        })
        .collect();
    match std::panic::catch_unwind(move || backoff_cli::main_with_args(args)) {
        Ok(exit) => exit.exit(),
        // The panic message is printed already.
        Err(_) => std::process::exit(101),
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    backoff_cli::main_with_args(std::env::args_os().collect()).exit();
}
