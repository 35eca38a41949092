//! A scripted HTTP/1.1 server on 127.0.0.1 for the curl tests: it answers
//! each request with the next scripted response and records when each
//! request came.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// One scripted response.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Send only this many bytes of the body (a transfer cut short).
    pub cut: Option<usize>,
    /// Close the connection without an answer.
    pub dropped: bool,
}

impl Reply {
    pub fn new(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
            cut: None,
            dropped: false,
        }
    }

    /// No answer: the connection is closed once the request is read.
    pub fn dropped() -> Reply {
        Reply {
            dropped: true,
            ..Reply::new(0, "")
        }
    }

    /// The same reply, whose body is cut after `bytes`.
    pub fn cut(mut self, bytes: usize) -> Reply {
        self.cut = Some(bytes);
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// A running server; it stops serving when dropped (the thread ends at the
/// next connection or with the test process).
pub struct Server {
    pub url: String,
    requests: Arc<Mutex<Vec<Instant>>>,
}

impl Server {
    /// Serves `script` in order; after it, every request gets the last reply.
    pub fn start(script: Vec<Reply>) -> Server {
        Server::serve(script, false)
    }

    /// Serves `script` in order, and again from its start after its end.
    pub fn cycling(script: Vec<Reply>) -> Server {
        Server::serve(script, true)
    }

    fn serve(script: Vec<Reply>, cycle: bool) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let url = format!("http://{}/resource", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { break };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                // Read the request head, then its body, if it has one (a
                // POST), so that closing the connection resets nothing.
                let mut body = 0usize;
                loop {
                    line.clear();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if line == "\r\n" => break,
                        Ok(_) => {
                            if let Some((name, value)) = line.split_once(':')
                                && name.eq_ignore_ascii_case("content-length")
                            {
                                body = value.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                }
                let mut sent = vec![0u8; body];
                let _ = std::io::Read::read_exact(&mut reader, &mut sent);
                seen.lock().unwrap().push(Instant::now());
                let n = if cycle { n % script.len() } else { n };
                let reply = script.get(n).or(script.last()).unwrap().clone();
                if reply.dropped {
                    continue;
                }
                let mut head = format!(
                    "HTTP/1.1 {} Scripted\r\nContent-Length: {}\r\nConnection: close\r\n",
                    reply.status,
                    reply.body.len()
                );
                for (k, v) in &reply.headers {
                    let _ = write!(head, "{k}: {v}\r\n");
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                let body = reply.body.as_bytes();
                let _ = stream.write_all(&body[..reply.cut.unwrap_or(body.len()).min(body.len())]);
            }
        });
        Server { url, requests }
    }

    /// When each request arrived, in order.
    pub fn requests(&self) -> Vec<Instant> {
        self.requests.lock().unwrap().clone()
    }
}

/// A loopback port with nothing listening on it.
pub fn refused_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}/")
}
