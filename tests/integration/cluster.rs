//! Budgets and breakers in a Redis Cluster: three redis-server nodes on
//! loopback that the test joins into a cluster with `redis-cli --cluster
//! create`, each key's decisions routed to the node that serves its slot.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::fleet::free_port;
use crate::support::{PATIENCE, TempDir, backoff, command};

/// `redis-cli -c` against the node on `port`; its output.
fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-c", "-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A three-node cluster of the test's own (no replicas), stopped when
/// dropped.
pub struct Cluster {
    nodes: Vec<(u16, Child)>,
    _dir: TempDir,
}

impl Cluster {
    pub fn start() -> Cluster {
        let dir = TempDir::new("cluster");
        let mut nodes = Vec::new();
        let deadline = Instant::now() + PATIENCE;
        for i in 0..3 {
            let node_dir = dir.join(&format!("node{i}"));
            std::fs::create_dir_all(&node_dir).unwrap();
            // A port found free (or its bus port) may be taken by another
            // test's server first: the node ends, and another port is tried.
            let node = (0..5).find_map(|_| {
                let port = free_port();
                let mut child = Command::new("redis-server")
                    .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                    .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"])
                    .args(["--save", "", "--appendonly", "no"])
                    .arg("--dir")
                    .arg(&node_dir)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("redis-server is needed for these tests (.ci/run installs it)");
                loop {
                    if child.try_wait().ok().flatten().is_some() {
                        return None;
                    }
                    if crate::fleet::answers_ping(port) {
                        return Some((port, child));
                    }
                    assert!(Instant::now() < deadline, "a node did not start");
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
            nodes.push(node.expect("a node could not listen on any of 5 free ports"));
        }
        let cluster = Cluster { nodes, _dir: dir };
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for (port, _) in &cluster.nodes {
            create.arg(format!("127.0.0.1:{port}"));
        }
        let out = create
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli comes with redis-server");
        assert!(out.status.success(), "cluster create: {out:?}");
        // Every node must know every slot before the test starts.
        for (port, _) in &cluster.nodes {
            while !cli(*port, &["cluster", "info"]).contains("cluster_state:ok") {
                assert!(Instant::now() < deadline, "the cluster did not form");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        cluster
    }

    /// The cluster URL of all three nodes.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|(p, _)| format!("127.0.0.1:{p}"))
            .collect();
        format!("redis+cluster://{}", hosts.join(","))
    }

    /// The port of the node that serves `key`'s slot.
    fn owner(&self, key: &str) -> u16 {
        let port = self.nodes[0].0;
        let slot: u32 = cli(port, &["cluster", "keyslot", key]).parse().unwrap();
        for line in cli(port, &["cluster", "nodes"]).lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let serves = fields.iter().skip(8).any(|range| {
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                matches!((a.parse::<u32>(), b.parse::<u32>()), (Ok(a), Ok(b)) if (a..=b).contains(&slot))
            });
            if serves {
                let addr = fields[1].split('@').next().unwrap();
                return addr.rsplit(':').next().unwrap().parse().unwrap();
            }
        }
        panic!("no node serves slot {slot}");
    }

    /// Empties every node (`FLUSHALL`): the cluster loses its data.
    pub fn flush_all(&self) {
        for (port, _) in &self.nodes {
            assert_eq!(cli(*port, &["flushall"]), "OK");
        }
    }

    /// Stops the node on `port` for good.
    fn kill(&mut self, port: u16) {
        let (_, child) = self.nodes.iter_mut().find(|(p, _)| *p == port).unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, child) in &mut self.nodes {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Every decision must reach the cluster, however loaded the machine.
const LIVE: [&str; 2] = ["--budget-store-timeout", "10s"];

/// Twenty processes on the budget `key` in the cluster at `url`, each
/// failing with retries: exactly the burst of 5 retries is granted in all.
fn twenty_share_the_burst(url: &str, key: &str) {
    let dir = TempDir::new("cluster-budget");
    let log = dir.join("attempts");
    let children: Vec<Child> = (0..20)
        .map(|_| {
            command([
                "--budget",
                key,
                "--budget-burst",
                "5",
                "--budget-store",
                url,
            ])
            .args(LIVE)
            .args(["--base", "1ms", "--cap", "2ms", "--attempts", "3"])
            .args(["--", "sh", "-c"])
            .arg(format!("echo x >> '{}'; exit 3", log.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for child in children {
        let out = crate::support::output_within(child);
        assert_eq!(out.status.code(), Some(3));
    }
    let attempts = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(
        attempts,
        20 + 5,
        "20 first attempts and the burst's 5 retries ({key})"
    );
    let out = backoff([
        "budget",
        "show",
        key,
        "--budget-burst",
        "5",
        "--budget-store",
        url,
    ])
    .args(LIVE)
    .output()
    .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&format!("{key}: 0 of 5 tokens")),
        "{out:?}"
    );
}

#[test]
fn a_cluster_shares_budgets_and_breakers_and_a_node_down_follows_the_fail_mode() {
    let mut cluster = Cluster::start();
    let url = cluster.url();
    // Keys served by different nodes, so that routing is exercised.
    let budget_key = |k: &str| format!("backoff:budget:{k}");
    let first = cluster.owner(&budget_key("k0"));
    let other = (1..40)
        .map(|i| format!("k{i}"))
        .find(|k| cluster.owner(&budget_key(k)) != first)
        .expect("keys on two nodes");
    twenty_share_the_burst(&url, "k0");
    twenty_share_the_burst(&url, &other);
    // A breaker in the cluster opens and skips like any other.
    let out = backoff([
        "--breaker",
        "svc",
        "--breaker-failures",
        "1",
        "--attempts",
        "1",
    ])
    .args(["--budget-store", &url])
    .args(LIVE)
    .args(["--", "false"])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = backoff(["--breaker", "svc", "--budget-store", &url])
        .args(LIVE)
        .args(["--", "echo", "ran"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75), "{out:?}");
    assert!(out.stdout.is_empty());
    // The node of a breaker's key goes down: its decisions follow the fail
    // mode, within the store's timeout.
    let owner = cluster.owner("backoff:breaker:down");
    cluster.kill(owner);
    for (fail, code, ran) in [("open", 0, "ran\n"), ("closed", 75, "")] {
        let started = Instant::now();
        let out = backoff(["--breaker", "down", "--budget-store", &url])
            .args(["--budget-store-timeout", "2s", "--budget-store-fail", fail])
            .args(["--", "echo", "ran"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{fail}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), ran, "{fail}");
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(
            text.contains("circuit breaker 'down' store redis+cluster://")
                && text.contains("unavailable ("),
            "{fail}: {text}"
        );
        assert!(
            started.elapsed() < PATIENCE,
            "{fail}: bounded by the timeout"
        );
    }
}

#[test]
fn bad_cluster_urls_are_refused() {
    for url in [
        "redis+cluster://",
        "redis+cluster://127.0.0.1:1/3",
        "redis+cluster://u:secret@127.0.0.1:1,u2:p2@127.0.0.1:2",
    ] {
        let out = backoff(["--breaker", "k", "--budget-store", url, "--", "true"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{url}");
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("--budget-store"), "{text}");
        assert!(!text.contains("secret") && !text.contains("p2"), "{text}");
    }
}

#[test]
fn a_slot_moved_while_twenty_processes_share_its_key_keeps_the_count_exact() {
    let cluster = Cluster::start();
    let url = cluster.url();
    let key = "backoff:budget:moving";
    let from = cluster.owner(key);
    let to = cluster
        .nodes
        .iter()
        .map(|(p, _)| *p)
        .find(|p| *p != from)
        .unwrap();
    let slot = cli(from, &["cluster", "keyslot", key]);
    let id = |port: u16| cli(port, &["cluster", "myid"]);
    let dir = TempDir::new("cluster-moving");
    let log = dir.join("attempts");
    // Each process fails 21 times with retries 50ms apart, a token each:
    // 20 × 20 of the 1000 tokens, whatever the slot does meanwhile, and
    // --budget-store-fail closed stops a process at the first decision that
    // fails.
    let children: Vec<Child> = (0..20)
        .map(|_| {
            command(["--budget", "moving", "--budget-burst", "1000"])
                .args(["--budget-store", &url, "--budget-store-fail", "closed"])
                .args(LIVE)
                .args(["--base", "50ms", "--cap", "50ms", "--jitter", "none"])
                .args(["--attempts", "21", "--", "sh", "-c"])
                .arg(format!("echo x >> '{}'; exit 3", log.display()))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let attempts = || std::fs::read_to_string(&log).map_or(0, |t| t.lines().count());
    let after = |count: usize| {
        let deadline = Instant::now() + PATIENCE;
        while attempts() < count {
            assert!(
                Instant::now() < deadline,
                "the processes stopped retrying at {}",
                attempts()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    // The slot is migrated as `redis-cli --cluster reshard` does it: the
    // key moves while its slot is migrating (ASK), then the slot is the new
    // node's (MOVED, for the processes' old slot maps).
    after(40);
    assert_eq!(
        cli(to, &["cluster", "setslot", &slot, "importing", &id(from)]),
        "OK"
    );
    assert_eq!(
        cli(from, &["cluster", "setslot", &slot, "migrating", &id(to)]),
        "OK"
    );
    let port = to.to_string();
    let moved = cli(from, &["migrate", "127.0.0.1", &port, key, "0", "5000"]);
    assert_eq!(moved, "OK");
    let asked = attempts();
    after(asked + 60);
    for (node, _) in &cluster.nodes {
        assert_eq!(
            cli(*node, &["cluster", "setslot", &slot, "node", &id(to)]),
            "OK"
        );
    }
    let settled = attempts();
    assert!(settled < 20 * 21 - 60, "the slot moved too late to matter");
    for child in children {
        let out = crate::support::output_within(child);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(!stderr.contains("unavailable"), "{stderr}");
    }
    assert_eq!(
        attempts(),
        20 * 21,
        "every retry granted (ASK after {asked}, MOVED after {settled})"
    );
    let out = backoff(["budget", "show", "moving", "--budget-burst", "1000"])
        .args(["--budget-store", &url])
        .args(LIVE)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("moving: 600 of 1000 tokens"),
        "{out:?}"
    );
}

#[test]
fn fifty_processes_share_a_throttle_in_a_cluster_and_a_node_down_follows_the_fail_mode() {
    let mut cluster = Cluster::start();
    let url = cluster.url();
    crate::throttling::fifty_against_a_server_that_rejects_four_in_five(&["--budget-store", &url]);
    // The node of a throttle's key goes down: its decisions follow the
    // fail mode, within the store's timeout.
    let owner = cluster.owner("backoff:throttle:down");
    cluster.kill(owner);
    for (fail, code, ran) in [("open", 0, "ran\n"), ("closed", 75, "")] {
        let started = Instant::now();
        let out = backoff(["--throttle", "down", "--budget-store", &url])
            .args(["--budget-store-timeout", "2s", "--budget-store-fail", fail])
            .args(["--max-retries", "1", "--base", "1ms", "--", "echo", "ran"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{fail}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), ran, "{fail}");
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(
            text.contains("adaptive throttle 'down' store redis+cluster://")
                && text.contains("unavailable ("),
            "{fail}: {text}"
        );
        assert!(
            started.elapsed() < PATIENCE,
            "{fail}: bounded by the timeout"
        );
    }
}
