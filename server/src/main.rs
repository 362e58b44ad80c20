//! `cargo run --release -p lockfree-cuckoo-server -- --help`

use std::process::ExitCode;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use lockfree_cuckoo_server::commands::Shared;
use lockfree_cuckoo_server::config::Config;
use lockfree_cuckoo_server::persist;
use lockfree_cuckoo_server::server::{Limits, Server};
use lockfree_cuckoo_server::store::Store;

fn main() -> ExitCode {
    let config = Config::parse();
    let store = Store::new(config.max_memory);
    match persist::load(&store, &config.save_file) {
        Ok(0) => {}
        Ok(n) => println!("loaded {n} filters from {}", config.save_file.display()),
        Err(e) => {
            // Serving without the saved filters would lose them at the next SAVE.
            eprintln!("error: cannot load {}: {e}", config.save_file.display());
            return ExitCode::FAILURE;
        }
    }
    let shared = Shared {
        store,
        default_capacity: config.default_capacity,
        clients: AtomicUsize::new(0),
        started: Instant::now(),
    };
    let limits =
        Limits { max_request_bytes: config.max_request_bytes, max_clients: config.max_clients };
    let server = Arc::new(Server::new(shared, limits, config.save_file.clone()));

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
    // The accept loop and the signals run on the main thread.
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
        tokio::select! {
            result = Arc::clone(&server).run(listener, workers) => {
                if let Err(e) = result {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
                ExitCode::SUCCESS
            }
            signal = stop_signal() => {
                // As Redis does with save points configured: a stop request saves first.
                match server.save().await {
                    Ok(saved) => {
                        println!(
                            "{signal}: saved {} filters ({} items) to {}",
                            saved.filters,
                            saved.items,
                            config.save_file.display()
                        );
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        eprintln!("error: {signal}: cannot save to {}: {e}", config.save_file.display());
                        ExitCode::FAILURE
                    }
                }
            }
        }
    })
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
