//! What each request does: RedisBloom's `CF.*` commands from [`lockfree_cuckoo_commands`], and
//! the server's own, [`SERVER_COMMANDS`]: authentication, the protocol switch, transactions
//! as clients' pipelines use them, and the keyspace commands that make sense for a map of
//! filters.
//!
//! Reply shapes and error texts are Redis 7's where it has the command. Where this server
//! differs, the difference is named at the command.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use lockfree_cuckoo_commands::{parse, parse_i64, Argv, Protocol, Reply, COMMANDS};

use crate::store::Store;

/// The server's own commands, with Redis's arities (negative: at least that many). With
/// [`COMMANDS`], every command this server knows.
pub const SERVER_COMMANDS: &[(&str, i32)] = &[
    ("auth", -2),
    ("hello", -1),
    ("ping", -1),
    ("echo", 2),
    ("quit", -1),
    ("select", 2),
    ("client", -2),
    ("command", -1),
    ("config", -2),
    ("info", -1),
    ("dbsize", 1),
    ("del", -2),
    ("exists", -2),
    ("type", 2),
    ("flushdb", -1),
    ("flushall", -1),
    ("multi", 1),
    ("exec", 1),
    ("discard", 1),
    ("save", 1),
    ("shutdown", -1),
];

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
}

#[derive(Debug, Default)]
struct Transaction {
    queued: Vec<Vec<Vec<u8>>>,
    refused: bool,
}

impl Session {
    /// A new connection's state: authenticated unless the server has a password.
    pub fn new(id: u64, shared: &Shared) -> Self {
        Self {
            id,
            protocol: Protocol::Resp2,
            authenticated: shared.password.is_none(),
            transaction: None,
        }
    }
}

/// What the connection does after a command's reply is queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Read the next command.
    Continue,
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
    let name = String::from_utf8_lossy(args.get(0)).to_ascii_lowercase();
    if name == "post" || name == "host:" {
        eprintln!("possible cross-protocol attack: a {name} request; the connection is closed");
        return Next::Close;
    }
    if !session.authenticated && !BEFORE_AUTH.contains(&name.as_str()) {
        Reply::error("NOAUTH Authentication required.").write(session.protocol, out);
        return Next::Continue;
    }
    if session.transaction.is_some() && !matches!(name.as_str(), "exec" | "discard") {
        let reply = queue(session, &name, args);
        reply.write(session.protocol, out);
        return Next::Continue;
    }
    if let Some(command) = parse(args) {
        let reply = match command {
            Ok(command) => command.run(&shared.store, session.protocol),
            Err(reply) => reply,
        };
        reply.write(session.protocol, out);
        return Next::Continue;
    }
    let (reply, next) = own(shared, session, &name, args);
    if let Some(reply) = reply {
        reply.write(session.protocol, out);
    }
    next
}

/// `MULTI` is open: checks the request as Redis does at queueing time, then keeps a copy.
fn queue<A: Argv + ?Sized>(session: &mut Session, name: &str, args: &A) -> Reply {
    let transaction = session.transaction.as_mut().expect("MULTI is open");
    let reply = match arity_of(name) {
        None => Some(unknown_command(args)),
        Some(_) if NOT_IN_MULTI.contains(&name) => {
            Some(Reply::error("ERR Command not allowed inside a transaction"))
        }
        Some(arity) if !arity_fits(arity, args.len()) => Some(wrong_arity(name)),
        Some(_) => None,
    };
    match reply {
        Some(error) => {
            transaction.refused = true;
            error
        }
        None => {
            transaction.queued.push((0..args.len()).map(|i| args.get(i).to_vec()).collect());
            Reply::Status("QUEUED")
        }
    }
}

fn arity_of(name: &str) -> Option<i32> {
    let cf = COMMANDS.iter().map(|spec| (spec.name, spec.arity));
    cf.chain(SERVER_COMMANDS.iter().copied()).find(|&(known, _)| known == name).map(|(_, a)| a)
}

fn arity_fits(arity: i32, argc: usize) -> bool {
    if arity >= 0 {
        argc == arity as usize
    } else {
        argc >= arity.unsigned_abs() as usize
    }
}

/// The server's own commands; `None` as the reply when [`Next`] says what to do instead.
fn own<A: Argv + ?Sized>(
    shared: &Shared,
    session: &mut Session,
    name: &str,
    args: &A,
) -> (Option<Reply>, Next) {
    let store = &shared.store;
    let argc = args.len();
    let Some(arity) = arity_of(name) else {
        return (Some(unknown_command(args)), Next::Continue);
    };
    if !arity_fits(arity, argc) {
        return (Some(wrong_arity(name)), Next::Continue);
    }
    let reply = match name {
        "auth" => auth(shared, session, args),
        "hello" => hello(shared, session, args),
        "ping" => match argc {
            1 => Reply::Status("PONG"),
            2 => Reply::Bulk(args.get(1).to_vec()),
            _ => wrong_arity(name),
        },
        "echo" => Reply::Bulk(args.get(1).to_vec()),
        "quit" => return (Some(Reply::Ok), Next::Quit),
        "select" => match parse_i64(args.get(1)) {
            Some(0) => Reply::Ok,
            Some(_) => Reply::error("ERR DB index is out of range"),
            None => Reply::error("ERR value is not an integer or out of range"),
        },
        "client" => client(session, args),
        "command" => command(args),
        "config" => config(store, args),
        "info" => server_info(shared),
        "dbsize" => Reply::Int(store.len() as i64),
        "del" => Reply::Int(store.delete((1..argc).map(|i| args.get(i))) as i64),
        "exists" => Reply::Int(store.count_existing((1..argc).map(|i| args.get(i))) as i64),
        // RedisBloom's module type name for cuckoo filters.
        "type" => Reply::Status(if store.with(args.get(1), |e| e.is_some()) {
            "MBbloomCF"
        } else {
            "none"
        }),
        // One database: both empty it. `ASYNC` and `SYNC` are accepted; it is done at once.
        "flushdb" | "flushall" => {
            if (1..argc).any(|i| {
                let mode = args.get(i);
                !mode.eq_ignore_ascii_case(b"ASYNC") && !mode.eq_ignore_ascii_case(b"SYNC")
            }) || argc > 2
            {
                Reply::error("ERR syntax error")
            } else {
                store.clear();
                Reply::Ok
            }
        }
        "multi" => {
            session.transaction = Some(Transaction::default());
            Reply::Ok
        }
        "exec" => return (Some(exec(shared, session)), Next::Continue),
        "discard" => match session.transaction.take() {
            Some(_) => Reply::Ok,
            None => Reply::error("ERR DISCARD without MULTI"),
        },
        "save" => return (None, Next::Save),
        "shutdown" => {
            let save = match (argc, (argc == 2).then(|| args.get(1))) {
                (1, _) => true,
                (_, Some(arg)) if arg.eq_ignore_ascii_case(b"SAVE") => true,
                (_, Some(arg)) if arg.eq_ignore_ascii_case(b"NOSAVE") => false,
                _ => return (Some(Reply::error("ERR syntax error")), Next::Continue),
            };
            return (None, Next::Shutdown { save });
        }
        other => unreachable!("{other} is in SERVER_COMMANDS but not run"),
    };
    (Some(reply), Next::Continue)
}

/// `EXEC`: the queued requests in order, their replies in one array. Other connections'
/// commands may run between them: the filters take no lock, so unlike Redis nothing stops the
/// world for a transaction; `MULTI` here groups replies, as clients' pipelines use it.
fn exec(shared: &Shared, session: &mut Session) -> Reply {
    let Some(transaction) = session.transaction.take() else {
        return Reply::error("ERR EXEC without MULTI");
    };
    if transaction.refused {
        return Reply::error("EXECABORT Transaction discarded because of previous errors.");
    }
    let mut replies = Vec::with_capacity(transaction.queued.len());
    for request in &transaction.queued {
        let args: Vec<&[u8]> = request.iter().map(Vec::as_slice).collect();
        let reply = match parse(&args[..]) {
            Some(Ok(command)) => command.run(&shared.store, session.protocol),
            Some(Err(reply)) => reply,
            None => own(
                shared,
                session,
                &String::from_utf8_lossy(args[0]).to_ascii_lowercase(),
                &args[..],
            )
            .0
            .unwrap_or(Reply::Ok),
        };
        replies.push(reply);
    }
    Reply::Array(replies)
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
fn auth<A: Argv + ?Sized>(shared: &Shared, session: &mut Session, args: &A) -> Reply {
    let outcome = match args.len() {
        2 => login(shared, session, b"default", args.get(1)),
        3 => login(shared, session, args.get(1), args.get(2)),
        _ => Some(Reply::error("ERR syntax error")),
    };
    outcome.unwrap_or(Reply::Ok)
}

/// `HELLO [protover [AUTH user password] [SETNAME name]]`: RESP2 or RESP3.
fn hello<A: Argv + ?Sized>(shared: &Shared, session: &mut Session, args: &A) -> Reply {
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
fn client<A: Argv + ?Sized>(session: &Session, args: &A) -> Reply {
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
fn command<A: Argv + ?Sized>(args: &A) -> Reply {
    if args.len() >= 2 && args.get(1).eq_ignore_ascii_case(b"COUNT") {
        return Reply::Int((COMMANDS.len() + SERVER_COMMANDS.len()) as i64);
    }
    Reply::Array(Vec::new())
}

/// `CONFIG GET name...`: the settings load generators and clients ask about.
fn config<A: Argv + ?Sized>(store: &Store, args: &A) -> Reply {
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
         \r\n# Memory\r\nused_memory:{}\r\nmaxmemory:{}\r\n\
         \r\n# Cluster\r\ncluster_enabled:0\r\n\
         \r\n# Keyspace\r\ndb0:keys={},expires=0,avg_ttl=0\r\n",
        env!("CARGO_PKG_VERSION"),
        usize::BITS,
        shared.started.elapsed().as_secs(),
        shared.clients.load(Ordering::Relaxed),
        shared.store.used_memory(),
        shared.store.max_memory(),
        shared.store.len(),
    );
    Reply::Bulk(text.into_bytes())
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
fn unknown_command<A: Argv + ?Sized>(args: &A) -> Reply {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(password: Option<&str>) -> Shared {
        Shared {
            store: Store::new(1 << 20, 16),
            password: password.map(str::to_owned),
            clients: AtomicUsize::new(0),
            started: Instant::now(),
        }
    }

    fn run(shared: &Shared, session: &mut Session, line: &str) -> (String, Next) {
        let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let mut out = Vec::new();
        let next = execute(shared, session, &words[..], &mut out);
        (String::from_utf8(out).unwrap(), next)
    }

    #[test]
    fn every_listed_command_is_known() {
        let shared = shared(None);
        let names = COMMANDS.iter().map(|s| s.name).chain(SERVER_COMMANDS.iter().map(|c| c.0));
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
