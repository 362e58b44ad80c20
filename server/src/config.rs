//! The command line.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Parser;

use crate::server::OutputLimit;

/// A Redis-protocol cuckoo filter server: RedisBloom's CF.* commands on lock-free filters
/// shared by every connection.
#[derive(Clone, Debug, Parser)]
#[command(version)]
pub struct Config {
    /// Address to listen on. Without a password, protected mode serves loopback clients only,
    /// whatever the address.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// The password clients must give with AUTH (or HELLO ... AUTH default PASSWORD) before
    /// any other command. Read from the environment variable LFC_REQUIREPASS when not given,
    /// so that it need not appear in the process list.
    #[arg(long, env = "LFC_REQUIREPASS", hide_env_values = true)]
    pub requirepass: Option<String>,
    /// Protected mode (yes or no): with no password, refuse every client that is not on the
    /// loopback interface.
    #[arg(long, default_value = "yes", value_parser = ["yes", "no"])]
    pub protected_mode: String,
    /// Port to listen on (0: any free port, printed at start).
    #[arg(long, short, default_value_t = 6380)]
    pub port: u16,
    /// The save file: written by SAVE, loaded at start if it exists.
    #[arg(long, default_value = "lockfree-cuckoo.save")]
    pub save_file: PathBuf,
    /// Worker threads, each serving its share of the connections (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Largest request one client may send, in bytes (Redis's client-query-buffer-limit); a
    /// larger one is refused before it is read, and that connection closed.
    #[arg(long, default_value_t = 1 << 30)]
    pub max_request_bytes: usize,
    /// Largest argument of a request, in bytes, as Redis's proto-max-bulk-len: a CF.LOADCHUNK
    /// of a dump's 16 MiB chunk fits; a larger argument is refused before it is read, and that
    /// connection closed.
    #[arg(long, default_value_t = 512 << 20)]
    pub proto_max_bulk_len: usize,
    /// Most bytes all connections' buffers together may hold (INFO's mem_clients_normal):
    /// partial requests, replies not yet sent, queued transactions. A client that would take
    /// the total over it is told so and closed.
    #[arg(long, default_value_t = 1 << 30)]
    pub max_buffered_bytes: usize,
    /// Redis's client-output-buffer-limit for normal clients, "<hard> <soft> <soft seconds>"
    /// (sizes in bytes, or with kb, mb or gb): a client whose unsent replies would pass the
    /// hard limit, or stay over the soft one for that many seconds, is closed; 0 turns a limit
    /// off. The default fits a CF.SCANDUMP chunk (16 MiB) read at 280 KB/s or faster.
    #[arg(long, default_value = "64mb 16mb 60")]
    pub client_output_buffer_limit: OutputLimit,
    /// Seconds between saves to the save file, made in the background while clients go on
    /// (0: only SAVE, SHUTDOWN and a stop signal save). A crash or kill -9 loses at most the
    /// writes since the last save: this interval and the time a save takes.
    #[arg(long, default_value_t = 60)]
    pub save_interval: u64,
    /// Most connections at once; more are told so and closed. The process raises its
    /// file-descriptor limit to fit, and lowers this to what the limit allows.
    #[arg(long, default_value_t = 10_000)]
    pub max_clients: usize,
    /// Most bytes all filters together may take, growth included (INFO's used_memory): a
    /// create or load beyond it is refused, and so is an insert whose growth could pass it.
    #[arg(long, default_value_t = 4 << 30)]
    pub max_memory: usize,
    /// Capacity of a filter that CF.ADD or CF.ADDNX creates for a new name.
    #[arg(long, default_value_t = 1024)]
    pub default_capacity: u64,
}
