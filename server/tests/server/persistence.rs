//! `SAVE` while clients keep writing, a crash, a restart: every write acknowledged before the
//! `SAVE` is still there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::Server;

#[test]
fn save_during_writes_then_crash_and_restart_keeps_every_acknowledged_item() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    // Small enough that the writers drive it to a high load, where inserts relocate
    // fingerprints while the save's scan runs.
    let _: () = redis::cmd("CF.RESERVE").arg("live").arg(300_000).query(&mut c).unwrap();
    let _: () = redis::cmd("CF.RESERVE")
        .arg("other")
        .arg(1000)
        .arg("MAXITERATIONS")
        .arg(9)
        .query(&mut c)
        .unwrap();
    let _: i64 = redis::cmd("CF.ADD").arg("other").arg("x").query(&mut c).unwrap();

    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let port = server.port;
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let acked = Arc::clone(&acked);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let url = format!("redis://127.0.0.1:{port}/");
                let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                let mut round = 0;
                while !stop.load(Ordering::Relaxed) && round < 140 {
                    let items: Vec<String> = (0..500).map(|i| format!("{t}/{round}/{i}")).collect();
                    let mut pipe = redis::pipe();
                    for item in &items {
                        pipe.cmd("CF.ADD").arg("live").arg(item);
                    }
                    // The server is killed while this runs: an error ends the writer.
                    let Ok(added) = pipe.query::<Vec<i64>>(&mut c) else { break };
                    assert!(added.iter().all(|&a| a == 1));
                    // Recorded only once the server acknowledged them.
                    acked.lock().unwrap().extend(items);
                    round += 1;
                    // Paced, so that writes go on through all three saves.
                    std::thread::sleep(Duration::from_millis(4));
                }
            })
        })
        .collect();

    let mut before_save = Vec::new();
    for save in 0..3 {
        std::thread::sleep(Duration::from_millis(150));
        before_save = acked.lock().unwrap().clone();
        let reply: String = redis::cmd("SAVE").query(&mut c).unwrap();
        assert_eq!(reply, "OK", "save {save}");
    }
    // A crash as soon as the last SAVE is acknowledged, with the writers still writing:
    // nothing more is written on the way down.
    server.kill();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(before_save.len() > 10_000, "only {} items before the last save", before_save.len());
    let total = acked.lock().unwrap().len();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let found: Vec<i64> =
        redis::cmd("CF.MEXISTS").arg("live").arg(&before_save).query(&mut c).unwrap();
    let missing = found.iter().filter(|&&f| f != 1).count();
    assert_eq!(missing, 0, "{missing} of {} acknowledged items lost", before_save.len());
    let info: Vec<redis::Value> = redis::cmd("CF.INFO").arg("other").query(&mut c).unwrap();
    assert_eq!(info[15], redis::Value::Int(9), "settings survive");
    let exists: i64 = redis::cmd("CF.EXISTS").arg("other").arg("x").query(&mut c).unwrap();
    assert_eq!(exists, 1);
    eprintln!(
        "{} of {total} acknowledged items were acknowledged before the last SAVE",
        before_save.len()
    );
}

#[test]
fn shutdown_saves_and_nosave_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.raw();
    assert_eq!(c.call(&["CF.ADD", "f", "kept"]), ":1\r\n");
    c.send(&[b"SHUTDOWN"]);
    assert!(server.wait(), "SHUTDOWN did not exit cleanly");

    let server = Server::start(dir.path(), &[]);
    let mut c = server.raw();
    assert_eq!(c.call(&["CF.EXISTS", "f", "kept"]), ":1\r\n");
    assert_eq!(c.call(&["CF.ADD", "f", "not-saved"]), ":1\r\n");
    c.send(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(server.wait());

    let server = Server::start(dir.path(), &[]);
    let mut c = server.raw();
    assert_eq!(c.call(&["CF.EXISTS", "f", "kept"]), ":1\r\n");
    assert_eq!(c.call(&["CF.EXISTS", "f", "not-saved"]), ":0\r\n");
    assert_eq!(c.call(&["SHUTDOWN", "LATER"]), "-ERR syntax error\r\n");
}

#[test]
fn sigterm_saves_before_exiting() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.raw().call(&["CF.ADD", "f", "kept"]), ":1\r\n");
    assert!(server.terminate(), "SIGTERM did not exit cleanly");
    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.raw().call(&["CF.EXISTS", "f", "kept"]), ":1\r\n");
}

#[test]
fn a_damaged_save_file_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.raw().call(&["CF.ADD", "f", "a"]), ":1\r\n");
    assert_eq!(server.raw().call(&["SAVE"]), "+OK\r\n");
    let path = server.save_file.clone();
    server.kill();
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let error = Server::try_start(dir.path(), &[]).err().expect("started on a damaged file");
    assert!(error.contains("cannot load"), "{error}");
    // A save that cannot be written is an error reply, and the server goes on.
    let dir = tempfile::tempdir().unwrap();
    let unwritable = dir.path().join("no/such/dir/file");
    let server = Server::start(dir.path(), &["--save-file", unwritable.to_str().unwrap()]);
    let mut c = server.raw();
    assert!(c.call(&["SAVE"]).starts_with("-ERR saving to "));
    assert_eq!(c.call(&["PING"]), "+PONG\r\n");
}

/// The save file of this layout, as this server wrote it (`tests/data/layout-1.save`: a fixed
/// filter "fixed" of `item:0` to `item:999` less `item:0`, a growable "grown" of the same items
/// reserved for 100, and "tuned" reserved with `BUCKETSIZE 3 MAXITERATIONS 7 EXPANSION 4`
/// holding "a"): it loads with its items and settings, and saves back to the same bytes.
#[test]
fn the_save_file_loads_and_saves_back_unchanged() {
    let file = include_bytes!("../data/layout-1.save");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("filters.save");
    std::fs::write(&path, file).unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.raw();
    let fixed = "+Number of items inserted\r\n:999\r\n+Number of items deleted\r\n:1\r\n\
                 +Bucket size\r\n:4\r\n+Expansion rate\r\n:0\r\n+Max iterations\r\n:20\r\n";
    let tuned = "+Expansion rate\r\n:4\r\n+Max iterations\r\n:7\r\n";
    let grown = "+Number of filters\r\n:3\r\n+Number of items inserted\r\n:1000\r\n\
                 +Number of items deleted\r\n:0\r\n+Bucket size\r\n:4\r\n+Expansion rate\r\n:1\r\n\
                 +Max iterations\r\n:20\r\n";
    for (name, info_tail) in [("fixed", fixed), ("tuned", tuned), ("grown", grown)] {
        let info = c.call(&["CF.INFO", name]);
        assert!(info.ends_with(info_tail), "{name}: {info}");
    }
    for i in 1..1000 {
        let item = format!("item:{i}");
        assert_eq!(c.call(&["CF.EXISTS", "fixed", &item]), ":1\r\n", "{item}");
        assert_eq!(c.call(&["CF.EXISTS", "grown", &item]), ":1\r\n", "{item}");
    }
    assert_eq!(c.call(&["CF.COUNT", "fixed", "item:0"]), ":0\r\n");
    assert_eq!(c.call(&["CF.EXISTS", "tuned", "a"]), ":1\r\n");
    assert_eq!(c.call(&["SAVE"]), "+OK\r\n");
    assert_eq!(std::fs::read(&path).unwrap(), file, "saved back differently");
}

/// A save file of another layout (here this one's with another layout byte, resealed) is
/// refused with a message that says why, and left untouched, never loaded as if it were this
/// layout.
#[test]
fn a_save_file_of_another_layout_is_refused_and_kept() {
    let mut other = include_bytes!("../data/layout-1.save").to_vec();
    other[7] = 2;
    let body = other.len() - 8;
    let crc = crc::Crc::<u64>::new(&crc::CRC_64_XZ).checksum(&other[..body]);
    other[body..].copy_from_slice(&crc.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("filters.save");
    std::fs::write(&path, &other).unwrap();
    let error = Server::try_start(dir.path(), &[]).err().expect("started on another layout");
    assert!(error.contains("the save file has layout 2"), "{error}");
    assert_eq!(std::fs::read(&path).unwrap(), other, "the save file was changed");
}

/// Adds items to `key` in pipelines of 200 until told to stop or the server goes, recording
/// each batch with when it was acknowledged.
fn writer(
    port: u16,
    key: &'static str,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(std::time::Instant, Vec<String>)>> {
    std::thread::spawn(move || {
        let url = format!("redis://127.0.0.1:{port}/");
        let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
        let mut acked = Vec::new();
        for round in 0.. {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let items: Vec<String> = (0..200).map(|i| format!("{round}/{i}")).collect();
            let mut pipe = redis::pipe();
            for item in &items {
                pipe.cmd("CF.ADD").arg(key).arg(item);
            }
            let Ok(added) = pipe.query::<Vec<i64>>(&mut c) else { break };
            assert!(added.iter().all(|&a| a == 1));
            acked.push((std::time::Instant::now(), items));
            std::thread::sleep(Duration::from_millis(2));
        }
        acked
    })
}

#[test]
fn scheduled_saves_lose_at_most_the_last_interval_to_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--save-interval", "1"]);
    let mut c = server.client();
    let _: () = redis::cmd("CF.RESERVE").arg("live").arg(2_000_000).query(&mut c).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writing = writer(server.port, "live", Arc::clone(&stop));
    std::thread::sleep(Duration::from_millis(4500));
    let killed = std::time::Instant::now();
    server.kill();
    stop.store(true, Ordering::Relaxed);
    let acked = writing.join().unwrap();
    // Restarted without a schedule: what it holds is what the last save wrote.
    let server = Server::start(dir.path(), &["--save-interval", "0"]);
    let mut c = server.client();
    let (mut kept, mut lost, mut lost_old) = (0, 0, 0);
    for (at, items) in &acked {
        let found: Vec<i64> =
            redis::cmd("CF.MEXISTS").arg("live").arg(items).query(&mut c).unwrap();
        let missing = found.iter().filter(|&&f| f != 1).count();
        (kept, lost) = (kept + items.len() - missing, lost + missing);
        // One interval, and the time the save of a 4 MiB filter takes, with room to spare.
        if killed.duration_since(*at) > Duration::from_millis(2500) {
            lost_old += missing;
        }
    }
    eprintln!("kill -9 with saves each second: {kept} acknowledged items kept, {lost} lost");
    assert_eq!(lost_old, 0, "items acknowledged over 2.5 s before the kill were lost");
    assert!(kept > 10_000, "{kept} items kept");
}

#[test]
fn a_kill_during_a_save_leaves_the_previous_file_whole() {
    let dir = tempfile::tempdir().unwrap();
    // A filter whose save takes long enough for kills to land inside saves.
    let server = Server::start(dir.path(), &["--save-interval", "0"]);
    let mut c = server.client();
    let _: () = redis::cmd("CF.RESERVE").arg("big").arg(30_000_000).query(&mut c).unwrap();
    let items: Vec<String> = (0..1000).map(|i| format!("kept/{i}")).collect();
    let _: Vec<i64> =
        redis::cmd("CF.INSERT").arg("big").arg("ITEMS").arg(&items).query(&mut c).unwrap();
    let _: String = redis::cmd("SAVE").query(&mut c).unwrap();
    drop(server);
    let mut inside = 0;
    for round in 0..6u64 {
        let server = Server::start(dir.path(), &["--save-interval", "1"]);
        // Kills spread over a second: saves start each second and take a good part of it.
        std::thread::sleep(Duration::from_millis(1000 + round * 170));
        let temporaries = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".tmp-"))
                .count()
        };
        inside += usize::from(temporaries() > 0);
        server.kill();
        let server = Server::start(dir.path(), &["--save-interval", "0"]);
        let mut c = server.client();
        let found: Vec<i64> =
            redis::cmd("CF.MEXISTS").arg("big").arg(&items).query(&mut c).unwrap();
        assert!(found.iter().all(|&f| f == 1), "round {round}");
        // What the killed save left behind is gone.
        assert_eq!(temporaries(), 0, "round {round}");
    }
    eprintln!("{inside} of 6 kills landed during a save");
    assert!(inside > 0, "no kill landed during a save: the test shows nothing");
}

/// A filter whose items expire forgets on the server's own ticks, with no write to drive it,
/// and keeps its window and its items' ages across a save and a restart.
#[test]
fn windowed_filters_forget_on_their_own_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    let _: () =
        redis::cmd("CF.RESERVE").arg("w").arg(1000).arg("EXPIRE").arg(1).query(&mut c).unwrap();
    let _: () = redis::cmd("CF.RESERVE")
        .arg("kept")
        .arg(1000)
        .arg("EXPIRE")
        .arg(3600)
        .query(&mut c)
        .unwrap();
    let _: i64 = redis::cmd("CF.ADD").arg("w").arg("a").query(&mut c).unwrap();
    let _: i64 = redis::cmd("CF.ADD").arg("kept").arg("b").query(&mut c).unwrap();
    let added = std::time::Instant::now();
    let exists = |c: &mut redis::Connection, key: &str, item: &str| -> i64 {
        redis::cmd("CF.EXISTS").arg(key).arg(item).query(c).unwrap()
    };
    // Present for the window, gone within 1.5 windows and a tick or two (a loaded machine
    // gets some slack).
    while exists(&mut c, "w", "a") == 1 {
        assert!(added.elapsed() < Duration::from_millis(2500), "never expired");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(added.elapsed() >= Duration::from_secs(1), "expired after {:?}", added.elapsed());
    let info: Vec<redis::Value> = redis::cmd("CF.INFO").arg("kept").query(&mut c).unwrap();
    assert_eq!(info[info.len() - 1], redis::Value::Int(3600), "{info:?}");

    let mut raw = server.raw();
    raw.send(&[b"SHUTDOWN"]);
    assert!(server.wait(), "SHUTDOWN did not exit cleanly");
    let server = Server::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(exists(&mut c, "kept", "b"), 1);
    let info: Vec<redis::Value> = redis::cmd("CF.INFO").arg("kept").query(&mut c).unwrap();
    assert_eq!(info[info.len() - 1], redis::Value::Int(3600), "{info:?}");
    assert_eq!(exists(&mut c, "w", "a"), 0);
}
