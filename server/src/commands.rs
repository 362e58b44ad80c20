//! What each request does: RedisBloom's `CF.*` commands from [`lockfree_cuckoo_commands`], and
//! the server's own, [`SERVER_COMMANDS`]: authentication, the protocol switch, transactions
//! as clients' pipelines use them, and the keyspace commands that make sense for a map of
//! filters.
//!
//! Reply shapes and error texts are Redis 7's where it has the command. Where this server
//! differs, the difference is named at the command.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use lockfree_cuckoo_commands::{
    header, lower_name, parse, parse_i64, Argv, Protocol, Reply, COMMANDS,
};

use crate::store::Store;

/// What running one of the server's own commands gives: the reply, or `None` when [`Next`]
/// says what to do instead.
type Outcome = (Option<Reply>, Next);

/// One of the server's own commands.
#[derive(Clone, Copy)]
pub struct ServerCommand {
    /// The name, in lower case.
    pub name: &'static str,
    /// Redis's arity: the exact number of arguments with the name, or at least `-arity`.
    pub arity: i32,
    run: fn(&Shared, &mut Session, &dyn Argv) -> Outcome,
}

impl std::fmt::Debug for ServerCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerCommand")
            .field("name", &self.name)
            .field("arity", &self.arity)
            .finish()
    }
}

const fn server(
    name: &'static str,
    arity: i32,
    run: fn(&Shared, &mut Session, &dyn Argv) -> Outcome,
) -> ServerCommand {
    ServerCommand { name, arity, run }
}

fn reply(reply: Reply) -> Outcome {
    (Some(reply), Next::Continue)
}

/// The server's own commands, with Redis's arities. With [`COMMANDS`], every command this
/// server knows: the one list that both dispatch and `COMMAND COUNT` read.
pub const SERVER_COMMANDS: &[ServerCommand] = &[
    server("auth", -2, |shared, session, args| reply(auth(shared, session, args))),
    server("hello", -1, |shared, session, args| reply(hello(shared, session, args))),
    server("ping", -1, |_, _, args| {
        reply(match args.len() {
            1 => Reply::Status("PONG"),
            2 => Reply::Bulk(args.get(1).to_vec()),
            _ => wrong_arity("ping"),
        })
    }),
    server("echo", 2, |_, _, args| reply(Reply::Bulk(args.get(1).to_vec()))),
    server("quit", -1, |_, _, _| (Some(Reply::Ok), Next::Quit)),
    server("select", 2, |_, _, args| {
        reply(match parse_i64(args.get(1)) {
            Some(0) => Reply::Ok,
            Some(_) => Reply::error("ERR DB index is out of range"),
            None => Reply::error("ERR value is not an integer or out of range"),
        })
    }),
    server("client", -2, |_, session, args| reply(client(session, args))),
    server("command", -1, |_, _, args| reply(command(args))),
    server("config", -2, |shared, _, args| reply(config(&shared.store, args))),
    server("info", -1, |shared, _, _| reply(server_info(shared))),
    server("dbsize", 1, |shared, _, _| reply(Reply::Int(shared.store.len() as i64))),
    server("del", -2, |shared, _, args| {
        let names = (1..args.len()).map(|i| args.get(i));
        reply(Reply::Int(shared.store.delete(names) as i64))
    }),
    server("exists", -2, |shared, _, args| {
        let names = (1..args.len()).map(|i| args.get(i));
        reply(Reply::Int(shared.store.count_existing(names) as i64))
    }),
    // RedisBloom's module type name for cuckoo filters.
    server("type", 2, |shared, _, args| {
        let found = shared.store.with(args.get(1), |e| e.is_some());
        reply(Reply::Status(if found { "MBbloomCF" } else { "none" }))
    }),
    server("flushdb", -1, flush),
    server("flushall", -1, flush),
    server("multi", 1, |_, session, _| {
        session.transaction = Some(Transaction::default());
        reply(Reply::Ok)
    }),
    server("exec", 1, exec),
    server("discard", 1, |_, session, _| {
        reply(match session.transaction.take() {
            Some(_) => Reply::Ok,
            None => Reply::error("ERR DISCARD without MULTI"),
        })
    }),
    server("save", 1, |_, _, _| (None, Next::Save)),
    server("shutdown", -1, shutdown),
];

/// `FLUSHDB` and `FLUSHALL`: one database, so both empty it. `ASYNC` and `SYNC` are accepted;
/// it is done at once.
fn flush(shared: &Shared, _: &mut Session, args: &dyn Argv) -> Outcome {
    let mode = (args.len() == 2).then(|| args.get(1));
    let known =
        mode.is_none_or(|m| m.eq_ignore_ascii_case(b"ASYNC") || m.eq_ignore_ascii_case(b"SYNC"));
    if args.len() > 2 || !known {
        return reply(Reply::error("ERR syntax error"));
    }
    shared.store.clear();
    reply(Reply::Ok)
}

/// `SHUTDOWN [SAVE|NOSAVE]`
fn shutdown(_: &Shared, _: &mut Session, args: &dyn Argv) -> Outcome {
    let save = match (args.len() == 2).then(|| args.get(1)) {
        None if args.len() == 1 => true,
        Some(arg) if arg.eq_ignore_ascii_case(b"SAVE") => true,
        Some(arg) if arg.eq_ignore_ascii_case(b"NOSAVE") => false,
        _ => return reply(Reply::error("ERR syntax error")),
    };
    (None, Next::Shutdown { save })
}

/// Commands a client may send before it authenticates.
const BEFORE_AUTH: &[&str] = &["auth", "hello", "quit"];
/// Commands that act on the connection or the process, not queued by `MULTI`.
const NOT_IN_MULTI: &[&str] = &["multi", "save", "shutdown", "quit", "hello", "auth", "select"];

/// State every connection shares.
#[derive(Debug)]
pub struct Shared {
    /// The named filters.
    pub store: Store,
    /// The password clients must give (`AUTH`, `HELLO ... AUTH`), if any.
    pub password: Option<String>,
    /// Connections open now (for `INFO`; the accept loop also bounds it).
    pub clients: AtomicUsize,
    /// Bytes all connections' buffers hold: partial requests, replies not yet sent, queued
    /// transactions (`INFO`'s `mem_clients_normal`; the connections bound it).
    pub client_buffers: AtomicUsize,
    /// When the server started.
    pub started: Instant,
}

/// One connection's state.
#[derive(Debug)]
pub struct Session {
    /// The connection's number (`CLIENT ID`).
    pub id: u64,
    /// What `HELLO` chose.
    pub protocol: Protocol,
    /// Whether `AUTH` (or `HELLO ... AUTH`) succeeded, or no password is needed.
    pub authenticated: bool,
    /// The requests `MULTI` queued, and whether one of them was refused.
    transaction: Option<Transaction>,
    /// The requests of an `EXEC` not run yet ([`exec_next`]), and their bytes.
    executing: VecDeque<Vec<Vec<u8>>>,
    executing_bytes: usize,
}

#[derive(Debug, Default)]
struct Transaction {
    queued: VecDeque<Vec<Vec<u8>>>,
    /// Bytes of `queued`: its arguments, and a vector for each request and argument.
    bytes: usize,
    refused: bool,
}

/// The most requests one `MULTI` queues; past it the transaction is discarded.
pub const MAX_QUEUED: usize = 100_000;

/// The most bytes one `MULTI` queues (its requests' arguments and their vectors); past it the
/// transaction is discarded. All connections' queues also count against `--max-buffered-bytes`.
pub const MAX_QUEUED_BYTES: usize = 64 << 20;

impl Session {
    /// A new connection's state: authenticated unless the server has a password.
    pub fn new(id: u64, shared: &Shared) -> Self {
        Self {
            id,
            protocol: Protocol::Resp2,
            authenticated: shared.password.is_none(),
            transaction: None,
            executing: VecDeque::new(),
            executing_bytes: 0,
        }
    }

    /// Bytes of the requests this connection's transaction holds, queued or not run yet.
    pub fn queued_bytes(&self) -> usize {
        self.transaction.as_ref().map_or(0, |t| t.bytes) + self.executing_bytes
    }
}

/// What a queued request takes: its arguments, and a vector header for it and each of them.
fn request_bytes<A: AsRef<[u8]>>(args: &[A]) -> usize {
    let header = std::mem::size_of::<Vec<u8>>();
    header + args.iter().map(|arg| arg.as_ref().len() + header).sum::<usize>()
}

/// What the connection does after a command's reply is queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Read the next command.
    Continue,
    /// `EXEC`: the array's header is written; run the queued requests with [`exec_next`],
    /// sending their replies as they come.
    Exec,
    /// `SAVE`: write the save file, then reply (the connection does it, off the runtime's
    /// worker threads).
    Save,
    /// `QUIT`: send the replies so far and close.
    Quit,
    /// An HTTP request line or header (`POST`, `Host:`): close without running anything more
    /// from this connection, as Redis does, so that a web page cannot make a browser send
    /// commands to the server.
    Close,
    /// `SHUTDOWN`: save unless told not to, then end the process (if the save fails, the
    /// error is the reply and the server goes on, as Redis does).
    Shutdown {
        /// Whether to save first (`NOSAVE` says no).
        save: bool,
    },
}

/// Runs one request, appending its reply to `out`.
pub fn execute<A: Argv + ?Sized>(
    shared: &Shared,
    session: &mut Session,
    args: &A,
    out: &mut Vec<u8>,
) -> Next {
    // The name is compared without case; it is lower-cased only for the server's own
    // commands, after the filters' have been looked for.
    let named = |wanted: &str| args.get(0).eq_ignore_ascii_case(wanted.as_bytes());
    if named("post") || named("host:") {
        let name = String::from_utf8_lossy(args.get(0));
        eprintln!("possible cross-protocol attack: a {name} request; the connection is closed");
        return Next::Close;
    }
    if !session.authenticated && !BEFORE_AUTH.iter().any(|&allowed| named(allowed)) {
        Reply::error("NOAUTH Authentication required.").write(session.protocol, out);
        return Next::Continue;
    }
    let mut lower = [0; 32];
    if session.transaction.is_some() && !named("exec") && !named("discard") {
        let reply = queue(session, name_of(args.get(0), &mut lower), &Dyn(args));
        reply.write(session.protocol, out);
        return Next::Continue;
    }
    if let Some(command) = parse(args) {
        let reply = match command {
            Ok(command) => command.run(&shared.store, session.protocol),
            Err(reply) => reply,
        };
        emit(&reply, session.protocol, out);
        return Next::Continue;
    }
    let (reply, next) = own(shared, session, name_of(args.get(0), &mut lower), &Dyn(args));
    if let Some(reply) = reply {
        emit(&reply, session.protocol, out);
    }
    if next == Next::Exec {
        header(out, b'*', session.executing.len());
    }
    next
}

/// Writes `reply` to `out`, or an error if `out` cannot grow by it: a reply's size is the
/// client's choice (a dump's chunk), and the process must not abort on it.
fn emit(reply: &Reply, protocol: Protocol, out: &mut Vec<u8>) {
    if out.try_reserve(reply.len_bound()).is_ok() {
        reply.write(protocol, out);
    } else {
        Reply::error(OUT_OF_MEMORY).write(protocol, out);
    }
}

/// The reply to a request whose reply cannot be allocated.
pub const OUT_OF_MEMORY: &str = "ERR out of memory for the reply";

/// Runs the next request of the `EXEC` under way and writes its reply; false when none is left.
pub fn exec_next(shared: &Shared, session: &mut Session, out: &mut Vec<u8>) -> bool {
    let Some(request) = session.executing.pop_front() else { return false };
    session.executing_bytes -= request_bytes(&request);
    let args: Vec<&[u8]> = request.iter().map(Vec::as_slice).collect();
    let reply = match parse(&args[..]) {
        Some(Ok(command)) => command.run(&shared.store, session.protocol),
        Some(Err(reply)) => reply,
        None => {
            let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
            own(shared, session, &name, &Dyn(&args[..])).0.unwrap_or(Reply::Ok)
        }
    };
    emit(&reply, session.protocol, out);
    true
}

/// The command name in lower case; one that is not UTF-8 is no command's, and stays unknown.
fn name_of<'b>(raw: &'b [u8], buf: &'b mut [u8; 32]) -> &'b str {
    std::str::from_utf8(lower_name(raw, buf)).unwrap_or("\u{fffd}")
}

/// `MULTI` is open: checks the request as Redis does at queueing time, then keeps a copy.
fn queue(session: &mut Session, name: &str, args: &dyn Argv) -> Reply {
    let transaction = session.transaction.as_mut().expect("MULTI is open");
    let reply = match arity_of(name) {
        None => Some(unknown_command(args)),
        Some(_) if NOT_IN_MULTI.contains(&name) => {
            Some(Reply::error("ERR Command not allowed inside a transaction"))
        }
        Some(arity) if !arity_fits(arity, args.len()) => Some(wrong_arity(name)),
        Some(_) => None,
    };
    let request: Vec<&[u8]> = (0..args.len()).map(|i| args.get(i)).collect();
    let bytes = request_bytes(&request);
    let reply = reply.or_else(|| {
        let too_many = transaction.queued.len() >= MAX_QUEUED;
        (too_many || transaction.bytes + bytes > MAX_QUEUED_BYTES).then(|| {
            Reply::error_owned(format!(
                "ERR the transaction is over the limit of {MAX_QUEUED} requests or \
                 {MAX_QUEUED_BYTES} bytes, and is discarded"
            ))
        })
    });
    match reply {
        Some(error) => {
            transaction.refused = true;
            // Nothing of a refused transaction runs: its memory goes now.
            transaction.queued = VecDeque::new();
            transaction.bytes = 0;
            error
        }
        None if transaction.refused => Reply::Status("QUEUED"),
        None => {
            transaction.queued.push_back(request.iter().map(|arg| arg.to_vec()).collect());
            transaction.bytes += bytes;
            Reply::Status("QUEUED")
        }
    }
}

fn arity_of(name: &str) -> Option<i32> {
    let cf = COMMANDS.iter().map(|spec| (spec.name, spec.arity));
    let own = SERVER_COMMANDS.iter().map(|c| (c.name, c.arity));
    cf.chain(own).find(|&(known, _)| known == name).map(|(_, arity)| arity)
}

fn arity_fits(arity: i32, argc: usize) -> bool {
    if arity >= 0 {
        argc == arity as usize
    } else {
        argc >= arity.unsigned_abs() as usize
    }
}

/// One of the server's own commands, or the error for an unknown one or a wrong arity.
fn own(shared: &Shared, session: &mut Session, name: &str, args: &dyn Argv) -> Outcome {
    let Some(command) = SERVER_COMMANDS.iter().find(|c| c.name == name) else {
        return reply(unknown_command(args));
    };
    if !arity_fits(command.arity, args.len()) {
        return reply(wrong_arity(name));
    }
    (command.run)(shared, session, args)
}

/// `EXEC`: the queued requests in order, their replies in one array. Other connections'
/// commands may run between them: the filters take no lock, so unlike Redis nothing stops the
/// world for a transaction; `MULTI` here groups replies, as clients' pipelines use it. Only the
/// array's header is written here: the connection runs the requests one by one
/// ([`exec_next`]), sending each reply before the next is made, so a transaction of large
/// replies holds one of them at a time.
fn exec(_: &Shared, session: &mut Session, _: &dyn Argv) -> Outcome {
    let Some(transaction) = session.transaction.take() else {
        return reply(Reply::error("ERR EXEC without MULTI"));
    };
    if transaction.refused {
        return reply(Reply::error("EXECABORT Transaction discarded because of previous errors."));
    }
    session.executing = transaction.queued;
    session.executing_bytes = transaction.bytes;
    (None, Next::Exec)
}

/// Compares in time that depends on the lengths only, not on where the first difference is.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given.iter().zip(expected).fold(0, |d, (a, b)| d | (a ^ b)) == 0
}

/// Checks `user` (only `default` exists) and `password`; on success the session is
/// authenticated.
fn login(shared: &Shared, session: &mut Session, user: &[u8], password: &[u8]) -> Option<Reply> {
    let Some(expected) = &shared.password else {
        return Some(Reply::error(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        ));
    };
    if user == b"default" && same_secret(password, expected.as_bytes()) {
        session.authenticated = true;
        None
    } else {
        Some(Reply::error("WRONGPASS invalid username-password pair or user is disabled."))
    }
}

/// `AUTH [user] password`
fn auth(shared: &Shared, session: &mut Session, args: &dyn Argv) -> Reply {
    let outcome = match args.len() {
        2 => login(shared, session, b"default", args.get(1)),
        3 => login(shared, session, args.get(1), args.get(2)),
        _ => Some(Reply::error("ERR syntax error")),
    };
    outcome.unwrap_or(Reply::Ok)
}

/// `HELLO [protover [AUTH user password] [SETNAME name]]`: RESP2 or RESP3.
fn hello(shared: &Shared, session: &mut Session, args: &dyn Argv) -> Reply {
    let mut protocol = session.protocol;
    if args.len() >= 2 {
        protocol = match parse_i64(args.get(1)) {
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            Some(_) => {
                return Reply::error("NOPROTO sorry, this protocol version is not supported.")
            }
            None => return Reply::error("ERR Protocol version is not an integer or out of range"),
        };
    }
    let mut at = 2;
    while at < args.len() {
        let option = args.get(at);
        if option.eq_ignore_ascii_case(b"AUTH") && at + 2 < args.len() {
            if let Some(refused) = login(shared, session, args.get(at + 1), args.get(at + 2)) {
                return refused;
            }
            at += 3;
        } else if option.eq_ignore_ascii_case(b"SETNAME") && at + 1 < args.len() {
            at += 2;
        } else {
            let option = String::from_utf8_lossy(option);
            return Reply::error_owned(format!("ERR Syntax error in HELLO option '{option}'"));
        }
    }
    if !session.authenticated {
        return Reply::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time",
        );
    }
    session.protocol = protocol;
    let text = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
    Reply::Map(vec![
        (text("server"), text("redis")),
        (text("version"), text("7.0.0")),
        (text("proto"), Reply::Int(if protocol == Protocol::Resp3 { 3 } else { 2 })),
        (text("id"), Reply::Int(session.id as i64)),
        (text("mode"), text("standalone")),
        (text("role"), text("master")),
        (text("modules"), Reply::Array(Vec::new())),
    ])
}

/// The `CLIENT` subcommands client libraries send on connecting.
fn client(session: &Session, args: &dyn Argv) -> Reply {
    let sub = args.get(1).to_ascii_uppercase();
    match sub.as_slice() {
        b"SETNAME" | b"SETINFO" => Reply::Ok,
        b"GETNAME" => Reply::Null,
        b"ID" => Reply::Int(session.id as i64),
        b"LIST" | b"KILL" => Reply::error(
            "ERR CLIENT LIST and CLIENT KILL are not supported: this server keeps no registry \
             of connections",
        ),
        _ => unknown_subcommand(args.get(1), "CLIENT"),
    }
}

/// `COMMAND`, `COMMAND DOCS` and the like: an empty table (clients fall back to plain
/// behaviour), and `COMMAND COUNT`.
fn command(args: &dyn Argv) -> Reply {
    if args.len() >= 2 && args.get(1).eq_ignore_ascii_case(b"COUNT") {
        return Reply::Int((COMMANDS.len() + SERVER_COMMANDS.len()) as i64);
    }
    Reply::Array(Vec::new())
}

/// `CONFIG GET name...`: the settings load generators and clients ask about.
fn config(store: &Store, args: &dyn Argv) -> Reply {
    if !args.get(1).eq_ignore_ascii_case(b"GET") {
        return Reply::error("ERR CONFIG subcommands other than GET are not supported");
    }
    let max_memory = store.max_memory().to_string();
    let known =
        [("save", ""), ("appendonly", "no"), ("databases", "1"), ("maxmemory", &max_memory)];
    let mut found = Vec::new();
    for i in 2..args.len() {
        let wanted = args.get(i);
        for (name, value) in known {
            if wanted == b"*" || wanted.eq_ignore_ascii_case(name.as_bytes()) {
                found.push((Reply::Bulk(name.into()), Reply::Bulk(value.into())));
            }
        }
    }
    Reply::Map(found)
}

fn server_info(shared: &Shared) -> Reply {
    let text = format!(
        "# Server\r\nredis_version:7.0.0\r\nlockfree_cuckoo_server:{}\r\narch_bits:{}\r\n\
         uptime_in_seconds:{}\r\n\
         \r\n# Clients\r\nconnected_clients:{}\r\n\
         \r\n# Memory\r\nused_memory:{}\r\nmaxmemory:{}\r\nmem_clients_normal:{}\r\n\
         transfers_memory:{}\r\nused_memory_rss:{}\r\n\
         \r\n# Cluster\r\ncluster_enabled:0\r\n\
         \r\n# Keyspace\r\ndb0:keys={},expires=0,avg_ttl=0\r\n",
        env!("CARGO_PKG_VERSION"),
        usize::BITS,
        shared.started.elapsed().as_secs(),
        shared.clients.load(Ordering::Relaxed),
        shared.store.used_memory(),
        shared.store.max_memory(),
        shared.client_buffers.load(Ordering::Relaxed),
        shared.store.transfer_bytes(),
        resident_bytes().unwrap_or(0),
        shared.store.len(),
    );
    Reply::Bulk(text.into_bytes())
}

/// The process's resident memory, where the system tells it (Linux's `/proc/self/statm`, in
/// pages of 4 KiB).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn wrong_arity(name: &str) -> Reply {
    Reply::error_owned(format!("ERR wrong number of arguments for '{name}' command"))
}

fn clip(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(128)]).into_owned()
}

fn unknown_subcommand(sub: &[u8], command: &str) -> Reply {
    Reply::error_owned(format!("ERR unknown subcommand '{}'. Try {command} HELP.", clip(sub)))
}

/// Redis 7's text: the name and the start of the arguments, 128 characters at most each.
fn unknown_command(args: &dyn Argv) -> Reply {
    let mut text =
        format!("ERR unknown command '{}', with args beginning with: ", clip(args.get(0)));
    for i in 1..args.len() {
        if text.len() > 256 {
            break;
        }
        text.push_str(&format!("'{}' ", clip(args.get(i))));
    }
    Reply::error_owned(text)
}

/// A request's arguments as a trait object, for the table's handlers.
struct Dyn<'a, A: ?Sized>(&'a A);

impl<A: Argv + ?Sized> Argv for Dyn<'_, A> {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn get(&self, i: usize) -> &[u8] {
        self.0.get(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(password: Option<&str>) -> Shared {
        Shared {
            store: Store::new(1 << 20, 16),
            password: password.map(str::to_owned),
            clients: AtomicUsize::new(0),
            client_buffers: AtomicUsize::new(0),
            started: Instant::now(),
        }
    }

    /// Runs one request as a connection does, an `EXEC`'s queued requests included.
    fn run(shared: &Shared, session: &mut Session, line: &str) -> (String, Next) {
        let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let mut out = Vec::new();
        let next = execute(shared, session, &words[..], &mut out);
        if next == Next::Exec {
            while exec_next(shared, session, &mut out) {}
        }
        (String::from_utf8(out).unwrap(), next)
    }

    #[test]
    fn a_transaction_is_bounded_in_requests_and_bytes() {
        let shared = shared(None);
        let mut s = Session::new(1, &shared);
        run(&shared, &mut s, "MULTI");
        let big = format!("CF.ADD f {}", "x".repeat(1 << 20));
        let mut replies = Vec::new();
        for _ in 0..(MAX_QUEUED_BYTES >> 20) + 1 {
            replies.push(run(&shared, &mut s, &big).0);
            assert!(s.queued_bytes() <= MAX_QUEUED_BYTES);
        }
        // 63 requests of a little over 1 MiB fit in 64 MiB, the 64th does not.
        let refused = replies.iter().position(|r| r != "+QUEUED\r\n").unwrap();
        assert_eq!(refused, (MAX_QUEUED_BYTES >> 20) - 1, "{}", replies[refused]);
        assert!(replies[refused].starts_with("-ERR the transaction is over the limit"));
        // The refused transaction let its requests go at once, and queues nothing more.
        assert_eq!(s.queued_bytes(), 0);
        assert_eq!(run(&shared, &mut s, "CF.ADD f a").0, "+QUEUED\r\n");
        assert_eq!(s.queued_bytes(), 0);
        assert!(run(&shared, &mut s, "EXEC").0.starts_with("-EXECABORT"));
        assert!(shared.store.is_empty());
        run(&shared, &mut s, "MULTI");
        for _ in 0..MAX_QUEUED {
            assert_eq!(run(&shared, &mut s, "PING").0, "+QUEUED\r\n");
        }
        assert!(run(&shared, &mut s, "PING").0.starts_with("-ERR the transaction is over"));
        assert!(run(&shared, &mut s, "EXEC").0.starts_with("-EXECABORT"));
        // Within the bounds, the replies come in one array.
        run(&shared, &mut s, "MULTI");
        run(&shared, &mut s, "CF.ADD f a");
        run(&shared, &mut s, "CF.EXISTS f a");
        assert_eq!(run(&shared, &mut s, "EXEC"), ("*2\r\n:1\r\n:1\r\n".into(), Next::Exec));
        assert_eq!(s.queued_bytes(), 0);
    }

    #[test]
    fn every_listed_command_is_known() {
        let shared = shared(None);
        let names = COMMANDS.iter().map(|s| s.name).chain(SERVER_COMMANDS.iter().map(|c| c.name));
        for name in names.filter(|&n| n != "shutdown") {
            let mut session = Session::new(1, &shared);
            let (reply, _) = run(&shared, &mut session, name);
            assert!(!reply.starts_with("-ERR unknown command"), "{name}: {reply}");
        }
    }

    #[test]
    fn a_password_gates_everything_but_auth() {
        let shared = shared(Some("sesame"));
        let mut s = Session::new(1, &shared);
        assert_eq!(run(&shared, &mut s, "CF.ADD f a").0, "-NOAUTH Authentication required.\r\n");
        assert_eq!(run(&shared, &mut s, "SHUTDOWN NOSAVE").1, Next::Continue);
        assert_eq!(run(&shared, &mut s, "SAVE").1, Next::Continue);
        assert!(run(&shared, &mut s, "HELLO 3").0.starts_with("-NOAUTH HELLO must be called"));
        assert!(run(&shared, &mut s, "AUTH wrong").0.starts_with("-WRONGPASS"));
        assert!(run(&shared, &mut s, "AUTH admin sesame").0.starts_with("-WRONGPASS"));
        assert!(shared.store.is_empty());
        assert_eq!(run(&shared, &mut s, "AUTH default sesame").0, "+OK\r\n");
        assert_eq!(run(&shared, &mut s, "CF.ADD f a").0, ":1\r\n");
        let mut t = Session::new(2, &shared);
        let hello = run(&shared, &mut t, "HELLO 3 AUTH default sesame").0;
        assert!(hello.starts_with("%7\r\n"), "{hello}");
        assert_eq!(run(&shared, &mut t, "CF.EXISTS f a").0, "#t\r\n");
    }

    #[test]
    fn auth_without_a_password_is_an_error() {
        let shared = shared(None);
        let mut s = Session::new(1, &shared);
        assert!(run(&shared, &mut s, "AUTH x")
            .0
            .starts_with("-ERR AUTH <password> called without"));
    }

    #[test]
    fn http_request_lines_close_the_connection() {
        let shared = shared(None);
        let mut s = Session::new(1, &shared);
        assert_eq!(run(&shared, &mut s, "POST / HTTP/1.1").1, Next::Close);
        assert_eq!(run(&shared, &mut s, "Host: localhost").1, Next::Close);
    }

    #[test]
    fn hello_switches_the_protocol() {
        let shared = shared(None);
        let mut s = Session::new(7, &shared);
        let two = run(&shared, &mut s, "HELLO").0;
        assert!(two.starts_with("*14\r\n"), "{two}");
        let three = run(&shared, &mut s, "HELLO 3").0;
        assert!(three.starts_with("%7\r\n") && three.contains("$5\r\nproto\r\n:3\r\n"), "{three}");
        assert!(run(&shared, &mut s, "CF.INFO nope").0.starts_with("-ERR not found"));
        run(&shared, &mut s, "CF.RESERVE f 100");
        assert!(run(&shared, &mut s, "CF.INFO f").0.starts_with("%8\r\n"));
        assert!(run(&shared, &mut s, "HELLO 4").0.starts_with("-NOPROTO"));
        assert_eq!(s.protocol, Protocol::Resp3);
    }

    #[test]
    fn multi_queues_and_exec_runs_in_order() {
        let shared = shared(None);
        let mut s = Session::new(1, &shared);
        assert_eq!(run(&shared, &mut s, "MULTI").0, "+OK\r\n");
        assert_eq!(run(&shared, &mut s, "CF.ADD f a").0, "+QUEUED\r\n");
        assert_eq!(run(&shared, &mut s, "CF.EXISTS f a").0, "+QUEUED\r\n");
        assert!(shared.store.is_empty(), "a queued command ran");
        assert_eq!(run(&shared, &mut s, "EXEC").0, "*2\r\n:1\r\n:1\r\n");
        run(&shared, &mut s, "MULTI");
        run(&shared, &mut s, "CF.DEL f a");
        assert_eq!(run(&shared, &mut s, "DISCARD").0, "+OK\r\n");
        assert_eq!(run(&shared, &mut s, "CF.EXISTS f a").0, ":1\r\n");
        run(&shared, &mut s, "MULTI");
        assert!(run(&shared, &mut s, "NOPE").0.starts_with("-ERR unknown command"));
        assert!(run(&shared, &mut s, "CF.ADD f").0.starts_with("-ERR wrong number"));
        assert!(run(&shared, &mut s, "EXEC").0.starts_with("-EXECABORT"));
        assert!(run(&shared, &mut s, "EXEC").0.starts_with("-ERR EXEC without MULTI"));
    }

    #[test]
    fn flushdb_empties_the_store() {
        let shared = shared(None);
        let mut s = Session::new(1, &shared);
        run(&shared, &mut s, "CF.ADD f a");
        run(&shared, &mut s, "CF.ADD g a");
        assert_eq!(run(&shared, &mut s, "FLUSHDB").0, "+OK\r\n");
        assert_eq!(run(&shared, &mut s, "DBSIZE").0, ":0\r\n");
        assert_eq!(run(&shared, &mut s, "FLUSHALL ASYNC").0, "+OK\r\n");
        assert_eq!(shared.store.used_memory(), 0);
    }
}
