//! `redis-cli` and `redis-benchmark`, unchanged, against the server.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::{encode, have_tool, Server};

fn cli(server: &Server, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &server.port.to_string()])
        .args(args)
        .output()
        .expect("run redis-cli");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// redis-cli with `input` on its standard input.
fn cli_with_input(server: &Server, args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = Command::new("redis-cli")
        .args(["-p", &server.port.to_string()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run redis-cli");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn redis_cli_talks_to_it() {
    if !have_tool("redis-cli") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(cli(&server, &["PING"]), "PONG\n");
    assert_eq!(cli(&server, &["CF.RESERVE", "seen", "1000000"]), "OK\n");
    assert_eq!(cli(&server, &["CF.ADD", "seen", "alice"]), "1\n");
    assert_eq!(cli(&server, &["CF.ADDNX", "seen", "alice"]), "0\n");
    assert_eq!(cli(&server, &["CF.EXISTS", "seen", "alice"]), "1\n");
    assert_eq!(cli(&server, &["CF.MEXISTS", "seen", "alice", "bob"]), "1\n0\n");
    assert_eq!(cli(&server, &["CF.COUNT", "seen", "alice"]), "1\n");
    assert_eq!(cli(&server, &["CF.DEL", "seen", "alice"]), "1\n");
    // redis-cli prints an error's text (with a blank line after it when not on a terminal).
    assert_eq!(cli(&server, &["CF.DEL", "nothing", "alice"]).trim_end(), "Not found");
    assert_eq!(cli(&server, &["CF.RESERVE", "seen", "10"]).trim_end(), "ERR item exists");
    let info = cli(&server, &["CF.INFO", "seen"]);
    assert!(info.starts_with("Size\n") && info.contains("Number of items deleted\n1\n"), "{info}");
    assert_eq!(cli(&server, &["SAVE"]), "OK\n");
    // Commands on standard input, one a line, as a user would type them.
    let out = cli_with_input(&server, &[], b"CF.ADD seen carol\nCF.EXISTS seen carol\n");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "1\n1\n");
}

#[test]
fn redis_cli_pipe_mass_insertion() {
    if !have_tool("redis-cli") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut stream = encode(&[b"CF.RESERVE", b"bulk", b"200000"]);
    for i in 0..100_000u32 {
        stream.extend(encode(&[b"CF.ADD", b"bulk", format!("k{i}").as_bytes()]));
    }
    let out = cli_with_input(&server, &["--pipe"], &stream);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("errors: 0, replies: 100001"), "{text}");
    let mut c = server.raw();
    assert!(c.call(&["CF.INFO", "bulk"]).contains("+Number of items inserted\r\n:100000\r\n"));
    assert_eq!(c.call(&["CF.EXISTS", "bulk", "k99999"]), ":1\r\n");
}

#[test]
fn redis_benchmark_runs_against_it() {
    if !have_tool("redis-benchmark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.raw().call(&["CF.RESERVE", "bench", "100000"]), "+OK\r\n");
    let port = server.port.to_string();
    for (command, pipeline) in [("CF.ADD", "1"), ("CF.EXISTS", "16")] {
        let out = Command::new("redis-benchmark")
            .args(["-p", &port, "-n", "20000", "-c", "20", "-P", pipeline, "-r", "50000", "-q"])
            .args([command, "bench", "__rand_int__"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("requests per second"), "{text}");
    }
    // 20,000 random keys out of 50,000 were added: most, not all, distinct.
    let info = server.raw().call(&["CF.INFO", "bench"]);
    let items: i64 = info
        .split("Number of items inserted\r\n:")
        .nth(1)
        .unwrap()
        .split("\r\n")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(items, 20_000);
}
