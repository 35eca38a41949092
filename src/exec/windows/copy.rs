//! Copying an attempt's output through backoff on Windows, for output
//! rules, `--idle-timeout`, held stdout and CI folds: a thread for each
//! captured stream reads it as it comes (an anonymous pipe cannot be
//! waited for beside a process), matches it line by line (`scan`), passes
//! it on unchanged, notes when output last came (`--idle-timeout`), and
//! wakes the executor's wait when the stream ends.

use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::classify::Observed;
use crate::exec::describe;
use crate::exec::scan::{LineScanner, OutputRules};
use crate::report::Warnings;
use crate::sys::fd::Out;
use crate::sys::signals::Waker;

/// Bytes read at a time.
const CHUNK: usize = 64 * 1024;

/// Where a captured stream goes.
pub(super) enum To {
    /// backoff's own stdout or stderr.
    Std(Out),
    /// The held stdout file (`--hold-stdout`).
    Held(File),
}

/// What the threads of one attempt share with the executor.
#[derive(Clone)]
pub(super) struct Shared {
    /// What the output showed.
    pub(super) seen: Arc<Mutex<Observed>>,
    /// When output last came.
    pub(super) last_output: Arc<Mutex<Instant>>,
    /// The first write into the held stdout file that failed.
    pub(super) lost: Arc<Mutex<Option<io::Error>>>,
    /// Set when the executor stops waiting for the output: what comes
    /// later is read and dropped.
    pub(super) cut: Arc<AtomicBool>,
    /// How many of the streams reached their end.
    pub(super) ended: Arc<AtomicUsize>,
    /// How many of the streams are writing what they read (a reader who
    /// does not read holds them there).
    pub(super) writing: Arc<AtomicUsize>,
}

impl Shared {
    pub(super) fn new() -> Shared {
        Shared {
            seen: Arc::new(Mutex::new(Observed::default())),
            last_output: Arc::new(Mutex::new(Instant::now())),
            lost: Arc::new(Mutex::new(None)),
            cut: Arc::new(AtomicBool::new(false)),
            ended: Arc::new(AtomicUsize::new(0)),
            writing: Arc::new(AtomicUsize::new(0)),
        }
    }
}

/// One captured stream.
pub(super) struct Stream {
    pub(super) from: File,
    pub(super) to: To,
    /// Its name in warnings: `stdout`, `stderr` or `output`.
    pub(super) name: &'static str,
    /// In a CI fold: a last line left unfinished is ended.
    pub(super) ends_lines: bool,
}

/// Starts the thread that copies `stream` until its end.
///
/// # Errors
///
/// When the thread cannot be started.
pub(super) fn start(
    stream: Stream,
    rules: Option<Arc<OutputRules>>,
    shared: Shared,
    warnings: Warnings,
    waker: Waker,
) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("attempt {}", stream.name))
        .spawn(move || copy(stream, rules.as_deref(), &shared, &warnings, &waker))
}

fn copy(
    mut stream: Stream,
    rules: Option<&OutputRules>,
    shared: &Shared,
    warnings: &Warnings,
    waker: &Waker,
) {
    let mut scanner = LineScanner::of_stream(stream.name);
    let mut buffer = vec![0; CHUNK];
    let mut dropping = false;
    let mut at_line_start = true;
    loop {
        let n = match stream.from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // ERROR_BROKEN_PIPE: every writer is gone.
            Err(_) => break,
        };
        let data = &buffer[..n];
        *shared
            .last_output
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        if shared.cut.load(Ordering::SeqCst) {
            continue;
        }
        if let Some(rules) = rules {
            scanner.feed(
                rules,
                data,
                &mut shared.seen.lock().unwrap_or_else(PoisonError::into_inner),
            );
        }
        if !dropping {
            shared.writing.fetch_add(1, Ordering::SeqCst);
            let written = match &mut stream.to {
                To::Std(out) => out.write_all_blocking(data),
                To::Held(file) => file.write_all(data),
            };
            shared.writing.fetch_sub(1, Ordering::SeqCst);
            *shared
                .last_output
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Instant::now();
            match written {
                Ok(()) => at_line_start = data.last() == Some(&b'\n'),
                Err(e) if matches!(stream.to, To::Held(_)) => {
                    // The held file takes no more: the rest is dropped.
                    dropping = true;
                    shared
                        .lost
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(e);
                }
                Err(e) => {
                    dropping = true;
                    if e.kind() != io::ErrorKind::BrokenPipe {
                        warnings.warn(&format!(
                            "cannot write the command's {}: {}; the rest of this attempt's {} is dropped",
                            stream.name,
                            describe(&e),
                            stream.name
                        ));
                    }
                }
            }
        }
    }
    if let Some(rules) = rules {
        scanner.finish(
            rules,
            &mut shared.seen.lock().unwrap_or_else(PoisonError::into_inner),
        );
    }
    if stream.ends_lines
        && !at_line_start
        && !dropping
        && let To::Std(out) = &stream.to
    {
        let _ = out.write_all_blocking(b"\n");
    }
    shared.ended.fetch_add(1, Ordering::SeqCst);
    waker.wake();
}
