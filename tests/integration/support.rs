//! Helpers shared by the integration tests: building the command, running it
//! in the background, and waiting for what it prints, always with a deadline.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use crate::schema::{self, Doc};

/// The longest any single wait in a test may take before it fails: generous,
/// so that a loaded two-core machine does not make tests flaky.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The path of the `backoff` binary under test: the one cargo built with
/// the tests, or the one `BACKOFF_TEST_BIN` names (such as the static
/// release artefact of `dist/build-static.sh`).
pub fn bin() -> PathBuf {
    std::env::var_os("BACKOFF_TEST_BIN")
        .filter(|p| !p.is_empty())
        .map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_backoff")),
            PathBuf::from,
        )
}

/// `backoff` with the given arguments, as an `assert_cmd` command, started
/// `plain`.
pub fn backoff<I, S>(args: I) -> assert_cmd::Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    assert_cmd::Command::from_std(command(args))
}

/// The JSON events of `--log-format json`, one a line of `stderr`, each
/// checked against `docs/schema/events.json`.
pub fn events(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|l| json_of(Doc::Event, l.as_bytes()))
        .collect()
}

/// The JSON document backoff wrote, `bytes`, checked against the schema of
/// `doc` in `docs/schema/`.
pub fn json_of(doc: Doc, bytes: &[u8]) -> serde_json::Value {
    let v = serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("not JSON: {:?}: {e}", String::from_utf8_lossy(bytes)));
    schema::valid(doc, &v);
    v
}

/// The run report at `path` (`--report`), checked against
/// `docs/schema/report.json`.
pub fn report_at(path: &Path) -> serde_json::Value {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("no report at {}: {e}", path.display()));
    json_of(Doc::Report, &bytes)
}

/// A fresh temporary directory, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "backoff-test-{}-{name}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The lines of a file in this directory (empty if it does not exist).
    pub fn lines(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.join(name))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

/// A `backoff` process running in the background, whose output lines are
/// collected as they come.
pub struct Running {
    pub child: Child,
    lines: Receiver<(Stream, String)>,
    pub seen: Vec<(Stream, String)>,
}

fn pump<R: Read + Send + 'static>(r: R, stream: Stream, tx: mpsc::Sender<(Stream, String)>) {
    thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send((stream, line)).is_err() {
                break;
            }
        }
    });
}

impl Running {
    /// Starts `cmd` (a `backoff` command) with stdout and stderr captured.
    pub fn start(mut cmd: Command) -> Running {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn backoff");
        let (tx, rx) = mpsc::channel();
        pump(child.stdout.take().unwrap(), Stream::Out, tx.clone());
        pump(child.stderr.take().unwrap(), Stream::Err, tx);
        Running {
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// Starts `cmd` with stderr captured and stdout a pipe that nobody
    /// reads: it stays open, full, until the returned end is dropped.
    pub fn start_with_stalled_stdout(mut cmd: Command) -> (Running, std::io::PipeReader) {
        let (unread, stdout) = std::io::pipe().expect("pipe");
        cmd.stdout(stdout);
        (Running::start_with_stderr(cmd), unread)
    }

    /// Starts `cmd`, whose stdout is set, with stderr captured.
    pub fn start_with_stderr(mut cmd: Command) -> Running {
        cmd.stdin(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn backoff");
        // The test's copy of the stdout given goes with `cmd`.
        drop(cmd);
        let (tx, rx) = mpsc::channel();
        pump(child.stderr.take().unwrap(), Stream::Err, tx);
        Running {
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    /// Waits until a line containing `needle` appears, and returns it.
    pub fn wait_for(&mut self, needle: &str) -> String {
        self.wait_for_within(needle, PATIENCE)
    }

    /// Waits until a line containing `needle` appears, at most `within`,
    /// and returns it.
    pub fn wait_for_within(&mut self, needle: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        if let Some((_, l)) = self.seen.iter().find(|(_, l)| l.contains(needle)) {
            return l.clone();
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((s, line)) => {
                    self.seen.push((s, line.clone()));
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    panic!(
                        "no line containing {needle:?} within {within:?}; saw {:?}",
                        self.seen
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("output ended without {needle:?}; saw {:?}", self.seen)
                }
            }
        }
    }

    /// Waits until `count` lines containing `needle` have appeared, and
    /// returns them all.
    pub fn wait_for_lines(&mut self, needle: &str, count: usize) -> Vec<String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let found: Vec<String> = self
                .seen
                .iter()
                .filter(|(_, l)| l.contains(needle))
                .map(|(_, l)| l.clone())
                .collect();
            if found.len() >= count {
                return found;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if let Ok(line) = self.lines.recv_timeout(left) {
                self.seen.push(line);
            } else {
                let _ = self.child.kill();
                panic!(
                    "not {count} lines containing {needle:?}; saw {:?}",
                    self.seen
                )
            }
        }
    }

    /// Sends a signal to backoff.
    pub fn signal(&self, sig: i32) {
        send(self.pid(), sig);
    }

    /// Waits for backoff to exit, within `within`; returns its status and
    /// how long it took.
    pub fn wait_exit(&mut self, within: Duration) -> (ExitStatus, Duration) {
        let start = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                // Collect what is left of the output.
                while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    self.seen.push(l);
                }
                return (st, start.elapsed());
            }
            if start.elapsed() > within {
                let _ = self.child.kill();
                panic!(
                    "backoff did not exit within {within:?}; saw {:?}",
                    self.seen
                );
            }
            thread::sleep(Duration::from_millis(2));
        }
    }

    /// Sends `sig` to backoff and checks that backoff dies by it within a
    /// second.
    pub fn dies_by_within_a_second(&mut self, sig: i32) {
        self.signal(sig);
        let (status, took) = self.wait_exit(PATIENCE);
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(sig),
            "{:?}",
            self.seen
        );
        assert!(took < Duration::from_secs(1), "the signal took {took:?}");
    }

    /// The stderr lines seen so far.
    pub fn stderr(&self) -> Vec<&str> {
        self.seen
            .iter()
            .filter(|(s, _)| *s == Stream::Err)
            .map(|(_, l)| l.as_str())
            .collect()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `std::process::Command` for the backoff binary, started `plain`.
pub fn command<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut cmd = Command::new(bin());
    plain(&mut cmd);
    cmd.args(args);
    cmd
}

/// Like `command`, but started by `sh`, which runs the shell commands
/// `setup` (such as `ulimit -f 2048`) and then execs backoff.
pub fn command_after<I, S>(setup: &str, args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("{setup}\nexec \"$0\" \"$@\""))
        .arg(bin());
    plain(&mut cmd);
    cmd.args(args);
    cmd
}

/// Makes `cmd`, a process that runs backoff (directly, or through a shell
/// or a launcher), start as it would from a shell at a terminal, whatever
/// started the tests: with every signal's default action, an empty signal
/// mask, and no `BACKOFF_*` or CI runner's variables.
///
/// The tests may be started by `nohup`, in the background, or by a service
/// manager, which leave SIGINT, SIGQUIT, SIGHUP or SIGPIPE ignored in the
/// test process and so in what it starts; backoff rightly keeps a signal
/// it inherited as ignored ignored, and a test of what a signal does would
/// fail. The tests of inherited dispositions set them after this, in the
/// launcher they start. The variables are the test run's own
/// (`BACKOFF_TEST_BIN`, `BACKOFF_REGENERATE`) or the user's: tests that
/// want one set it after this.
pub fn plain(cmd: &mut Command) -> &mut Command {
    clean_environment(cmd);
    // SAFETY: the hook runs in the child between fork and exec, and calls
    // only sigemptyset, sigaction and sigprocmask, which are
    // async-signal-safe; it touches no memory but its own stack.
    unsafe {
        cmd.pre_exec(|| {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&raw mut default.sa_mask);
            // Every signal number there may be; those that cannot be
            // changed (SIGKILL, SIGSTOP, the C library's own) refuse,
            // which is fine.
            for sig in 1..65 {
                libc::sigaction(sig, &raw const default, std::ptr::null_mut());
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &raw const none, std::ptr::null_mut());
            Ok(())
        });
    }
    cmd
}

/// Makes `cmd` run with its files limited to `bytes` (`RLIMIT_FSIZE`) and
/// SIGXFSZ ignored, as a disk that fills up: a write that crosses the
/// limit is cut short, and the next one fails with EFBIG. No privilege is
/// needed. Set after `plain`, whose signal resets come first.
pub fn file_size_limit(cmd: &mut Command, bytes: u64) -> &mut Command {
    // SAFETY: the hook runs in the child between fork and exec, and calls
    // only setrlimit and signal, which are async-signal-safe; it touches
    // no memory but its own stack.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &raw const limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    cmd
}

/// A small tmpfs of the test's own, mounted in a temporary directory and
/// unmounted when dropped: a disk that can really be filled.
pub struct Tmpfs {
    dir: TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `kib` KiB; `None` where the test may not mount
    /// one (not root, or no `CAP_SYS_ADMIN` in a container), said on one line
    /// naming `test`.
    pub fn mount(test: &str, kib: u32) -> Option<Tmpfs> {
        let dir = TempDir::new("tmpfs");
        let target = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        let options = std::ffi::CString::new(format!("size={kib}k,mode=0755")).unwrap();
        // SAFETY: every pointer is a valid NUL-terminated string that
        // outlives the call.
        let rc = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                options.as_ptr().cast(),
            )
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            eprintln!("skipped {test}: cannot mount a tmpfs ({e}): it needs root or CAP_SYS_ADMIN");
            return None;
        }
        Some(Tmpfs { dir })
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Takes every page left with the file `name`.
    pub fn fill(&self, name: &str) {
        use std::io::Write;
        let mut file = std::fs::File::create(self.join(name)).unwrap();
        let page = [0_u8; 4096];
        loop {
            match file.write(&page) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let target =
            std::ffi::CString::new(self.dir.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: the path is a valid NUL-terminated string; MNT_DETACH
        // unmounts even while a file of it is still open.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

/// Removes `BACKOFF_*` variables and those of CI runners from what `cmd`
/// gets.
fn clean_environment(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        // A run that a traced CI job starts would export its spans.
        let k_str = k.to_string_lossy();
        if k_str.starts_with("BACKOFF_") || k_str.starts_with("OTEL_") {
            cmd.env_remove(k);
        }
    }
    // Under GitHub Actions or GitLab CI backoff's reports change form, and
    // it appends to the step's files; tests that want that set them
    // themselves.
    for name in [
        "GITHUB_ACTIONS",
        "GITHUB_OUTPUT",
        "GITHUB_STEP_SUMMARY",
        "GITLAB_CI",
        "TRACEPARENT",
        "TRACESTATE",
        "BAGGAGE",
    ] {
        cmd.env_remove(name);
    }
}

/// `PATH` with `dir` first, where a link named `backoff` to the binary
/// under test is made: the `backoff` a person types.
pub fn path_with_backoff(dir: &TempDir) -> String {
    std::os::unix::fs::symlink(bin(), dir.join("backoff")).expect("link backoff");
    format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Whether the tests run as root (some need to act as another user).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Makes a FIFO at `path`, which nothing writes to.
pub fn make_fifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
}

/// Checks that what began at `started` took less than `limit`.
pub fn took_less_than(started: Instant, limit: Duration) {
    let took = started.elapsed();
    assert!(took < limit, "took {took:?}, not less than {limit:?}");
}

/// Sends `sig` to `pid`.
pub fn send(pid: i32, sig: i32) {
    // SAFETY: kill only sends a signal to a process the test started.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// Whether a process is gone: no such pid, or a zombie no one reaped yet
/// (in a container the reaper may be slow or absent).
pub fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => {
            // SAFETY: signal 0 only checks for existence.
            unsafe { libc::kill(pid, 0) != 0 }
        }
        Ok(stat) => process_state(&stat) == Some('Z'),
    }
}

/// The state letter of a `/proc/PID/stat` line.
pub fn process_state(stat: &str) -> Option<char> {
    let after = stat.rsplit_once(')')?.1;
    after.trim_start().chars().next()
}

/// The state letter of a live process, from `/proc`.
pub fn state_of(pid: i32) -> Option<char> {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| process_state(&s))
}

/// Waits until `cond` holds, within `PATIENCE`; panics with `what` if not.
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        if Instant::now() >= deadline {
            let ps = std::process::Command::new("ps")
                .args(["-eo", "pid,ppid,pgid,sid,stat,cmd"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            panic!("timed out waiting for: {what}\n{ps}");
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until the process `pid` has exited and been reaped (its `/proc`
/// entry is gone), within `PATIENCE`.
pub fn reaped(pid: i32) {
    eventually(&format!("process {pid} reaped"), || {
        !Path::new(&format!("/proc/{pid}")).exists()
    });
}

/// Starts `cmd` (a `backoff` command whose first attempt prints `child PID`
/// and fails), and waits until that attempt has ended and been reaped, so
/// that backoff is past it, deciding whether to retry.
pub fn past_first_attempt(cmd: Command) -> Running {
    let mut run = Running::start(cmd);
    let line = run.wait_for("child ");
    let pid = line
        .trim()
        .strip_prefix("child ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not a pid line: {line:?}"));
    reaped(pid);
    run
}

/// A shell line that records backoff's peak resident memory (`VmHWM`, in
/// KiB) into `file`: the command's parent is backoff. (A child's
/// `ru_maxrss` would count its parent's memory: a process started with
/// vfork inherits the high-water mark of the test process's memory.)
pub fn record_peak_rss(file: &Path) -> String {
    format!(
        "grep VmHWM /proc/$PPID/status | tr -dc 0-9 > '{}'",
        file.display()
    )
}

/// The output of `child` once it has exited, waited for at most
/// `PATIENCE`: a child still running then is killed and the test fails.
pub fn output_within(child: Child) -> std::process::Output {
    output_for(child, PATIENCE)
}

/// The output of `child` once it has exited, waited for at most `limit`.
pub fn output_for(child: Child, limit: Duration) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    if let Ok(out) = rx.recv_timeout(limit) {
        return out.expect("wait for the child");
    }
    // SAFETY: kill only sends a signal to a child the test started, not yet
    // reaped (the thread that would reap it is still waiting).
    unsafe { libc::kill(i32::try_from(pid).unwrap(), libc::SIGKILL) };
    panic!("pid {pid} still running after {limit:?}");
}

/// The output of a checking tool run by `command` (mandoc, shellcheck),
/// waited for at most `PATIENCE`; `None` when it is not installed, said on
/// one line naming `test` and the package to install.
pub fn checked_by(
    test: &str,
    package: &str,
    command: &mut Command,
) -> Option<std::process::Output> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    match child {
        Ok(child) => Some(output_within(child)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let program = command.get_program().to_string_lossy();
            eprintln!("skipped {test}: {program} is not installed (apt-get install {package})");
            None
        }
        Err(e) => panic!("{}: {e}", command.get_program().to_string_lossy()),
    }
}

/// Checks that the bash scripts at `scripts` pass shellcheck; skipped,
/// said on one line naming `test`, where it is not installed.
pub fn pass_shellcheck(test: &str, scripts: &[PathBuf]) {
    let Some(out) = checked_by(
        test,
        "shellcheck",
        Command::new("shellcheck")
            .args(["--shell=bash", "--format=gcc"])
            .args(scripts),
    ) else {
        return;
    };
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes in `dir` a certificate authority of the test's own (`ca.pem`,
/// `ca.key`) and a server certificate for 127.0.0.1 signed by it
/// (`cert.pem`, `key.pem`), with openssl.
pub fn make_certificates(dir: &Path) {
    let made = std::process::Command::new("sh")
        .arg("-c")
        .arg(
            "set -e; cd \"$1\"; \
             openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=backoff-test-ca \
               -keyout ca.key -out ca.pem; \
             openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout key.pem -out req.csr; \
             printf 'subjectAltName=IP:127.0.0.1\\n' > ext; \
             openssl x509 -req -in req.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
               -days 2 -extfile ext -out cert.pem",
        )
        .arg("sh")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl is needed for the TLS tests (.ci/run installs it)");
    assert!(
        made.success(),
        "openssl could not make the test certificates"
    );
}

/// The end of a test's Python HTTP server script, whose handler class is
/// `H`: it serves on a free port of 127.0.0.1 (HTTPS with `cert.pem` and
/// `key.pem` of its directory when `tls` is set), and writes the port to
/// the file `port_file` names once it listens.
pub const PY_SERVE: &str = r#"
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
if tls:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain("cert.pem", "key.pem")
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
with open(port_file + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.rename(port_file + ".tmp", port_file)
s.serve_forever()
"#;

/// A test's Python HTTP server: `script` (which reads `port_file, log,
/// mode, tls` from its arguments and ends with `PY_SERVE`) run in a
/// directory of its own, where its `log` is; stopped when dropped.
pub struct PyServer {
    child: Child,
    pub dir: TempDir,
    pub port: u16,
    pub scheme: &'static str,
}

impl PyServer {
    /// Starts `script` in `mode`, with HTTPS when `tls` (a certificate
    /// authority made for it, `ca.pem` in its directory), with
    /// `PYTHONPATH` set to `python_path` when given.
    pub fn start(script: &str, mode: &str, tls: bool, python_path: Option<&Path>) -> PyServer {
        let dir = TempDir::new("py-server");
        if tls {
            make_certificates(dir.path());
        }
        let mut cmd = Command::new("python3");
        cmd.args(["-c", script])
            .arg(dir.join("port"))
            .arg(dir.join("log"))
            .arg(mode)
            .arg(if tls { "tls" } else { "plain" })
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(p) = python_path {
            cmd.env("PYTHONPATH", p);
        }
        let child = cmd.spawn().expect("python3 runs the test's server");
        let port_file = dir.join("port");
        eventually("the test's server listens", || port_file.exists());
        let port = std::fs::read_to_string(&port_file)
            .unwrap()
            .parse()
            .unwrap();
        PyServer {
            child,
            dir,
            port,
            scheme: if tls { "https" } else { "http" },
        }
    }

    /// Its URL, with no path.
    pub fn origin(&self) -> String {
        format!("{}://127.0.0.1:{}", self.scheme, self.port)
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
