//! The W3C trace context a run joins and hands on: `TRACEPARENT`
//! (`00-<trace id>-<span id>-<flags>`, W3C Trace Context), read from
//! backoff's environment and written for each process it starts. Pure.

use std::fmt;

/// A trace's id: 16 bytes, never all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceId(pub [u8; 16]);

/// A span's id: 8 bytes, never all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    /// A random id (`random` gives the bytes; all zero is drawn again).
    pub fn random(random: &mut impl FnMut() -> u128) -> TraceId {
        loop {
            let id = random().to_be_bytes();
            if id != [0; 16] {
                return TraceId(id);
            }
        }
    }
}

impl SpanId {
    /// A random id (`random` gives the bytes; all zero is drawn again).
    pub fn random(random: &mut impl FnMut() -> u128) -> SpanId {
        loop {
            let bytes = random().to_be_bytes();
            let mut id = [0; 8];
            id.copy_from_slice(&bytes[8..]);
            if id != [0; 8] {
                return SpanId(id);
            }
        }
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// The sampled flag of `TRACEPARENT`'s flags.
pub const SAMPLED: u8 = 0x01;

/// A span's place in a trace, as `TRACEPARENT` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parent {
    /// The trace.
    pub trace: TraceId,
    /// The span.
    pub span: SpanId,
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

impl Parent {
    /// Whether the trace is sampled (recorded and exported).
    pub fn sampled(self) -> bool {
        self.flags & SAMPLED != 0
    }

    /// `TRACEPARENT`'s value naming `span` of this trace, with these
    /// flags: `00-<trace id>-<span id>-<flags>`.
    pub fn header(self) -> String {
        format!("00-{}-{}-{:02x}", self.trace, self.span, self.flags)
    }
}

/// Reads `value` as W3C Trace Context says a `traceparent` is read.
///
/// # Errors
///
/// What is wrong with it, in a few words that do not repeat it: a version
/// that is not two lowercase hex digits or is `ff`, a field of the wrong
/// length, an id of all zeros, or (version 00) anything after the flags.
pub fn parse(value: &str) -> Result<Parent, &'static str> {
    let value = value.trim_matches([' ', '\t']);
    let bytes = value.as_bytes();
    let hex = |s: &[u8]| {
        s.iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    };
    if bytes.len() < 55 {
        return Err("it is shorter than version-traceid-spanid-flags");
    }
    let version = &bytes[..2];
    if !hex(version) || version == b"ff" {
        return Err("its version is not two lowercase hex digits other than ff");
    }
    if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return Err("its fields are not 2, 32, 16 and 2 hex digits between dashes");
    }
    // A later version may add fields, after a dash; version 00 adds none.
    if (version == b"00" && bytes.len() != 55) || (bytes.len() > 55 && bytes[55] != b'-') {
        return Err("something follows its flags");
    }
    let (trace, span, flags) = (&bytes[3..35], &bytes[36..52], &bytes[53..55]);
    if !hex(trace) || !hex(span) || !hex(flags) {
        return Err("its ids and flags are not lowercase hex digits");
    }
    let mut t = [0; 16];
    let mut s = [0; 8];
    decode(trace, &mut t);
    decode(span, &mut s);
    if t == [0; 16] {
        return Err("its trace id is all zeros");
    }
    if s == [0; 8] {
        return Err("its parent id is all zeros");
    }
    let mut f = [0; 1];
    decode(flags, &mut f);
    // The flags defined: sampled, and random (level 2); vendors must set
    // the others to zero.
    let flags = f[0] & 0x03;
    Ok(Parent {
        trace: TraceId(t),
        span: SpanId(s),
        flags,
    })
}

/// Lowercase hex digits (checked) into `out`.
fn decode(hex: &[u8], out: &mut [u8]) {
    let digit = |b: u8| {
        if b.is_ascii_digit() {
            b - b'0'
        } else {
            b - b'a' + 10
        }
    };
    for (o, pair) in out.iter_mut().zip(hex.chunks(2)) {
        *o = (digit(pair[0]) << 4) | digit(pair[1]);
    }
}

/// The longest `TRACESTATE` taken into the exported spans (W3C: 32
/// members of at most 256 characters each, so 512 is what a vendor may
/// count on; a longer one is left out of the spans, and passed on as it
/// is).
pub const MAX_TRACESTATE: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_read_and_written_back_alike() {
        let p = parse(GOOD).unwrap();
        assert_eq!(p.trace.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p.span.to_string(), "00f067aa0ba902b7");
        assert!(p.sampled());
        assert_eq!(p.header(), GOOD);
        let unsampled = parse(&GOOD.replace("-01", "-00")).unwrap();
        assert!(!unsampled.sampled());
        // Flags not defined are not passed on.
        assert_eq!(parse(&GOOD.replace("-01", "-ff")).unwrap().flags, 0x03);
        // A later version with more fields: read as 00, its fields dropped.
        let later = parse(&format!("{}-extra", GOOD.replacen("00-", "cc-", 1))).unwrap();
        assert_eq!(later.header(), GOOD);
    }

    #[test]
    fn the_w3c_rules_refuse_what_is_malformed() {
        for bad in [
            "",
            "garbage",
            &GOOD.replacen("00-", "ff-", 1),
            &GOOD.replacen("00-", "0g-", 1),
            &GOOD.to_uppercase(),
            &format!("{GOOD}-more"),
            &format!("{GOOD}0"),
            &GOOD[..54],
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.x",
        ] {
            let why = parse(bad).expect_err(bad);
            assert!(!why.contains("4bf9"), "{why}");
        }
    }

    #[test]
    fn random_ids_are_never_all_zeros() {
        let mut draws = [0u128, 0, 7].into_iter();
        let mut next = || draws.next().unwrap();
        assert_eq!(TraceId::random(&mut next).0[15], 7);
        let mut draws = [1u128 << 64, 5].into_iter();
        let mut next = || draws.next().unwrap();
        assert_eq!(SpanId::random(&mut next).0, [0, 0, 0, 0, 0, 0, 0, 5]);
    }
}
