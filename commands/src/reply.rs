//! Replies, built once and written in the protocol each client speaks.
//!
//! A command's result is a [`Reply`] tree; [`Reply::write`] encodes it as RESP2 or RESP3 onto a
//! connection's output buffer, and a module host walks the same tree with its engine's reply
//! calls. The one place where the two protocols differ for these commands is here: RESP3 has
//! maps (`CF.INFO`, `HELLO`) and a null of its own, RESP2 writes maps as flat arrays of names and
//! values.

use std::borrow::Cow;

/// The protocol a client asked for with `HELLO` (RESP2 until it asks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// RESP2: arrays, integers, bulk and simple strings, errors.
    #[default]
    Resp2,
    /// RESP3: RESP2's types plus maps and a null of its own.
    Resp3,
}

/// One reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`.
    Ok,
    /// A simple string: a status such as `QUEUED` or `PONG`.
    Status(&'static str),
    /// An integer.
    Int(i64),
    /// Yes or no: `:1`/`:0` in RESP2, `#t`/`#f` in RESP3 (as RedisBloom answers `CF.ADD`,
    /// `CF.EXISTS` and the like).
    Bool(bool),
    /// A binary-safe string.
    Bulk(Vec<u8>),
    /// The absence of a value: `$-1` in RESP2, `_` in RESP3.
    Null,
    /// An array of replies.
    Array(Vec<Reply>),
    /// Names and values: a map in RESP3, a flat array `name, value, ...` in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// An error; its first word is the error code where it has one (`ERR`, `WRONGTYPE`), or
    /// the whole text for RedisBloom's messages that have none.
    Error(Cow<'static, str>),
}

impl Reply {
    /// An error reply with a fixed text.
    pub const fn error(text: &'static str) -> Self {
        Self::Error(Cow::Borrowed(text))
    }

    /// An error reply with a text made at run time.
    pub fn error_owned(text: String) -> Self {
        Self::Error(Cow::Owned(text))
    }

    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Error(_))
    }

    /// At least the bytes [`write`](Self::write) appends, in either protocol.
    pub fn len_bound(&self) -> usize {
        // A length or integer line: a marker, 20 digits and a sign, CRLF.
        const LINE: usize = 24;
        match self {
            Self::Bulk(bytes) => LINE + bytes.len() + 2,
            Self::Status(text) => text.len() + 3,
            Self::Error(text) => text.len() + 3,
            Self::Array(items) => LINE + items.iter().map(Self::len_bound).sum::<usize>(),
            Self::Map(pairs) => {
                LINE + pairs.iter().map(|(k, v)| k.len_bound() + v.len_bound()).sum::<usize>()
            }
            Self::Ok | Self::Int(_) | Self::Bool(_) | Self::Null => LINE,
        }
    }

    /// Appends the encoding of this reply in `protocol` to `out`.
    pub fn write(&self, protocol: Protocol, out: &mut Vec<u8>) {
        match self {
            Self::Ok => out.extend_from_slice(b"+OK\r\n"),
            Self::Status(text) => line(out, b'+', text.as_bytes()),
            Self::Int(n) => line(out, b':', itoa::Buffer::new().format(*n).as_bytes()),
            Self::Bulk(bytes) => write_bulk(out, bytes),
            Self::Bool(yes) => out.extend_from_slice(match (protocol, yes) {
                (Protocol::Resp2, false) => b":0\r\n",
                (Protocol::Resp2, true) => b":1\r\n",
                (Protocol::Resp3, false) => b"#f\r\n",
                (Protocol::Resp3, true) => b"#t\r\n",
            }),
            Self::Null => match protocol {
                Protocol::Resp2 => out.extend_from_slice(b"$-1\r\n"),
                Protocol::Resp3 => out.extend_from_slice(b"_\r\n"),
            },
            Self::Array(items) => {
                header(out, b'*', items.len());
                for item in items {
                    item.write(protocol, out);
                }
            }
            Self::Map(pairs) => {
                match protocol {
                    Protocol::Resp2 => header(out, b'*', pairs.len() * 2),
                    Protocol::Resp3 => header(out, b'%', pairs.len()),
                }
                for (name, value) in pairs {
                    name.write(protocol, out);
                    value.write(protocol, out);
                }
            }
            Self::Error(text) => write_error(out, text),
        }
    }
}

/// `$len\r\nbytes\r\n`.
pub fn write_bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    header(out, b'$', bytes.len());
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// `-text\r\n`, with any line break inside the text made a space: one would end the reply early
/// and desynchronise the client.
pub fn write_error(out: &mut Vec<u8>, text: &str) {
    out.push(b'-');
    out.extend(text.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
    out.extend_from_slice(b"\r\n");
}

/// The header of an aggregate (`*n`, `%n`) or a bulk string (`$n`).
pub fn header(out: &mut Vec<u8>, kind: u8, n: usize) {
    line(out, kind, itoa::Buffer::new().format(n).as_bytes());
}

fn line(out: &mut Vec<u8>, kind: u8, body: &[u8]) {
    out.push(kind);
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(reply: &Reply, protocol: Protocol) -> String {
        let mut out = Vec::new();
        reply.write(protocol, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn both_protocols() {
        let info = Reply::Map(vec![(Reply::Status("Size"), Reply::Int(-3))]);
        assert_eq!(encode(&info, Protocol::Resp2), "*2\r\n+Size\r\n:-3\r\n");
        assert_eq!(encode(&info, Protocol::Resp3), "%1\r\n+Size\r\n:-3\r\n");
        let dump = Reply::Array(vec![Reply::Int(0), Reply::Null]);
        assert_eq!(encode(&dump, Protocol::Resp2), "*2\r\n:0\r\n$-1\r\n");
        assert_eq!(encode(&dump, Protocol::Resp3), "*2\r\n:0\r\n_\r\n");
        assert_eq!(encode(&Reply::Bulk(b"hi".to_vec()), Protocol::Resp3), "$2\r\nhi\r\n");
        assert_eq!(encode(&Reply::error("ERR a\r\nb"), Protocol::Resp2), "-ERR a  b\r\n");
        assert_eq!(encode(&Reply::Ok, Protocol::Resp3), "+OK\r\n");
        assert_eq!(encode(&Reply::Bool(true), Protocol::Resp2), ":1\r\n");
        assert_eq!(encode(&Reply::Bool(false), Protocol::Resp3), "#f\r\n");
        let all = [info, dump, Reply::Bulk(vec![7; 1000]), Reply::error("ERR x"), Reply::Int(-1)];
        for reply in &all {
            for protocol in [Protocol::Resp2, Protocol::Resp3] {
                assert!(encode(reply, protocol).len() <= reply.len_bound(), "{reply:?}");
            }
        }
    }
}
