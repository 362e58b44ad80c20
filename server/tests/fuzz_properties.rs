//! The `commands` and `resp` fuzz targets' properties on random inputs from fixed seeds, so
//! that every `cargo test` samples what `cargo fuzz` explores with coverage guidance. The fuzz
//! crate is a workspace of its own (`fuzz/README.md`), so its property library is out of reach
//! here: `commands`, `frame_len` and `resp` below are the same checks as its own, and a change
//! to one belongs in both.

use lockfree_cuckoo_server::commands::{execute, Session, Shared, SERVER_COMMANDS};
use lockfree_cuckoo_server::resp::{Parsed, Parser};
use lockfree_cuckoo_server::store::Store;

/// Arbitrary requests (each a list of arguments, the command name first) through the server's
/// session, which runs the `CF.*` commands of `lockfree-cuckoo-commands` and its own: never a
/// panic, and every reply one whole RESP frame in the protocol the session speaks. Command
/// names are drawn from the known ones by the first argument's first byte, so that sequences
/// reach the commands' options rather than only "unknown command".
fn commands(requests: &[Vec<Vec<u8>>]) {
    let names: Vec<&str> = lockfree_cuckoo_commands::COMMANDS
        .iter()
        .map(|spec| spec.name)
        .chain(SERVER_COMMANDS.iter().map(|command| command.name))
        .filter(|&name| name != "save" && name != "shutdown")
        .collect();
    let shared = Shared {
        // Small enough that no request allocates much.
        store: Store::new(1 << 22, 64),
        password: None,
        clients: std::sync::atomic::AtomicUsize::new(0),
        started: std::time::Instant::now(),
    };
    let mut session = Session::new(1, &shared);
    for request in requests.iter().take(64) {
        let Some((first, rest)) = request.split_first() else { continue };
        let name = first
            .first()
            .map_or(first.as_slice(), |&b| names[usize::from(b) % names.len()].as_bytes());
        let mut args: Vec<&[u8]> = vec![name];
        args.extend(rest.iter().take(16).map(Vec::as_slice));
        let mut out = Vec::new();
        execute(&shared, &mut session, &args[..], &mut out);
        if !out.is_empty() {
            assert_eq!(frame_len(&out), Some(out.len()), "not one RESP frame: {out:?}");
        }
    }
}

/// The length of the RESP2 or RESP3 frame at the start of `buf`, if it is one whole frame.
fn frame_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = &buf[1..line_end];
    if line.contains(&b'\r') || line.contains(&b'\n') {
        return None;
    }
    let after = line_end + 2;
    let number = || std::str::from_utf8(line).ok()?.parse::<i64>().ok();
    match buf.first()? {
        b'+' | b'-' => Some(after),
        b':' => number().map(|_| after),
        b'#' => matches!(line, b"t" | b"f").then_some(after),
        b'_' => line.is_empty().then_some(after),
        b'$' => match number()? {
            -1 => Some(after),
            len if len >= 0 => {
                let end = after + len as usize;
                (buf.get(end..end + 2)? == b"\r\n").then_some(end + 2)
            }
            _ => None,
        },
        kind @ (b'*' | b'%') => {
            let count = usize::try_from(number()?).ok()? * if *kind == b'%' { 2 } else { 1 };
            let mut at = after;
            for _ in 0..count {
                at += frame_len(&buf[at..])?;
            }
            Some(at)
        }
        _ => None,
    }
}

/// The server's request parser on arbitrary input: never a panic, and the same requests (or
/// the same error) whether the bytes arrive whole or in two pieces split at any point.
fn resp(data: &[u8]) {
    let Some((&split, data)) = data.split_first() else { return };
    let whole = requests(data, data.len());
    let split = usize::from(split) * data.len() / 255;
    assert_eq!(requests(data, split), whole, "split at {split}");
}

/// The requests in `data`, as the server reads them when the first `first` bytes arrive
/// before the rest: the arguments of each, then the error that stopped it, if any.
fn requests(data: &[u8], first: usize) -> (Vec<Vec<Vec<u8>>>, Option<String>) {
    let mut parser = Parser::new(1 << 16);
    let mut found = Vec::new();
    let mut at = 0;
    let mut available = first.min(data.len());
    loop {
        match parser.parse(&data[at..available]) {
            Ok(Parsed::Request(n)) => {
                let args = parser.args(&data[at..available]);
                found.push(args.iter_from(0).map(<[u8]>::to_vec).collect());
                at += n;
            }
            Ok(Parsed::Nothing(n)) => at += n,
            Ok(Parsed::Incomplete) if available < data.len() => available = data.len(),
            Ok(Parsed::Incomplete) => return (found, None),
            Err(e) => return (found, Some(e.to_string())),
        }
    }
}

/// A splitmix64 generator: the server has no random-number crate among its dependencies, and
/// fixed seeds need nothing more.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn random_requests_get_one_whole_reply_each() {
    let words: [&[u8]; 12] = [
        b"f",
        b"g",
        b"ITEMS",
        b"CAPACITY",
        b"NOCREATE",
        b"EXPANSION",
        b"BUCKETSIZE",
        b"0",
        b"1",
        b"100",
        b"-1",
        b"\r\nx",
    ];
    for seed in 0..300 {
        let mut rng = Rng(seed);
        let mut requests: Vec<Vec<Vec<u8>>> = Vec::new();
        for _ in 0..1 + rng.below(39) {
            let mut request = vec![vec![rng.next() as u8]];
            for _ in 0..rng.below(6) {
                request.push(words[rng.below(words.len())].to_vec());
            }
            requests.push(request);
        }
        commands(&requests);
    }
}

#[test]
fn random_input_parses_the_same_in_two_pieces() {
    let pieces: [&[u8]; 10] = [
        b"*2\r\n",
        b"$4\r\nPING\r\n",
        b"$1\r\nx\r\n",
        b"PING a\r\n",
        b"\n",
        b"*0\r\n",
        b"$-1\r\n",
        b"*x\r\n",
        b":1\r\n",
        b"\r\n",
    ];
    for seed in 0..2_000 {
        let mut rng = Rng(seed);
        let mut data = vec![rng.next() as u8];
        for _ in 0..rng.below(12) {
            data.extend_from_slice(pieces[rng.below(pieces.len())]);
        }
        resp(&data);
    }
}
