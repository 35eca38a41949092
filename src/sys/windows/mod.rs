//! The Windows side of the layer over the operating system: the console's
//! control events in place of signals (`signals`, `signal_names`), job
//! objects that hold each attempt's and each hook's whole process tree
//! (`job`), starting and waiting for processes (`process`), pipes and
//! files (`fd`), which machine this is (`machine`) and the local time
//! zone's offset (`localtime`). Every `unsafe` block is here, each with a
//! `// SAFETY:` comment. Nothing here decides anything.

pub mod fd;
pub mod files;
pub mod job;
pub mod localtime;
pub mod machine;
pub mod process;
pub mod signal_names;
pub mod signals;

/// The size of `T`, a structure of a few dozen bytes, as Windows' calls
/// take it.
#[allow(clippy::cast_possible_truncation)]
const fn size_u32<T>() -> u32 {
    size_of::<T>() as u32
}

/// The time since the system started, counting the time it spent asleep
/// or hibernated (`GetTickCount64`, in milliseconds): a lease on a server
/// runs while the host sleeps.
pub fn since_boot() -> std::time::Duration {
    // SAFETY: no arguments; it only reads the tick count.
    std::time::Duration::from_millis(unsafe {
        windows_sys::Win32::System::SystemInformation::GetTickCount64()
    })
}

/// The largest exit code a process can end with: a whole 32-bit `DWORD`.
pub const MAX_EXIT_CODE: u32 = u32::MAX;

/// What a console program ended by Ctrl-C exits with
/// (`STATUS_CONTROL_C_EXIT`), as cmd.exe and PowerShell expect of one.
pub const INTERRUPTED: u32 = 0xC000_013A;

/// The status of a run that a control event ended: backoff exits with
/// `STATUS_CONTROL_C_EXIT`, which shells show signed.
pub fn signal_exit_code(_event: i32) -> i32 {
    INTERRUPTED.cast_signed()
}

/// Ends the process as one that the control event `_event` ended: with
/// `STATUS_CONTROL_C_EXIT`, as a console program that Ctrl-C ended does.
pub fn die_by(_event: i32) -> ! {
    std::process::exit(INTERRUPTED.cast_signed())
}
