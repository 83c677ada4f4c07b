//! `phux_conformance::peer`: the reference and our server, each started in a scratch home,
//! answer HELLO, spawn a terminal, and are gone once dropped.

use phux_conformance::peer::{Client, Server};
use phux_proto::frame::TerminalSize;
use phux_proto::{Command, CommandResult};

use crate::launch;

fn exercise(server: &Server) {
    let mut client = server.client().expect("HELLO");
    assert_eq!(client.hello_ok().server_id.len(), 16, "{}", server.name());
    let size = TerminalSize { cols: 80, rows: 24 };
    let terminal = client
        .spawn(&["/bin/cat".to_owned()], size)
        .expect("spawn cat");
    // A second connection reaches the same server and the terminal.
    let mut other = Client::connect(server.socket()).expect("second HELLO");
    assert_eq!(
        other
            .command(Command::KillTerminal { terminal })
            .expect("kill"),
        CommandResult::Ok,
        "{}",
        server.name()
    );
}

fn gone(pid: u32) -> bool {
    // A reaped process has no /proc entry.
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn the_reference_starts_answers_and_is_gone_when_dropped() {
    let Some(server) = Server::reference_or_skip() else {
        return;
    };
    exercise(&server);
    let (pid, home) = (server.pid(), server.home().to_owned());
    drop(server);
    assert!(gone(pid), "the reference outlived its handle");
    assert!(!home.exists(), "its scratch home was left behind");
}

#[test]
fn ours_starts_the_same_way() {
    let bin = launch::example("conformance-test-server", "phux-conformance");
    let server = Server::start_ours(&bin).expect("start phux-mio-server");
    exercise(&server);
    let pid = server.pid();
    drop(server);
    assert!(gone(pid), "our server outlived its handle");
}
