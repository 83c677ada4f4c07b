//! The listener is off unless asked for ([WS.LISTEN.1]), on loopback unless a non-loopback
//! address is allowed explicitly, with a warning ([WS.LISTEN.2]). Upgrades with the listener on:
//! `ws_upgrade.rs`.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command as Process, Stdio};

use crate::support::client::Server;
use crate::support::ws::WsServer;

/// The inodes of the TCP sockets listening on this host (state 0A in /proc/net/tcp{,6}).
fn listening_inodes() -> BTreeSet<String> {
    let mut inodes = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.get(3) == Some(&"0A")
                && let Some(inode) = cols.get(9)
            {
                inodes.insert((*inode).to_owned());
            }
        }
    }
    inodes
}

/// The socket inodes among a process's descriptors.
fn socket_inodes(pid: u32) -> BTreeSet<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fd dir")
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            l.to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')
                .map(str::to_owned)
        })
        .collect()
}

#[test]
fn no_tcp_port_is_open_without_listen_ws_and_one_is_with_it() {
    let plain = Server::start();
    let listening = listening_inodes();
    let ours = socket_inodes(plain.process.id());
    assert!(
        ours.is_disjoint(&listening),
        "a TCP listener without --listen-ws"
    );
    let ws = WsServer::start(&[]);
    let listening = listening_inodes();
    assert!(!socket_inodes(ws.process.id()).is_disjoint(&listening));
}

#[test]
fn a_non_loopback_address_needs_an_explicit_flag_and_is_warned_about() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .arg("--socket")
        .arg(dir.path().join("s.sock"))
        .args(["--listen-ws", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a loopback address"), "{err}");
    assert!(err.contains("reverse proxy"), "{err}");
    assert!(err.contains("--ws-allow-remote"), "{err}");

    let log = dir.path().join("log");
    let mut server = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .arg("--socket")
        .arg(dir.path().join("s.sock"))
        .args([
            "--listen-ws",
            "0.0.0.0:0",
            "--ws-allow-remote",
            "--log-file",
        ])
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run");
    let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("a line").expect("utf-8");
    assert!(
        first.starts_with("phux-mio-server websocket on ws://0.0.0.0:"),
        "{first}"
    );
    let _ = server.kill();
    let _ = server.wait();
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(text.contains("non-loopback"), "{text}");
    assert!(text.contains("reverse"), "{text}");
}
