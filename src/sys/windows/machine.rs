//! Which machine this is: its name, and an id stable across runs, for
//! `--splay` and the fleet stores.

/// The machine's name (`COMPUTERNAME`), or `localhost`.
pub fn host_name() -> String {
    std::env::var("COMPUTERNAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// Bytes that name this machine: its name (`--splay` mixes them with the
/// run's name).
pub fn id() -> Vec<u8> {
    host_name().into_bytes()
}
