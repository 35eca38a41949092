//! Job objects: each attempt and each hook runs in one of its own, created
//! before the process runs (it starts suspended, is assigned, then
//! resumed), so that everything it starts is in the job too. The job is
//! made to kill its processes when its last handle closes: when backoff
//! ends, however it ends (even by `TerminateProcess`), nothing of the
//! tree outlives it, with no guard process.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::process::Child;

use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{OpenThread, ResumeThread, THREAD_SUSPEND_RESUME};

/// A job object whose processes die when it is closed.
#[derive(Debug)]
pub struct Job(OwnedHandle);

impl Job {
    /// A new, empty job that kills its processes when its last handle
    /// closes.
    ///
    /// # Errors
    ///
    /// When the job cannot be created or set up.
    pub fn new() -> io::Result<Job> {
        // SAFETY: no attributes and no name; the handle returned, if not
        // null, is ours alone to close.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new handle that nothing else owns.
        let job = Job(unsafe { OwnedHandle::from_raw_handle(raw) });
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the job handle is open; `limits` is a whole structure of
        // the class named, and its size is given.
        let set = unsafe {
            SetInformationJobObject(
                job.0.as_raw_handle(),
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                super::size_u32::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>(),
            )
        };
        if set == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    }

    /// Puts `child`, started suspended, in the job, then lets it run. A
    /// child that cannot be put in the job is killed: it never runs
    /// outside of it.
    ///
    /// # Errors
    ///
    /// When the child cannot be assigned or resumed.
    pub fn adopt(&self, child: &mut Child) -> io::Result<()> {
        // SAFETY: both handles are open for the length of the call.
        let assigned =
            unsafe { AssignProcessToJobObject(self.0.as_raw_handle(), child.as_raw_handle()) };
        let done = if assigned == 0 {
            Err(io::Error::last_os_error())
        } else {
            resume(child.id())
        };
        if done.is_err() {
            let _ = child.kill();
            let _ = child.wait();
        }
        done
    }

    /// Puts backoff itself in a job of its own, kept open for the rest of
    /// its life, so that every process it starts is in that job from the
    /// moment it exists (before `adopt` puts it in an attempt's job too:
    /// jobs nest), and ends with backoff, however backoff ends, even in
    /// the instant between a process's start and its `adopt`.
    ///
    /// # Errors
    ///
    /// When the job cannot be made, or backoff put in it (a job backoff
    /// was started in may forbid it).
    pub fn enclose_self() -> io::Result<()> {
        use windows_sys::Win32::System::Threading::GetCurrentProcess;
        static ENCLOSING: std::sync::OnceLock<Job> = std::sync::OnceLock::new();
        if ENCLOSING.get().is_some() {
            return Ok(());
        }
        let job = Job::new()?;
        // SAFETY: the job handle is open; the pseudo-handle of the current
        // process needs no closing.
        if unsafe { AssignProcessToJobObject(job.0.as_raw_handle(), GetCurrentProcess()) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // Never closed before backoff ends: closing it would end backoff.
        let _ = ENCLOSING.set(job);
        Ok(())
    }

    /// How many processes of the job are still running.
    pub fn active(&self) -> u32 {
        let mut info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION::default();
        // SAFETY: the job handle is open; `info` is a whole structure of
        // the class named, and its size is given.
        let ok = unsafe {
            QueryInformationJobObject(
                self.0.as_raw_handle(),
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                super::size_u32::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>(),
                std::ptr::null_mut(),
            )
        };
        if ok == 0 { 0 } else { info.ActiveProcesses }
    }

    /// Ends every process of the job at once, with `code` as its exit code.
    pub fn terminate(&self, code: u32) {
        // SAFETY: the job handle is open.
        unsafe { TerminateJobObject(self.0.as_raw_handle(), code) };
    }
}

/// Resumes the threads of process `pid`, started suspended: its one
/// thread, found in a snapshot of the system's threads (std hands out no
/// handle to it).
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of every thread; the handle, if valid, is ours.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    let mut entry = THREADENTRY32 {
        dwSize: super::size_u32::<THREADENTRY32>(),
        ..THREADENTRY32::default()
    };
    let mut resumed = 0;
    // SAFETY: `snapshot` is open and `entry` says its own size.
    let mut more = unsafe { Thread32First(snapshot, &raw mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: a thread id from the snapshot; the handle, if not
            // null, is closed below.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if !thread.is_null() {
                // SAFETY: `thread` is open, and closed once.
                unsafe {
                    if ResumeThread(thread) != u32::MAX {
                        resumed += 1;
                    }
                    CloseHandle(thread);
                }
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot, &raw mut entry) } != 0;
    }
    // SAFETY: `snapshot` is open, and closed once.
    unsafe { CloseHandle(snapshot) };
    if resumed == 0 {
        return Err(io::Error::other("cannot resume the process started"));
    }
    Ok(())
}
