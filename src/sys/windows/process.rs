//! Starting processes on Windows: each in a job object of its own and a
//! console process group of its own, how they ended, and what the OS said
//! when one could not start.

use std::ffi::OsStr;
use std::io;
use std::os::windows::process::CommandExt;
use std::process::{Child, Command, ExitStatus};

use windows_sys::Win32::Foundation::{
    ERROR_COMMITMENT_LIMIT, ERROR_NO_SYSTEM_RESOURCES, ERROR_NOT_ENOUGH_MEMORY, ERROR_OUTOFMEMORY,
    ERROR_TOO_MANY_OPEN_FILES,
};
use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED};

use super::job::Job;

/// The shell that runs a command line, as the advice for a command given
/// as one word names it.
pub const SHELL: [&str; 2] = ["cmd", "/c"];

/// The characters besides letters and digits that a word may hold and
/// mean the same to cmd.exe and to a program reading its command line,
/// unquoted (not `%`, which cmd expands, nor `^ & | < >`).
pub const PLAIN: &str = "_-./:=,@+\\";

/// `word` quoted for cmd.exe and the program it starts: in double quotes;
/// a double quote in it doubled (which keeps cmd inside the quotes, and
/// which a program splitting its command line reads as one quote), and
/// the backslashes just before a quote doubled, as those programs read
/// them. cmd still expands `%NAME%` inside quotes.
pub fn quote(word: &str) -> String {
    let mut out = String::from("\"");
    let mut backslashes = 0;
    for c in word.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                out.extend(std::iter::repeat_n('\\', backslashes * 2));
                out.push_str("\"\"");
                backslashes = 0;
                continue;
            }
            _ => {
                out.extend(std::iter::repeat_n('\\', backslashes));
                backslashes = 0;
            }
        }
        if c != '\\' {
            out.push(c);
        }
    }
    out.extend(std::iter::repeat_n('\\', backslashes * 2));
    out.push('"');
    out
}

/// Whether the environment variable `name` is the one called `variable`
/// (names are case-insensitive on Windows).
pub fn same_variable(name: &OsStr, variable: &str) -> bool {
    name.eq_ignore_ascii_case(variable)
}

/// Starts `command` in a new job object (which ends its whole tree when
/// it is dropped) and a new console process group (whose id is the
/// child's, for `CTRL_BREAK`): suspended, put in the job, then resumed,
/// so that nothing it starts escapes the job.
///
/// # Errors
///
/// When the job cannot be made, or the process cannot start or be put in
/// it.
pub fn spawn(command: &mut Command) -> io::Result<(Child, Job)> {
    let job = Job::new()?;
    command.creation_flags(CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP);
    let mut child = command.spawn()?;
    job.adopt(&mut child)?;
    Ok((child, job))
}

/// How a process ended: its whole 32-bit exit code (an NTSTATUS for one
/// ended by an exception or by Ctrl-C).
pub fn exit_code(status: ExitStatus) -> u32 {
    status.code().map_or(u32::MAX, i32::cast_unsigned)
}

/// Whether a failure to start is backoff's own lack of a resource rather
/// than the command's.
pub fn is_resource_error(error: i32) -> bool {
    u32::try_from(error).is_ok_and(|e| {
        matches!(
            e,
            ERROR_NOT_ENOUGH_MEMORY
                | ERROR_OUTOFMEMORY
                | ERROR_TOO_MANY_OPEN_FILES
                | ERROR_NO_SYSTEM_RESOURCES
                | ERROR_COMMITMENT_LIMIT
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_as_cmd_and_programs_read_them() {
        assert_eq!(quote(r"a b"), r#""a b""#);
        assert_eq!(quote(r"C:\a b\c"), r#""C:\a b\c""#);
        assert_eq!(quote(r"C:\a b\"), r#""C:\a b\\""#);
        assert_eq!(quote(r#"echo "a&b""#), r#""echo ""a&b""""#);
        assert_eq!(quote(r#"x\"y"#), r#""x\\""y""#);
    }
}
