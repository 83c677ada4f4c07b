//! A terminal's child starts with every signal at its default disposition, whatever the
//! server was started with ([SERVER.SIGNAL.4]): exec keeps ignored signals, and a server
//! started with `&` by a shell without job control ignores SIGQUIT, one started by a
//! supervisor perhaps others. Inherited, they would keep ^\ and ^Z from reaching the child.

use crate::support::client::{Server, pid_of_terminal};

/// The signals ignored by `pid`, as the bit mask of /proc (bit n - 1 for signal n).
fn ignored(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .expect("SigIgn line");
    u64::from_str_radix(mask.trim(), 16).expect("hex mask")
}

#[test]
fn children_do_not_inherit_the_servers_ignored_signals() {
    // [SERVER.SIGNAL.4]
    let server = Server::start_under_shell("trap '' HUP INT QUIT TERM TSTP", &[]);
    let mut c = server.connect();
    c.hello();
    let terminal = c.spawn(&["sleep", "1000"]);
    let pid = pid_of_terminal(&mut c, &terminal);
    // The standard signals, 1 to 31 (the real-time ones belong to the C library).
    let standard = ignored(pid) & 0x7fff_ffff;
    assert_eq!(standard, 0, "signals the child ignores: {standard:#x}");
}
