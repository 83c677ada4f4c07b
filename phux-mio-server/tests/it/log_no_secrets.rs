//! The log holds no environment values and no input bytes, at the most verbose level, and a
//! log file the server creates is its owner's alone.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;

use phux_proto::command::{ApplyInput, Command, CommandResult};
use phux_proto::frame::{SpawnResult, SpawnTerminal};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Frame, GroupId, OperationId};

use crate::support::client::{Server, contains};

/// An environment value a client hands to SPAWN_TERMINAL (an API token, say).
const ENV_SECRET: &str = "env-secret-4f1c9a77d2";
/// Bytes a client types into a terminal (a password, say).
const INPUT_SECRET: &str = "input-secret-b83e0d51";

#[test]
fn a_trace_level_log_file_is_0600_and_holds_no_env_values_or_input_bytes() {
    // [SERVER.LOG.1] [SERVER.LOG.2]
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("server.log");
    let mut server = Server::start_with(&[
        OsStr::new("--log-level"),
        OsStr::new("trace"),
        OsStr::new("--log-file"),
        log.as_os_str(),
    ]);
    let mut c = server.connect();
    c.hello();

    let mut spawn = SpawnTerminal::new(1, GroupId(1));
    spawn.command = Some(vec!["cat".to_owned()]);
    spawn.env = Some(vec![
        ("PHUX_TEST_TOKEN".to_owned(), ENV_SECRET.to_owned()),
        ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
    ]);
    c.send(&Frame::SpawnTerminal(spawn));
    let terminal = c.wait_for("TERMINAL_SPAWNED", |f| match f {
        Frame::TerminalSpawned(s) if s.request_id == 1 => match &s.result {
            SpawnResult::Ok(id) => Some(id.clone()),
            SpawnResult::Err(e) => panic!("spawn failed: {e:?}"),
        },
        _ => None,
    });
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    let apply = ApplyInput {
        operation_id: OperationId::from_u128(0x5ec).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: format!("{INPUT_SECRET}\r").into_bytes(),
        })],
    };
    assert_eq!(c.command(Command::ApplyInput(apply)), CommandResult::Ok);
    // The bytes went through the PTY and came back as output (echo, then cat): every path
    // they take through the server has run, and would have been logged by now.
    while c
        .output_of(&terminal)
        .windows(INPUT_SECRET.len())
        .filter(|w| *w == INPUT_SECRET.as_bytes())
        .count()
        < 2
    {
        c.wait_for("TERMINAL_OUTPUT", |f| {
            matches!(f, Frame::TerminalOutput(_)).then_some(())
        });
    }

    // A clean stop flushes the log.
    let pid = rustix::process::Pid::from_raw(server.pid()).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    assert_eq!(server.wait_exit(), Some(0));

    let mode = std::fs::metadata(&log)
        .expect("log file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "log file mode {mode:o}");
    let text = std::fs::read(&log).expect("read log");
    // The log is the verbose one asked for: the spawn and the reads and writes are in it.
    assert!(contains(&text, b"PHUX_TEST_TOKEN"), "no spawn in the log");
    assert!(contains(&text, b"received"), "no reads in the log");
    assert!(
        !contains(&text, ENV_SECRET.as_bytes()),
        "an environment value is in the log:\n{}",
        String::from_utf8_lossy(&text)
    );
    assert!(
        !contains(&text, INPUT_SECRET.as_bytes()),
        "input bytes are in the log:\n{}",
        String::from_utf8_lossy(&text)
    );
}
