//! The accept loop and the connections.
//!
//! Each connection is a task that reads into its own buffer, runs every complete request in
//! it, and writes all their replies with one write: a pipelined client gets one system call per
//! batch, not per command. A bad request closes that connection only; no task can take the
//! process down (nothing in a connection's path panics on input, and the runtime would contain
//! it if it did).

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lockfree_cuckoo_commands::write_error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot, Mutex};

use crate::commands::{exec_next, execute, Next, Session, Shared, OUT_OF_MEMORY};
use crate::persist;
use crate::resp::{Parsed, Parser};

/// Replies are written once this much has piled up, even mid-batch.
const FLUSH_AT: usize = 64 * 1024;
/// The least room a read gets.
const READ_CHUNK: usize = 16 * 1024;

/// What the connections need besides the filters.
#[derive(Debug)]
pub struct Limits {
    /// Largest request in bytes.
    pub max_request_bytes: usize,
    /// Largest argument of a request in bytes (Redis's `proto-max-bulk-len`).
    pub max_bulk_bytes: usize,
    /// Most bytes all connections' buffers together may hold (partial requests, replies not
    /// yet sent, queued transactions); a connection that would take the total over it is told
    /// so and closed.
    pub max_buffered_bytes: usize,
    /// When a client that does not read its replies is closed.
    pub output: OutputLimit,
    /// Most connections at once; more are told so and closed.
    pub max_clients: usize,
    /// Protected mode: with no password, serve loopback clients only (as Redis does).
    pub protected: bool,
}

/// Redis's `client-output-buffer-limit` for normal clients: a connection whose unsent replies
/// would pass `hard` bytes, or stay over `soft` bytes for `soft_seconds`, is closed (0: no such
/// limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimit {
    /// Bytes no connection's unsent replies pass.
    pub hard: usize,
    /// Bytes a connection's unsent replies may stay over for `soft_seconds` only.
    pub soft: usize,
    /// How long, in seconds.
    pub soft_seconds: u64,
}

impl std::str::FromStr for OutputLimit {
    type Err = String;

    /// Redis's form, `<hard> <soft> <soft seconds>`, with sizes in bytes or with a `kb`, `mb`
    /// or `gb` suffix (powers of 1024, as Redis reads them).
    fn from_str(text: &str) -> Result<Self, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let [hard, soft, seconds] = words[..] else {
            return Err(format!("{text:?}: expected <hard> <soft> <soft seconds>"));
        };
        let bytes = |word: &str| -> Result<usize, String> {
            let lower = word.to_ascii_lowercase();
            let (digits, unit) = match lower.len().checked_sub(2).map(|at| lower.split_at(at)) {
                Some((digits, "kb")) => (digits, 1 << 10),
                Some((digits, "mb")) => (digits, 1 << 20),
                Some((digits, "gb")) => (digits, 1 << 30),
                _ => (lower.as_str(), 1),
            };
            digits
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_mul(unit))
                .ok_or_else(|| format!("{word:?} is not a size"))
        };
        let soft_seconds = seconds.parse().map_err(|_| format!("{seconds:?} is not seconds"))?;
        Ok(Self { hard: bytes(hard)?, soft: bytes(soft)?, soft_seconds })
    }
}

/// A request to end the process: from `SHUTDOWN` (which hears back if the save failed, and the
/// server goes on) or from a signal.
#[derive(Debug)]
pub struct Stop {
    /// Save first.
    pub save: bool,
    /// Where a failed save is reported, for `SHUTDOWN`'s reply.
    pub failed: Option<oneshot::Sender<String>>,
}

/// The server: shared state, limits and the save file.
#[derive(Debug)]
pub struct Server {
    shared: Shared,
    limits: Limits,
    save_path: PathBuf,
    /// One save at a time (see [`save`](Self::save)).
    saving: Mutex<()>,
    next_client_id: AtomicU64,
    /// Where `SHUTDOWN` asks the main loop to stop: the one way the process ends.
    stops: mpsc::Sender<Stop>,
}

impl Server {
    /// A server over `shared`, saving to `save_path`, sending stop requests to `stops`.
    pub fn new(
        shared: Shared,
        limits: Limits,
        save_path: PathBuf,
        stops: mpsc::Sender<Stop>,
    ) -> Self {
        Self {
            shared,
            limits,
            save_path,
            saving: Mutex::new(()),
            next_client_id: AtomicU64::new(1),
            stops,
        }
    }

    /// Accepts connections until the process ends, handing them to `workers` in turn.
    ///
    /// Each worker is a single-threaded runtime on a thread of its own, and a connection stays
    /// on the worker it was given: no work stealing, no wake-ups across threads, and the
    /// replies of the connections a worker serves leave together (see `serve`).
    ///
    /// # Errors
    ///
    /// Never returns normally; per-connection and accept errors are logged and survived.
    ///
    /// # Panics
    ///
    /// If `workers` is empty.
    pub async fn run(
        self: Arc<Self>,
        listener: TcpListener,
        workers: Vec<Handle>,
    ) -> io::Result<()> {
        assert!(!workers.is_empty(), "a server needs at least one worker");
        for worker in workers.iter().cycle() {
            let accepted = listener.accept().await;
            let (stream, peer) = match accepted.and_then(|(s, peer)| Ok((s.into_std()?, peer))) {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: the connections that exist go on;
                    // wait a moment rather than spin.
                    eprintln!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let server = Arc::clone(&self);
            worker.spawn(async move {
                // Registered with the worker's own reactor, inside its runtime.
                match TcpStream::from_std(stream) {
                    Ok(stream) => server.connection(stream, peer).await,
                    Err(e) => eprintln!("accept: {e}"),
                }
            });
        }
        unreachable!("cycle over a non-empty list never ends")
    }

    async fn connection(self: Arc<Self>, mut stream: TcpStream, peer: SocketAddr) {
        // Relaxed: a count for a bound and for INFO, it publishes nothing.
        let open = self.shared.clients.fetch_add(1, Ordering::Relaxed) + 1;
        let refusal = if open > self.limits.max_clients {
            Some("ERR max number of clients reached")
        } else if self.limits.protected
            && self.shared.password.is_none()
            && !peer.ip().to_canonical().is_loopback()
        {
            Some(PROTECTED)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            let mut out = Vec::new();
            write_error(&mut out, refusal);
            let _ = stream.write_all(&out).await;
        } else {
            let _ = stream.set_nodelay(true);
            let id = self.next_client_id.fetch_add(1, Ordering::Relaxed);
            // The connection's end, clean or not, concerns that client only.
            let _ = self.serve(&mut stream, id).await;
        }
        self.shared.clients.fetch_sub(1, Ordering::Relaxed);
    }

    async fn serve(self: &Arc<Self>, stream: &mut TcpStream, id: u64) -> io::Result<()> {
        let mut held = Held { total: &self.shared.client_buffers, bytes: 0 };
        let result = self.serve_holding(stream, id, &mut held).await;
        drop(held);
        result
    }

    /// Serves one connection. Every byte it holds is counted in `held` after each step that
    /// can grow it (its input and output buffers' capacity, its queued transaction), and
    /// buffers grown for one large request or reply go back to their usual size once it is
    /// done, so an idle connection holds [`READ_CHUNK`] bytes of each.
    async fn serve_holding(
        self: &Arc<Self>,
        stream: &mut TcpStream,
        id: u64,
        held: &mut Held<'_>,
    ) -> io::Result<()> {
        let mut input: Vec<u8> = Vec::with_capacity(READ_CHUNK);
        let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
        let mut parser = Parser::new(self.limits.max_request_bytes, self.limits.max_bulk_bytes);
        let mut session = Session::new(id, &self.shared);
        let holding = |input: &Vec<u8>, out: &Vec<u8>, session: &Session| {
            input.capacity() + out.capacity() + session.queued_bytes()
        };
        loop {
            if input.capacity() - input.len() < READ_CHUNK / 2
                && input.try_reserve(READ_CHUNK).is_err()
            {
                write_error(&mut out, OUT_OF_MEMORY);
                return stream.write_all(&out).await;
            }
            if stream.read_buf(&mut input).await? == 0 {
                // The client went away, perhaps mid-request: nothing of it was run.
                return Ok(());
            }
            if !held.set(holding(&input, &out, &session), &self.limits) {
                write_error(&mut out, BUFFERS_FULL);
                return stream.write_all(&out).await;
            }
            let mut start = 0;
            loop {
                let request = &input[start..];
                match parser.parse(request) {
                    Ok(Parsed::Request(len)) => {
                        let args = parser.args(request);
                        match execute(&self.shared, &mut session, &args, &mut out) {
                            Next::Continue => {}
                            Next::Exec => {
                                while exec_next(&self.shared, &mut session, &mut out) {
                                    let others = input.capacity() + session.queued_bytes();
                                    if !self.flush_full(stream, &mut out, held, others).await? {
                                        return Ok(());
                                    }
                                }
                            }
                            Next::Save => {
                                if self.save_replying(&mut out).await {
                                    out.extend_from_slice(b"+OK\r\n");
                                }
                            }
                            Next::Shutdown { save } => {
                                let (failed, failure) = oneshot::channel();
                                let stop = Stop { save, failed: Some(failed) };
                                if self.stops.send(stop).await.is_ok() {
                                    // Heard back only if the save failed; else the process ends.
                                    if let Ok(error) = failure.await {
                                        write_error(&mut out, &error);
                                    }
                                }
                            }
                            Next::Quit => return stream.write_all(&out).await,
                            // Nothing more of this connection runs, and nothing is answered.
                            Next::Close => return Ok(()),
                        }
                        start += len;
                    }
                    Ok(Parsed::Nothing(len)) => start += len,
                    Ok(Parsed::Incomplete) => break,
                    Err(e) => {
                        write_error(&mut out, &e.to_string());
                        return stream.write_all(&out).await;
                    }
                }
                // Most requests change nothing counted and leave little to send: nothing to do.
                let others = input.capacity() + session.queued_bytes();
                let unchanged = others + out.capacity() == held.bytes;
                let hard = self.limits.output.hard;
                let over = out.len() >= FLUSH_AT || (hard != 0 && out.len() > hard);
                if (over || !unchanged) && !self.flush_full(stream, &mut out, held, others).await? {
                    return Ok(());
                }
            }
            input.drain(..start);
            // A buffer grown for one large request goes back to its usual size, keeping the
            // start of the next request if one came with it.
            if input.capacity() > 4 * READ_CHUNK && input.len() < input.capacity() / 4 {
                input.shrink_to(READ_CHUNK.max(2 * input.len()));
            }
            if !held.set(holding(&input, &out, &session), &self.limits) {
                write_error(&mut out, BUFFERS_FULL);
                return stream.write_all(&out).await;
            }
            if !out.is_empty() {
                // Let the other connections whose requests arrived in the same wake-up run
                // first, so that their replies leave together: a client serving many
                // connections (a load generator, a proxy) then reads many replies per wake-up
                // instead of one, as with Redis's write-after-the-event-loop.
                tokio::task::yield_now().await;
                if !self.send(stream, &mut out).await? {
                    return Ok(());
                }
            }
            held.set(holding(&input, &out, &session), &self.limits);
        }
    }

    /// Counts what the connection holds (`out`, and `others` bytes besides), and sends its
    /// replies once [`FLUSH_AT`] bytes of them have piled up. False when the connection is to
    /// be closed: over its output limit, or over the buffers' total (told so first).
    async fn flush_full(
        &self,
        stream: &mut TcpStream,
        out: &mut Vec<u8>,
        held: &mut Held<'_>,
        others: usize,
    ) -> io::Result<bool> {
        let output = self.limits.output;
        if output.hard != 0 && out.len() > output.hard {
            eprintln!("client closed: its replies passed --client-output-buffer-limit");
            return Ok(false);
        }
        if !held.set(others + out.capacity(), &self.limits) {
            out.clear();
            write_error(out, BUFFERS_FULL);
            stream.write_all(out).await?;
            return Ok(false);
        }
        if out.len() >= FLUSH_AT && !self.send(stream, out).await? {
            return Ok(false);
        }
        Ok(true)
    }

    /// Sends `out` and empties it, shrinking a buffer grown for a large reply. False if the
    /// client kept more than the soft output limit unread for longer than its seconds.
    async fn send(&self, stream: &mut TcpStream, out: &mut Vec<u8>) -> io::Result<bool> {
        let output = self.limits.output;
        if output.soft != 0 && out.len() > output.soft {
            let patience = Duration::from_secs(output.soft_seconds);
            if tokio::time::timeout(patience, stream.write_all(out)).await.is_err() {
                eprintln!("client closed: its replies stayed over the soft output limit");
                return Ok(false);
            }
        } else {
            stream.write_all(out).await?;
        }
        out.clear();
        if out.capacity() > 4 * READ_CHUNK {
            *out = Vec::with_capacity(READ_CHUNK);
        }
        Ok(true)
    }

    /// Writes the save file while every connection goes on, one save at a time (a second one
    /// waits, then saves again, so that it also covers the writes acknowledged before it was
    /// asked for). The writing runs on a blocking thread, off the workers.
    ///
    /// # Errors
    ///
    /// The I/O error that stopped it; the previous file is then untouched.
    pub async fn save(self: &Arc<Self>) -> io::Result<persist::Saved> {
        let _one_at_a_time = self.saving.lock().await;
        let server = Arc::clone(self);
        tokio::task::spawn_blocking(move || persist::save(&server.shared.store, &server.save_path))
            .await
            .unwrap_or_else(|e| Err(io::Error::other(e)))
    }

    /// Saves every `interval`, in the background, until the process ends; a failed save is
    /// reported and tried again at the next interval (the previous file stays whole).
    pub async fn save_every(self: Arc<Self>, interval: Duration) {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        // A save longer than the interval is followed by the next one, not by a burst.
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(e) = self.save().await {
                eprintln!("error: scheduled save to {}: {e}", self.save_path.display());
            }
        }
    }

    /// Ticks the filters whose items expire every `interval`, on a blocking thread, until the
    /// process ends: each starts its epochs on time (`CF.RESERVE ... EXPIRE`), and a filter
    /// nobody writes still forgets.
    pub async fn tick_every(self: Arc<Self>, interval: Duration) {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let server = Arc::clone(&self);
            // A sweep of a large table takes a while: off the workers.
            let _ = tokio::task::spawn_blocking(move || server.shared.store.tick()).await;
        }
    }

    /// [`save`](Self::save) for a command: on failure the error reply is queued and the result
    /// is false.
    async fn save_replying(self: &Arc<Self>, out: &mut Vec<u8>) -> bool {
        let result = self.save().await;
        if let Err(e) = &result {
            write_error(out, &format!("ERR saving to {}: {e}", self.save_path.display()));
        }
        result.is_ok()
    }
}

/// Redis's text for a client refused by protected mode.
const PROTECTED: &str = "DENIED Running in protected mode because no password is set: only \
    loopback clients are served. Set a password with --requirepass, or, if you are sure, turn \
    protected mode off with --protected-mode no";

const BUFFERS_FULL: &str = "ERR the server's client buffers are full (--max-buffered-bytes)";

/// A connection's share of the bytes of all connections' buffers, given back when it ends.
struct Held<'a> {
    total: &'a AtomicUsize,
    bytes: usize,
}

impl Held<'_> {
    /// Makes this connection's share `bytes`; false, and the share unchanged, if that would
    /// take the total over the limit.
    fn set(&mut self, bytes: usize, limits: &Limits) -> bool {
        if bytes > self.bytes {
            let more = bytes - self.bytes;
            // Relaxed: a bound on a sum, it publishes nothing.
            let before = self.total.fetch_add(more, Ordering::Relaxed);
            if before + more > limits.max_buffered_bytes {
                self.total.fetch_sub(more, Ordering::Relaxed);
                return false;
            }
        } else if bytes < self.bytes {
            self.total.fetch_sub(self.bytes - bytes, Ordering::Relaxed);
        }
        // Unchanged, as after most requests: the shared count is not touched.
        self.bytes = bytes;
        true
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}
