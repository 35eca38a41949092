//! Where a reply of a Redis server ends, found as its bytes come in, and
//! within bounds. A reply is framed before it is parsed: the framer looks
//! at each byte once, whatever the pieces the bytes come in (a line split
//! over many reads is searched on from where the last search stopped), so
//! that a server that trickles a reply costs time in proportion to what it
//! sends, never more. A reply longer than its limit, or that declares a
//! string or an aggregate longer than that (`$1000000000`), is refused as
//! soon as that is known, as is one nested deeper than any reply backoff
//! asks for. The reply found is then parsed whole, once, by the redis
//! crate's parser, which never sees more than the limit.

/// How deep aggregates (arrays, maps, sets) may nest in a reply: a script's
/// reply is one array, a cluster's slot map four levels deep.
const MAX_DEPTH: usize = 16;

/// What the bytes read so far hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// A reply: the first this many bytes.
    Complete(usize),
    /// The start of a reply that goes on.
    Partial,
    /// A reply longer than the limit, or one that declares so.
    TooLong,
    /// Not a reply of the protocol: why.
    Invalid(&'static str),
}

/// The framing of one reply, carried on from one read to the next.
#[derive(Debug)]
pub struct Framer {
    /// The longest a reply may be, in bytes.
    limit: usize,
    /// Where the next line starts.
    at: usize,
    /// How far the line at `at` has been searched for its end.
    searched: usize,
    /// Where the string whose length line was read ends (past its CRLF).
    string_end: Option<usize>,
    /// For each aggregate open, how many items it still awaits.
    open: Vec<usize>,
}

impl Framer {
    /// The framing of a reply of at most `limit` bytes.
    pub fn new(limit: usize) -> Framer {
        Framer {
            limit,
            at: 0,
            searched: 0,
            string_end: None,
            open: Vec::new(),
        }
    }

    /// What `bytes` hold: each call is given the bytes of the last one and
    /// those read since, and goes on where the last one stopped.
    pub fn scan(&mut self, bytes: &[u8]) -> Scan {
        loop {
            if let Some(end) = self.string_end {
                if bytes.len() < end {
                    return self.partial(bytes);
                }
                if &bytes[end - 2..end] != b"\r\n" {
                    return Scan::Invalid("a string longer than its length");
                }
                self.string_end = None;
                self.at = end;
                if let Some(done) = self.item_done() {
                    return done;
                }
                continue;
            }
            let from = self.searched.max(self.at);
            let Some(found) = memchr::memmem::find(&bytes[from..], b"\r\n") else {
                // A '\r' last may be the start of the CRLF still to come.
                self.searched = bytes.len().saturating_sub(1).max(self.at);
                return self.partial(bytes);
            };
            let line_end = from + found;
            let line = &bytes[self.at..line_end];
            self.at = line_end + 2;
            self.searched = self.at;
            let Some((&kind, rest)) = line.split_first() else {
                return Scan::Invalid("an empty line");
            };
            let items = match kind {
                // Simple strings, errors, integers, nulls, booleans,
                // doubles, big numbers: the line is the item.
                b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => 0,
                // Bulk strings, bulk errors, verbatim strings: a length,
                // then that many bytes and a CRLF.
                b'$' | b'!' | b'=' => match length(rest) {
                    Some(-1) if kind == b'$' => 0,
                    Some(n) if n >= 0 => {
                        let end = usize::try_from(n)
                            .ok()
                            .and_then(|n| self.at.checked_add(n)?.checked_add(2))
                            .filter(|&end| end <= self.limit);
                        let Some(end) = end else {
                            return Scan::TooLong;
                        };
                        self.string_end = Some(end);
                        continue;
                    }
                    _ => return Scan::Invalid("a string of no valid length"),
                },
                // Arrays, sets, pushes: a count of items; maps and
                // attributes: of pairs (an attribute comes before the item
                // it describes).
                b'*' | b'~' | b'>' | b'%' | b'|' => match length(rest) {
                    Some(-1) if kind == b'*' => 0,
                    Some(n) if n >= 0 => {
                        // Every item takes three bytes at least.
                        let Some(n) = usize::try_from(n).ok().filter(|&n| n <= self.limit / 3)
                        else {
                            return Scan::TooLong;
                        };
                        match kind {
                            b'%' => 2 * n,
                            b'|' => 2 * n + 1,
                            _ => n,
                        }
                    }
                    _ => return Scan::Invalid("an aggregate of no valid length"),
                },
                _ => return Scan::Invalid("a line of no known type"),
            };
            if self.at > self.limit {
                return Scan::TooLong;
            }
            if items > 0 {
                if self.open.len() == MAX_DEPTH {
                    return Scan::Invalid("aggregates nested too deep");
                }
                self.open.push(items);
            } else if let Some(done) = self.item_done() {
                return done;
            }
        }
    }

    /// A reply not complete in `bytes`: partial while it may still end
    /// within the limit.
    fn partial(&self, bytes: &[u8]) -> Scan {
        if bytes.len() >= self.limit {
            Scan::TooLong
        } else {
            Scan::Partial
        }
    }

    /// An item ends at `at`: the aggregates it completes are closed, and
    /// the reply is complete when none is left open.
    fn item_done(&mut self) -> Option<Scan> {
        while let Some(left) = self.open.last_mut() {
            *left -= 1;
            if *left > 0 {
                return None;
            }
            self.open.pop();
        }
        Some(Scan::Complete(self.at))
    }
}

/// The length of a length line: `-1`, or digits alone (at most 18, so
/// that it fits).
fn length(digits: &[u8]) -> Option<i64> {
    if digits == b"-1" {
        return Some(-1);
    }
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a framer of `limit` makes of `reply`, given in pieces of
    /// `piece` bytes.
    fn framed(reply: &[u8], limit: usize, piece: usize) -> Scan {
        let mut framer = Framer::new(limit);
        let mut end = 0;
        loop {
            end = (end + piece).min(reply.len());
            let scan = framer.scan(&reply[..end]);
            if scan != Scan::Partial || end == reply.len() {
                return scan;
            }
        }
    }

    #[test]
    fn a_reply_is_framed_whatever_the_pieces_it_comes_in() {
        let replies: [&[u8]; 9] = [
            b"+OK\r\n",
            b"-ERR no\r\n",
            b":42\r\n",
            b"$5\r\nhe\r\no\r\n",
            b"$-1\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"*3\r\n$1\r\na\r\n*2\r\n:1\r\n:2\r\n+x\r\n",
            b"%1\r\n+k\r\n~2\r\n_\r\n#t\r\n",
        ];
        for reply in replies {
            for piece in [1, 2, 3, 7, reply.len()] {
                assert_eq!(
                    framed(reply, 1024, piece),
                    Scan::Complete(reply.len()),
                    "{:?} in pieces of {piece}",
                    String::from_utf8_lossy(reply)
                );
            }
        }
        // What comes after a reply is not part of it.
        assert_eq!(framed(b"+OK\r\n+next\r\n", 1024, 1), Scan::Complete(5));
        // An attribute comes before the item it describes.
        let attributed = b"|1\r\n+ttl\r\n:3\r\n$2\r\nhi\r\n";
        assert_eq!(
            framed(attributed, 1024, 1),
            Scan::Complete(attributed.len())
        );
    }

    #[test]
    fn a_reply_past_its_limit_or_declaring_so_is_too_long() {
        let endless = [b"+".as_slice(), &[b'a'; 100]].concat();
        assert_eq!(framed(&endless, 64, 5), Scan::TooLong);
        assert_eq!(framed(&endless[..50], 64, 5), Scan::Partial);
        // Declared: refused before a byte of it comes.
        assert_eq!(framed(b"$1000000000\r\n", 64, 100), Scan::TooLong);
        assert_eq!(framed(b"$999999999999999999\r\n", 64, 100), Scan::TooLong);
        assert_eq!(framed(b"*1000000\r\n", 64, 100), Scan::TooLong);
        // Exactly the limit is allowed, one more byte is not.
        assert_eq!(framed(b"$3\r\nabc\r\n", 9, 1), Scan::Complete(9));
        assert_eq!(framed(b"$3\r\nabc\r\n", 8, 1), Scan::TooLong);
        assert_eq!(framed(b"+abcd\r\n", 7, 1), Scan::Complete(7));
        assert_eq!(framed(b"+abcd\r\n", 6, 1), Scan::TooLong);
    }

    #[test]
    fn what_is_no_reply_is_invalid() {
        for bad in [
            b"\r\n".as_slice(),
            b"?x\r\n",
            b"$x\r\n",
            b"$-2\r\n",
            b"!-1\r\n",
            b"*+1\r\n",
            b"%-1\r\n",
            b"$3\r\nabcd\r\n",
        ] {
            assert!(
                matches!(framed(bad, 1024, 1), Scan::Invalid(_)),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let deep = b"*1\r\n".repeat(MAX_DEPTH + 1);
        assert_eq!(
            framed(&deep, 1024, 3),
            Scan::Invalid("aggregates nested too deep")
        );
        let deepest = [b"*1\r\n".repeat(MAX_DEPTH), b":1\r\n".to_vec()].concat();
        assert_eq!(framed(&deepest, 1024, 3), Scan::Complete(deepest.len()));
    }

    #[test]
    fn a_line_trickled_a_byte_at_a_time_is_searched_once() {
        let mut framer = Framer::new(1 << 20);
        let line = [b"+".as_slice(), &[b'a'; 10_000], b"\r\n"].concat();
        for end in 1..line.len() {
            assert_eq!(framer.scan(&line[..end]), Scan::Partial);
            assert!(
                framer.searched + 1 >= end,
                "searched from {}",
                framer.searched
            );
        }
        assert_eq!(framer.scan(&line), Scan::Complete(line.len()));
    }

    /// A reply the redis crate can parse, as its bytes.
    fn reply() -> impl Strategy<Value = Vec<u8>> {
        let leaf = prop_oneof![
            "[a-z ]{0,20}".prop_map(|s| format!("+{s}\r\n").into_bytes()),
            "[A-Z]{1,8} [a-z ]{0,20}".prop_map(|s| format!("-{s}\r\n").into_bytes()),
            any::<i64>().prop_map(|n| format!(":{n}\r\n").into_bytes()),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(|b| {
                [
                    format!("${}\r\n", b.len()).into_bytes(),
                    b,
                    b"\r\n".to_vec(),
                ]
                .concat()
            }),
            Just(b"$-1\r\n".to_vec()),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            proptest::collection::vec(inner, 0..8).prop_map(|items| {
                [format!("*{}\r\n", items.len()).into_bytes(), items.concat()].concat()
            })
        })
    }

    proptest::proptest! {
        #[test]
        fn any_reply_is_framed_at_its_end_in_any_pieces(
            reply in reply(),
            piece in 1usize..64,
        ) {
            prop_assert!(redis::parse_redis_value(&reply).is_ok());
            prop_assert_eq!(framed(&reply, 1 << 20, piece), Scan::Complete(reply.len()));
            let mut more = reply.clone();
            more.extend_from_slice(b"+after\r\n");
            prop_assert_eq!(framed(&more, 1 << 20, piece), Scan::Complete(reply.len()));
            prop_assert_eq!(framed(&reply[..reply.len() - 1], 1 << 20, piece), Scan::Partial);
        }

        #[test]
        fn any_bytes_are_framed_within_the_limit_and_never_panic(
            bytes in proptest::collection::vec(
                prop_oneof![
                    Just(b'\r'), Just(b'\n'), Just(b'*'), Just(b'$'), Just(b'%'),
                    Just(b'|'), Just(b'-'), Just(b'1'), Just(b'9'), any::<u8>(),
                ],
                0..200,
            ),
            limit in 1usize..300,
            piece in 1usize..20,
        ) {
            match framed(&bytes, limit, piece) {
                Scan::Complete(n) => prop_assert!(n <= limit && n <= bytes.len()),
                Scan::Partial => prop_assert!(bytes.len() < limit),
                Scan::TooLong | Scan::Invalid(_) => {}
            }
        }
    }
}
