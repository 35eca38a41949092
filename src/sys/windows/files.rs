//! Files of backoff's own (its state, its reports), as Windows protects
//! them: who owns one and whether others may write it (its owner and its
//! access control list), whether a name still names the file opened, and
//! opening without following a symbolic link (a reparse point).

use std::fs::{DirBuilder, File, FileType, OpenOptions};
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;

pub use crate::sys::StateLock;
use windows_sys::Win32::Foundation::{
    CloseHandle, ERROR_CANT_ACCESS_FILE, ERROR_DIRECTORY, GENERIC_ALL, GENERIC_WRITE, HANDLE,
    LocalFree,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, GetSecurityInfo,
    SDDL_REVISION_1, SE_FILE_OBJECT, SetSecurityInfo,
};
use windows_sys::Win32::Security::{
    ACCESS_ALLOWED_ACE, ACL, ACL_SIZE_INFORMATION, AclSizeInformation, DACL_SECURITY_INFORMATION,
    EqualSid, GetAce, GetAclInformation, GetSecurityDescriptorDacl, GetTokenInformation,
    INHERIT_ONLY_ACE, IsWellKnownSid, OWNER_SECURITY_INFORMATION,
    PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID, TOKEN_QUERY, TOKEN_USER,
    TokenUser, WinBuiltinAdministratorsSid, WinCreatorOwnerSid, WinLocalSystemSid,
};
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, DELETE, FILE_APPEND_DATA, FILE_DELETE_CHILD,
    FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_WRITE_DATA,
    GetFileInformationByHandle, WRITE_DAC, WRITE_OWNER,
};
use windows_sys::Win32::System::SystemServices::ACCESS_ALLOWED_ACE_TYPE;
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// The file beside a file updated in place (`--metrics-file`) whose lock
/// orders the updates: `FILE.lock`. Windows renames over a file that is
/// open only with POSIX semantics (Windows 10 1607 and later, on NTFS),
/// so the file itself is not held open across its replacement.
pub const LOCK_BESIDE: Option<&str> = Some(".lock");

/// Where a user's programs keep their own data on this machine:
/// `%LOCALAPPDATA%`, when it is an absolute path.
pub fn app_data() -> Option<std::path::PathBuf> {
    std::env::var_os("LOCALAPPDATA")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// Makes the directory `path` (with the directories above it, when
/// `recursive`), and gives it an access control list of its own, not
/// inherited, that lets only its owner, SYSTEM and the Administrators in
/// (as mode 0700 does on Unix): under a folder others may write to, it
/// would otherwise inherit their access, and `distrust` refuse it.
///
/// # Errors
///
/// When the directory cannot be made, or its list set.
pub fn create_private_dir(path: &Path, recursive: bool) -> io::Result<()> {
    if recursive {
        // Each directory made on the way gets the same list, as each gets
        // mode 0700 on Unix.
        let missing: Vec<&Path> = path.ancestors().take_while(|p| !p.exists()).collect();
        for dir in missing.into_iter().rev() {
            match DirBuilder::new().create(dir) {
                Ok(()) => protect(dir)?,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        return Ok(());
    }
    DirBuilder::new().create(path)?;
    protect(path)
}

/// Gives the directory `path` a protected list that lets in only its
/// owner, SYSTEM and the Administrators.
fn protect(path: &Path) -> io::Result<()> {
    let dir = OpenOptions::new()
        .access_mode(windows_sys::Win32::Storage::FileSystem::READ_CONTROL | WRITE_DAC)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    let user = own_user()?;
    // SAFETY: `user` holds a TOKEN_USER, whose SID points into it.
    let me = unsafe { (*user.as_ptr().cast::<TOKEN_USER>()).User.Sid };
    let mut text: windows_sys::core::PWSTR = std::ptr::null_mut();
    // SAFETY: `me` is a valid SID; the string allocated is freed below.
    if unsafe { ConvertSidToStringSidW(me, &raw mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `text` is a NUL-terminated wide string of the system's, of
    // a SID: far shorter than 512 characters.
    let sid = unsafe {
        let len = (0..512).take_while(|&i| *text.add(i) != 0).count();
        let sid = String::from_utf16_lossy(std::slice::from_raw_parts(text, len));
        LocalFree(text.cast());
        sid
    };
    let sddl: Vec<u16> = format!("D:P(A;OICI;FA;;;{sid})(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)")
        .encode_utf16()
        .chain([0])
        .collect();
    let mut descriptor: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `sddl` is NUL-terminated; the descriptor allocated is freed
    // below.
    let made = unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &raw mut descriptor,
            std::ptr::null_mut(),
        )
    };
    if made == 0 {
        return Err(io::Error::last_os_error());
    }
    let (mut present, mut defaulted) = (0, 0);
    let mut dacl: *mut ACL = std::ptr::null_mut();
    // SAFETY: `descriptor` is the one just made; the list it points to
    // lives as long as it does, until the LocalFree below.
    let error = unsafe {
        let got = GetSecurityDescriptorDacl(
            descriptor,
            &raw mut present,
            &raw mut dacl,
            &raw mut defaulted,
        );
        let error = if got == 0 || present == 0 {
            windows_sys::Win32::Foundation::ERROR_INVALID_SECURITY_DESCR
        } else {
            SetSecurityInfo(
                dir.as_raw_handle(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                dacl,
                std::ptr::null(),
            )
        };
        LocalFree(descriptor);
        error
    };
    if error != 0 {
        return Err(io::Error::from_raw_os_error(error.cast_signed()));
    }
    Ok(())
}

/// The access rights that let a holder change a file or what it holds
/// (in a directory: add files, delete those of others).
const WRITES: u32 = FILE_WRITE_DATA
    | FILE_APPEND_DATA
    | FILE_DELETE_CHILD
    | GENERIC_WRITE
    | GENERIC_ALL
    | WRITE_DAC
    | WRITE_OWNER
    | DELETE;

/// The types of allowing entries other than the basic one: object,
/// callback, callback object, and compound entries.
const OTHER_ALLOWS: [u32; 4] = [4, 5, 9, 11];

/// The owner and access control list of `handle`, and the memory that
/// holds them (freed when dropped).
struct Security {
    owner: PSID,
    dacl: *mut ACL,
    descriptor: PSECURITY_DESCRIPTOR,
}

impl Drop for Security {
    fn drop(&mut self) {
        // SAFETY: the descriptor was allocated by GetSecurityInfo, for the
        // caller to free once.
        unsafe { LocalFree(self.descriptor) };
    }
}

fn security(handle: HANDLE) -> io::Result<Security> {
    let mut s = Security {
        owner: std::ptr::null_mut(),
        dacl: std::ptr::null_mut(),
        descriptor: std::ptr::null_mut(),
    };
    // SAFETY: `handle` is open; the pointers written point into the
    // descriptor allocated for us, which `Security` frees.
    let error = unsafe {
        GetSecurityInfo(
            handle,
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
            &raw mut s.owner,
            std::ptr::null_mut(),
            &raw mut s.dacl,
            std::ptr::null_mut(),
            &raw mut s.descriptor,
        )
    };
    if error != 0 {
        return Err(io::Error::from_raw_os_error(error.cast_signed()));
    }
    Ok(s)
}

/// The user backoff runs as, as the SID of its token, in a buffer of its
/// own.
fn own_user() -> io::Result<Vec<u64>> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: the pseudo-handle of this process; the token handle, if
    // opened, is closed below.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &raw mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // Words, so that the TOKEN_USER at its start is aligned.
    let mut buffer = vec![0u64; 64];
    let mut len = 0u32;
    // SAFETY: `buffer` is as long as said; the token is open.
    let ok = unsafe {
        GetTokenInformation(
            token,
            TokenUser,
            buffer.as_mut_ptr().cast(),
            super::size_u32::<[u64; 64]>(),
            &raw mut len,
        )
    };
    // SAFETY: the token was opened above, and is closed once.
    unsafe { CloseHandle(token) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(buffer)
}

/// Whether `sid` is one that may always write anything (the system, the
/// administrators) or stands for the file's owner.
fn trusted(sid: PSID) -> bool {
    // SAFETY: `sid` points into a live descriptor.
    unsafe {
        IsWellKnownSid(sid, WinLocalSystemSid) != 0
            || IsWellKnownSid(sid, WinBuiltinAdministratorsSid) != 0
            || IsWellKnownSid(sid, WinCreatorOwnerSid) != 0
    }
}

/// Why the directory at `path` is not this user's to make directories
/// in: another user owns it.
///
/// # Errors
///
/// When it cannot be looked at.
pub fn not_own_dir(path: &Path) -> io::Result<Option<String>> {
    let dir = OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    let s = security(dir.as_raw_handle())?;
    Ok(distrust_owner(&s)?.map(ToOwned::to_owned))
}

/// Why the owner of `s` is not to be trusted: none, or another user.
fn distrust_owner(s: &Security) -> io::Result<Option<&'static str>> {
    if s.owner.is_null() {
        // A descriptor may name no owner: no one's to trust.
        return Ok(Some("has no owner"));
    }
    let user = own_user()?;
    // SAFETY: `user` holds a TOKEN_USER, whose SID points into it.
    let me = unsafe { (*user.as_ptr().cast::<TOKEN_USER>()).User.Sid };
    // SAFETY: both SIDs point into live buffers (the owner is not null).
    let own = unsafe { EqualSid(s.owner, me) } != 0 || trusted(s.owner);
    Ok((!own).then_some("belongs to another user"))
}

/// Why `file` (state, or the directory of state) must not be trusted:
/// another user owns it, or its access control list lets another user
/// (nor the system, the administrators or its owner) write to it.
///
/// # Errors
///
/// When it cannot be looked at.
pub fn distrust(file: &File) -> io::Result<Option<&'static str>> {
    // One reading of the descriptor for both checks: the owner found not
    // null is the one compared with each entry below.
    let s = security(file.as_raw_handle())?;
    if let Some(why) = distrust_owner(&s)? {
        return Ok(Some(why));
    }
    if s.dacl.is_null() {
        // No list at all: everyone may do anything.
        return Ok(Some("is writable by other users"));
    }
    let mut size = ACL_SIZE_INFORMATION::default();
    // SAFETY: `dacl` points into the live descriptor; `size` is whole.
    let ok = unsafe {
        GetAclInformation(
            s.dacl,
            (&raw mut size).cast(),
            super::size_u32::<ACL_SIZE_INFORMATION>(),
            AclSizeInformation,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    for i in 0..size.AceCount {
        let mut ace: *mut core::ffi::c_void = std::ptr::null_mut();
        // SAFETY: `i` is below the list's count; `ace` points into it.
        if unsafe { GetAce(s.dacl, i, &raw mut ace) } == 0 {
            continue;
        }
        let ace = ace.cast::<ACCESS_ALLOWED_ACE>();
        // SAFETY: every entry starts with its header and its access mask;
        // a basic allowing entry has its SID after them.
        let (kind, flags, mask, sid) = unsafe {
            (
                u32::from((*ace).Header.AceType),
                u32::from((*ace).Header.AceFlags),
                (*ace).Mask,
                (&raw mut (*ace).SidStart).cast::<core::ffi::c_void>(),
            )
        };
        // An entry only inherited by what the directory will hold does not
        // apply to the directory itself.
        if flags & INHERIT_ONLY_ACE != 0 || mask & WRITES == 0 {
            continue;
        }
        if kind == ACCESS_ALLOWED_ACE_TYPE {
            // SAFETY: both SIDs point into the live descriptor (the owner
            // is not null: `distrust_owner` said so).
            if unsafe { EqualSid(sid, s.owner) } == 0 && !trusted(sid) {
                return Ok(Some("is writable by other users"));
            }
        } else if OTHER_ALLOWS.contains(&kind) {
            // Allowing entries of other forms (objects, callbacks,
            // compound): not read, so not trusted.
            return Ok(Some("is writable by other users"));
        }
    }
    Ok(None)
}

/// How many names the file has (hard links).
///
/// # Errors
///
/// When it cannot be looked at.
pub fn links(file: &File) -> io::Result<u64> {
    Ok(u64::from(information(file)?.nNumberOfLinks))
}

fn information(file: &File) -> io::Result<BY_HANDLE_FILE_INFORMATION> {
    let mut info = BY_HANDLE_FILE_INFORMATION::default();
    // SAFETY: the handle is open; `info` is whole.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle(), &raw mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

/// What identifies the file among all of the system's: its volume's
/// serial number and its index there.
///
/// # Errors
///
/// When it cannot be looked at.
pub fn file_id(file: &File) -> io::Result<(u64, u64)> {
    let info = information(file)?;
    Ok((
        u64::from(info.dwVolumeSerialNumber),
        (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
    ))
}

/// Whether `path` still names `file` (a symbolic link there is not
/// followed); `None` when nothing is there.
///
/// # Errors
///
/// When either cannot be looked at.
pub fn names(path: &Path, file: &File) -> io::Result<Option<bool>> {
    let there = OpenOptions::new()
        .access_mode(0)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .open(path);
    match there {
        Ok(there) => Ok(Some(file_id(&there)? == file_id(file)?)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether an open without following (`no_follow`, `fd::open_in`) met a
/// symbolic link.
pub fn met_link(e: &io::Error) -> bool {
    e.raw_os_error() == Some(ERROR_CANT_ACCESS_FILE.cast_signed())
}

/// Whether opening a directory (`fd::open_dir`) met a symbolic link or
/// something that is not a directory.
pub fn met_non_dir(e: &io::Error) -> bool {
    met_link(e) || e.raw_os_error() == Some(ERROR_DIRECTORY.cast_signed())
}

/// Whether an open without following met a symbolic link (a reparse
/// point opened as itself is refused by its type instead, once opened).
pub fn met_special(e: &io::Error) -> bool {
    met_link(e)
}

/// No special files (FIFOs, devices) are found by path here.
pub fn special_kind(_: FileType) -> Option<&'static str> {
    None
}

/// Sets `options` to open a reparse point (a symbolic link, a junction)
/// itself rather than what it names, which is then refused by its type
/// (not a regular file). With
/// `create`, a file is created even when `options` only read.
pub fn no_follow(options: &mut OpenOptions, _mode: u32, create: bool) -> &mut OpenOptions {
    if create {
        options.append(true).create(true);
    }
    options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
}

/// `file`, to read its content while another thread waits for its lock:
/// opened anew (`ReOpenFile`), a file object of its own, since a thread
/// waiting for a lock through a synchronous file object holds up every
/// other call on that object.
///
/// # Errors
///
/// As `ReOpenFile`.
pub fn for_reading(file: &File) -> io::Result<File> {
    reopen_read(file)
}

/// `file` opened again, to read, with a position of its own.
///
/// # Errors
///
/// As `ReOpenFile`.
pub fn reopen_read(file: &File) -> io::Result<File> {
    use std::os::windows::io::FromRawHandle;
    use windows_sys::Win32::Foundation::{GENERIC_READ, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, ReOpenFile,
    };
    // SAFETY: the handle is open for the call; the one returned, if
    // valid, is new and ours alone.
    let handle = unsafe {
        ReOpenFile(
            file.as_raw_handle(),
            GENERIC_READ,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            0,
        )
    };
    if handle == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `handle` is a new handle that nothing else owns.
    Ok(File::from(unsafe {
        std::os::windows::io::OwnedHandle::from_raw_handle(handle)
    }))
}

/// Nothing to do: who may read a file comes from its folder's access
/// control list.
///
/// # Errors
///
/// Never.
pub fn readable_by_all(_file: &File) -> io::Result<()> {
    Ok(())
}

/// Where the locks that order the processes sharing a state file lie: one
/// byte far past the end of any record. Windows' locks are mandatory: a
/// lock over the whole file, as std takes one, would keep other processes
/// from reading it (the holder of a lock that `lock show` names).
const LOCK_AT: u32 = 0x4000_0000;

/// `LockFileEx` with `flags` on the byte at `LOCK_AT` (in its high part).
fn lock_with(file: &File, flags: u32) -> io::Result<()> {
    use windows_sys::Win32::Storage::FileSystem::LockFileEx;
    use windows_sys::Win32::System::IO::OVERLAPPED;
    let mut at = OVERLAPPED::default();
    at.Anonymous.Anonymous.OffsetHigh = LOCK_AT;
    // SAFETY: the handle is open and synchronous (the call returns when
    // the lock is had or refused); `at` lives across the call.
    if unsafe { LockFileEx(file.as_raw_handle(), flags, 0, 1, 0, &raw mut at) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `lock_with`, without waiting: a lock held by another is `WouldBlock`.
fn try_lock_with(file: &File, flags: u32) -> Result<(), std::fs::TryLockError> {
    use windows_sys::Win32::Foundation::ERROR_LOCK_VIOLATION;
    use windows_sys::Win32::Storage::FileSystem::LOCKFILE_FAIL_IMMEDIATELY;
    match lock_with(file, flags | LOCKFILE_FAIL_IMMEDIATELY) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(ERROR_LOCK_VIOLATION.cast_signed()) => {
            Err(std::fs::TryLockError::WouldBlock)
        }
        Err(e) => Err(std::fs::TryLockError::Error(e)),
    }
}

/// `LockFileEx` on the byte at `LOCK_AT`.
impl StateLock for File {
    fn state_lock(&self) -> io::Result<()> {
        lock_with(
            self,
            windows_sys::Win32::Storage::FileSystem::LOCKFILE_EXCLUSIVE_LOCK,
        )
    }

    fn state_lock_shared(&self) -> io::Result<()> {
        lock_with(self, 0)
    }

    fn try_state_lock(&self) -> Result<(), std::fs::TryLockError> {
        try_lock_with(
            self,
            windows_sys::Win32::Storage::FileSystem::LOCKFILE_EXCLUSIVE_LOCK,
        )
    }

    fn try_state_lock_shared(&self) -> Result<(), std::fs::TryLockError> {
        try_lock_with(self, 0)
    }

    fn state_unlock(&self) -> io::Result<()> {
        use windows_sys::Win32::Storage::FileSystem::UnlockFileEx;
        use windows_sys::Win32::System::IO::OVERLAPPED;
        let mut at = OVERLAPPED::default();
        at.Anonymous.Anonymous.OffsetHigh = LOCK_AT;
        // SAFETY: the handle is open; `at` lives across the call.
        if unsafe { UnlockFileEx(self.as_raw_handle(), 0, 1, 0, &raw mut at) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}
