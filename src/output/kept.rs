//! The output `--output on-failure` keeps: every chunk of the run's stdout
//! and stderr in the order backoff read it, in unlinked temporary files,
//! bounded by `--output-limit`: the first half of the limit from the start
//! of the run (the head), the last half up to its end (the tail), and a
//! count of the bytes cut between them. Memory holds no more than one
//! chunk, however much the run writes (and `MEMORY_TAIL` bytes more once
//! the files are full, below).
//!
//! Each chunk is a record: the stream (1 byte: 1 stdout, 2 stderr), its
//! length (4 bytes, little-endian), its bytes. The tail is two files used
//! in turn: when the one being written holds the tail's share, the other is
//! emptied and written next, so that the two together always hold at least
//! the last share (the files hold at most one and a half times the limit),
//! and the oldest bytes beyond the share are skipped when the tail is
//! written out.
//!
//! When the temporary files cannot take more (a full `TMPDIR`, a quota),
//! what they hold stays as it is (a record the disk filled in the middle
//! of keeps what was written of it), and the end of the output from then
//! on is kept in memory (`MEMORY_TAIL` bytes at most): the error a failed run
//! ends with, and backoff's closing lines, are at its end. A line between
//! them says how much is missing and why.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};

use crate::sys::fd::TEMP_VARIABLE;

/// The most output kept in memory once the temporary files can take no
/// more (less with a smaller `--output-limit`: half of it).
pub const MEMORY_TAIL: u64 = 64 * 1024;

/// Which of the command's streams a chunk came on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Its stdout.
    Out,
    /// Its stderr (backoff's own lines included).
    Err,
}

impl Stream {
    fn byte(self) -> u8 {
        match self {
            Stream::Out => 1,
            Stream::Err => 2,
        }
    }

    fn from_byte(b: u8) -> Option<Stream> {
        match b {
            1 => Some(Stream::Out),
            2 => Some(Stream::Err),
            _ => None,
        }
    }
}

/// One part of the kept output: a file of records, the bytes of output
/// it holds, and the length of its whole records (a record that could
/// not be written whole is no part of it).
struct Part {
    file: File,
    bytes: u64,
    end: u64,
}

impl Part {
    fn new() -> io::Result<Part> {
        Ok(Part {
            file: tempfile::tempfile()?,
            bytes: 0,
            end: 0,
        })
    }

    /// Adds a record of `data`, or of as much of it as the file takes;
    /// when it cannot take all of it, says how much it took, and why not
    /// the rest.
    fn put(&mut self, stream: Stream, data: &[u8]) -> Result<(), (usize, io::Error)> {
        let len = u32::try_from(data.len()).map_err(|_| (0, io::ErrorKind::InvalidInput.into()))?;
        let mut record = Vec::with_capacity(data.len() + 5);
        record.push(stream.byte());
        record.extend_from_slice(&len.to_le_bytes());
        record.extend_from_slice(data);
        let mut written = 0;
        while written < record.len() {
            match self.file.write(&record[written..]) {
                Ok(0) => return Err(self.keep_part(written, io::ErrorKind::WriteZero.into())),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.keep_part(written, e)),
            }
        }
        self.end += record.len() as u64;
        self.bytes += data.len() as u64;
        Ok(())
    }

    /// Keeps the part of the record being added that the file took
    /// (`written` bytes, its head included), its length set to what it
    /// holds; without its head, nothing of it. Returns the bytes of output
    /// kept, and `e`.
    fn keep_part(&mut self, written: usize, e: io::Error) -> (usize, io::Error) {
        let start = self.end;
        let data = written.saturating_sub(5);
        let len = u32::try_from(data).unwrap_or(0).to_le_bytes();
        let kept = data > 0
            && self.file.seek(SeekFrom::Start(start + 1)).is_ok()
            && self.file.write_all(&len).is_ok();
        let kept = if kept { data } else { 0 };
        let end = start + if kept > 0 { 5 + kept as u64 } else { 0 };
        // What is beyond goes, if it can; else `end` leaves it out.
        let _ = self.file.set_len(end);
        let _ = self.file.seek(SeekFrom::Start(end));
        self.end = end;
        self.bytes += kept as u64;
        (kept, e)
    }

    fn empty(&mut self) -> io::Result<()> {
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.bytes = 0;
        self.end = 0;
        Ok(())
    }

    /// Calls `each` with every record's stream and bytes, in order, the
    /// first `skip` bytes of output left out.
    fn replay(
        &mut self,
        mut skip: u64,
        each: &mut dyn FnMut(Stream, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        self.file.flush()?;
        self.file.seek(SeekFrom::Start(0))?;
        let end = self.end;
        let mut reader = BufReader::new((&mut self.file).take(end));
        let mut head = [0u8; 5];
        let mut data = Vec::new();
        loop {
            match reader.read_exact(&mut head) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                other => other?,
            }
            let stream = Stream::from_byte(head[0]).ok_or(io::ErrorKind::InvalidData)?;
            let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
            data.resize(len, 0);
            reader.read_exact(&mut data)?;
            let from = usize::try_from(skip.min(len as u64)).unwrap_or(len);
            skip -= from as u64;
            if from < len {
                each(stream, &data[from..])?;
            }
        }
        self.file.seek(SeekFrom::Start(end))?;
        Ok(())
    }
}

/// The end of the output kept in memory once the temporary files can take
/// no more: chunks with their stream, `most` bytes in all at most, the
/// oldest bytes dropped first.
struct Memory {
    chunks: VecDeque<(Stream, Vec<u8>)>,
    bytes: u64,
    most: u64,
}

impl Memory {
    fn take(&mut self, stream: Stream, data: &[u8]) {
        let most = usize::try_from(self.most).unwrap_or(usize::MAX);
        let data = &data[data.len().saturating_sub(most)..];
        if data.is_empty() {
            return;
        }
        self.chunks.push_back((stream, data.to_vec()));
        self.bytes += data.len() as u64;
        while self.bytes > self.most {
            let over = usize::try_from(self.bytes - self.most).unwrap_or(usize::MAX);
            let Some((_, first)) = self.chunks.front_mut() else {
                break;
            };
            if first.len() <= over {
                self.bytes -= first.len() as u64;
                self.chunks.pop_front();
            } else {
                first.drain(..over);
                self.bytes -= over as u64;
            }
        }
    }
}

/// The output kept so far.
pub struct Kept {
    /// The head's share of the limit, in bytes of output.
    head_share: u64,
    /// The tail's share.
    tail_share: u64,
    head: Part,
    /// The two files of the tail; `current` is written.
    tail: [Part; 2],
    current: usize,
    /// Bytes of output seen in all.
    seen: u64,
    /// Bytes of output the temporary files took: all of it until they
    /// failed.
    spooled: u64,
    /// The first error of the temporary files, if any: what came after it
    /// is kept in `memory`.
    failed: Option<io::Error>,
    memory: Memory,
}

/// Where some of the output was left out, and why.
#[derive(Debug)]
pub enum Cut<'a> {
    /// Beyond `--output-limit` (`limit` bytes), between the head and the
    /// tail.
    Limit { bytes: u64, limit: u64 },
    /// Once the temporary files could take no more (`why`), before the end
    /// kept in memory.
    Full { bytes: u64, why: &'a io::Error },
}

impl Cut<'_> {
    /// The line that tells of the cut, at its place.
    pub fn message(&self) -> String {
        use crate::report::bytes as size;
        match *self {
            Cut::Limit { bytes, limit } => {
                // An odd limit gives the tail the byte more.
                let (head, tail) = (limit / 2, limit - limit / 2);
                let shares = if head == tail {
                    format!("the first and the last {}", size(head))
                } else {
                    format!("the first {} and the last {}", size(head), size(tail))
                };
                format!(
                    "{} of output cut here: --output-limit {} keeps {shares}",
                    size(bytes),
                    size(limit)
                )
            }
            Cut::Full { bytes, why } => {
                let state = if matches!(
                    why.kind(),
                    io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
                ) {
                    "is full"
                } else {
                    "can take no more"
                };
                format!(
                    "{} of output cut here: the temporary directory '{}' {state} ({}); what follows is the end of the output",
                    size(bytes),
                    std::env::temp_dir().display(),
                    crate::classify::describe(why)
                )
            }
        }
    }
}

impl Kept {
    /// Keeps at most `limit` bytes of output (at least 2).
    ///
    /// # Errors
    ///
    /// When the temporary files cannot be made: the error names the
    /// directory, and says how to give another.
    pub fn new(limit: u64) -> io::Result<Kept> {
        let limit = limit.max(2);
        let head_share = limit / 2;
        let made = || -> io::Result<(Part, [Part; 2])> {
            Ok((Part::new()?, [Part::new()?, Part::new()?]))
        };
        let (head, tail) = made().map_err(|e| {
            let from = if std::env::var_os(TEMP_VARIABLE).is_some() {
                format!(" ({TEMP_VARIABLE})")
            } else {
                String::new()
            };
            io::Error::new(
                e.kind(),
                format!(
                    "cannot make a temporary file in '{}'{from}: {}; set {TEMP_VARIABLE} to a directory backoff can write to",
                    std::env::temp_dir().display(),
                    crate::classify::describe(&e)
                ),
            )
        })?;
        Ok(Kept {
            head_share,
            tail_share: limit - head_share,
            head,
            tail,
            current: 0,
            seen: 0,
            spooled: 0,
            failed: None,
            memory: Memory {
                chunks: VecDeque::new(),
                bytes: 0,
                most: MEMORY_TAIL.min(limit - head_share),
            },
        })
    }

    /// Keeps a chunk of `stream`.
    pub fn take(&mut self, stream: Stream, data: &[u8]) {
        self.seen += data.len() as u64;
        let mut rest = data;
        if self.failed.is_none() {
            let (put, failed) = self.put(stream, data);
            self.spooled += put as u64;
            rest = &data[put..];
            self.failed = failed;
        }
        if self.failed.is_some() {
            self.memory.take(stream, rest);
        }
    }

    /// Writes `data` into the files; returns how many of its bytes they
    /// took, and the error that stopped them, if one did.
    fn put(&mut self, stream: Stream, data: &[u8]) -> (usize, Option<io::Error>) {
        let mut put = 0;
        let room = self.head_share - self.head.bytes;
        if room > 0 {
            let n = usize::try_from(room).unwrap_or(usize::MAX).min(data.len());
            if let Err((took, e)) = self.head.put(stream, &data[..n]) {
                return (took, Some(e));
            }
            put = n;
        }
        // Each tail file holds the tail's whole share: once one is full,
        // the other is emptied to take what follows, and the full one
        // holds what the tail needs before it.
        let share = self.tail_share;
        while put < data.len() {
            let part = &mut self.tail[self.current];
            let room = share - part.bytes.min(share);
            if room == 0 {
                if let Err(e) = self.tail[1 - self.current].empty() {
                    return (put, Some(e));
                }
                self.current = 1 - self.current;
                continue;
            }
            let n = usize::try_from(room)
                .unwrap_or(usize::MAX)
                .min(data.len() - put);
            if let Err((took, e)) = part.put(stream, &data[put..put + n]) {
                return (put + took, Some(e));
            }
            put += n;
        }
        (put, None)
    }

    /// Bytes of output seen in all.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Bytes of output kept: what `replay` gives `each`.
    pub fn kept(&self) -> u64 {
        let tail_bytes = self.tail[0].bytes + self.tail[1].bytes;
        self.head.bytes + tail_bytes.min(self.tail_share) + self.memory.bytes
    }

    /// Calls `each` with the kept output in order, and `cut` where some was
    /// left out, at its place: between the head and the tail, beyond the
    /// limit; before the end kept in memory, once the temporary files
    /// could take no more.
    ///
    /// # Errors
    ///
    /// The first error of `each`, `cut` or the temporary files.
    pub fn replay(
        &mut self,
        each: &mut dyn FnMut(Stream, &[u8]) -> io::Result<()>,
        cut: &mut dyn FnMut(Cut<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.head.replay(0, each)?;
        let older = 1 - self.current;
        let tail_bytes = self.tail[0].bytes + self.tail[1].bytes;
        let skip = tail_bytes.saturating_sub(self.tail_share);
        let kept = self.head.bytes + tail_bytes - skip;
        let dropped = self.spooled.saturating_sub(kept);
        if dropped > 0 {
            cut(Cut::Limit {
                bytes: dropped,
                limit: self.head_share + self.tail_share,
            })?;
        }
        let first = self.tail[older].bytes;
        self.tail[older].replay(skip, each)?;
        self.tail[self.current].replay(skip.saturating_sub(first), each)?;
        if let Some(why) = &self.failed {
            let lost = self.seen - self.spooled - self.memory.bytes;
            if lost > 0 {
                cut(Cut::Full { bytes: lost, why })?;
            }
            for (stream, data) in &self.memory.chunks {
                each(*stream, data)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept output as (stream, text) chunks, with `[cut N]` where
    /// bytes were left out.
    fn replayed(kept: &mut Kept) -> Vec<(Stream, String)> {
        let mut out = Vec::new();
        {
            let chunks = std::cell::RefCell::new(&mut out);
            kept.replay(
                &mut |s, d| {
                    chunks
                        .borrow_mut()
                        .push((s, String::from_utf8_lossy(d).into_owned()));
                    Ok(())
                },
                &mut |cut| {
                    let mark = match cut {
                        Cut::Limit { bytes, .. } => format!("[cut {bytes}]"),
                        Cut::Full { bytes, .. } => format!("[full {bytes}]"),
                    };
                    chunks.borrow_mut().push((Stream::Err, mark));
                    Ok(())
                },
            )
            .unwrap();
        }
        out
    }

    fn text(chunks: &[(Stream, String)]) -> String {
        chunks.iter().map(|(_, t)| t.as_str()).collect()
    }

    #[test]
    fn under_the_limit_everything_is_kept_in_order_with_its_stream() {
        let mut kept = Kept::new(100).unwrap();
        kept.take(Stream::Out, b"one\n");
        kept.take(Stream::Err, b"two\n");
        kept.take(Stream::Out, b"three\n");
        let chunks = replayed(&mut kept);
        assert_eq!(
            chunks,
            vec![
                (Stream::Out, "one\n".to_owned()),
                (Stream::Err, "two\n".to_owned()),
                (Stream::Out, "three\n".to_owned()),
            ]
        );
        assert_eq!(kept.seen(), 14);
    }

    #[test]
    fn over_the_limit_the_head_and_the_tail_are_kept_and_the_cut_counted() {
        let mut kept = Kept::new(20).unwrap();
        let all: String = (0..100).map(|i: u8| char::from(b'a' + i % 26)).collect();
        for piece in all.as_bytes().chunks(7) {
            kept.take(Stream::Out, piece);
        }
        let chunks = replayed(&mut kept);
        let t = text(&chunks);
        assert_eq!(t, format!("{}[cut 80]{}", &all[..10], &all[90..]));
    }

    #[test]
    fn the_tail_is_exact_whatever_the_chunks() {
        for limit in [2u64, 3, 10, 11, 64] {
            for size in [1usize, 2, 5, 13, 200] {
                let mut kept = Kept::new(limit).unwrap();
                let all: Vec<u8> = (0..1000u32)
                    .map(|i| b"0123456789"[i as usize % 10])
                    .collect();
                for piece in all.chunks(size) {
                    kept.take(Stream::Err, piece);
                }
                let head = usize::try_from(limit / 2).unwrap();
                let tail = usize::try_from(limit).unwrap() - head;
                let expected = format!(
                    "{}[cut {}]{}",
                    String::from_utf8_lossy(&all[..head]),
                    1000 - head - tail,
                    String::from_utf8_lossy(&all[1000 - tail..])
                );
                assert_eq!(
                    text(&replayed(&mut kept)),
                    expected,
                    "limit {limit}, chunks {size}"
                );
            }
        }
    }

    #[test]
    fn the_cut_line_names_each_share_of_the_limit_as_kept() {
        let line = |limit| Cut::Limit { bytes: 10, limit }.message();
        assert!(
            line(18).ends_with("--output-limit 18 bytes keeps the first and the last 9 bytes"),
            "{}",
            line(18)
        );
        assert!(
            line(3).ends_with("--output-limit 3 bytes keeps the first 1 byte and the last 2 bytes"),
            "{}",
            line(3)
        );
    }

    #[test]
    fn replaying_twice_gives_the_same_and_taking_goes_on_after() {
        let mut kept = Kept::new(8).unwrap();
        kept.take(Stream::Out, b"0123456789");
        let first = replayed(&mut kept);
        assert_eq!(first, replayed(&mut kept));
        kept.take(Stream::Out, b"ab");
        assert_eq!(text(&replayed(&mut kept)), "0123[cut 4]89ab");
    }

    /// `kept` whose temporary files take no more, as on a full disk: each
    /// is opened anew, read-only, at its end.
    #[cfg(target_os = "linux")]
    fn full(kept: &mut Kept) {
        use std::os::fd::AsFd;
        let [first, second] = &mut kept.tail;
        for part in [&mut kept.head, first, second] {
            part.file = crate::sys::fd::reopen_read_only(part.file.as_fd()).unwrap();
            part.file.seek(SeekFrom::End(0)).unwrap();
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn files_that_take_no_more_keep_what_they_hold_and_the_end_in_memory() {
        // Full from the start: the end alone, and no blame on the limit.
        let mut kept = Kept::new(1 << 20).unwrap();
        full(&mut kept);
        kept.take(Stream::Out, b"one\n");
        kept.take(Stream::Err, b"two\n");
        assert_eq!(
            replayed(&mut kept),
            vec![
                (Stream::Out, "one\n".to_owned()),
                (Stream::Err, "two\n".to_owned()),
            ]
        );
        assert_eq!(kept.kept(), 8);

        // Full during the run: the head held, a line, then the last
        // bytes, at most the memory's share.
        let mut kept = Kept::new(2 * MEMORY_TAIL + 20).unwrap();
        kept.take(Stream::Out, b"start\n");
        full(&mut kept);
        let middle = vec![b'm'; usize::try_from(MEMORY_TAIL).unwrap()];
        kept.take(Stream::Out, &middle);
        kept.take(Stream::Err, b"the error\n");
        let chunks = replayed(&mut kept);
        assert_eq!(chunks[0], (Stream::Out, "start\n".to_owned()));
        assert_eq!(chunks[1], (Stream::Err, "[full 10]".to_owned()));
        assert_eq!(
            chunks.last().unwrap(),
            &(Stream::Err, "the error\n".to_owned())
        );
        let after: usize = chunks[2..].iter().map(|(_, t)| t.len()).sum();
        assert_eq!(after as u64, MEMORY_TAIL);
        assert_eq!(kept.kept(), 6 + MEMORY_TAIL);

        // A small limit keeps a small end.
        let mut kept = Kept::new(8).unwrap();
        full(&mut kept);
        kept.take(Stream::Out, b"0123456789");
        assert_eq!(text(&replayed(&mut kept)), "[full 6]6789");
    }
}
