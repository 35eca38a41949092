//! `--hold-stdout`, `--replay-stdin` and output rules with large data: no
//! byte lost or duplicated, and memory bounded.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::process::Stdio;

use crate::support::{TempDir, command, command_after, record_peak_rss};

const SIZE: usize = 100 << 20;

/// Writes `len` pseudo-random bytes (xorshift, seeded) to `path`.
fn random_file(path: &Path, len: usize, seed: u64) {
    let mut w = BufWriter::new(File::create(path).unwrap());
    let mut x = seed | 1;
    let mut left = len;
    while left > 0 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        let n = left.min(8);
        w.write_all(&bytes[..n]).unwrap();
        left -= n;
    }
    w.flush().unwrap();
}

/// Whether two files have exactly the same bytes.
fn same_bytes(a: &Path, b: &Path) -> bool {
    let (mut fa, mut fb) = (File::open(a).unwrap(), File::open(b).unwrap());
    if fa.metadata().unwrap().len() != fb.metadata().unwrap().len() {
        return false;
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = fa.read(&mut ba).unwrap();
        if n == 0 {
            return true;
        }
        fb.read_exact(&mut bb[..n]).unwrap();
        if ba[..n] != bb[..n] {
            return false;
        }
    }
}

fn peak_kib(dir: &TempDir) -> u64 {
    dir.lines("rss")[0].parse().unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn hold_stdout_writes_exactly_the_final_attempts_100_mib_with_bounded_memory() {
    for rules in [&[][..], &["--stop-if-output", "never-printed-zq"][..]] {
        let dir = TempDir::new("hold");
        let (a, b) = (dir.join("a"), dir.join("b"));
        random_file(&a, SIZE, 1);
        random_file(&b, SIZE, 2);
        let out = dir.join("out");
        let mut cmd = command(["--hold-stdout", "--base", "1ms", "--max-retries", "1"]);
        cmd.args(rules).args(["--", "sh", "-c"]).arg(format!(
            "if [ $BACKOFF_ATTEMPT = 1 ]; then cat '{}'; exit 1; fi; cat '{}'; {}",
            a.display(),
            b.display(),
            record_peak_rss(&dir.join("rss"))
        ));
        let status = cmd
            .stdout(File::create(&out).unwrap())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{rules:?}");
        assert!(
            same_bytes(&out, &b),
            "{rules:?}: stdout is not the final attempt's"
        );
        let kib = peak_kib(&dir);
        assert!(kib < 16 * 1024, "{rules:?}: peak RSS {kib} KiB");
    }
}

#[test]
fn hold_stdout_fails_and_writes_nothing_when_the_temporary_file_cannot_take_the_output() {
    for rules in [&[][..], &["--stop-if-output", "never-printed-zq"][..]] {
        let mut args = vec!["--hold-stdout"];
        args.extend(rules);
        // The command ignores the errors of its own writes.
        args.extend(["--", "sh", "-c", "head -c 8388608 /dev/zero; exit 0"]);
        // Files can grow to 1 MiB only (2 MiB where sh counts in KiB), and
        // a write past that fails (EFBIG), as on a full disk.
        let out = command_after("ulimit -f 2048; trap '' XFSZ", &args)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{rules:?}: {said}");
        assert!(
            out.stdout.is_empty(),
            "{rules:?}: {} bytes of a partial stdout written",
            out.stdout.len()
        );
        assert!(
            said.contains("File too large") && said.lines().count() == 1,
            "{rules:?}: {said}"
        );
    }
}

#[cfg(target_os = "linux")]
#[test]
fn hold_stdout_fails_when_backoffs_own_stdout_cannot_take_the_held_output() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = command(["--hold-stdout", "--", "echo", "hello"])
        .stdout(full)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{said}");
    assert!(said.contains("No space left on device"), "{said}");
}

/// backoff running `sh -c SCRIPT` with `--replay-stdin`, for three
/// attempts at most, and `input` as stdin.
fn replaying(input: &Path, script: &str) -> std::process::Command {
    let mut cmd = command([
        "--replay-stdin",
        "--base",
        "1ms",
        "--max-retries",
        "2",
        "--",
        "sh",
        "-c",
        script,
    ]);
    cmd.stdin(File::open(input).unwrap());
    cmd
}

/// Runs `sh -c SCRIPT` with `--replay-stdin` and `input` as stdin, for
/// three attempts (the script's variable `d` names `dir`, and the third
/// attempt must succeed); checks that the run succeeded and that each
/// attempt saved exactly the input as `got1`, `got2`, `got3` in `dir`.
fn replay_to_three_attempts(dir: &TempDir, input: &Path, script: &str) {
    let status = replaying(input, &format!("d='{}'; {script}", dir.path().display()))
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{status:?}");
    for attempt in 1..=3 {
        let got = dir.join(&format!("got{attempt}"));
        assert!(
            same_bytes(input, &got),
            "attempt {attempt} read other bytes ({} of them)",
            std::fs::metadata(&got).map_or(0, |m| m.len())
        );
    }
}

#[cfg(target_os = "linux")]
#[test]
fn replay_stdin_gives_every_attempt_the_same_100_mib_with_bounded_memory() {
    let dir = TempDir::new("replay");
    let input = dir.join("in");
    random_file(&input, SIZE, 3);
    replay_to_three_attempts(
        &dir,
        &input,
        &format!(
            "cat > \"$d/got$BACKOFF_ATTEMPT\"; {rss}; [ $BACKOFF_ATTEMPT = 3 ]",
            rss = record_peak_rss(&dir.join("rss"))
        ),
    );
    let kib = peak_kib(&dir);
    assert!(kib < 16 * 1024, "peak RSS {kib} KiB");
}

#[test]
fn replay_stdin_with_an_empty_or_closed_stdin_gives_empty_input() {
    let out = command(["--replay-stdin", "--", "wc", "-c"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0");
}

#[test]
fn replay_stdin_that_the_temporary_directory_cannot_take_runs_nothing() {
    let dir = TempDir::new("replay-no-room");
    let input = dir.join("in");
    // More than backoff keeps in memory, and more than the file size limit
    // lets the temporary file take.
    random_file(&input, 8 << 20, 4);
    let ran = dir.join("ran");
    let out = command_after(
        "ulimit -f 6144; trap '' XFSZ",
        ["--replay-stdin", "--", "touch", ran.to_str().unwrap()],
    )
    .stdin(File::open(&input).unwrap())
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{said}");
    assert!(
        said.contains("cannot read stdin into the temporary directory")
            && said.lines().count() == 1,
        "{said}"
    );
    assert!(!ran.exists(), "the command ran");
}

/// A shell line by which an attempt tries every way to change its stdin
/// through `/proc/self/fd/0` (Linux): made writable again (as its owner
/// may), then truncated and written, or written in place (the same size).
/// Root needs no mode to do either.
const CLOBBER_STDIN: &str = "chmod u+w /proc/self/fd/0 2>/dev/null; \
     { echo CLOBBER > /proc/self/fd/0; } 2>/dev/null; \
     { printf CLOBBER 1<> /proc/self/fd/0; } 2>/dev/null";

#[test]
fn replayed_stdin_is_read_only_and_sealed_so_no_attempt_even_roots_can_change_it() {
    let dir = TempDir::new("replay-read-only");
    let input = dir.join("in");
    std::fs::write(&input, "the original bytes, every attempt\n".repeat(100)).unwrap();
    // The first attempt writes to its stdin before reading it, then tries
    // to change it through /proc.
    replay_to_three_attempts(
        &dir,
        &input,
        &format!(
            "if [ $BACKOFF_ATTEMPT = 1 ] && {{ printf junk >&0; }} 2>/dev/null; then touch \"$d/wrote\"; fi; \
             cat > \"$d/got$BACKOFF_ATTEMPT\"; \
             if [ $BACKOFF_ATTEMPT = 1 ]; then {CLOBBER_STDIN}; fi; [ $BACKOFF_ATTEMPT = 3 ]"
        ),
    );
    assert!(
        !dir.join("wrote").exists(),
        "a write to the replayed stdin succeeded"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn replayed_stdin_in_a_temporary_file_that_an_attempt_changed_is_not_given_to_the_next() {
    let dir = TempDir::new("replay-changed");
    let input = dir.join("in");
    // Past what backoff keeps in memory: an unlinked temporary file, which
    // its owner can make writable again, and root can write anyway.
    random_file(&input, 5 << 20, 5);
    let out = replaying(
        &input,
        &format!("echo attempt $BACKOFF_ATTEMPT; cat > /dev/null; {CLOBBER_STDIN}; exit 1"),
    )
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(126), "{said}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "attempt 1\n",
        "{said}"
    );
    let refusal: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("changed by an earlier attempt"))
        .collect();
    assert_eq!(refusal.len(), 1, "{said}");
    assert!(refusal[0].starts_with("backoff: "), "{said}");
}

#[test]
fn output_rules_pass_every_byte_of_both_streams_to_slow_pipe_readers() {
    let dir = TempDir::new("slow-readers");
    let data = dir.path().join("data");
    random_file(&data, 16 << 20, 7);
    let script = format!("cat '{0}'; cat '{0}' >&2", data.display());
    let mut child = command(["-q", "--retry-if-output", "zzz", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Each reader dawdles over its first reads, so that the pipes fill and
    // backoff has to wait for room in them.
    let slow = |mut from: Box<dyn Read + Send>, to: std::path::PathBuf| {
        std::thread::spawn(move || {
            let mut out = File::create(to).unwrap();
            let mut buf = vec![0u8; 4096];
            let mut reads = 0;
            loop {
                let n = from.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                out.write_all(&buf[..n]).unwrap();
                reads += 1;
                if reads < 200 {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
        })
    };
    let out = slow(
        Box::new(child.stdout.take().unwrap()),
        dir.path().join("out"),
    );
    let err = slow(
        Box::new(child.stderr.take().unwrap()),
        dir.path().join("err"),
    );
    out.join().unwrap();
    err.join().unwrap();
    assert!(child.wait().unwrap().success());
    assert!(same_bytes(&data, &dir.path().join("out")), "stdout differs");
    assert!(same_bytes(&data, &dir.path().join("err")), "stderr differs");
}

#[test]
fn a_reader_that_quits_ends_the_command_by_sigpipe_with_no_retry() {
    use std::os::unix::process::ExitStatusExt;
    // -v: a death by SIGPIPE is otherwise not reported.
    let mut child = command(["-v", "--retry-if-output", "zzz", "--", "yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 4];
    stdout.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"y\ny\n");
    drop(stdout);
    let mut report = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut report)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{report}");
    assert_eq!(report.matches("attempt 1/").count(), 1, "{report}");
    assert!(!report.contains("attempt 2/"), "{report}");
}

#[test]
fn output_still_in_the_pipe_when_the_command_exits_reaches_a_reader_that_comes_late() {
    use std::io::BufRead;
    // The command makes its stdout pipe 1 MiB (F_SETPIPE_SZ) and fills it
    // with up to 900 kB, so it exits at once; backoff stops reading after
    // 0.5 s of silence, long before this test reads, with far more than one
    // read's worth still in that pipe: all of it must come through.
    let script = "import fcntl, sys
try:
    fcntl.fcntl(1, 1031, 1 << 20)
except OSError:
    pass
n = min(900000, fcntl.fcntl(1, 1032))
sys.stdout.buffer.write(bytes(n))
sys.stdout.buffer.flush()
print('written', n, file=sys.stderr, flush=True)";
    let mut child = command([
        "-q",
        "--retry-if-output",
        "zzz",
        "--",
        "python3",
        "-c",
        script,
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = stderr.read_line(&mut line);
        let _ = tx.send(line);
    });
    let Ok(line) = rx.recv_timeout(crate::support::PATIENCE) else {
        let _ = child.kill();
        panic!("the command never finished writing");
    };
    let written: usize = line
        .strip_prefix("written ")
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("unexpected line {line:?}"));
    // Not a synchronisation: the count below must hold however long this
    // is; waiting past backoff's 0.5 s of silence makes the test look at
    // what backoff does after it stopped reading.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let mut all = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut all).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(all.len(), written);
    assert!(all.iter().all(|&b| b == 0));
}

#[test]
fn backoffs_sharing_one_output_pipe_each_deliver_every_byte() {
    use std::os::unix::process::ExitStatusExt;
    // Three runs write into the pipe to this test at once: tee(2) into a
    // pipe that others fill too must not be taken for the end.
    const EACH: usize = 20_000_000;
    let (mut reader, writer) = std::io::pipe().unwrap();
    let runs: Vec<_> = (0..3)
        .map(|_| {
            command([
                "-q",
                "--max-retries",
                "0",
                "--retry-if-output",
                "zzz",
                "--",
                "head",
                "-c",
                &EACH.to_string(),
                "/dev/zero",
            ])
            .stdout(writer.try_clone().unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    drop(writer);
    let mut total = 0;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        total += n;
    }
    for mut run in runs {
        let status = run.wait().unwrap();
        assert!(
            status.success(),
            "{status:?} (signal {:?})",
            status.signal()
        );
    }
    assert_eq!(total, 3 * EACH);
}

#[test]
fn closed_stdout_and_stderr_act_as_dev_null_and_are_never_mistaken_for_backoffs_own() {
    // backoff opens pipes of its own (for signals, for the command's
    // output): with 1 and 2 closed, one of them would take their numbers.
    // The \002 would then read as SIGINT, the output as a broken pipe.
    let script = format!(
        "exec '{}' -q --retry-if-output zzz -- sh -c 'head -c 1000000 /dev/zero; printf \"\\002\" >&2; exit 3' >&- 2>&-",
        crate::support::bin().display()
    );
    let status = crate::support::plain(&mut std::process::Command::new("sh"))
        .arg("-c")
        .arg(script)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(3), "{status:?}");
}
