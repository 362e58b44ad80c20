//! The accept loop and the connections.
//!
//! Each connection is a task that reads into its own buffer, runs every complete request in
//! it, and writes all their replies with one write: a pipelined client gets one system call per
//! batch, not per command. A bad request closes that connection only; no task can take the
//! process down (nothing in a connection's path panics on input, and the runtime would contain
//! it if it did).

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::Mutex;

use crate::commands::{execute, Next, Shared};
use crate::persist;
use crate::resp::{reply, Parsed, Parser};

/// Replies are written once this much has piled up, even mid-batch.
const FLUSH_AT: usize = 64 * 1024;
/// The least room a read gets.
const READ_CHUNK: usize = 16 * 1024;

/// What the connections need besides the filters.
#[derive(Debug)]
pub struct Limits {
    /// Largest request in bytes.
    pub max_request_bytes: usize,
    /// Most connections at once; more are told so and closed.
    pub max_clients: usize,
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
}

impl Server {
    /// A server over `shared`, saving to `save_path`.
    pub fn new(shared: Shared, limits: Limits, save_path: PathBuf) -> Self {
        Self {
            shared,
            limits,
            save_path,
            saving: Mutex::new(()),
            next_client_id: AtomicU64::new(1),
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
            let stream = match listener.accept().await.and_then(|(s, _)| s.into_std()) {
                Ok(stream) => stream,
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
                    Ok(stream) => server.connection(stream).await,
                    Err(e) => eprintln!("accept: {e}"),
                }
            });
        }
        unreachable!("cycle over a non-empty list never ends")
    }

    async fn connection(self: Arc<Self>, mut stream: TcpStream) {
        // Relaxed: a count for a bound and for INFO, it publishes nothing.
        let open = self.shared.clients.fetch_add(1, Ordering::Relaxed) + 1;
        if open > self.limits.max_clients {
            let mut out = Vec::new();
            reply::error(&mut out, "ERR max number of clients reached");
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
        let mut input: Vec<u8> = Vec::with_capacity(READ_CHUNK);
        let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
        let mut parser = Parser::new(self.limits.max_request_bytes);
        loop {
            if input.capacity() - input.len() < READ_CHUNK / 2 {
                input.reserve(READ_CHUNK);
            }
            if stream.read_buf(&mut input).await? == 0 {
                // The client went away, perhaps mid-request: nothing of it was run.
                return Ok(());
            }
            let mut start = 0;
            loop {
                let request = &input[start..];
                match parser.parse(request) {
                    Ok(Parsed::Request(len)) => {
                        let args = parser.args(request);
                        match execute(&self.shared, id, args, &mut out) {
                            Next::Continue => {}
                            Next::Save => {
                                if self.save_replying(&mut out).await {
                                    reply::simple(&mut out, "OK");
                                }
                            }
                            Next::Shutdown { save } => {
                                if !save || self.save_replying(&mut out).await {
                                    println!("shutting down on request");
                                    std::process::exit(0);
                                }
                            }
                            Next::Quit => return stream.write_all(&out).await,
                        }
                        start += len;
                    }
                    Ok(Parsed::Nothing(len)) => start += len,
                    Ok(Parsed::Incomplete) => break,
                    Err(e) => {
                        reply::error(&mut out, &e.to_string());
                        return stream.write_all(&out).await;
                    }
                }
                if out.len() >= FLUSH_AT {
                    stream.write_all(&out).await?;
                    out.clear();
                }
            }
            input.drain(..start);
            if !out.is_empty() {
                // Let the other connections whose requests arrived in the same wake-up run
                // first, so that their replies leave together: a client serving many
                // connections (a load generator, a proxy) then reads many replies per wake-up
                // instead of one, as with Redis's write-after-the-event-loop.
                tokio::task::yield_now().await;
                stream.write_all(&out).await?;
                out.clear();
            }
            // A buffer grown for one large request goes back to its usual size.
            if input.is_empty() && input.capacity() > 4 * READ_CHUNK {
                input = Vec::with_capacity(READ_CHUNK);
            }
        }
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

    /// [`save`](Self::save) for a command: on failure the error reply is queued and the result
    /// is false.
    async fn save_replying(self: &Arc<Self>, out: &mut Vec<u8>) -> bool {
        let result = self.save().await;
        if let Err(e) = &result {
            reply::error(out, &format!("ERR saving to {}: {e}", self.save_path.display()));
        }
        result.is_ok()
    }
}
