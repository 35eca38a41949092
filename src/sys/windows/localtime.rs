//! The local time zone's offset from UTC, as Windows' time zone settings
//! give it (daylight saving time included), for `--timestamps`.

use std::time::{SystemTime, UNIX_EPOCH};

use windows_sys::Win32::Foundation::{FILETIME, SYSTEMTIME};
use windows_sys::Win32::System::Time::{
    FileTimeToSystemTime, SystemTimeToFileTime, SystemTimeToTzSpecificLocalTime,
};

/// 100-nanosecond ticks from 1601, Windows' epoch, to 1970.
const EPOCH_TICKS: i64 = 116_444_736_000_000_000;

/// Seconds east of UTC of the local time zone at `t`; `None` when Windows
/// cannot tell.
pub fn utc_offset(t: SystemTime) -> Option<i64> {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).ok()?,
        Err(e) => -i64::try_from(e.duration().as_secs()).ok()?,
    };
    let ticks = secs.checked_mul(10_000_000)?.checked_add(EPOCH_TICKS)?;
    let ticks = u64::try_from(ticks).ok()?;
    let utc_file = FILETIME {
        dwLowDateTime: u32::try_from(ticks & 0xFFFF_FFFF).ok()?,
        dwHighDateTime: u32::try_from(ticks >> 32).ok()?,
    };
    let mut utc = SYSTEMTIME::default();
    let mut local = SYSTEMTIME::default();
    let mut local_file = FILETIME::default();
    // SAFETY: each pointer is to a whole structure of ours for the length
    // of its call; a null zone is the current one.
    let ok = unsafe {
        FileTimeToSystemTime(&raw const utc_file, &raw mut utc) != 0
            && SystemTimeToTzSpecificLocalTime(std::ptr::null(), &raw const utc, &raw mut local)
                != 0
            && SystemTimeToFileTime(&raw const local, &raw mut local_file) != 0
    };
    if !ok {
        return None;
    }
    let local_ticks =
        (u64::from(local_file.dwHighDateTime) << 32) | u64::from(local_file.dwLowDateTime);
    let diff = i128::from(local_ticks) - i128::from(ticks);
    i64::try_from(diff / 10_000_000).ok()
}
