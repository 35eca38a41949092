//! Which machine this is: its name, for `--splay` and the fleet stores.

/// The machine's name (`COMPUTERNAME`), or `localhost`.
pub fn host_name() -> String {
    std::env::var("COMPUTERNAME")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// The machine's id: Windows keeps none that `--splay` reads, so its
/// host name alone places it.
///
/// # Errors
///
/// Never.
pub fn id() -> Result<Option<Vec<u8>>, String> {
    Ok(None)
}
