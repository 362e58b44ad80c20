//! The request parser: RESP arrays of bulk strings and inline commands (replies are
//! [`lockfree_cuckoo_commands::Reply`]).
//!
//! Requests are arrays of bulk strings (what every client library and `redis-cli` send) or
//! inline commands (a line of words, for `telnet` and `nc`). The parser works on the bytes a
//! connection has buffered, resumes where it stopped when more arrive (so a large request is
//! parsed once, not once per read), and refuses any request whose declared size exceeds the
//! configured limits (the request's, and each argument's, Redis's `proto-max-bulk-len`) before
//! anything is allocated for it: the buffer of one connection never holds more than one
//! request's limit plus one read.

use std::fmt;

use lockfree_cuckoo_commands::{parse_i64, Argv};

/// The longest inline command, as in Redis: a line without its newline beyond this is an error.
pub const MAX_INLINE_BYTES: usize = 64 * 1024;
/// The most arguments in one request, as in Redis.
pub const MAX_ARGS: usize = 1024 * 1024;
/// A length line (`*N` or `$N`) longer than this cannot hold a valid number.
const MAX_LENGTH_LINE: usize = 32;

/// Why a request cannot be read. The connection answers with the error and closes, as Redis
/// does: after a framing error nothing that follows can be trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// `*N` with N not a number, or too large.
    InvalidMultibulkLength,
    /// `$N` with N not a number, negative, or over the largest argument (as Redis answers a
    /// bulk over its `proto-max-bulk-len`).
    InvalidBulkLength,
    /// An array element that is not a bulk string.
    ExpectedBulk(u8),
    /// A bulk string not followed by CRLF.
    ExpectedCrlf,
    /// An inline command longer than [`MAX_INLINE_BYTES`] without a newline.
    TooBigInline,
    /// A request whose declared size is over the server's per-request limit.
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Redis's own texts where it has one, so that clients recognise them.
        match self {
            Self::InvalidMultibulkLength => {
                f.write_str("ERR Protocol error: invalid multibulk length")
            }
            Self::InvalidBulkLength => f.write_str("ERR Protocol error: invalid bulk length"),
            Self::ExpectedBulk(got) => {
                write!(f, "ERR Protocol error: expected '$', got '{}'", char::from(*got))
            }
            Self::ExpectedCrlf => f.write_str("ERR Protocol error: expected CRLF after bulk data"),
            Self::TooBigInline => f.write_str("ERR Protocol error: too big inline request"),
            Self::TooLarge { limit } => {
                write!(f, "ERR Protocol error: request larger than the limit of {limit} bytes")
            }
        }
    }
}

impl std::error::Error for ProtocolError {}

/// What [`Parser::parse`] found at the front of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole request of this many bytes; its arguments are [`Parser::args`].
    Request(usize),
    /// This many bytes that hold no request (an empty inline line, an empty array): skip them.
    Nothing(usize),
    /// The request is not all here yet: read more and call again with the longer buffer.
    Incomplete,
}

/// A resumable request parser. Offsets are relative to the start of the request, which is the
/// start of the buffer passed to [`parse`](Self::parse) until a request completes.
#[derive(Debug)]
pub struct Parser {
    limit: usize,
    /// The largest argument.
    max_bulk: usize,
    /// Arguments still to read, once the array header is parsed.
    remaining: Option<usize>,
    /// Where parsing resumes: just past the last complete element.
    cursor: usize,
    /// Each argument as a range of the request's bytes.
    spans: Vec<(usize, usize)>,
}

impl Parser {
    /// A parser that refuses requests larger than `limit` bytes and arguments larger than
    /// `max_bulk` bytes.
    pub fn new(limit: usize, max_bulk: usize) -> Self {
        Self { limit, max_bulk, remaining: None, cursor: 0, spans: Vec::new() }
    }

    /// The arguments of the request that [`parse`](Self::parse) just completed, as ranges of
    /// the buffer it was given.
    pub fn args<'a>(&'a self, request: &'a [u8]) -> Args<'a> {
        Args { request, spans: &self.spans }
    }

    /// Parses the request at the front of `buf`, continuing where the previous call on the same
    /// request stopped (`buf` must start at the same byte and only have grown since).
    ///
    /// After `Request` or `Nothing`, the next call parses a new request: pass the bytes after
    /// the ones reported.
    ///
    /// # Errors
    ///
    /// A [`ProtocolError`] when the bytes cannot be a request; the connection should answer it
    /// and close.
    pub fn parse(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        let outcome = self.step(buf);
        if !matches!(outcome, Ok(Parsed::Incomplete)) {
            self.remaining = None;
            self.cursor = 0;
        }
        outcome
    }

    fn step(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        if self.remaining.is_none() {
            self.spans.clear();
            let Some(&first) = buf.first() else { return Ok(Parsed::Incomplete) };
            if first != b'*' {
                return self.inline(buf);
            }
            let Some((count, next)) = length_line(buf, 1)? else { return Ok(Parsed::Incomplete) };
            let count = count.ok_or(ProtocolError::InvalidMultibulkLength)?;
            if count <= 0 {
                // `*0` and the null array `*-1` ask for nothing.
                return Ok(Parsed::Nothing(next));
            }
            // Every argument takes at least `$0\r\n\r\n`, six bytes: a count the limit cannot
            // hold is refused before any room is reserved for it.
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            if count > MAX_ARGS {
                return Err(ProtocolError::InvalidMultibulkLength);
            }
            if count.saturating_mul(6).saturating_add(next) > self.limit {
                return Err(ProtocolError::TooLarge { limit: self.limit });
            }
            self.spans.reserve(count.min(1024));
            self.remaining = Some(count);
            self.cursor = next;
        }
        while let Some(left) = self.remaining.filter(|&left| left > 0) {
            let at = self.cursor;
            let Some(&marker) = buf.get(at) else { return Ok(Parsed::Incomplete) };
            if marker != b'$' {
                return Err(ProtocolError::ExpectedBulk(marker));
            }
            let Some((len, start)) = length_line(buf, at + 1)? else {
                return Ok(Parsed::Incomplete);
            };
            let len = len
                .and_then(|len| usize::try_from(len).ok())
                .filter(|&len| len <= self.max_bulk)
                .ok_or(ProtocolError::InvalidBulkLength)?;
            // The arguments still to come need six bytes each at least.
            let end = start.saturating_add(len);
            if end.saturating_add(2).saturating_add((left - 1).saturating_mul(6)) > self.limit {
                return Err(ProtocolError::TooLarge { limit: self.limit });
            }
            if buf.len() < end + 2 {
                return Ok(Parsed::Incomplete);
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(ProtocolError::ExpectedCrlf);
            }
            self.spans.push((start, end));
            self.cursor = end + 2;
            self.remaining = Some(left - 1);
        }
        Ok(Parsed::Request(self.cursor))
    }

    /// An inline command: words separated by spaces or tabs, up to a newline.
    fn inline(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        let window = &buf[..buf.len().min(MAX_INLINE_BYTES + 1)];
        let Some(newline) = window.iter().position(|&b| b == b'\n') else {
            return if buf.len() > MAX_INLINE_BYTES {
                Err(ProtocolError::TooBigInline)
            } else {
                Ok(Parsed::Incomplete)
            };
        };
        if newline + 1 > self.limit {
            return Err(ProtocolError::TooLarge { limit: self.limit });
        }
        let line_end = if newline > 0 && buf[newline - 1] == b'\r' { newline - 1 } else { newline };
        let mut at = 0;
        while at < line_end {
            if buf[at] == b' ' || buf[at] == b'\t' {
                at += 1;
                continue;
            }
            let start = at;
            while at < line_end && buf[at] != b' ' && buf[at] != b'\t' {
                at += 1;
            }
            self.spans.push((start, at));
        }
        Ok(if self.spans.is_empty() {
            Parsed::Nothing(newline + 1)
        } else {
            Parsed::Request(newline + 1)
        })
    }
}

/// Reads `N\r\n` at `at`: `Ok(None)` if the line is not complete yet, `Ok(Some((None, _)))` if
/// it is not a number, else the number and the offset after the line.
#[allow(clippy::type_complexity)]
fn length_line(buf: &[u8], at: usize) -> Result<Option<(Option<i64>, usize)>, ProtocolError> {
    let window = &buf[at.min(buf.len())..buf.len().min(at + MAX_LENGTH_LINE)];
    let Some(cr) = window.iter().position(|&b| b == b'\r') else {
        return if window.len() == MAX_LENGTH_LINE { Ok(Some((None, 0))) } else { Ok(None) };
    };
    let Some(&lf) = buf.get(at + cr + 1) else { return Ok(None) };
    if lf != b'\n' {
        return Ok(Some((None, 0)));
    }
    Ok(Some((parse_i64(&window[..cr]), at + cr + 2)))
}

impl Argv for Args<'_> {
    fn len(&self) -> usize {
        self.spans.len()
    }

    fn get(&self, i: usize) -> &[u8] {
        Args::get(self, i)
    }
}

/// The arguments of one request, the command name first.
#[derive(Clone, Copy, Debug)]
pub struct Args<'a> {
    request: &'a [u8],
    spans: &'a [(usize, usize)],
}

impl<'a> Args<'a> {
    /// How many arguments, the command name included.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are none (never, for a parsed request).
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Argument `i`, the command name being 0.
    ///
    /// # Panics
    ///
    /// If `i` is out of range; callers check [`len`](Self::len) first.
    pub fn get(&self, i: usize) -> &'a [u8] {
        let (start, end) = self.spans[i];
        &self.request[start..end]
    }

    /// The arguments from `from` on.
    pub fn iter_from(&self, from: usize) -> impl ExactSizeIterator<Item = &'a [u8]> + Clone + 'a {
        let request = self.request;
        self.spans[from.min(self.spans.len())..].iter().map(move |&(s, e)| &request[s..e])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(bytes: &[u8], limit: usize) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut parser = Parser::new(limit, usize::MAX);
        let mut requests = Vec::new();
        let mut at = 0;
        loop {
            match parser.parse(&bytes[at..])? {
                Parsed::Request(n) => {
                    let args = parser.args(&bytes[at..]);
                    requests.push(args.iter_from(0).map(<[u8]>::to_vec).collect());
                    at += n;
                }
                Parsed::Nothing(n) => at += n,
                Parsed::Incomplete => return Ok(requests),
            }
        }
    }

    #[test]
    fn arrays_and_inline_commands() {
        let got =
            parse_all(b"*2\r\n$4\r\nPING\r\n$0\r\n\r\nPING  hello\tworld\r\n\r\n*0\r\n", 1 << 20)
                .unwrap();
        assert_eq!(
            got,
            vec![
                vec![b"PING".to_vec(), Vec::new()],
                vec![b"PING".to_vec(), b"hello".to_vec(), b"world".to_vec()],
            ]
        );
    }

    #[test]
    fn every_split_point_gives_the_same_requests() {
        let stream: &[u8] = b"*3\r\n$6\r\nCF.ADD\r\n$1\r\nf\r\n$11\r\nhello world\r\nPING\n";
        let whole = parse_all(stream, 1 << 20).unwrap();
        assert_eq!(whole.len(), 2);
        let first_len = match Parser::new(1 << 20, 1 << 20).parse(stream).unwrap() {
            Parsed::Request(n) => n,
            other => panic!("{other:?}"),
        };
        for split in 0..stream.len() {
            // Feed the first `split` bytes, then the whole stream, resuming the same parser.
            let mut parser = Parser::new(1 << 20, 1 << 20);
            let first = parser.parse(&stream[..split]).unwrap();
            let n = match first {
                Parsed::Request(n) => n,
                Parsed::Incomplete => match parser.parse(stream).unwrap() {
                    Parsed::Request(n) => n,
                    other => panic!("split {split}: {other:?}"),
                },
                Parsed::Nothing(_) => panic!("split {split}: nothing"),
            };
            let args: Vec<Vec<u8>> = parser.args(stream).iter_from(0).map(<[u8]>::to_vec).collect();
            assert_eq!(args, whole[0], "split {split}");
            assert_eq!(n, first_len, "split {split}");
        }
    }

    #[test]
    fn malformed_requests_are_errors() {
        let cases: &[(&[u8], ProtocolError)] = &[
            (b"*x\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*99999999999999999999\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*2000000\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*1\r\n$-5\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\n$abc\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\n:5\r\n", ProtocolError::ExpectedBulk(b':')),
            (b"*1\r\n$2\r\nabcd\r\n", ProtocolError::ExpectedCrlf),
            (b"*1\r\n$1\r\nabc", ProtocolError::ExpectedCrlf),
            (
                b"*1\r\n$0000000000000000000000000000000000000001\r\n",
                ProtocolError::InvalidBulkLength,
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(parse_all(bytes, 1 << 20).as_ref(), Err(want), "{bytes:?}");
        }
    }

    #[test]
    fn sizes_over_the_limit_are_refused_before_they_arrive() {
        let limit = 1000;
        let too_long = parse_all(b"*1\r\n$5000\r\n", limit);
        assert_eq!(too_long, Err(ProtocolError::TooLarge { limit }));
        let too_many = parse_all(b"*500\r\n", limit);
        assert_eq!(too_many, Err(ProtocolError::TooLarge { limit }));
        let huge = parse_all(b"*1\r\n$9223372036854775807\r\n", limit);
        assert_eq!(huge, Err(ProtocolError::TooLarge { limit }));
        assert_eq!(
            parse_all(&[b'a'; MAX_INLINE_BYTES + 1], usize::MAX),
            Err(ProtocolError::TooBigInline)
        );
        // Just under the limit is fine.
        let mut fits = b"*1\r\n$988\r\n".to_vec();
        fits.extend([b'x'; 988]);
        fits.extend_from_slice(b"\r\n");
        assert_eq!(fits.len(), 1000);
        assert_eq!(parse_all(&fits, limit).unwrap().len(), 1);
    }

    #[test]
    fn an_argument_over_the_largest_bulk_is_refused_before_it_arrives() {
        let mut parser = Parser::new(1 << 20, 100);
        let request = b"*2\r\n$4\r\nPING\r\n$100\r\n";
        assert_eq!(parser.parse(request), Ok(Parsed::Incomplete));
        let mut parser = Parser::new(1 << 20, 99);
        assert_eq!(parser.parse(request), Err(ProtocolError::InvalidBulkLength));
    }
}
