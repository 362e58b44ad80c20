//! Starting the server binary on a free loopback port, and talking to it byte for byte.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A server process, killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
    pub save_file: PathBuf,
}

impl Server {
    /// Starts the server with its save file in `dir` and `extra` flags.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        Self::try_start(dir, extra).unwrap_or_else(|e| panic!("server did not start: {e}"))
    }

    /// Starts the server, or returns what it printed if it exits instead.
    pub fn try_start(dir: &Path, extra: &[&str]) -> Result<Server, String> {
        Self::try_start_in(Command::new(env!("CARGO_BIN_EXE_lockfree-cuckoo-server")), dir, extra)
    }

    /// Starts the server under an open-file limit (soft and hard) of `files`.
    pub fn start_with_file_limit(dir: &Path, extra: &[&str], files: u32) -> Server {
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""));
        shell.arg(env!("CARGO_BIN_EXE_lockfree-cuckoo-server"));
        Self::try_start_in(shell, dir, extra).unwrap_or_else(|e| panic!("did not start: {e}"))
    }

    /// Starts the server under an address-space limit of `bytes`, past which an allocation
    /// fails (as on a machine out of memory).
    pub fn start_with_address_space(dir: &Path, extra: &[&str], bytes: u64) -> Server {
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", bytes >> 10));
        shell.arg(env!("CARGO_BIN_EXE_lockfree-cuckoo-server"));
        Self::try_start_in(shell, dir, extra).unwrap_or_else(|e| panic!("did not start: {e}"))
    }

    fn try_start_in(mut command: Command, dir: &Path, extra: &[&str]) -> Result<Server, String> {
        let save_file = match extra.iter().position(|&a| a == "--save-file") {
            Some(i) => PathBuf::from(extra[i + 1]),
            None => dir.join("filters.save"),
        };
        let mut child = command
            .args(["--port", "0", "--save-file"])
            .arg(&save_file)
            .args(extra.iter().filter(|&&a| a != "--save-file" && Path::new(a) != save_file))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the server binary");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for line in lines.by_ref() {
            let line = line.expect("read the server's output");
            if let Some(addr) = line.strip_prefix("listening on ") {
                let port = addr.rsplit(':').next().unwrap().parse().unwrap();
                // Keep draining its output so that it never blocks on a full pipe.
                std::thread::spawn(move || lines.for_each(drop));
                return Ok(Server { child, port, save_file });
            }
        }
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        Err(format!("{status}: {stderr}"))
    }

    /// A client of the `redis` crate.
    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .expect("connect with the redis crate")
    }

    /// A plain socket to the server.
    pub fn raw(&self) -> Raw {
        self.raw_to(std::net::Ipv4Addr::LOCALHOST.into())
    }

    /// A plain socket to the server at `address` (one of this machine's).
    pub fn raw_to(&self, address: std::net::IpAddr) -> Raw {
        let stream = TcpStream::connect((address, self.port)).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw { stream, pending: Vec::new() }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// The process's resident memory in KiB (Linux).
    pub fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    /// The most resident memory the process has had since it started or since
    /// [`reset_peak`](Self::reset_peak), in KiB (Linux).
    pub fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM:")
    }

    /// Makes the peak the resident memory now (Linux 4.0 and later).
    pub fn reset_peak(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5").unwrap();
    }

    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// Kills the process at once, as a crash would (nothing is saved).
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Sends SIGTERM, and returns whether the process then exited successfully.
    pub fn terminate(self) -> bool {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        self.wait()
    }

    /// Waits for the process to end by itself, and returns whether it succeeded.
    pub fn wait(mut self) -> bool {
        self.child.wait().unwrap().success()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A socket that sends commands as RESP arrays and reads replies as their exact bytes.
pub struct Raw {
    pub stream: TcpStream,
    pending: Vec<u8>,
}

impl Raw {
    /// Sends one command as an array of bulk strings.
    pub fn send(&mut self, args: &[&[u8]]) {
        self.stream.write_all(&encode(args)).unwrap();
    }

    /// Sends a command and returns its reply's exact bytes.
    pub fn call(&mut self, args: &[&str]) -> String {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&args);
        self.reply()
    }

    /// Reads one whole reply.
    pub fn reply(&mut self) -> String {
        loop {
            if let Some(n) = reply_len(&self.pending) {
                let reply: Vec<u8> = self.pending.drain(..n).collect();
                return String::from_utf8(reply).unwrap();
            }
            let mut chunk = [0; 65536];
            let n = self.stream.read(&mut chunk).expect("read a reply");
            assert!(n > 0, "connection closed; had {:?}", String::from_utf8_lossy(&self.pending));
            self.pending.extend_from_slice(&chunk[..n]);
        }
    }

    /// Reads until the server closes the connection; returns what came first. Fails if the
    /// server keeps the connection open.
    pub fn until_closed(&mut self) -> String {
        let mut all = std::mem::take(&mut self.pending);
        if let Err(e) = self.stream.read_to_end(&mut all) {
            // A reset is a close too: the server closed with some of our bytes unread.
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "not closed: {e}");
        }
        String::from_utf8_lossy(&all).into_owned()
    }
}

/// A command as RESP: an array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The length of the first complete reply in `buf`, if it is all there.
fn reply_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&buf[1..line_end]).unwrap();
    let after = line_end + 2;
    match buf[0] {
        b'+' | b'-' | b':' | b'#' | b'_' => Some(after),
        b'$' => {
            let len: i64 = line.parse().unwrap();
            if len < 0 {
                return Some(after);
            }
            let end = after + len as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' | b'%' => {
            let pairs = if buf[0] == b'%' { 2 } else { 1 };
            let mut at = after;
            for _ in 0..line.parse::<i64>().unwrap().max(0) * pairs {
                at += reply_len(&buf[at..])?;
            }
            Some(at)
        }
        other => panic!("not a reply: {:?}", other as char),
    }
}

/// Whether `tool` (redis-cli, redis-benchmark) can run here. Without it a test says it is
/// skipped, except under CI, which installs the tools and must run every test.
pub fn have_tool(tool: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "{tool} is missing, and CI must run this test");
        eprintln!("skipped: {tool} is not installed (Debian's redis-tools has it)");
    }
    found
}

/// `CF.SCANDUMP`'s chunks of `key`, with the cursor after each.
pub fn dump(c: &mut redis::Connection, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut chunks = Vec::new();
    let mut cursor = 0i64;
    loop {
        let (next, chunk): (i64, Option<Vec<u8>>) =
            redis::cmd("CF.SCANDUMP").arg(key).arg(cursor).query(c).unwrap();
        let Some(chunk) = chunk else { return chunks };
        chunks.push((next, chunk));
        cursor = next;
    }
}

/// Copies filter `from` into the new key `to` through `CF.SCANDUMP` and `CF.LOADCHUNK`, chunk by
/// chunk.
pub fn copy_by_chunks(c: &mut redis::Connection, from: &str, to: &str) {
    for (next, chunk) in dump(c, from) {
        let _: () = redis::cmd("CF.LOADCHUNK").arg(to).arg(next).arg(chunk).query(c).unwrap();
    }
}
