//! A cluster of three primaries and three replicas on loopback: filters spread over the slots,
//! a primary is killed, its replica takes over, and every item acknowledged with `WAIT` before
//! the kill is still there.

use std::collections::HashMap;

use redis::Value;

use crate::common::{run, wait_until, Engine, Node, ENGINES};

/// Each slot range's primary port, from `CLUSTER SLOTS`.
fn slot_owners(c: &mut redis::Connection) -> Vec<(i64, i64, u16)> {
    let Value::Array(ranges) = run(c, "CLUSTER SLOTS") else { panic!("CLUSTER SLOTS") };
    ranges
        .into_iter()
        .map(|range| {
            let Value::Array(parts) = range else { panic!() };
            let (Value::Int(first), Value::Int(last), Value::Array(primary)) =
                (&parts[0], &parts[1], &parts[2])
            else {
                panic!("{parts:?}")
            };
            let Value::Int(port) = primary[1] else { panic!() };
            (*first, *last, port as u16)
        })
        .collect()
}

fn owner(owners: &[(i64, i64, u16)], slot: i64) -> u16 {
    owners.iter().find(|(a, b, _)| (*a..=*b).contains(&slot)).map(|o| o.2).expect("a covered slot")
}

fn cluster_ok(c: &mut redis::Connection) -> bool {
    let info: String = redis::cmd("CLUSTER").arg("INFO").query(c).unwrap_or_default();
    info.contains("cluster_state:ok")
}

fn slot(c: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(c).unwrap()
}

#[test]
fn a_failover_keeps_every_acknowledged_item() {
    for engine in ENGINES {
        failover(engine);
    }
}

fn failover(engine: Engine) {
    let dir = tempfile::tempdir().unwrap();
    let cluster = ["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"];
    let mut nodes = Vec::new();
    for i in 0..6 {
        let Some(node) = Node::start(engine, &dir.path().join(format!("n{i}")), &cluster) else {
            return;
        };
        nodes.push(node);
    }
    let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
    let created = std::process::Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addresses)
        .args(["--cluster-replicas", "1", "--cluster-yes"])
        .output()
        .expect("redis-cli --cluster create");
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stdout));
    let mut all: Vec<redis::Connection> = nodes.iter().map(Node::client).collect();
    wait_until(60, "every node to see the cluster up", || all.iter_mut().all(cluster_ok));
    let mut any = nodes[0].client();
    let by_port: HashMap<u16, usize> = nodes.iter().enumerate().map(|(i, n)| (n.port, i)).collect();
    let owners = slot_owners(&mut any);
    let mut clients: HashMap<u16, redis::Connection> = HashMap::new();
    let mut written = Vec::new();
    for f in 0..30 {
        let key = format!("filter:{f}");
        let port = owner(&owners, slot(&mut any, &key));
        let c = clients.entry(port).or_insert_with(|| nodes[by_port[&port]].client());
        for i in 0..200 {
            run(c, &format!("CF.ADD {key} item{i}"));
            written.push((key.clone(), format!("item{i}")));
        }
    }
    // Every write acknowledged by a replica before the kill.
    for (port, c) in &mut clients {
        let acked: i64 = redis::cmd("WAIT").arg(1).arg(10_000).query(c).unwrap();
        assert_eq!(acked, 1, "{engine:?}: the replica of {port} did not acknowledge");
    }
    let victim = owners[0].2;
    nodes[by_port[&victim]].kill();
    // Every live node, not one: each judges the cluster's state on its own, and one that has
    // not yet seen the failover answers `CLUSTERDOWN` to the reads below.
    let mut live: Vec<redis::Connection> =
        nodes.iter().filter(|n| n.port != victim).map(Node::client).collect();
    wait_until(60, "every live node to see a replica take over", || {
        live.iter_mut()
            .all(|c| cluster_ok(c) && slot_owners(c).iter().all(|(_, _, port)| *port != victim))
    });
    let mut c = live.swap_remove(0);
    let owners = slot_owners(&mut c);
    let mut clients: HashMap<u16, redis::Connection> = HashMap::new();
    for (key, item) in &written {
        let port = owner(&owners, slot(&mut c, key));
        let node = clients.entry(port).or_insert_with(|| nodes[by_port[&port]].client());
        assert_eq!(
            run(node, &format!("CF.EXISTS {key} {item}")),
            Value::Int(1),
            "{engine:?}: {key} {item} lost in the failover"
        );
    }
}
