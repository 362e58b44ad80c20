//! Safe by default: a password gates every command, protected mode serves loopback clients
//! only when there is none, an HTTP request runs nothing, and clients past the open-file limit
//! are refused with an error rather than left waiting.

use std::io::Write;
use std::net::IpAddr;

use crate::common::Server;

const DENIED: &str = "-DENIED Running in protected mode";

/// An address of this machine that is not loopback (from the kernel's table of local
/// addresses), to connect from as a client on the network would.
fn non_loopback_address() -> Option<IpAddr> {
    let table = std::fs::read_to_string("/proc/net/fib_trie").ok()?;
    let lines: Vec<&str> = table.lines().collect();
    lines.windows(2).find_map(|pair| {
        let address: IpAddr = pair[0].trim().trim_start_matches("|-- ").parse().ok()?;
        (pair[1].contains("/32 host LOCAL") && !address.is_loopback()).then_some(address)
    })
}

#[test]
fn without_a_password_only_loopback_clients_are_served() {
    let Some(address) = non_loopback_address() else {
        assert!(std::env::var_os("CI").is_none(), "CI must run this test");
        eprintln!("skipped: this machine has no address but loopback");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let open = Server::start(dir.path(), &["--bind", "0.0.0.0"]);
    let mut remote = open.raw_to(address);
    remote.send(&[b"CF.ADD", b"f", b"a"]);
    assert!(remote.until_closed().starts_with(DENIED));
    let mut local = open.raw();
    assert_eq!(local.call(&["CF.EXISTS", "f", "a"]), ":0\r\n", "the refused client's command ran");
    assert_eq!(local.call(&["CF.ADD", "f", "a"]), ":1\r\n");
    drop(open);

    // With a password, clients on the network are served once they authenticate.
    let guarded = Server::start(dir.path(), &["--bind", "0.0.0.0", "--requirepass", "s3cret"]);
    let mut remote = guarded.raw_to(address);
    assert_eq!(remote.call(&["CF.ADD", "f", "a"]), "-NOAUTH Authentication required.\r\n");
    assert_eq!(remote.call(&["AUTH", "s3cret"]), "+OK\r\n");
    assert_eq!(remote.call(&["CF.ADD", "f", "a"]), ":1\r\n");
    drop(guarded);

    // And without protected mode, as asked.
    let unprotected = Server::start(dir.path(), &["--bind", "0.0.0.0", "--protected-mode", "no"]);
    assert_eq!(unprotected.raw_to(address).call(&["PING"]), "+PONG\r\n");
}

#[test]
fn a_password_gates_every_command_save_and_shutdown_included() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path(), &["--requirepass", "s3cret"]);
    let mut c = server.raw();
    for command in [&["CF.ADD", "f", "a"][..], &["SAVE"], &["SHUTDOWN", "NOSAVE"], &["FLUSHALL"]] {
        assert_eq!(c.call(command), "-NOAUTH Authentication required.\r\n", "{command:?}");
    }
    assert!(server.is_running(), "SHUTDOWN ran without authentication");
    assert!(!server.save_file.exists(), "SAVE ran without authentication");
    assert!(c.call(&["HELLO", "3"]).starts_with("-NOAUTH HELLO must be called"));
    assert!(c.call(&["AUTH", "wrong"]).starts_with("-WRONGPASS"));
    assert!(c.call(&["HELLO", "3", "AUTH", "default", "wrong"]).starts_with("-WRONGPASS"));
    // HELLO 3 AUTH, as redis-py sends it for a URL with a password.
    let hello = c.call(&["HELLO", "3", "AUTH", "default", "s3cret"]);
    assert!(hello.starts_with("%7\r\n"), "{hello}");
    assert_eq!(c.call(&["CF.ADD", "f", "a"]), "#t\r\n");
    // The redis crate's own AUTH from a URL.
    let client = redis::Client::open(format!("redis://:s3cret@127.0.0.1:{}/", server.port));
    let mut conn = client.unwrap().get_connection().unwrap();
    let found: bool = redis::cmd("CF.EXISTS").arg("f").arg("a").query(&mut conn).unwrap();
    assert!(found);
    c.send(&[b"SHUTDOWN", b"NOSAVE"]);
    assert_eq!(c.until_closed(), "");
    assert!(server.wait(), "SHUTDOWN NOSAVE after AUTH did not end the process cleanly");
}

#[test]
fn an_http_request_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    // What a web page's form or fetch() makes a browser send to the port.
    for request in [
        &b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 13\r\n\r\nCF.ADD f a\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nCF.ADD f a\r\n",
    ] {
        let mut c = server.raw();
        c.stream.write_all(request).unwrap();
        let answered = c.until_closed();
        assert!(!answered.contains(":1\r\n"), "{answered}");
    }
    assert_eq!(server.raw().call(&["EXISTS", "f"]), ":0\r\n", "a command in an HTTP body ran");
}

#[test]
fn clients_past_the_open_file_limit_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // 64 descriptors: 32 kept for the server's own, so 32 clients fit.
    let server = Server::start_with_file_limit(dir.path(), &[], 64);
    let mut served = Vec::new();
    for _ in 0..32 {
        let mut c = server.raw();
        assert_eq!(c.call(&["PING"]), "+PONG\r\n");
        served.push(c);
    }
    for _ in 0..8 {
        let mut extra = server.raw();
        // Told at once and closed (the read timeout would fail this if it waited).
        assert_eq!(extra.until_closed(), "-ERR max number of clients reached\r\n");
    }
    drop(served);
    assert_eq!(server.raw().call(&["PING"]), "+PONG\r\n");
}
