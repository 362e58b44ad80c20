//! `cargo run --release -p lockfree-cuckoo-server -- --help`

use std::process::ExitCode;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use lockfree_cuckoo_server::commands::Shared;
use lockfree_cuckoo_server::config::Config;
use lockfree_cuckoo_server::persist;
use lockfree_cuckoo_server::server::{Limits, Server, Stop};
use lockfree_cuckoo_server::store::Store;
use tokio::sync::mpsc;

/// How often the filters whose items expire are ticked: a tenth of the shortest window
/// (`EXPIRE 1`), so that each forgets within one and a half windows and a tick.
const TICK_INTERVAL: Duration = Duration::from_millis(100);

/// Descriptors kept for everything but clients: the listener, the save file, the runtime's.
const RESERVED_FDS: u64 = 32;

fn main() -> ExitCode {
    let config = Config::parse();
    let max_clients = raise_fd_limit(config.max_clients);
    let store = Store::new(config.max_memory, config.default_capacity);
    let stale = persist::remove_stale_temporaries(&config.save_file);
    if stale > 0 {
        println!("removed {stale} unfinished save files of processes that no longer run");
    }
    match persist::load(&store, &config.save_file) {
        Ok(0) => {}
        Ok(n) => println!("loaded {n} filters from {}", config.save_file.display()),
        Err(e) => {
            // Serving without the saved filters would lose them at the next SAVE.
            eprintln!("error: cannot load {}: {e}", config.save_file.display());
            return ExitCode::FAILURE;
        }
    }
    let protected = config.protected_mode == "yes";
    if config.requirepass.is_none() && protected && !config.bind.is_loopback() {
        println!(
            "protected mode: no password is set, so only loopback clients are served on {}",
            config.bind
        );
    }
    let shared = Shared {
        store,
        password: config.requirepass.clone(),
        clients: AtomicUsize::new(0),
        client_buffers: AtomicUsize::new(0),
        started: Instant::now(),
    };
    let limits = Limits {
        max_request_bytes: config.max_request_bytes,
        max_bulk_bytes: config.proto_max_bulk_len,
        max_buffered_bytes: config.max_buffered_bytes,
        output: config.client_output_buffer_limit,
        max_clients,
        protected,
    };
    let (stops, mut stop_requests) = mpsc::channel(16);
    let server = Arc::new(Server::new(shared, limits, config.save_file.clone(), stops.clone()));

    let threads = config.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let mut workers = Vec::new();
    for i in 0..threads.max(1) {
        let started = tokio::runtime::Builder::new_current_thread().enable_all().build().and_then(
            |runtime| {
                let handle = runtime.handle().clone();
                std::thread::Builder::new()
                    .name(format!("worker-{i}"))
                    .spawn(move || runtime.block_on(std::future::pending::<()>()))
                    .map(|_| handle)
            },
        );
        match started {
            Ok(handle) => workers.push(handle),
            Err(e) => {
                eprintln!("error: cannot start worker {i}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    // The accept loop, the signals and the stop requests run on the main thread.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let listener = match tokio::net::TcpListener::bind((config.bind, config.port)).await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("error: cannot listen on {}:{}: {e}", config.bind, config.port);
                return ExitCode::FAILURE;
            }
        };
        match listener.local_addr() {
            // Tests and scripts read this line to find a port chosen with --port 0.
            Ok(addr) => println!("listening on {addr}"),
            Err(e) => eprintln!("warning: local address unknown: {e}"),
        }
        tokio::spawn(async move {
            let signal = stop_signal().await;
            println!("{signal}: stopping");
            // As Redis does with save points configured: a stop request saves first.
            let _ = stops.send(Stop { save: true, failed: None }).await;
        });
        let accepting = tokio::spawn(Arc::clone(&server).run(listener, workers));
        tokio::spawn(Arc::clone(&server).tick_every(TICK_INTERVAL));
        if config.save_interval > 0 {
            let interval = Duration::from_secs(config.save_interval);
            tokio::spawn(Arc::clone(&server).save_every(interval));
        }
        // The one way the process ends: a stop request, from SHUTDOWN or a signal.
        while let Some(stop) = stop_requests.recv().await {
            if !stop.save {
                println!("stopping without saving");
                return ExitCode::SUCCESS;
            }
            match server.save().await {
                Ok(saved) => {
                    println!(
                        "saved {} filters ({} items) to {}",
                        saved.filters,
                        saved.items,
                        config.save_file.display()
                    );
                    return ExitCode::SUCCESS;
                }
                Err(e) => {
                    let error = format!("ERR saving to {}: {e}", config.save_file.display());
                    eprintln!("error: {error}");
                    match stop.failed {
                        // SHUTDOWN hears of it, and the server goes on, as Redis does.
                        Some(failed) => drop(failed.send(error)),
                        // A signal's stop ends the process all the same.
                        None => return ExitCode::FAILURE,
                    }
                }
            }
        }
        accepting.abort();
        ExitCode::FAILURE
    })
}

/// Raises the soft limit on open files to fit `max_clients` connections, as far as the hard
/// limit allows, and returns how many clients then fit (as Redis does at start).
fn raise_fd_limit(max_clients: usize) -> usize {
    let wanted = (max_clients as u64).saturating_add(RESERVED_FDS);
    match rlimit::increase_nofile_limit(wanted) {
        Ok(limit) if limit >= wanted => max_clients,
        Ok(limit) => {
            let fit = limit.saturating_sub(RESERVED_FDS).max(1) as usize;
            println!(
                "warning: the open-file limit is {limit}, so at most {fit} clients are served \
                 (--max-clients {max_clients}); more are refused with an error"
            );
            fit
        }
        Err(e) => {
            eprintln!("warning: cannot read or raise the open-file limit: {e}");
            max_clients
        }
    }
}

/// Waits for SIGINT or SIGTERM, and names it.
#[cfg(unix)]
async fn stop_signal() -> &'static str {
    let mut terminate =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(e) => {
                eprintln!("warning: SIGTERM will not save first: {e}");
                let _ = tokio::signal::ctrl_c().await;
                return "SIGINT";
            }
        };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = terminate.recv() => "SIGTERM",
    }
}

/// Waits for Ctrl-C.
#[cfg(not(unix))]
async fn stop_signal() -> &'static str {
    let _ = tokio::signal::ctrl_c().await;
    "Ctrl-C"
}
