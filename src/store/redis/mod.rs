//! Retry budgets, circuit breakers and adaptive throttles kept in Redis (or
//! Valkey), shared by a fleet of hosts: the same token bucket, breaker and
//! throttle rules as the file store, each decision one Lua script that the
//! server runs atomically on one key, never a read-modify-write from the
//! client. The breaker's and the throttle's times are the server's clock,
//! so the hosts' clocks need not agree. The password of the store's URL
//! never shows in a message.
//!
//! The stores of one run that name the same URL make their calls on one
//! connection, made at the first call. A script is called by its SHA-1
//! (EVALSHA); the server is sent its text (SCRIPT LOAD) only when it does
//! not know it yet, once per script while the server keeps its scripts.
//!
//! The calls to the store are made by one thread per server, started at the
//! first call and kept for the next ones (a thread started for each call
//! cost more than the call itself on a busy machine), and backoff waits for
//! each answer, for a terminating signal and for the timeout in one wait: a
//! store that never answers (a frozen server, a slow name lookup) costs at
//! most the timeout, and a signal ends the wait at once. A call abandoned
//! that way ends by itself (every read and write of its connection ends by
//! the same deadline, however slowly a server sends), and its thread and its
//! connection are never used again. The connection is backoff's own (`wire`): it reads at
//! most 64 KiB of a reply, and a message quotes at most 256 bytes of what
//! a server says.
//!
//! A decision that reaches the server after backoff stopped waiting for it
//! (a server frozen, then thawed, reads what was sent meanwhile) must change
//! nothing: each call carries its expiry on the server's clock, and every
//! script refuses a call past it. A connection reads the server's clock once
//! (and again after a while), so the expiry is the local deadline moved onto
//! the server's clock, a little early so that an answer still has time to
//! come back.
//!
//! In a Redis Cluster, a call follows the redirections of a slot being moved
//! within its time: ASK (the key has gone to the node that imports the slot:
//! ASKING there, then the script) and MOVED (the slot is served elsewhere:
//! the script there, and a fresh slot map for the next call). Neither
//! redirection ran the script, so following them never applies a decision
//! twice; nothing else is tried again.
//!
//! This module holds the connection every kind of state shares (`Server`,
//! its calls and their thread, a cluster's redirections) and the shape of a
//! decision (`Lua`); each kind's script and the client of its key are in a
//! file of its own: `budget`, `breaker`, `throttle`, and `lock` (a lease).
//! The connection's wire is backoff's own (`wire`, framed by `resp`).

mod breaker;
mod budget;
pub(super) mod lock;
pub(super) mod once;
mod resp;
pub(super) mod slots;
pub(super) mod streak;
mod throttle;
mod wire;

pub use breaker::{REDIS_BREAKER_PREFIX, RedisBreaker};
pub use budget::{REDIS_PREFIX, RedisBudget};
pub use throttle::{REDIS_THROTTLE_PREFIX, RedisThrottle};

use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use crate::duration::human;
use crate::report::cut_quote;
use crate::run::{Wait, Waited};
use crate::store::redis::wire::Wire;
use crate::store::secret::{redact, scrub};
use crate::store::{StoreError, deadline_after};

/// The most of what a server says (an error, an unexpected reply) that a
/// message quotes, in bytes as the line shows them.
const QUOTED: usize = 256;

/// An idle budget key expires after this long, so that abandoned keys do
/// not pile up; every update starts the time again.
pub const REDIS_IDLE_TTL: Duration = Duration::from_hours(7 * 24);

/// The first lines of every decision's script: its last argument is the
/// call's expiry, on the server's clock in Unix milliseconds, and a call
/// that reaches the server after it changes nothing.
const EXPIRY: &str = r"
local clock = redis.call('TIME')
if tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000) > tonumber(ARGV[#ARGV]) then
  return redis.error_reply('EXPIRED the decision reached the store after its deadline')
end
";

/// The server's clock, read on the node of the key (KEYS[1]): {seconds,
/// microseconds}.
const CLOCK: &str = "local t = redis.call('TIME') return {t[1], t[2]}";

/// How long what a connection read of the server's clock is used, before it
/// is read again: clocks kept by NTP drift apart by a few milliseconds at
/// most in that time.
const CLOCK_AGE: Duration = Duration::from_mins(1);

/// How many redirections of a cluster a call follows (a slot moved while
/// it is moved again), within its time.
const REDIRECTIONS: usize = 5;

/// What connects to the store: one server, or a Redis Cluster.
#[derive(Clone)]
enum Backend {
    /// A server (`redis://`, `rediss://`, `redis+unix://`, `unix://`).
    Single(Box<redis::ConnectionInfo>),
    /// A cluster (`redis+cluster://`, `rediss+cluster://`), by the URLs of
    /// its nodes: each call goes to the node that serves its key's slot.
    Cluster(Vec<String>),
}

/// A connection to the store, over `Wire`s.
enum Link {
    Single(Wire),
    Cluster(Box<redis::cluster::ClusterConnection<Wire>>),
}

impl Link {
    /// Every read and write of the connection, until this is called again,
    /// ends within `limit` from now.
    fn set_timeouts(&mut self, limit: Duration) -> redis::RedisResult<()> {
        use redis::cluster::Connect as _;
        match self {
            Link::Single(c) => c
                .set_read_timeout(Some(limit))
                .and_then(|()| c.set_write_timeout(Some(limit))),
            Link::Cluster(c) => c
                .set_read_timeout(Some(limit))
                .and_then(|()| c.set_write_timeout(Some(limit))),
        }
    }

    fn as_connection(&mut self) -> &mut dyn redis::ConnectionLike {
        match self {
            Link::Single(c) => c,
            Link::Cluster(c) => c.as_mut(),
        }
    }

    /// Runs `eval` on the cluster's node at `node` (`host:port`), after
    /// ASKING there when `asking`.
    fn redirected(
        &mut self,
        node: &str,
        asking: bool,
        eval: &redis::Cmd,
    ) -> redis::RedisResult<Vec<String>> {
        let not_a_cluster = || {
            redis::RedisError::from((
                redis::ErrorKind::Client,
                "a redirection from a server that is not a cluster",
            ))
        };
        let Link::Cluster(c) = self else {
            return Err(not_a_cluster());
        };
        let (host, port) = node
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.to_owned(), p.parse().ok()?)))
            .ok_or_else(not_a_cluster)?;
        let route = || {
            redis::cluster_routing::RoutingInfo::SingleNode(
                redis::cluster_routing::SingleNodeRoutingInfo::ByAddress {
                    host: host.clone(),
                    port,
                },
            )
        };
        if asking {
            c.route_command(&redis::cmd("ASKING"), route())?;
        }
        redis::from_redis_value(c.route_command(eval, route())?).map_err(redis::RedisError::from)
    }
}

/// A script of the store's, and its text, which a redirected call sends
/// whole (the node it goes to may not have it yet).
#[derive(Clone)]
pub(super) struct Lua {
    script: redis::Script,
    code: Arc<str>,
}

impl Lua {
    fn new(code: String) -> Lua {
        Lua {
            script: redis::Script::new(&code),
            code: code.into(),
        }
    }

    /// A decision's script: `body`, refusing a call past its expiry.
    pub(super) fn decision(body: &str) -> Lua {
        Lua::new(format!("{EXPIRY}{body}"))
    }
}

/// What a connection read of the server's clock: its time, in Unix
/// milliseconds, and a local instant by which it had been read. The
/// server's time at a later instant `t` is at least `server_ms + (t -
/// read_by)`.
#[derive(Clone, Copy)]
struct Clock {
    server_ms: u64,
    read_by: Instant,
}

impl Clock {
    /// The clock as `CLOCK` answered it by `read_by`.
    fn read(reply: &[String], read_by: Instant) -> Option<Clock> {
        let [seconds, micros] = reply else {
            return None;
        };
        let seconds: u64 = seconds.parse().ok()?;
        let micros: u64 = micros.parse().ok()?;
        Some(Clock {
            server_ms: seconds.checked_mul(1000)?.checked_add(micros / 1000)?,
            read_by,
        })
    }

    /// A time on the server's clock that comes at the local instant
    /// `cutoff` or before it: a script that runs by it runs by `cutoff`
    /// (the clock may have been read late, never early).
    fn at(self, cutoff: Instant) -> u64 {
        let since = cutoff.saturating_duration_since(self.read_by).as_millis();
        self.server_ms
            .saturating_add(u64::try_from(since).unwrap_or(u64::MAX))
    }
}

/// The latest instant at which a call ending at `deadline`, of a store
/// whose timeout is `timeout`, may still be applied: a tenth of the timeout
/// before the deadline, the time its answer has to come back.
fn cutoff(deadline: Instant, timeout: Duration) -> Instant {
    deadline.checked_sub(timeout / 10).unwrap_or(deadline)
}

/// A cluster's client for its `nodes`, each connection made within
/// `limit`, and none tried again (the fail mode decides).
fn cluster_client(
    nodes: &[String],
    limit: Duration,
) -> redis::RedisResult<redis::cluster::ClusterClient> {
    redis::cluster::ClusterClient::builder(nodes.iter().map(String::as_str))
        .retries(0)
        .connection_timeout(limit)
        .build()
}

impl Backend {
    /// Connects within `limit`.
    fn connect(&self, limit: Duration) -> redis::RedisResult<Link> {
        match self {
            Backend::Single(info) => Wire::connect(info, Some(limit)).map(Link::Single),
            // The cluster's connection over `Wire`s (`get_generic_connection`
            // is how the redis crate makes one over a connection of the
            // caller's).
            Backend::Cluster(nodes) => cluster_client(nodes, limit)?
                .get_generic_connection::<Wire>()
                .map(|c| Link::Cluster(Box::new(c))),
        }
    }
}

/// One call to the store, made on a thread of its own: a script on one
/// key, with its arguments.
struct Call {
    backend: Backend,
    connection: Option<Connection>,
    script: Lua,
    clock: Lua,
    key: String,
    args: Vec<String>,
    deadline: Instant,
    /// The last moment the script may be applied (`cutoff`).
    cutoff: Instant,
    /// A cluster redirected the call with MOVED: its slot map is stale.
    moved: bool,
    /// What a call that ran out of time says (`timed out after 2.00s`),
    /// the same whether the thread or backoff gave up first.
    timed_out: String,
}

/// A connection to the store, and what it read of the server's clock.
struct Connection {
    link: Link,
    clock: Option<Clock>,
}

/// What a call answered (the script's reply, every item as a string), or
/// why not and whether the script may have been applied all the same (it
/// was sent, and no answer came back), and the connection to use next
/// time, if it is still sound.
type Answer = (Result<Vec<String>, (String, bool)>, Option<Connection>);

impl Call {
    /// Connects if need be and runs the script, every step bounded by the
    /// time left before the deadline.
    fn run(mut self) -> Answer {
        let answer = self.invoke();
        let connection = if answer.is_ok() && !self.moved {
            self.connection
        } else {
            // Start afresh next time: the connection may be broken, or its
            // slot map stale.
            None
        };
        (answer, connection)
    }

    /// Connects, reads the clock and runs the script. Nothing before the
    /// script is ever applied; the script itself may have been when no
    /// answer came back (a reply lost, a connection dropped, the time up),
    /// unlike when the server answered with an error: the error says which.
    fn invoke(&mut self) -> Result<Vec<String>, (String, bool)> {
        let not_sent = |why: String| (why, false);
        let timed_out = self.timed_out.clone();
        let why = |e: &redis::RedisError| match (e.code(), e.detail()) {
            _ if e.is_timeout() => timed_out.clone(),
            // The server's own words, as it said them.
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            _ => e.to_string(),
        };
        let deadline = self.deadline;
        let left = || {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                Err(not_sent(self.timed_out.clone()))
            } else {
                Ok(left)
            }
        };
        let mut connection = match self.connection.take() {
            Some(c) => c,
            None => Connection {
                link: self
                    .backend
                    .connect(left()?)
                    .map_err(|e| not_sent(why(&e)))?,
                clock: None,
            },
        };
        connection
            .link
            .set_timeouts(left()?)
            .map_err(|e| not_sent(why(&e)))?;
        let clock = match connection.clock {
            Some(c) if c.read_by.elapsed() < CLOCK_AGE => c,
            _ => {
                let clock = self.clock.clone();
                let reply = self
                    .evaluate(&mut connection.link, &clock, &[])
                    .map_err(|e| not_sent(why(&e)))?;
                Clock::read(&reply, Instant::now())
                    .ok_or_else(|| not_sent("unexpected reply to TIME".to_owned()))?
            }
        };
        connection.clock = Some(clock);
        if self.cutoff <= Instant::now() {
            return Err(not_sent(self.timed_out.clone()));
        }
        let mut args = self.args.clone();
        args.push(clock.at(self.cutoff).to_string());
        let script = self.script.clone();
        // An error the server answered (a script's refusal) applied
        // nothing; any other may have come after the script ran.
        let answer = self
            .evaluate(&mut connection.link, &script, &args)
            .map_err(|e| (why(&e), e.code().is_none()))?;
        self.connection = Some(connection);
        Ok(answer)
    }

    /// Runs `lua` on the call's key with `args`, following a cluster's
    /// redirections (ASK, MOVED), which never ran it; any other error is
    /// the answer, since a call that failed otherwise may have been applied.
    fn evaluate(
        &mut self,
        link: &mut Link,
        lua: &Lua,
        args: &[String],
    ) -> redis::RedisResult<Vec<String>> {
        let mut invocation = lua.script.key(&self.key);
        for arg in args {
            invocation.arg(arg);
        }
        let mut answer = invocation.invoke(link.as_connection());
        for _ in 0..REDIRECTIONS {
            let asking = match answer.as_ref().map_err(redis::RedisError::kind) {
                Err(redis::ErrorKind::Server(redis::ServerErrorKind::Ask)) => true,
                Err(redis::ErrorKind::Server(redis::ServerErrorKind::Moved)) => false,
                _ => return answer,
            };
            let Some((node, _slot)) = answer
                .as_ref()
                .err()
                .and_then(redis::RedisError::redirect_node)
            else {
                return answer;
            };
            let node = node.to_owned();
            self.moved |= !asking;
            let eval = redis::cmd("EVAL")
                .arg(&*lua.code)
                .arg(1)
                .arg(&self.key)
                .arg(args)
                .to_owned();
            answer = link.redirected(&node, asking, &eval);
        }
        answer
    }
}

/// A connection to the store, and the calls made on it: what the budget,
/// breaker and throttle of a run that name the same URL share (`shared`).
pub(super) struct Server {
    url: String,
    backend: Backend,
    connection: RefCell<Option<Connection>>,
    clock: Lua,
    /// The thread that makes the calls, started at the first and kept for
    /// the next; one that a call was given up on is let go with it.
    worker: RefCell<Option<Worker>>,
}

/// A thread that makes the calls to the store, one at a time: a call goes
/// in through `calls`, its answer comes back through `answers`, and a byte
/// in `ready` wakes the wait for it. Starting a thread for each call cost
/// more than the call itself on a busy machine.
struct Worker {
    calls: mpsc::Sender<Call>,
    answers: mpsc::Receiver<Answer>,
    ready: std::io::PipeReader,
}

impl Worker {
    /// Starts the thread.
    fn start() -> std::io::Result<Worker> {
        let (calls, incoming) = mpsc::channel::<Call>();
        let (answer, answers) = mpsc::channel::<Answer>();
        let (ready, mut done) = std::io::pipe()?;
        crate::sys::fd::set_nonblocking(&ready)?;
        std::thread::Builder::new()
            .name("store calls".into())
            .spawn(move || {
                // Ends when the server lets it go (its sender dropped),
                // after the call under way, if any.
                for call in incoming {
                    if answer.send(call.run()).is_err() {
                        return;
                    }
                    if std::io::Write::write_all(&mut done, b"1").is_err() {
                        return;
                    }
                }
            })?;
        Ok(Worker {
            calls,
            answers,
            ready,
        })
    }
}

thread_local! {
    /// The servers in use, by URL: every store of a run that names the same
    /// URL makes its calls on one connection. A server is forgotten when
    /// the last store using it goes.
    static SERVERS: RefCell<Vec<(String, Weak<Server>)>> = const { RefCell::new(Vec::new()) };
}

/// The nodes of a `redis+cluster://[user:password@]host:port,host:port`
/// URL, each as a `redis://` (or `rediss://`) URL with the user info.
fn cluster_nodes(url: &str) -> Result<Vec<String>, String> {
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("redis+cluster://") {
        ("redis", rest)
    } else if let Some(rest) = url.strip_prefix("rediss+cluster://") {
        ("rediss", rest)
    } else {
        return Err("not a cluster URL".into());
    };
    // One user info, before the first host: the same for every node.
    if rest.rsplit_once('@').is_some_and(|(u, _)| u.contains(',')) {
        return Err("give the user and password once, before the first host (redis+cluster://user:password@host:port,host:port; a ',' in a password is written %2C)".into());
    }
    let (userinfo, hosts) = match rest.rsplit_once('@') {
        Some((u, h)) => (format!("{u}@"), h),
        None => (String::new(), rest),
    };
    let (hosts, path) = hosts.split_once('/').unwrap_or((hosts, ""));
    if !matches!(path, "" | "0") {
        return Err("a Redis Cluster has only database 0".into());
    }
    let nodes: Vec<String> = hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|h| format!("{scheme}://{userinfo}{h}"))
        .collect();
    if nodes.is_empty() {
        return Err("expected host:port[,host:port...] after the scheme".into());
    }
    Ok(nodes)
}

impl Server {
    /// The server at `url`, the one already in use if there is one (see
    /// `SERVERS`). Checks the URL only: nothing connects until a call is
    /// made.
    pub(super) fn shared(url: &str) -> Result<Rc<Server>, String> {
        SERVERS.with_borrow_mut(|servers| {
            servers.retain(|(_, s)| s.strong_count() > 0);
            let known = servers
                .iter()
                .find(|(u, _)| u == url)
                .and_then(|(_, s)| s.upgrade());
            if let Some(server) = known {
                return Ok(server);
            }
            let server = Rc::new(Server::open(url)?);
            servers.push((url.to_owned(), Rc::downgrade(&server)));
            Ok(server)
        })
    }

    /// The server at `url`, of its own. Checks the URL only.
    pub(super) fn open(url: &str) -> Result<Server, String> {
        let cluster = url.starts_with("redis+cluster://") || url.starts_with("rediss+cluster://");
        let single = ["redis://", "rediss://", "redis+unix://", "unix://"]
            .iter()
            .any(|scheme| url.starts_with(scheme));
        if !cluster && !single {
            return Err(
                "expected a redis://[user:password@]host[:port][/db] URL (rediss:// for TLS, redis+unix:///path/to/socket[?db=N] for a Unix socket, redis+cluster://host:port,host:port for a cluster)"
                    .into(),
            );
        }
        let opened = if cluster {
            // The nodes are checked now; a client is made for each
            // connection, with the time its call has left.
            cluster_nodes(url).and_then(|nodes| {
                cluster_client(&nodes, Duration::from_secs(1))
                    .map(|_| Backend::Cluster(nodes))
                    .map_err(|e| e.to_string())
            })
        } else {
            single_url_checked(url).and_then(|()| {
                redis::Client::open(url)
                    .map(|client| Backend::Single(Box::new(client.get_connection_info().clone())))
                    .map_err(|e| plain_error(&e))
            })
        };
        let backend = opened.map_err(|e| {
            let why = scrub(&e, url);
            let userinfo = url.split_once("://").and_then(|(_, r)| r.rsplit_once('@'));
            if userinfo.is_some_and(|(u, _)| u.contains('/')) {
                format!("{why} (a '/' in a password is written %2F)")
            } else {
                why
            }
        })?;
        Ok(Server {
            url: url.to_owned(),
            backend,
            connection: RefCell::new(None),
            clock: Lua::new(CLOCK.to_owned()),
            worker: RefCell::new(None),
        })
    }

    /// Runs `script` on `key` with `args` on the server's thread and
    /// waits, through `wait`, for its answer, at most `timeout`. A call
    /// given up on takes its connection and its thread with it: the next
    /// call makes new ones.
    pub(super) fn call(
        &self,
        script: &Lua,
        key: &str,
        args: Vec<String>,
        timeout: Duration,
        wait: &mut dyn Wait,
    ) -> Result<Vec<String>, StoreError> {
        self.call_telling(script, key, args, timeout, wait)
            .map_err(|(e, _)| e)
    }

    /// `call`, and for a call that failed whether its script may have been
    /// applied all the same: it was sent and no answer came back in time,
    /// or a signal ended the wait for it.
    pub(super) fn call_telling(
        &self,
        script: &Lua,
        key: &str,
        args: Vec<String>,
        timeout: Duration,
        wait: &mut dyn Wait,
    ) -> Result<Vec<String>, (StoreError, bool)> {
        // The secrets go first, so that no cut leaves a part of one.
        let failed =
            |e: String| StoreError::Failed(cut_quote(&scrub(&e, &self.url), QUOTED).into_owned());
        let deadline = deadline_after(timeout);
        let call = Call {
            backend: self.backend.clone(),
            connection: self.connection.take(),
            script: script.clone(),
            clock: self.clock.clone(),
            key: key.to_owned(),
            args,
            deadline,
            cutoff: cutoff(deadline, timeout),
            moved: false,
            timed_out: format!("timed out after {}", human(timeout)),
        };
        let call_timed_out = call.timed_out.clone();
        let worker = match self.worker.take() {
            Some(w) => w,
            None => Worker::start()
                .map_err(|e| (failed(format!("cannot start a thread: {e}")), false))?,
        };
        if worker.calls.send(call).is_err() {
            return Err((failed("the store call failed".into()), false));
        }
        let waited = wait.wait_ready(Some(&worker.ready), deadline);
        if let Waited::Signal(sig) = waited {
            return Err((StoreError::Interrupted(sig), true));
        }
        match worker.answers.try_recv() {
            Ok((answer, connection)) => {
                let mut byte = [0u8; 1];
                // The byte follows the answer: when it is not there yet
                // (the wait ended between the two), the thread is not kept,
                // so that no byte of this call wakes the next one.
                if std::io::Read::read(&mut &worker.ready, &mut byte).is_ok_and(|n| n == 1) {
                    self.worker.replace(Some(worker));
                }
                self.connection.replace(connection);
                answer.map_err(|(why, sent)| (failed(why), sent))
            }
            Err(_) if waited == Waited::Ready => {
                Err((failed("the store call failed".into()), true))
            }
            Err(_) => Err((failed(call_timed_out), true)),
        }
    }

    /// The server's URL, without the password.
    pub(super) fn url(&self) -> String {
        redact(&self.url)
    }
}

/// Parameters a Unix socket's URL takes (`redis+unix:///path?db=N`).
const UNIX_PARAMETERS: [&str; 4] = ["db", "user", "pass", "protocol"];

/// What a single server's URL asks that would not be done as written,
/// in a line that quotes nothing of it (it may hold a password): a
/// database that is not a number from 0, a parameter the client does not
/// read (`?database=2` would use database 0), a database in the query of
/// a TCP URL (`redis://host/?db=2` would too).
fn single_url_checked(url: &str) -> Result<(), String> {
    const DB: &str = "the database is a number from 0 (a Redis has 16, 0 to 15, unless its `databases` says more)";
    let unix = url.starts_with("redis+unix://") || url.starts_with("unix://");
    let (_, rest) = url.split_once("://").unwrap_or_default();
    let rest = rest.split('#').next().unwrap_or_default();
    let (before, query) = rest.split_once('?').unwrap_or((rest, ""));
    if unix && !before.starts_with('/') {
        return Err(
            "a Unix socket's URL names the socket by its absolute path (redis+unix:///path/to/socket)"
                .into(),
        );
    }
    let digits = |v: &str| !v.is_empty() && v.len() <= 9 && v.bytes().all(|b| b.is_ascii_digit());
    for (key, value) in query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
    {
        if unix && !UNIX_PARAMETERS.contains(&key) {
            return Err(format!(
                "a Unix socket's URL takes db, user, pass and protocol, not '{}' (redis+unix:///path/to/socket?db=N&user=NAME&pass=PASSWORD)",
                key.chars().take(32).collect::<String>()
            ));
        }
        if !unix && key == "db" {
            return Err(
                "a redis:// URL names its database in its path, not in ?db= (redis://host:port/N)"
                    .into(),
            );
        }
        if unix && key == "db" && !digits(value) {
            return Err(format!("{DB}, in ?db="));
        }
    }
    if !unix {
        // The path after the host, if any, is the database.
        let path = before.split_once('/').map_or("", |(_, path)| path);
        let path = path.trim_matches('/');
        if !path.is_empty() && !digits(path) {
            return Err(format!("{DB}, in the path (redis://host:port/N)"));
        }
    }
    Ok(())
}

/// A client's error as a sentence: without the name of its kind, which
/// the client adds to what it says of a URL (`Missing path -
/// InvalidClientConfig`).
fn plain_error(e: &redis::RedisError) -> String {
    let text = e.to_string();
    let kind = format!(" - {:?}", e.kind());
    match text.split_once(&kind) {
        Some((said, "")) => said.to_owned(),
        Some((said, detail)) => format!("{said}{}", detail.trim_start_matches(':')),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_servers_url_asks_for_nothing_it_would_not_get() {
        for ok in [
            "redis://127.0.0.1",
            "redis://127.0.0.1:6379/",
            "redis://u:p%2Fw@host:6379/15",
            "rediss://host/0?protocol=resp3",
            "redis+unix:///run/redis.sock",
            "unix:///run/redis.sock?db=3&user=me&pass=s3cret",
        ] {
            assert_eq!(single_url_checked(ok), Ok(()), "{ok}");
        }
        for (bad, says) in [
            ("redis://host/abc", "the database is a number from 0"),
            ("redis://host/-1", "in the path"),
            ("redis://host/?db=2", "names its database in its path"),
            ("redis+unix:///run/redis.sock?db=-1", ", in ?db="),
            ("redis+unix:///run/redis.sock?db=abc", ", in ?db="),
            (
                "redis+unix:///run/redis.sock?db=99999999999999999999",
                ", in ?db=",
            ),
            ("unix:///run/redis.sock?database=2", "not 'database'"),
            ("unix:///run/redis.sock?password=s3cret", "not 'password'"),
        ] {
            let e = single_url_checked(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
        for no_path in ["redis+unix://", "unix://host/run/redis.sock"] {
            let e = single_url_checked(no_path).unwrap_err();
            assert!(e.contains("by its absolute path"), "{e}");
        }
        assert_eq!(single_url_checked("rediss://host/2#insecure"), Ok(()));
        let e = redis::Client::open("rediss://host:70000").err().unwrap();
        assert!(!plain_error(&e).contains("InvalidClientConfig"), "{e}");
    }

    #[test]
    fn the_expiry_is_the_cutoff_on_the_servers_clock_never_later() {
        let earlier = Instant::now();
        let read_by = earlier + Duration::from_secs(1);
        let reply = ["1764600000".to_owned(), "250999".to_owned()];
        let clock = Clock::read(&reply, read_by).unwrap_or_else(|| panic!("a clock"));
        assert_eq!(clock.server_ms, 1_764_600_000_250);
        assert_eq!(clock.at(read_by), 1_764_600_000_250);
        let later = read_by + Duration::from_micros(1999);
        assert_eq!(clock.at(later), 1_764_600_000_251, "rounded down");
        assert_eq!(clock.at(earlier), clock.server_ms);
        for bad in [&["x", "1"][..], &["1"], &["1", "2", "3"], &["-1", "0"]] {
            let bad: Vec<String> = bad.iter().map(|s| (*s).to_owned()).collect();
            assert!(Clock::read(&bad, read_by).is_none(), "{bad:?}");
        }
        let huge = [u64::MAX.to_string(), "0".to_owned()];
        assert!(Clock::read(&huge, read_by).is_none());
        let max = Clock {
            server_ms: u64::MAX,
            read_by,
        };
        assert_eq!(max.at(later), u64::MAX);
    }

    #[test]
    fn a_call_is_applied_at_the_latest_a_tenth_of_the_timeout_before_its_deadline() {
        let deadline = Instant::now() + Duration::from_secs(5);
        assert_eq!(
            cutoff(deadline, Duration::from_millis(250)) + Duration::from_millis(25),
            deadline
        );
    }
}
