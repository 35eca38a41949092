//! The local time zone's offset from UTC, as the C library knows it: from
//! `TZ`, else `/etc/localtime` (glibc and musl alike), as `date` shows it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds east of UTC of the local time zone at `t` (daylight saving time
/// included); `None` when the C library cannot tell (a time it cannot
/// represent).
pub fn utc_offset(t: SystemTime) -> Option<i64> {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).ok()?,
        Err(e) => -i64::try_from(e.duration().as_secs()).ok()?,
    };
    // C's time_t, 64 bits here but not on every system (its name is
    // deprecated in libc for musl, whose time_t changed size).
    #[allow(clippy::useless_conversion)]
    let secs = secs.try_into().ok()?;
    // SAFETY: an all-zero `tm` is a valid value (integers and, where it has
    // one, a null zone name pointer), which localtime_r only writes.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; localtime_r is the
    // reentrant form, which writes only `tm`. backoff never changes its
    // environment, so the TZ it may read is not written meanwhile.
    let done = unsafe { libc::localtime_r(&raw const secs, &raw mut tm) };
    if done.is_null() {
        return None;
    }
    // A C long: the conversion does something on 32-bit systems only.
    #[allow(clippy::useless_conversion)]
    Some(i64::from(tm.tm_gmtoff))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_offset_is_less_than_a_day() {
        let offset = utc_offset(SystemTime::now()).unwrap();
        assert!(offset.abs() < 24 * 3600, "{offset}");
    }
}
