//! backoff's own connection to one Redis node: its socket (TCP, TLS by
//! rustls with the system's certificate authorities, or a Unix socket on
//! the same host), its handshake (AUTH or HELLO, then SELECT),
//! and each reply read within bounds. The redis crate builds the commands,
//! parses the replies, runs the scripts and follows a cluster's slots over
//! this connection; what it would not bound is bounded here:
//!
//! - a reply is read to at most `REPLY_LIMIT` bytes (a cluster's slot map
//!   to `SLOT_MAP_LIMIT`), framed as it comes (`resp`) and parsed once,
//!   whole; a reply that goes on past its limit, or declares that it will,
//!   is refused ("reply too long") and the connection closed;
//! - a timeout set on the connection is a deadline: every read and write
//!   until it is set again ends by then, however slowly a server trickles
//!   its bytes, so that a call given up on ends by itself soon after.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::{
    Cmd, ConnectionAddr, ConnectionInfo, ConnectionLike, IntoConnectionInfo, ProtocolVersion,
    RedisConnectionInfo, RedisError, RedisResult, Value,
};

use crate::store::deadline_after;
use crate::store::redis::resp::{Framer, Scan};

/// The longest reply read, in bytes: a script's reply is at most a few
/// KiB (the throttle's window, 49 numbers), and what a server says past
/// this is no reply backoff asked for.
pub const REPLY_LIMIT: usize = 64 * 1024;

/// The longest slot map a cluster node may send (CLUSTER SLOTS): every one
/// of the 16384 slots a range of its own, each naming a primary and two
/// replicas with their host names, is about 7 MB.
const SLOT_MAP_LIMIT: usize = 8 * 1024 * 1024;

/// How much is read at once.
const CHUNK: usize = 16 * 1024;

/// The socket under a connection.
enum Socket {
    Tcp(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
}

impl Socket {
    /// Sets how long a read and a write may wait.
    fn set_timeouts(&self, read: Option<Duration>, write: Option<Duration>) -> io::Result<()> {
        let tcp = match self {
            Socket::Tcp(s) => s,
            Socket::Tls(s) => s.get_ref(),
            #[cfg(unix)]
            Socket::Unix(s) => {
                s.set_read_timeout(read)?;
                return s.set_write_timeout(write);
            }
        };
        tcp.set_read_timeout(read)?;
        tcp.set_write_timeout(write)
    }
}

/// A connection to one node.
pub struct Wire {
    socket: Socket,
    /// What was read and is not yet part of a reply taken.
    read: Vec<u8>,
    db: i64,
    /// When reads must be done by, if ever.
    read_by: Cell<Option<Instant>>,
    /// When writes must be done by, if ever.
    write_by: Cell<Option<Instant>>,
    /// Whether the connection may be used still: a reply refused or cut
    /// leaves it in the middle of one.
    open: bool,
}

/// The time left before `deadline`, `None` for none; an error past it.
fn left(deadline: Option<Instant>) -> io::Result<Option<Duration>> {
    match deadline {
        None => Ok(None),
        Some(d) => match d.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => Ok(Some(left)),
            _ => Err(io::ErrorKind::TimedOut.into()),
        },
    }
}

/// The deadline of a timeout set on a connection (`None`: no timeout).
fn deadline_of(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(deadline_after)
}

/// The error of a connection that cannot be made as asked.
fn config_error(what: &'static str) -> RedisError {
    RedisError::from(io::Error::new(io::ErrorKind::InvalidInput, what))
}

/// A TCP connection to `host:port`, to one of its addresses in turn, by
/// `deadline`.
fn connect_tcp(host: &str, port: u16, deadline: Option<Instant>) -> RedisResult<TcpStream> {
    let mut last = None;
    for addr in (host, port).to_socket_addrs()? {
        let made = match left(deadline)? {
            Some(limit) => TcpStream::connect_timeout(&addr, limit),
            None => TcpStream::connect(addr),
        };
        match made {
            Ok(stream) => {
                // A command is one write, its reply awaited: nothing to
                // gain from delaying a segment.
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.map_or_else(
        || config_error("could not resolve to any addresses"),
        RedisError::from,
    ))
}

/// What TLS trusts: the system's certificate authorities (`SSL_CERT_FILE`
/// and `SSL_CERT_DIR` override them), as for HTTPS (`http::roots`).
fn tls_config() -> RedisResult<rustls::ClientConfig> {
    let found =
        crate::http::roots::system().map_err(|why| RedisError::from(io::Error::other(why)))?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(found.iter().cloned());
    Ok(rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth())
}

impl Wire {
    /// Connects to the node `info` names, and makes the handshake, within
    /// `timeout`.
    ///
    /// # Errors
    ///
    /// When the node cannot be reached in time, refuses the handshake, or
    /// is one this connection cannot reach (TLS without checking the
    /// certificate).
    pub fn connect(info: &ConnectionInfo, timeout: Option<Duration>) -> RedisResult<Wire> {
        let deadline = deadline_of(timeout);
        let socket = match info.addr() {
            ConnectionAddr::Tcp(host, port) => Socket::Tcp(connect_tcp(host, *port, deadline)?),
            ConnectionAddr::TcpTls {
                host,
                port,
                insecure: false,
                tls_params: None,
            } => {
                let name = rustls::pki_types::ServerName::try_from(host.as_str())?.to_owned();
                let tls = rustls::ClientConnection::new(Arc::new(tls_config()?), name)
                    .map_err(|e| RedisError::from(io::Error::other(e)))?;
                let tcp = connect_tcp(host, *port, deadline)?;
                Socket::Tls(Box::new(rustls::StreamOwned::new(tls, tcp)))
            }
            ConnectionAddr::TcpTls { .. } => {
                return Err(config_error(
                    "TLS that does not check the server's certificate (#insecure) is not supported: give its certificate authority in SSL_CERT_FILE",
                ));
            }
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => {
                Socket::Unix(crate::sys::fd::connect_unix(path, left(deadline)?)?)
            }
            #[allow(unreachable_patterns)]
            _ => return Err(config_error("not an address backoff can reach")),
        };
        let mut wire = Wire {
            socket,
            read: Vec::new(),
            db: info.redis_settings().db(),
            read_by: Cell::new(deadline),
            write_by: Cell::new(deadline),
            open: true,
        };
        wire.handshake(info.redis_settings())?;
        wire.read_by.set(None);
        wire.write_by.set(None);
        Ok(wire)
    }

    /// Authenticates and selects the database, as the URL asks.
    fn handshake(&mut self, settings: &RedisConnectionInfo) -> RedisResult<()> {
        let password = settings.password();
        if settings.protocol() == ProtocolVersion::RESP3 {
            let mut hello = redis::cmd("HELLO");
            hello.arg(3);
            if let Some(password) = password {
                hello
                    .arg("AUTH")
                    .arg(settings.username().unwrap_or("default"))
                    .arg(password);
            }
            self.command(&hello)?;
        } else if let Some(password) = password {
            let auth = |user: Option<&str>| {
                let mut auth = redis::cmd("AUTH");
                auth.arg(user).arg(password);
                auth
            };
            match self.command(&auth(settings.username())) {
                // A server older than ACLs (Redis 5) knows no user name.
                Err(e)
                    if settings.username().is_some()
                        && e.detail()
                            .is_some_and(|d| d.contains("wrong number of arguments")) =>
                {
                    self.command(&auth(None))?;
                }
                other => {
                    other?;
                }
            }
        }
        if self.db != 0 {
            self.command(redis::cmd("SELECT").arg(self.db))?;
        }
        Ok(())
    }

    /// Runs `cmd`: its reply, a server's error as an error.
    fn command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        self.req_command(cmd)?.extract_error()
    }

    /// Sets the socket's timeouts to the time left before the deadlines,
    /// before a read or a write (a TLS connection may do both for either).
    fn arm(&self) -> io::Result<()> {
        self.socket
            .set_timeouts(left(self.read_by.get())?, left(self.write_by.get())?)
    }

    /// Sends a command, whole.
    fn send(&mut self, bytes: &[u8]) -> RedisResult<()> {
        let sent = self.arm().and_then(|()| match &mut self.socket {
            Socket::Tcp(s) => s.write_all(bytes),
            Socket::Tls(s) => s.write_all(bytes).and_then(|()| s.flush()),
            #[cfg(unix)]
            Socket::Unix(s) => s.write_all(bytes),
        });
        sent.map_err(|e| self.broken(e))
    }

    /// Reads more of a reply: at most `room` bytes.
    fn fill(&mut self, room: usize) -> io::Result<usize> {
        let mut chunk = [0; CHUNK];
        let chunk = &mut chunk[..room.min(CHUNK)];
        self.arm()?;
        let got = match &mut self.socket {
            Socket::Tcp(s) => s.read(chunk),
            Socket::Tls(s) => s.read(chunk),
            #[cfg(unix)]
            Socket::Unix(s) => s.read(chunk),
        }?;
        self.read.extend_from_slice(&chunk[..got]);
        Ok(got)
    }

    /// The error `e`, which leaves the connection unusable.
    fn broken(&mut self, e: io::Error) -> RedisError {
        self.open = false;
        RedisError::from(e)
    }

    /// Reads one reply of at most `limit` bytes.
    fn reply(&mut self, limit: usize) -> RedisResult<Value> {
        let mut framer = Framer::new(limit);
        loop {
            match framer.scan(&self.read) {
                Scan::Complete(end) => {
                    let value = redis::parse_redis_value(&self.read[..end]);
                    self.read.drain(..end);
                    if value.is_err() {
                        self.open = false;
                    }
                    return value;
                }
                Scan::Partial => {}
                Scan::TooLong => {
                    let kib = limit / 1024;
                    let why = format!("reply too long: more than {kib} KiB");
                    return Err(self.broken(io::Error::new(io::ErrorKind::InvalidData, why)));
                }
                Scan::Invalid(why) => {
                    let why = format!("not a Redis reply: {why}");
                    return Err(self.broken(io::Error::new(io::ErrorKind::InvalidData, why)));
                }
            }
            match self.fill(limit - self.read.len()) {
                Ok(0) => {
                    let why = "the server closed the connection";
                    return Err(self.broken(io::Error::new(io::ErrorKind::UnexpectedEof, why)));
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.broken(e)),
            }
        }
    }

    /// The next reply that is not a push message (RESP3's out-of-band
    /// news), each of at most `limit` bytes.
    fn answer(&mut self, limit: usize) -> RedisResult<Value> {
        loop {
            match self.reply(limit)? {
                Value::Push { .. } => {}
                value => return Ok(value),
            }
        }
    }
}

/// The limit of the reply to the command `packed`: a slot map's, or any
/// other's.
fn limit_of(packed: &[u8]) -> usize {
    if packed.eq_ignore_ascii_case(b"*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n") {
        SLOT_MAP_LIMIT
    } else {
        REPLY_LIMIT
    }
}

impl ConnectionLike for Wire {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.send(cmd)?;
        self.answer(limit_of(cmd))
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.send(cmd)?;
        let mut replies = Vec::with_capacity(count.min(64));
        for i in 0..offset + count {
            let reply = self.answer(REPLY_LIMIT)?;
            if i >= offset {
                replies.push(reply);
            }
        }
        Ok(replies)
    }

    fn get_db(&self) -> i64 {
        self.db
    }

    fn check_connection(&mut self) -> bool {
        redis::cmd("PING").query::<String>(self).is_ok()
    }

    fn is_open(&self) -> bool {
        self.open
    }
}

impl redis::cluster::Connect for Wire {
    fn connect<T: IntoConnectionInfo>(info: T, timeout: Option<Duration>) -> RedisResult<Wire> {
        Wire::connect(&info.into_connection_info()?, timeout)
    }

    fn send_packed_command(&mut self, cmd: &[u8]) -> RedisResult<()> {
        self.send(cmd)
    }

    /// Every read until the next call ends within `timeout` from now.
    fn set_read_timeout(&self, timeout: Option<Duration>) -> RedisResult<()> {
        self.read_by.set(deadline_of(timeout));
        Ok(())
    }

    /// Every write until the next call ends within `timeout` from now.
    fn set_write_timeout(&self, timeout: Option<Duration>) -> RedisResult<()> {
        self.write_by.set(deadline_of(timeout));
        Ok(())
    }

    fn recv_response(&mut self) -> RedisResult<Value> {
        self.answer(REPLY_LIMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_map_is_known_by_its_command() {
        let slots = redis::cmd("CLUSTER").arg("SLOTS").get_packed_command();
        assert_eq!(limit_of(&slots), SLOT_MAP_LIMIT);
        let other = redis::cmd("CLUSTER").arg("NODES").get_packed_command();
        assert_eq!(limit_of(&other), REPLY_LIMIT);
        assert_eq!(limit_of(b"*1\r\n$4\r\nPING\r\n"), REPLY_LIMIT);
    }
}
