//! `--lock-replace` on one host: the run that wants the lock asks its
//! holder to end by writing a request, `KEY.lock.replace`, beside the lock
//! file (behind the same checks as every state file), naming the holder's
//! run id and its own record:
//!
//! ```text
//! backoff-lock v1 replace 6f1c…-…
//! backoff-lock v1 pid 4242 since 1764864000000 token - run 9a0e…-… host web-3
//! ```
//!
//! The holder looks at it every `file_lock::WATCH`, beside its lock file's
//! path: a request that names its run id takes the lock from it, and it
//! ends as for a lock lost (its attempt ended as on a timeout), with reason
//! `replaced`. Meanwhile the new run waits in the kernel's queue of the
//! lock, which hands the lock over once the holder has let go: never two
//! holders at once. No process is signalled: a record that names another
//! pid (written by anyone who could write the directory) ends nothing but
//! the backoff that holds the lock, and only a process of the same user
//! (the state directory is this user's alone) reads the request. A holder
//! that this host can see running as another user is refused all the same,
//! with a line.

use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::time::Duration;

use crate::fleet::lock::{Holder, Lease, MAX_RECORD};
use crate::report::Warnings;
use crate::store::StoreError;
use crate::store::file::{Access, StateFile, failed};

/// How long a run of `--lock-replace` waits, at least, for the holder it
/// asked to end to let go: time to see the request, end its attempt
/// (`--kill-after` after `--signal`), run `--on-give-up` and let go.
pub fn patience(lease: Lease) -> Duration {
    lease.kill_after.saturating_add(ENDING)
}

/// What a replaced holder may take beyond `--kill-after` to let go.
const ENDING: Duration = Duration::from_secs(30);

/// The first line of a request.
const HEAD: &str = "backoff-lock v1 replace ";

/// The requests of `--lock-replace` for one lock.
#[derive(Debug, Clone)]
pub(super) struct Replace {
    file: StateFile,
    /// How long the run waits for the holder it asked to end.
    pub(super) patience: Duration,
    warnings: Warnings,
}

impl Replace {
    /// The requests of the lock whose file is `KEY.lock`, in `file`
    /// (`KEY.lock.replace`).
    pub(super) fn new(file: StateFile, patience: Duration, warnings: Warnings) -> Replace {
        Replace {
            file,
            patience,
            warnings,
        }
    }

    /// Asks `holder` to end and let `me` take the lock over: whether it was
    /// asked. A holder that runs here as another user is not: that is said
    /// on a line no output mode hides.
    ///
    /// # Errors
    ///
    /// When the request cannot be written.
    pub(super) fn ask(&self, holder: &Holder, me: &Holder) -> Result<bool, StoreError> {
        if holder.host == crate::sys::machine::host_name()
            && crate::sys::signals::another_users(holder.pid)
        {
            self.warnings.alert(&format!(
                "--lock-replace: the lock's holder, pid {} on {}, runs as another user, whose run this one may not end; not running the command (exit --lock-exit): run both as one user",
                holder.pid, holder.host
            ));
            return Ok(false);
        }
        let text = format!("{HEAD}{}\n{}", holder.run_id, me.record());
        let (mut file, path) = self
            .file
            .open_file(Access::Change)?
            .ok_or_else(|| StoreError::Failed("the request to replace cannot be made".into()))?;
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(text.as_bytes()))
            .and_then(|()| file.set_len(text.len() as u64))
            .map_err(|e| failed(&path, &e))?;
        Ok(true)
    }

    /// Whether a request names the run `run_id`: how the run that asked is
    /// named, if one does. A request that cannot be read is none.
    pub(super) fn asked(&self, run_id: &str) -> Option<String> {
        let (target, by) = self.read()?;
        (target == run_id).then(|| {
            by.map_or_else(
                || "another run asked for it (--lock-replace)".to_owned(),
                |h| {
                    format!(
                        "run {} (pid {} on {}) asked for it (--lock-replace)",
                        h.run_id, h.pid, h.host
                    )
                },
            )
        })
    }

    /// Removes the request that named the run `run_id`, once the run that
    /// asked holds the lock (a later request, for another run, is left).
    pub(super) fn done(&self, run_id: &str) {
        if self.read().is_some_and(|(target, _)| target == run_id)
            && let Ok(Some((_, path))) = self.file.open_file(Access::Look)
        {
            let _ = std::fs::remove_file(path);
        }
    }

    /// Takes back the request this run (`me`) made to end the run
    /// `run_id`, when this run will not take the lock after all (a signal
    /// ended its wait): a holder that has not seen it yet runs on. A
    /// request made since by another run is left.
    pub(super) fn withdraw(&self, run_id: &str, me: &Holder) {
        if self.read().is_some_and(|(target, by)| {
            target == run_id && by.is_some_and(|b| b.run_id == me.run_id)
        }) && let Ok(Some((_, path))) = self.file.open_file(Access::Look)
        {
            let _ = std::fs::remove_file(path);
        }
    }

    /// The run id a request names, and the record of the run that wrote
    /// it; read within bounds, `None` for no request or one out of shape.
    fn read(&self) -> Option<(String, Option<Holder>)> {
        let (file, _) = self.file.open_file(Access::Look).ok()??;
        let mut text = Vec::with_capacity(2 * MAX_RECORD);
        file.take(2 * MAX_RECORD as u64)
            .read_to_end(&mut text)
            .ok()?;
        let text = std::str::from_utf8(&text).ok()?;
        let (first, rest) = text.split_once('\n')?;
        let target = first.strip_prefix(HEAD)?;
        if target.is_empty()
            || target.len() > 64
            || !target
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            return None;
        }
        Some((target.to_owned(), Holder::parse(rest.as_bytes())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::file::StateDir;

    fn holder(run_id: &str) -> Holder {
        Holder {
            pid: 4242,
            since_ms: 1,
            token: None,
            run_id: run_id.to_owned(),
            host: "elsewhere.example".to_owned(),
        }
    }

    #[test]
    fn a_request_names_one_run_and_anything_else_is_none() -> Result<(), String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let store = dir.path().join("store");
        let file = StateFile::new(
            StateDir::Given(store.clone()),
            "job",
            "lock.replace",
            Duration::from_secs(5),
        );
        let r = Replace::new(file, Duration::from_secs(35), Warnings::default());
        assert_eq!(r.asked("old"), None);
        // A holder of another host is asked: its pid is not this host's.
        assert_eq!(r.ask(&holder("old"), &holder("new")), Ok(true));
        let by = r.asked("old").ok_or("no request")?;
        assert!(
            by.contains("run new (pid 4242 on elsewhere.example) asked for it"),
            "{by}"
        );
        assert_eq!(r.asked("new"), None);
        // Done for another run: left; for the run it names: removed.
        r.done("new");
        assert!(r.asked("old").is_some());
        r.done("old");
        assert_eq!(r.asked("old"), None);
        // What is not a request names nobody, however long or hostile.
        let path = store.join("job.lock.replace");
        for bad in [
            vec![b'x'; 1 << 20],
            b"backoff-lock v1 replace old".to_vec(),
            b"backoff-lock v1 replace \nx".to_vec(),
            b"backoff-lock v1 replace o\x1bld\n".to_vec(),
            format!("backoff-lock v1 replace {}\n", "a".repeat(65)).into_bytes(),
            b"backoff-lock v2 replace old\n".to_vec(),
            vec![0xff, 0xfe, b'\n'],
        ] {
            std::fs::write(&path, &bad).map_err(|e| e.to_string())?;
            assert_eq!(r.asked("old"), None, "{:?}", String::from_utf8_lossy(&bad));
        }
        // A request whose writer's record is out of shape still names its
        // target.
        std::fs::write(&path, "backoff-lock v1 replace old\ngarbage").map_err(|e| e.to_string())?;
        assert_eq!(
            r.asked("old").as_deref(),
            Some("another run asked for it (--lock-replace)")
        );
        Ok(())
    }
}
