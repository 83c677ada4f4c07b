//! phuxctl behaves like the command-line tools people know: one size axis alone is
//! honoured, a lost server is reported by the streaming verbs, a wait for the journal lock is
//! announced, `--timeout` bounds every verb, `send` keeps command-line order, errors name what
//! is wrong without Rust debug output, the lease verbs say what they did, `resize` and `list`
//! show what a user needs, and completions and the manual page are generated.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Output, Stdio};

use crate::support::{Ctl, Server, finish, wait_until};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `list` row of `id`, split into its tab-separated fields.
fn row(ctl: &Ctl, id: &str) -> Option<Vec<String>> {
    ctl.ok(&["list"])
        .lines()
        .find(|l| l.split('\t').next() == Some(id))
        .map(|l| l.split('\t').map(str::to_owned).collect())
}

/// No Rust debug formatting in a message meant for people.
fn assert_no_debug(text: &str) {
    for marker in ["SpawnFailed(", "Some(", "Err(", "Os {", "kind:"] {
        assert!(
            !text.contains(marker),
            "debug output {marker:?} in {text:?}"
        );
    }
}

#[test]
fn one_size_axis_alone_is_honoured_and_resize_takes_colsxrows() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let wide = ctl.ok(&["spawn", "--cols", "100", "--", "sleep", "1000"]);
    let tall = ctl.ok(&["spawn", "--rows", "10", "--", "sleep", "1000"]);
    assert_eq!(row(&ctl, wide.trim()).expect("listed")[2], "100x24");
    assert_eq!(row(&ctl, tall.trim()).expect("listed")[2], "80x10");

    assert_eq!(ctl.ok(&["resize", tall.trim(), "120x40"]).trim(), "120x40");
    assert_eq!(row(&ctl, tall.trim()).expect("listed")[2], "120x40");
    // [TERMINAL.RESIZE.3] What the server made of an oversized request is what is printed.
    assert_eq!(
        ctl.ok(&["resize", tall.trim(), "5000x40"]).trim(),
        "1024x40"
    );
    let zero = ctl.run(&["spawn", "--cols", "0", "--", "true"]);
    assert_eq!(zero.status.code(), Some(2), "{zero:?}");
    let bad = ctl.run(&["resize", tall.trim(), "120"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(stderr(&bad).contains("COLSxROWS"), "{bad:?}");
}

#[test]
fn list_shows_pid_age_state_lease_and_command_and_has_json() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sleep", "1000"]);
    let fields = row(&ctl, &id).expect("listed");
    // id, name, size, pid, age, state, lease, command, title
    assert_eq!(fields.len(), 9, "{fields:?}");
    assert_eq!(fields[1], "-", "no name given");
    let pid: u32 = fields[3].parse().expect("a pid");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert!(
        fields[4].ends_with('s') || fields[4].ends_with('m'),
        "{fields:?}"
    );
    assert_eq!(fields[5], "running");
    assert_eq!(fields[6], "-");
    assert_eq!(fields[7], "sleep 1000");

    let json: serde_json::Value =
        serde_json::from_str(&ctl.ok(&["list", "--json"])).expect("list --json is JSON");
    let entry = json
        .as_array()
        .and_then(|a| a.iter().find(|t| t["id"] == id.as_str()))
        .expect("the terminal in the JSON");
    assert_eq!(entry["pid"], pid);
    assert_eq!(entry["command"], serde_json::json!(["sleep", "1000"]));
    assert_eq!(entry["cols"], 80);
    let screen: serde_json::Value =
        serde_json::from_str(&ctl.ok(&["screen", &id, "--json"])).expect("screen --json");
    assert!(screen["lines"].is_array());
}

#[test]
fn watch_and_events_report_a_lost_server_and_fail_and_events_has_json() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sh", "-c", "echo watched; exec sleep 1000"]);
    ctl.wait_screen(&id, "the output", |s| s.contains("watched"));
    let mut watch = ctl
        .command(&["watch", &id, "--bootstrap"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch");
    let mut events = ctl
        .command(&["events", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("events");
    // Both are streaming once the bootstrap and an event came through.
    let mut watch_out = BufReader::new(watch.stdout.take().expect("stdout"));
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("watched") {
        let mut byte = [0u8; 1];
        assert_eq!(
            watch_out.read(&mut byte).expect("read watch"),
            1,
            "watch ended early"
        );
        seen.push(byte[0]);
    }
    let mut events_out = BufReader::new(events.stdout.take().expect("stdout"));
    let spawner = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut line = String::new();
            events_out.read_line(&mut line).map(|_| line)
        });
        // A terminal event is a server-scoped event.
        assert!(
            wait_until(|| {
                ctl.spawn(&["true"]);
                reader.is_finished()
            }),
            "events printed nothing"
        );
        reader.join().expect("reader")
    });
    let line = spawner.expect("an event line");
    let event: serde_json::Value = serde_json::from_str(&line).expect("events --json is JSON");
    assert!(
        event["event"].is_string() && event["frame"].is_string(),
        "{line}"
    );

    drop(server);
    for (verb, child) in [("watch", watch), ("events", events)] {
        let out = finish(child);
        assert_eq!(out.status.code(), Some(5), "{verb}: {out:?}");
        assert!(stderr(&out).contains("lost the server"), "{verb}: {out:?}");
    }
}

#[test]
fn a_stopped_server_does_not_hang_a_verb_past_its_timeout() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sleep", "1000"]);
    let pid = server.process.id().to_string();
    let signal = |sig: &str| {
        let ok = Command::new("kill")
            .args([sig, &pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} {pid}");
    };
    signal("-STOP");
    for args in [
        &["--timeout", "1", "list"][..],
        &["--timeout", "1", "screen", &id],
        &["--timeout", "1", "kill", &id],
    ] {
        let child = ctl
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("phuxctl");
        let out = finish(child);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {out:?}");
        assert!(stderr(&out).contains("--timeout"), "{args:?}: {out:?}");
    }
    signal("-CONT");
    assert!(row(&ctl, &id).is_some());
}

#[test]
fn a_run_waiting_for_the_journal_lock_says_so() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["cat"]);
    // The first send creates the outbox directory and the lock file.
    ctl.ok(&["send", &id, "first"]);
    let dir = ctl.state.path().join("phux-mio/outbox");
    let lock = std::fs::read_dir(&dir)
        .expect("outbox dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "lock"))
        .expect("a lock file");
    // Another holder of the lock: flock(1) keeps it (its child `cat` does not share it,
    // -o) until cat's stdin closes.
    phux_testkit::require_programs!("flock");
    let mut holder = Command::new("flock")
        .arg("-o")
        .arg(&lock)
        .arg("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start flock(1)");
    let busy = || {
        Command::new("flock")
            .arg("-n")
            .arg(&lock)
            .arg("true")
            .status()
            .is_ok_and(|s| !s.success())
    };
    assert!(wait_until(busy), "flock never took the lock");
    // With --timeout the wait is bounded too.
    let out = ctl.run(&["--timeout", "0.5", "send", &id, "never"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("--timeout"), "{out:?}");
    let mut send = ctl
        .command(&["send", &id, "second"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("send");
    let mut err = BufReader::new(send.stderr.take().expect("stderr"));
    let mut line = String::new();
    err.read_line(&mut line).expect("read stderr");
    assert!(line.contains("waiting for another phuxctl"), "{line:?}");
    drop(holder.stdin.take());
    let _ = holder.wait();
    let out = finish(send);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "delivered");
}

#[test]
fn send_sends_its_parts_in_command_line_order() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["/bin/sh"]);
    ctl.ok(&["send", &id, "garbage"]);
    ctl.wait_screen(&id, "the garbage", |s| s.contains("garbage"));
    // C-u (the tty's line kill) first, then the text, then Enter, as tmux send-keys would.
    ctl.ok(&[
        "send",
        &id,
        "--key",
        "C-u",
        "echo ordered-$((40+2))",
        "--key",
        "Enter",
    ]);
    ctl.wait_screen(&id, "the command's output", |s| {
        s.lines().any(|l| l.trim() == "ordered-42")
    });
}

#[test]
fn errors_name_the_thing_without_debug_output() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sleep", "1000"]);

    let out = ctl.run(&["kill", &id, "99"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let text = stderr(&out);
    assert!(text.contains("local:99") && !text.contains(&id), "{text}");
    assert!(row(&ctl, &id).is_some(), "kill is all or nothing");

    let out = ctl.run(&["spawn", "--cwd", "/nonexistent", "--", "/bin/sh"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let text = stderr(&out);
    assert!(
        text.contains("/nonexistent") && !text.contains("/bin/sh"),
        "{text}"
    );

    let out = ctl.run(&["spawn", "--", "/no/such/program"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(stderr(&out).contains("/no/such/program"), "{out:?}");
    assert_no_debug(&stderr(&out));

    let big = vec![b'x'; 3_000_000];
    let mut paste = ctl
        .command(&["paste", &id])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paste");
    let mut stdin = paste.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &big));
    let out = finish(paste);
    let _ = writer.join();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("3000000 bytes"), "{out:?}");

    let out = ctl.run(&["paste", &id]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("nothing to paste"), "{out:?}");
    let out = ctl.run(&["paste", &id, "--file", "/no/such/file"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("--file /no/such/file"), "{out:?}");

    for args in [&["send", &id, ""][..], &["send", &id]] {
        let out = ctl.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(stderr(&out).contains("send needs something"), "{out:?}");
    }
    for (args, named) in [
        (&["screen", "local:77"][..], "local:77"),
        (&["signal", "interrupt", "78"], "local:78"),
        (&["resize", "79", "10x10"], "local:79"),
        (&["watch", "80"], "local:80"),
    ] {
        let out = ctl.run(args);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {out:?}");
        assert!(stderr(&out).contains(named), "{args:?}: {out:?}");
        assert_no_debug(&stderr(&out));
    }
}

#[test]
fn the_lease_verbs_say_what_they_did() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sleep", "1000"]);

    // Without --hold the lease ends with the command, and it says so.
    let said = ctl.ok(&["lease", "acquire", &id]);
    assert!(said.contains("--hold") && said.contains("ends"), "{said}");
    assert_eq!(row(&ctl, &id).expect("listed")[6], "-");

    let mut holder = ctl
        .command(&["lease", "acquire", &id, "--hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("lease --hold");
    let mut held = String::new();
    BufReader::new(holder.stdout.take().expect("stdout"))
        .read_line(&mut held)
        .expect("read");
    assert_eq!(held.trim(), "held");
    assert_ne!(
        row(&ctl, &id).expect("listed")[6],
        "-",
        "the holder is listed"
    );

    // Another command cannot release someone else's lease, and says it released nothing.
    let out = ctl.run(&["lease", "release", &id]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(stderr(&out).contains("released nothing"), "{out:?}");
    assert_ne!(row(&ctl, &id).expect("listed")[6], "-");

    drop(holder.stdin.take());
    let _ = finish(holder);
    assert!(wait_until(|| row(&ctl, &id).is_some_and(|r| r[6] == "-")));
    let said = ctl.ok(&["lease", "release", &id]);
    assert!(said.contains("has no lease"), "{said}");
}

#[test]
fn completions_and_the_manual_page_are_generated() {
    // Generated without a server.
    let ctl = Ctl::at(std::path::Path::new("/nonexistent/phux.sock"));
    let bash = ctl.ok(&["completions", "bash"]);
    assert!(
        bash.contains("_phuxctl") && bash.contains("attach"),
        "{bash}"
    );
    let zsh = ctl.ok(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef phuxctl"), "{zsh}");
    let man = ctl.ok(&["man"]);
    assert!(man.contains(".TH phuxctl 1"), "{man}");
    assert!(man.contains("resize"), "every verb is in the page");
}
