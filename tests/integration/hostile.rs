//! A store that answers with hostile bytes: a fake Redis of the test's
//! own, a thread on 127.0.0.1 that answers every command with what the
//! test says (an error of 60 KB, a reply that never ends, a string that
//! declares a GiB), and what backoff makes of it: the store is unavailable,
//! said once with at most a few hundred bytes of what the server said, the
//! fail mode decides, and the memory and the time a reply costs stay
//! bounded, for budgets, breakers and throttles, on a server or a cluster.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Instant;

use crate::support::{PATIENCE, TempDir, backoff, events, record_peak_rss};

/// What the fake server answers each command with.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// `-ERR `, then this many bytes of `x` and ESC in turn.
    Error(usize),
    /// `+`, then `a`s until the client goes.
    Endless,
    /// A string that declares a GiB (`$1073741824`), then `a`s until the
    /// client goes.
    Huge,
}

/// A fake Redis on a port of its own, until dropped.
struct FakeRedis {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl FakeRedis {
    fn start(answer: Answer) -> FakeRedis {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                if let Ok(conn) = conn {
                    thread::spawn(move || serve(conn, answer));
                }
            }
        });
        FakeRedis { port, stop }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for FakeRedis {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread, which then ends.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Answers each command that comes on `conn` (each read of it) with
/// `answer`, until the client goes.
fn serve(mut conn: TcpStream, answer: Answer) {
    let mut command = vec![0; 64 * 1024];
    while matches!(conn.read(&mut command), Ok(n) if n > 0) {
        let head = match answer {
            Answer::Error(n) => {
                let text: Vec<u8> = b"x\x1b".iter().copied().cycle().take(n).collect();
                let line = [b"-ERR ".as_slice(), &text, b"\r\n"].concat();
                if conn.write_all(&line).is_err() {
                    return;
                }
                continue;
            }
            Answer::Endless => b"+".as_slice(),
            Answer::Huge => b"$1073741824\r\n".as_slice(),
        };
        let more = vec![b'a'; 64 * 1024];
        if conn.write_all(head).is_err() {
            return;
        }
        while conn.write_all(&more).is_ok() {}
        return;
    }
}

/// What a process's `/proc/PID/stat`, as read into `file`, says of the CPU
/// time it used: user and system, in seconds.
fn cpu_seconds(file: &Path) -> f64 {
    let stat = std::fs::read_to_string(file).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime, the 14th and 15th fields, in clock ticks.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf only reads a constant of the system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    f64::from(u32::try_from(ticks).unwrap()) / f64::from(i32::try_from(per_second).unwrap())
}

/// A run that retries once after the store at `url` is asked for a token,
/// its retry recording backoff's peak memory (KiB) and CPU time: its exit
/// status, its stderr, how long it took, the memory and the CPU time.
fn measured(dir: &TempDir, url: &str) -> (Option<i32>, String, f64, u64, f64) {
    let (rss, stat) = (dir.join("rss"), dir.join("stat"));
    let _ = std::fs::remove_file(&rss);
    let script = format!(
        "{}; cat /proc/$PPID/stat > '{}'; exit 3",
        record_peak_rss(&rss),
        stat.display()
    );
    let began = Instant::now();
    let out = backoff(["--budget", "k", "--budget-store", url])
        // The longest wait there is: a reply read to the timeout would
        // make the run last a minute.
        .args(["--budget-store-timeout", "1m", "--base", "1ms"])
        .args(["--max-retries", "1", "--", "sh", "-c", &script])
        .timeout(PATIENCE)
        .output()
        .unwrap();
    let took = began.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let kib = std::fs::read_to_string(&rss)
        .unwrap_or_else(|_| panic!("the retry ran: {stderr}"))
        .trim()
        .parse()
        .unwrap();
    (out.status.code(), stderr, took, kib, cpu_seconds(&stat))
}

#[test]
fn a_reply_that_never_ends_is_read_to_64_kib_then_the_fail_mode_decides() {
    let dir = TempDir::new("hostile-endless");
    // What a run costs with a store that refuses at once: the measure.
    let refused = format!("redis://127.0.0.1:{}", crate::fleet::free_port());
    let (code, stderr, _, base_kib, base_cpu) = measured(&dir, &refused);
    assert_eq!(code, Some(3), "{stderr}");
    for answer in [Answer::Endless, Answer::Huge] {
        let server = FakeRedis::start(answer);
        let cluster = format!("redis+cluster://127.0.0.1:{}", server.port);
        for url in [server.url(), cluster] {
            let (code, stderr, took, kib, cpu) = measured(&dir, &url);
            assert!(took < PATIENCE.as_secs_f64(), "{answer:?} {url}: {took}s");
            assert!(
                kib < base_kib + 4 * 1024,
                "{answer:?} {url}: {kib} KiB at most, where a refused store costs {base_kib} KiB"
            );
            assert!(
                cpu < base_cpu + 1.0,
                "{answer:?} {url}: {cpu}s of CPU, where a refused store costs {base_cpu}s"
            );
            assert_eq!(code, Some(3), "retried as the fail mode says: {stderr}");
            assert_eq!(
                stderr.matches("reply too long: more than 64 KiB").count(),
                1,
                "{answer:?} {url}: {stderr}"
            );
        }
        // Closed: no retry without the store's word.
        let closed = "--budget-store-timeout 1m --budget-store-fail closed --max-retries 1";
        let out = backoff(["--budget", "k", "--budget-store", &server.url()])
            .args(closed.split(' '))
            .args(["--", "sh", "-c", "exit 3"])
            .timeout(PATIENCE)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(
            stderr.contains("reply too long: more than 64 KiB); not retrying"),
            "{stderr}"
        );
        assert_eq!(stderr.matches("failed (exit 3)").count(), 1, "{stderr}");
    }
}

#[test]
fn what_a_store_says_is_quoted_at_most_256_bytes_in_lines_and_json_events() {
    // 60,000 bytes after `ERR `: a reply within the limit, its text not.
    let server = FakeRedis::start(Answer::Error(60_000));
    let cut = "… (60004 bytes, cut)";
    for flag in ["--budget", "--breaker", "--throttle"] {
        let run = |format: &str| {
            backoff(["--log-format", format, flag, "k", "--budget-store"])
                .arg(server.url())
                .args(["--base", "1ms", "--max-retries", "1", "--", "false"])
                .timeout(PATIENCE)
                .output()
                .unwrap()
        };
        let out = run("text");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said: Vec<&str> = stderr.lines().filter(|l| l.contains(cut)).collect();
        assert_eq!(said.len(), 1, "{flag}: {stderr}");
        let line = said[0];
        assert!(line.contains("unavailable (ERR x\\u{1b}x\\u{1b}"), "{line}");
        assert!(!line.contains('\x1b'), "escaped: {line}");
        let quoted = &line[line.find("(ERR ").unwrap() + 1..line.find(cut).unwrap()];
        assert!(quoted.len() <= 256, "{} bytes: {line}", quoted.len());
        assert!(quoted.len() > 200, "{} bytes: {line}", quoted.len());

        let out = run("json");
        let warnings: Vec<String> = events(&out.stderr)
            .iter()
            .filter(|e| e["event"] == "warning")
            .map(|e| e["message"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(warnings.len(), 1, "{flag}: {warnings:?}");
        assert!(warnings[0].contains(cut), "{}", warnings[0]);
        assert!(warnings[0].len() < 500, "{}", warnings[0]);
    }
}
