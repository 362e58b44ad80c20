//! Reading a request's arguments: the command name, integers as Redis reads them, options.

/// The arguments of one request, the command name first: what every host (a connection's
/// buffer, a module's argument vector) can lend without copying.
pub trait Argv {
    /// How many arguments, the command name included.
    fn len(&self) -> usize;
    /// Argument `i`, the command name being 0; `i` is below [`len`](Self::len).
    fn get(&self, i: usize) -> &[u8];
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Argv for [&[u8]] {
    fn len(&self) -> usize {
        <[&[u8]]>::len(self)
    }
    fn get(&self, i: usize) -> &[u8] {
        self[i]
    }
}

/// A decimal integer with an optional minus sign and nothing else, as Redis reads lengths and
/// numeric arguments (`string2ll`: no plus sign, no spaces, no leading zeros but `0` itself).
pub fn parse_i64(digits: &[u8]) -> Option<i64> {
    let (negative, body) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if body.is_empty() || (body.len() > 1 && body[0] == b'0') || (negative && body == b"0") {
        return None;
    }
    let mut value: i64 = 0;
    for &b in body {
        if !b.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(b - b'0');
        value = value.checked_mul(10)?;
        value = if negative { value.checked_sub(digit)? } else { value.checked_add(digit)? };
    }
    Some(value)
}

/// A decimal unsigned integer up to `u64::MAX`, read as [`parse_i64`] reads one: digits only,
/// no sign, no leading zeros but `0` itself.
pub fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    digits.iter().try_fold(0u64, |value, &b| {
        let digit = b.is_ascii_digit().then(|| u64::from(b - b'0'))?;
        value.checked_mul(10)?.checked_add(digit)
    })
}

/// The command name in lower case, in `buf` when it fits (every name this crate knows does), so
/// that matching a name allocates nothing.
pub fn lower_name<'b>(name: &'b [u8], buf: &'b mut [u8; 32]) -> &'b [u8] {
    if name.len() > buf.len() {
        return name;
    }
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    lower
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_as_redis_reads_them() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [&b""[..], b"-", b"+1", b"01", b"-0", b"1 ", b"9223372036854775808", b"1e3"] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn unsigned_integers_up_to_u64_max() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b""[..], b"-1", b"+1", b"01", b"1 ", b"18446744073709551616", b"1e3"] {
            assert_eq!(parse_u64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn names_in_lower_case() {
        let mut buf = [0; 32];
        assert_eq!(lower_name(b"CF.Add", &mut buf), b"cf.add");
        let long = [b'X'; 40];
        assert_eq!(lower_name(&long, &mut buf), &long[..]);
    }
}
