//! How backoff ends: an exit code, or death by the same signal that ended
//! the last attempt (or backoff). The one function that ends the process
//! this way is `Exit::end`.

/// How backoff ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exit with this code.
    Code(u32),
    /// Die by this signal, so that a calling shell sees a signal death.
    Signal(i32),
}

impl Exit {
    /// An attempt succeeded.
    pub const SUCCESS: Exit = Exit::Code(0);
    /// The last attempt timed out, or the deadline passed.
    pub const TIMEOUT: Exit = Exit::Code(124);
    /// backoff itself failed: bad usage, bad value, internal error.
    pub const USAGE: Exit = Exit::Code(125);
    /// The command exists but cannot be run.
    pub const CANNOT_RUN: Exit = Exit::Code(126);
    /// The command was not found.
    pub const NOT_FOUND: Exit = Exit::Code(127);
    /// No attempt ran: the adaptive throttle skipped them all
    /// (`EX_TEMPFAIL`).
    pub const TEMPFAIL: Exit = Exit::Code(75);

    /// Ends the process as this says: with the code, or by the signal
    /// (`sys::die_by`).
    pub fn end(self) -> ! {
        match self {
            Exit::Code(c) => std::process::exit(c.cast_signed()),
            Exit::Signal(sig) => crate::sys::die_by(sig),
        }
    }

    /// The code a shell would report for this exit: `128 + N` for signal
    /// N on Unix; on Windows, where a code is 32 bits, as cmd.exe's
    /// `%ERRORLEVEL%` and PowerShell's `$LASTEXITCODE` show it, signed
    /// (`-1073741510` for `STATUS_CONTROL_C_EXIT`, what an interrupted run
    /// exits with).
    pub fn shell_code(self) -> i32 {
        match self {
            Exit::Code(c) => c.cast_signed(),
            Exit::Signal(s) => crate::sys::signal_exit_code(s),
        }
    }
}

/// An exit code as reports and lines print it: in decimal, or, for the
/// codes with the high bit set that Windows gives a process ended by an
/// exception or by Ctrl-C (an NTSTATUS), in hexadecimal with its name
/// where it is a well-known one: `0xC0000005 (STATUS_ACCESS_VIOLATION)`.
/// Unix codes are never that large.
pub fn code_text(code: u32) -> String {
    if code < 0x8000_0000 {
        return code.to_string();
    }
    match ntstatus_name(code) {
        Some(name) => format!("{code:#010X} ({name})").replacen("0X", "0x", 1),
        None => format!("{code:#010X}").replacen("0X", "0x", 1),
    }
}

/// The names of the NTSTATUS codes a command most often ends with.
fn ntstatus_name(code: u32) -> Option<&'static str> {
    Some(match code {
        0x8000_0003 => "STATUS_BREAKPOINT",
        0xC000_0005 => "STATUS_ACCESS_VIOLATION",
        0xC000_0017 => "STATUS_NO_MEMORY",
        0xC000_001D => "STATUS_ILLEGAL_INSTRUCTION",
        0xC000_007B => "STATUS_INVALID_IMAGE_FORMAT",
        0xC000_008C => "STATUS_ARRAY_BOUNDS_EXCEEDED",
        0xC000_0094 => "STATUS_INTEGER_DIVIDE_BY_ZERO",
        0xC000_0096 => "STATUS_PRIVILEGED_INSTRUCTION",
        0xC000_00FD => "STATUS_STACK_OVERFLOW",
        0xC000_0135 => "STATUS_DLL_NOT_FOUND",
        0xC000_0139 => "STATUS_ENTRYPOINT_NOT_FOUND",
        0xC000_013A => "STATUS_CONTROL_C_EXIT",
        0xC000_0142 => "STATUS_DLL_INIT_FAILED",
        0xC000_0374 => "STATUS_HEAP_CORRUPTION",
        0xC000_0409 => "STATUS_STACK_BUFFER_OVERRUN",
        0xC000_0602 => "STATUS_FAIL_FAST_EXCEPTION",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_print_in_decimal_and_ntstatus_in_hex() {
        assert_eq!(code_text(0), "0");
        assert_eq!(code_text(255), "255");
        assert_eq!(code_text(0x7FFF_FFFF), "2147483647");
        assert_eq!(
            code_text(0xC000_0005),
            "0xC0000005 (STATUS_ACCESS_VIOLATION)"
        );
        assert_eq!(code_text(0xC000_013A), "0xC000013A (STATUS_CONTROL_C_EXIT)");
        assert_eq!(code_text(0xE043_4352), "0xE0434352");
    }

    #[test]
    fn a_windows_code_keeps_its_bits_as_the_exit_status() {
        assert_eq!(
            Exit::Code(0xC000_013A).shell_code(),
            0xC000_013Au32.cast_signed()
        );
        assert_eq!(Exit::Code(3).shell_code(), 3);
    }
}
