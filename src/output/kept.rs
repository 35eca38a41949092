//! The output `--output on-failure` keeps: every chunk of the run's stdout
//! and stderr in the order backoff read it, in unlinked temporary files,
//! bounded by `--output-limit`: the first half of the limit from the start
//! of the run (the head), the last half up to its end (the tail), and a
//! count of the bytes cut between them. Memory holds no more than one
//! chunk, however much the run writes.
//!
//! Each chunk is a record: the stream (1 byte: 1 stdout, 2 stderr), its
//! length (4 bytes, little-endian), its bytes. The tail is two files used
//! in turn: when the one being written holds the tail's share, the other is
//! emptied and written next, so that the two together always hold at least
//! the last share (the files hold at most one and a half times the limit),
//! and the oldest bytes beyond the share are skipped when the tail is
//! written out.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};

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

/// One part of the kept output: a file of records and the bytes of output
/// it holds.
struct Part {
    file: File,
    bytes: u64,
}

impl Part {
    fn new() -> io::Result<Part> {
        Ok(Part {
            file: tempfile::tempfile()?,
            bytes: 0,
        })
    }

    fn put(&mut self, stream: Stream, data: &[u8]) -> io::Result<()> {
        let len = u32::try_from(data.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
        let mut record = Vec::with_capacity(data.len() + 5);
        record.push(stream.byte());
        record.extend_from_slice(&len.to_le_bytes());
        record.extend_from_slice(data);
        self.file.write_all(&record)?;
        self.bytes += data.len() as u64;
        Ok(())
    }

    fn empty(&mut self) -> io::Result<()> {
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.bytes = 0;
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
        let mut reader = BufReader::new(&mut self.file);
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
        self.file.seek(SeekFrom::End(0))?;
        Ok(())
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
    /// The first error of the temporary files, if any: what came after it
    /// is not kept.
    failed: Option<io::Error>,
}

/// What became of the kept output once written out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Written {
    /// Bytes of output cut between the head and the tail.
    pub cut: u64,
}

impl Kept {
    /// Keeps at most `limit` bytes of output (at least 2).
    ///
    /// # Errors
    ///
    /// When the temporary files cannot be made.
    pub fn new(limit: u64) -> io::Result<Kept> {
        let limit = limit.max(2);
        let head_share = limit / 2;
        Ok(Kept {
            head_share,
            tail_share: limit - head_share,
            head: Part::new()?,
            tail: [Part::new()?, Part::new()?],
            current: 0,
            seen: 0,
            failed: None,
        })
    }

    /// Keeps a chunk of `stream`.
    pub fn take(&mut self, stream: Stream, data: &[u8]) {
        self.seen += data.len() as u64;
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = self.put(stream, data) {
            self.failed = Some(e);
        }
    }

    fn put(&mut self, stream: Stream, mut data: &[u8]) -> io::Result<()> {
        let room = self.head_share - self.head.bytes;
        if room > 0 {
            let n = usize::try_from(room).unwrap_or(usize::MAX).min(data.len());
            self.head.put(stream, &data[..n])?;
            data = &data[n..];
        }
        // Each tail file holds the tail's whole share: once one is full,
        // the other is emptied to take what follows, and the full one
        // holds what the tail needs before it.
        let share = self.tail_share;
        while !data.is_empty() {
            let part = &mut self.tail[self.current];
            let room = share - part.bytes.min(share);
            if room == 0 {
                self.current = 1 - self.current;
                self.tail[self.current].empty()?;
                continue;
            }
            let n = usize::try_from(room).unwrap_or(usize::MAX).min(data.len());
            part.put(stream, &data[..n])?;
            data = &data[n..];
        }
        Ok(())
    }

    /// Bytes of output seen in all.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Why the temporary files stopped taking output, if they did.
    pub fn failure(&self) -> Option<&io::Error> {
        self.failed.as_ref()
    }

    /// Calls `each` with the kept output in order, and `cut` once, between
    /// the head and the tail, with the bytes left out there (not at all
    /// when none were).
    ///
    /// # Errors
    ///
    /// The first error of `each`, `cut` or the temporary files.
    pub fn replay(
        &mut self,
        each: &mut dyn FnMut(Stream, &[u8]) -> io::Result<()>,
        cut: &mut dyn FnMut(u64) -> io::Result<()>,
    ) -> io::Result<Written> {
        self.head.replay(0, each)?;
        let older = 1 - self.current;
        let tail_bytes = self.tail[0].bytes + self.tail[1].bytes;
        let skip = tail_bytes.saturating_sub(self.tail_share);
        let kept = self.head.bytes + tail_bytes - skip;
        let dropped = self.seen.saturating_sub(kept);
        if dropped > 0 {
            cut(dropped)?;
        }
        let first = self.tail[older].bytes;
        self.tail[older].replay(skip, each)?;
        self.tail[self.current].replay(skip.saturating_sub(first), each)?;
        Ok(Written { cut: dropped })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept output as (stream, text) chunks, with `[cut N]` where
    /// bytes were left out.
    fn replayed(kept: &mut Kept) -> Vec<(Stream, String)> {
        let mut out = Vec::new();
        let mut cuts = Vec::new();
        {
            let chunks = std::cell::RefCell::new(&mut out);
            kept.replay(
                &mut |s, d| {
                    chunks
                        .borrow_mut()
                        .push((s, String::from_utf8_lossy(d).into_owned()));
                    Ok(())
                },
                &mut |n| {
                    cuts.push(n);
                    chunks
                        .borrow_mut()
                        .push((Stream::Err, format!("[cut {n}]")));
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
    fn replaying_twice_gives_the_same_and_taking_goes_on_after() {
        let mut kept = Kept::new(8).unwrap();
        kept.take(Stream::Out, b"0123456789");
        let first = replayed(&mut kept);
        assert_eq!(first, replayed(&mut kept));
        kept.take(Stream::Out, b"ab");
        assert_eq!(text(&replayed(&mut kept)), "0123[cut 4]89ab");
    }
}
