use std::time::Duration;

use super::GrandchildEvent;
use super::report::hex;
use super::*;
use proptest::prelude::*;

/// Every report body the actions wrote, with its sequence number checked: they must count
/// up from `first` with no gap.
fn bodies_from(first: u64, actions: &[ProbeAction]) -> Vec<String> {
    let mut text = Vec::new();
    for action in actions {
        if let ProbeAction::Write(bytes) = action {
            text.extend_from_slice(bytes);
        }
    }
    let text = String::from_utf8(text).expect("reports are ASCII");
    let mut seq = first;
    text.split("\r\n")
        .filter(|l| !l.is_empty())
        .map(|line| {
            let rest = line.strip_prefix("PROBE ").expect("a report line");
            let (n, body) = rest.split_once(' ').expect("seq and body");
            assert_eq!(n, seq.to_string(), "sequence in {line:?}");
            seq += 1;
            body.to_owned()
        })
        .collect()
}

/// A started machine, with its READY consumed.
fn started() -> ProbeMachine {
    let mut m = ProbeMachine::new();
    let actions = m.start();
    assert_eq!(actions.first(), Some(&ProbeAction::SetEcho(false)));
    assert_eq!(bodies_from(0, &actions), ["READY"]);
    m
}

/// Feeds and returns the report bodies, checking the sequence continues.
fn feed(m: &mut ProbeMachine, bytes: &[u8]) -> Vec<String> {
    let first = m.next_seq();
    bodies_from(first, &m.feed(bytes))
}

/// Feeds a command whose first action writes its bulk output: that output and the report
/// bodies after it.
fn bulk_then_reports(m: &mut ProbeMachine, command: &[u8]) -> (Vec<u8>, Vec<String>) {
    let first = m.next_seq();
    let actions = m.feed(command);
    let Some(ProbeAction::Write(bulk)) = actions.first() else {
        panic!("{actions:?}")
    };
    (bulk.clone(), bodies_from(first, &actions[1..]))
}

fn handle(m: &mut ProbeMachine, event: ProbeEvent) -> Vec<ProbeAction> {
    m.handle(event)
}

fn termios(canonical: bool, echo: bool) -> Answer {
    Answer::Termios(TermiosReport {
        canonical,
        echo,
        isig: canonical,
        icrnl: canonical,
    })
}

fn raw_machine() -> ProbeMachine {
    let mut m = started();
    assert_eq!(
        m.feed(b":raw\n"),
        [
            ProbeAction::SetRaw(true),
            ProbeAction::Query(Query::Termios)
        ]
    );
    let first = m.next_seq();
    let actions = m.handle(ProbeEvent::Answer(termios(false, false)));
    assert_eq!(
        bodies_from(first, &actions),
        ["TERMIOS raw -echo -isig -icrnl"]
    );
    assert!(m.is_raw());
    m
}

#[test]
fn start_turns_echo_off_and_reports_ready_once() {
    let mut m = started();
    assert!(!m.echo());
    assert!(m.wants_input());
    assert!(m.start().is_empty());
}

#[test]
fn canonical_payload_is_reported_per_line_whatever_the_reads() {
    let mut m = started();
    assert!(feed(&mut m, b"hel").is_empty());
    assert_eq!(feed(&mut m, b"lo\nwor"), ["READ 68656c6c6f0a"]);
    assert_eq!(feed(&mut m, b"ld\n\n"), ["READ 776f726c640a", "READ 0a"]);
    // A ':' inside a line is payload.
    assert_eq!(feed(&mut m, b"a:b\n"), ["READ 613a620a"]);
}

#[test]
fn raw_payload_is_reported_per_read() {
    let mut m = raw_machine();
    assert_eq!(feed(&mut m, b"ab"), ["READ 6162"]);
    assert_eq!(feed(&mut m, b"\x1b[A"), ["READ 1b5b41"]);
    assert_eq!(feed(&mut m, b"\r\x03"), ["READ 0d03"]);
    assert_eq!(feed(&mut m, b""), Vec::<String>::new());
}

#[test]
fn commands_split_across_reads_and_their_terminators() {
    let mut m = started();
    assert!(feed(&mut m, b":co").is_empty());
    assert!(!feed(&mut m, b"un").iter().any(|b| b.starts_with("READ")));
    assert_eq!(feed(&mut m, b"t\r"), ["COUNT 0 0"]);
    // The LF of a CR LF after a command belongs to it, even in the next read.
    assert_eq!(feed(&mut m, b"\n:count\r\n"), ["COUNT 0 0"]);
    // Only one LF is swallowed: a second one is an empty payload line.
    assert_eq!(feed(&mut m, b":count\r\n\n"), ["COUNT 0 0", "READ 0a"]);
    assert_eq!(feed(&mut m, b":count\n"), ["COUNT 1 1"]);
}

#[test]
fn payload_before_a_command_in_one_raw_read_is_reported_first() {
    let mut m = raw_machine();
    assert_eq!(
        feed(&mut m, b"x\r:mark m1\rtail"),
        ["READ 780d", "MARK m1", "READ 7461696c"]
    );
}

#[test]
fn bad_commands_are_reported_not_run() {
    let mut m = started();
    assert_eq!(feed(&mut m, b":nope 1\n"), ["BADCMD 3a6e6f70652031"]);
    assert_eq!(feed(&mut m, b":\n"), ["BADCMD 3a"]);
    assert_eq!(feed(&mut m, b":count\n"), ["COUNT 0 0"]);
}

#[test]
fn an_overlong_colon_line_is_released_as_payload() {
    let mut m = started();
    let mut line = vec![b':'];
    line.extend(std::iter::repeat_n(b'x', MAX_COMMAND));
    line.push(b'\n');
    assert_eq!(feed(&mut m, &line), [format!("READ {}", hex(&line))]);
}

#[test]
fn canonical_line_longer_than_the_kernel_buffer_is_reported_in_pieces() {
    let mut m = started();
    let long = vec![b'y'; MAX_LINE + 10];
    let bodies = feed(&mut m, &long);
    assert_eq!(bodies, [format!("READ {}", hex(&long[..MAX_LINE]))]);
    assert_eq!(
        feed(&mut m, b"\n"),
        [format!("READ {}0a", hex(&long[MAX_LINE..]))]
    );
}

#[test]
fn raw_canon_and_echo_change_the_tty_then_report_its_termios() {
    let mut m = raw_machine();
    // Input after a query waits for the answer: reports stay in input order.
    assert_eq!(
        m.feed(b":canon\n:count\n"),
        [
            ProbeAction::SetRaw(false),
            ProbeAction::Query(Query::Termios)
        ]
    );
    assert!(!m.wants_input());
    let first = m.next_seq();
    let actions = handle(&mut m, ProbeEvent::Answer(termios(true, false)));
    assert_eq!(
        bodies_from(first, &actions),
        ["TERMIOS canon -echo isig icrnl", "COUNT 0 0"]
    );
    assert!(!m.is_raw());
    assert_eq!(
        m.feed(b":echo on\n"),
        [
            ProbeAction::SetEcho(true),
            ProbeAction::Query(Query::Termios)
        ]
    );
    assert!(m.echo());
    let first = m.next_seq();
    let actions = handle(&mut m, ProbeEvent::Answer(termios(true, true)));
    assert_eq!(
        bodies_from(first, &actions),
        ["TERMIOS canon echo isig icrnl"]
    );
    assert_eq!(
        m.feed(b":echo off\n"),
        [
            ProbeAction::SetEcho(false),
            ProbeAction::Query(Query::Termios)
        ]
    );
    assert!(!m.echo());
}

#[test]
fn reports_of_termios_pgrp_size_and_failures() {
    let mut m = started();
    assert_eq!(
        m.feed(b":report termios\n"),
        [ProbeAction::Query(Query::Termios)]
    );
    let first = m.next_seq();
    let a = handle(&mut m, ProbeEvent::Answer(termios(true, false)));
    assert_eq!(bodies_from(first, &a), ["TERMIOS canon -echo isig icrnl"]);

    assert_eq!(
        m.feed(b":report pgrp\n"),
        [ProbeAction::Query(Query::Process)]
    );
    let first = m.next_seq();
    let a = handle(
        &mut m,
        ProbeEvent::Answer(Answer::Process(ProcessReport {
            pid: 41,
            pgrp: 41,
            sid: 41,
            foreground: None,
        })),
    );
    assert_eq!(bodies_from(first, &a), ["PGRP 41 41 41 -"]);

    assert_eq!(m.feed(b":report size\n"), [ProbeAction::Query(Query::Size)]);
    let first = m.next_seq();
    let a = handle(
        &mut m,
        ProbeEvent::Answer(Answer::Size { cols: 80, rows: 24 }),
    );
    assert_eq!(bodies_from(first, &a), ["SIZE 80 24"]);

    assert_eq!(m.feed(b":report size\n"), [ProbeAction::Query(Query::Size)]);
    let first = m.next_seq();
    let a = handle(
        &mut m,
        ProbeEvent::Answer(Answer::Failed("Not a tty\r\n(os error 25)".into())),
    );
    assert_eq!(
        bodies_from(first, &a),
        ["FAILED size Not a tty??(os error 25)"]
    );
    // An answer nobody asked for is ignored.
    assert!(
        handle(
            &mut m,
            ProbeEvent::Answer(Answer::Size { cols: 1, rows: 1 })
        )
        .is_empty()
    );
}

#[test]
fn reports_of_args_cwd_and_environment() {
    let mut m = started();
    assert_eq!(m.feed(b":report args\n"), [ProbeAction::Query(Query::Args)]);
    let first = m.next_seq();
    let args = vec![b"/bin/probe".to_vec(), b"a b".to_vec(), Vec::new()];
    let a = handle(&mut m, ProbeEvent::Answer(Answer::Args(args)));
    assert_eq!(
        bodies_from(first, &a),
        ["ARGS 2f62696e2f70726f6265 612062 -"]
    );

    assert_eq!(m.feed(b":report cwd\n"), [ProbeAction::Query(Query::Cwd)]);
    let first = m.next_seq();
    let a = handle(&mut m, ProbeEvent::Answer(Answer::Cwd(b"/".to_vec())));
    assert_eq!(bodies_from(first, &a), ["CWD 2f"]);

    let environ = || {
        Answer::Environ(vec![
            b"TERM=vt100".to_vec(),
            b"B=".to_vec(),
            b"A=1".to_vec(),
            b"A=2".to_vec(),
        ])
    };
    // The whole environment, sorted, so a transcript can compare it with one list.
    assert_eq!(
        m.feed(b":report environ\n"),
        [ProbeAction::Query(Query::Environ)]
    );
    let first = m.next_seq();
    let a = handle(&mut m, ProbeEvent::Answer(environ()));
    assert_eq!(
        bodies_from(first, &a),
        ["ENVIRON 413d31 413d32 423d 5445524d3d7674313030"]
    );
    for (name, body) in [
        ("TERM", "ENV TERM 7674313030"),
        ("A", "ENV A 31"),
        ("B", "ENV B -"),
        ("C", "ENV C UNSET"),
        ("TER", "ENV TER UNSET"),
    ] {
        let line = format!(":report env {name}\n");
        assert_eq!(
            m.feed(line.as_bytes()),
            [ProbeAction::Query(Query::Environ)]
        );
        let first = m.next_seq();
        let a = handle(&mut m, ProbeEvent::Answer(environ()));
        assert_eq!(bodies_from(first, &a), [body]);
    }
    // After a single variable, `environ` reports everything again.
    m.feed(b":report environ\n");
    let first = m.next_seq();
    let a = handle(&mut m, ProbeEvent::Answer(Answer::Environ(Vec::new())));
    assert_eq!(bodies_from(first, &a), ["ENVIRON"]);
    m.feed(b":report args\n");
    let first = m.next_seq();
    let a = handle(&mut m, ProbeEvent::Answer(Answer::Failed("gone".into())));
    assert_eq!(bodies_from(first, &a), ["FAILED args gone"]);
}

#[test]
fn a_timed_stall_holds_input_until_its_timer() {
    let mut m = raw_machine();
    let first = m.next_seq();
    let actions = m.feed(b":stall 250\rabc");
    assert_eq!(
        actions.last(),
        Some(&ProbeAction::Stall(Some(Duration::from_millis(250))))
    );
    assert_eq!(bodies_from(first, &actions), ["STALLING 250"]);
    assert!(!m.wants_input());
    // A host that reads anyway only adds to what is held.
    assert!(m.feed(b"def").is_empty());
    // Signals that do not end a stall are still handled.
    assert!(feed(&mut m, b"").is_empty());
    let first = m.next_seq();
    let actions = handle(&mut m, ProbeEvent::StallElapsed);
    assert!(actions.contains(&ProbeAction::Resume));
    assert_eq!(
        bodies_from(first, &actions),
        ["RESUMED timer", "READ 616263646566"]
    );
    assert!(m.wants_input());
    // A late or spurious timer does nothing.
    assert!(handle(&mut m, ProbeEvent::StallElapsed).is_empty());
}

#[test]
fn an_endless_stall_ends_by_sigcont_or_sigusr1_only() {
    for sig in [ProbeSignal::Cont, ProbeSignal::Usr1] {
        let mut m = started();
        let first = m.next_seq();
        let actions = m.feed(b":stall\n:mark after\n");
        assert_eq!(actions.last(), Some(&ProbeAction::Stall(None)));
        assert_eq!(bodies_from(first, &actions), ["STALLING forever"]);
        assert!(handle(&mut m, ProbeEvent::StallElapsed).is_empty());
        assert!(!m.wants_input());
        // SIGUSR1's default would kill; ending a stall it does not.
        let first = m.next_seq();
        let actions = handle(&mut m, ProbeEvent::Signal(sig));
        assert_eq!(
            bodies_from(first, &actions),
            [format!("RESUMED {}", sig.name()), "MARK after".to_owned()]
        );
        assert!(m.wants_input());
    }
}

#[test]
fn a_handled_stall_signal_is_reported_before_the_resume() {
    let mut m = started();
    feed(&mut m, b":handle CONT\n:stall 10000\n");
    let first = m.next_seq();
    let actions = handle(&mut m, ProbeEvent::Signal(ProbeSignal::Cont));
    assert_eq!(
        bodies_from(first, &actions),
        ["SIGNAL CONT", "RESUMED CONT"]
    );
    // The stall's timer was cancelled with it.
    assert!(handle(&mut m, ProbeEvent::StallElapsed).is_empty());
}

#[test]
fn exit_reports_then_exits_and_the_machine_goes_quiet() {
    let mut m = started();
    let first = m.next_seq();
    let actions = m.feed(b":exit 3\n:count\n");
    assert_eq!(actions.last(), Some(&ProbeAction::Exit(3)));
    assert_eq!(bodies_from(first, &actions), ["EXITING 3"]);
    assert!(m.is_finished());
    assert!(!m.wants_input());
    assert!(m.feed(b":count\n").is_empty());
    assert!(handle(&mut m, ProbeEvent::Signal(ProbeSignal::Int)).is_empty());
    let mut m = started();
    assert_eq!(m.feed(b":exit\n").last(), Some(&ProbeAction::Exit(0)));
}

#[test]
fn end_of_input_flushes_the_line_and_exits_zero() {
    let mut m = started();
    assert!(feed(&mut m, b"partial").is_empty());
    let first = m.next_seq();
    let actions = handle(&mut m, ProbeEvent::Eof);
    assert_eq!(
        bodies_from(first, &actions),
        ["READ 7061727469616c", "EOF", "EXITING 0"]
    );
    assert_eq!(actions.last(), Some(&ProbeAction::Exit(0)));
}

#[test]
fn end_of_input_during_a_stall_waits_for_the_held_input() {
    let mut m = started();
    feed(&mut m, b":stall 5\nlast\n");
    assert!(handle(&mut m, ProbeEvent::Eof).is_empty());
    let first = m.next_seq();
    let actions = handle(&mut m, ProbeEvent::StallElapsed);
    assert_eq!(
        bodies_from(first, &actions),
        ["RESUMED timer", "READ 6c6173740a", "EOF", "EXITING 0"]
    );
}

#[test]
fn signal_dispositions_default_ignore_and_handle() {
    // [SIGNAL.MAP.1] the probe names what arrived, so transcripts can check the mapping.
    for sig in ProbeSignal::ALL {
        let mut m = started();
        let actions = handle(&mut m, ProbeEvent::Signal(sig));
        if sig.is_fatal_by_default() {
            assert_eq!(actions, [ProbeAction::DieBySignal(sig)], "{sig:?}");
            assert!(m.is_finished());
        } else {
            assert!(actions.is_empty(), "{sig:?}");
            assert!(m.wants_input());
        }

        let mut m = started();
        let name = sig.name();
        assert_eq!(
            feed(&mut m, format!(":ignore {name}\n").as_bytes()),
            [format!("IGNORING {name}")]
        );
        assert!(handle(&mut m, ProbeEvent::Signal(sig)).is_empty());
        assert!(!m.is_finished());

        assert_eq!(
            feed(&mut m, format!(":handle {name}\n").as_bytes()),
            [format!("HANDLING {name}")]
        );
        let first = m.next_seq();
        let actions = handle(&mut m, ProbeEvent::Signal(sig));
        assert_eq!(bodies_from(first, &actions), [format!("SIGNAL {name}")]);

        assert_eq!(
            feed(&mut m, format!(":default {name}\n").as_bytes()),
            [format!("DEFAULT {name}")]
        );
        let dies = handle(&mut m, ProbeEvent::Signal(sig)) == [ProbeAction::DieBySignal(sig)];
        assert_eq!(dies, sig.is_fatal_by_default(), "{sig:?}");
    }
}

#[test]
fn grandchild_reports_are_relayed_in_sequence() {
    // [SIGNAL.GROUP.1] a grandchild in the group reports what the group received.
    let mut m = started();
    assert_eq!(
        m.feed(b":grandchild\n:mark m\n"),
        [ProbeAction::SpawnGrandchild]
    );
    assert!(m.has_grandchild());
    assert!(!m.wants_input());
    // Nothing is relayed before READY.
    let gc = |e| ProbeEvent::Grandchild(e);
    assert!(handle(&mut m, gc(GrandchildEvent::Signal(ProbeSignal::Int))).is_empty());
    let first = m.next_seq();
    let actions = handle(&mut m, gc(GrandchildEvent::Ready));
    assert_eq!(bodies_from(first, &actions), ["GRANDCHILD READY", "MARK m"]);
    let first = m.next_seq();
    let actions = handle(&mut m, gc(GrandchildEvent::Signal(ProbeSignal::Term)));
    assert_eq!(bodies_from(first, &actions), ["GRANDCHILD SIGNAL TERM"]);
    assert_eq!(
        feed(&mut m, b":grandchild\n"),
        ["FAILED grandchild already running"]
    );
    let first = m.next_seq();
    let actions = handle(&mut m, gc(GrandchildEvent::Gone));
    assert_eq!(bodies_from(first, &actions), ["GRANDCHILD GONE"]);
    assert!(!m.has_grandchild());
    assert!(handle(&mut m, gc(GrandchildEvent::Gone)).is_empty());
}

#[test]
fn a_grandchild_that_cannot_start_is_reported_and_input_goes_on() {
    let mut m = started();
    m.feed(b":grandchild\n:count\n");
    let first = m.next_seq();
    let actions = handle(
        &mut m,
        ProbeEvent::Grandchild(GrandchildEvent::SpawnFailed(String::new())),
    );
    assert_eq!(
        bodies_from(first, &actions),
        ["FAILED grandchild -", "COUNT 0 0"]
    );
    assert!(!m.has_grandchild());
    // One that dies before READY ends the wait too.
    m.feed(b":grandchild\n:mark x\n");
    let first = m.next_seq();
    let actions = handle(&mut m, ProbeEvent::Grandchild(GrandchildEvent::Gone));
    assert_eq!(bodies_from(first, &actions), ["GRANDCHILD GONE", "MARK x"]);
}

#[test]
fn count_and_checksum_cover_payload_only() {
    let mut m = started();
    feed(&mut m, b"abc\n:mark x\n");
    assert_eq!(feed(&mut m, b":count\n"), ["COUNT 4 1"]);
    // SHA-256("abc\n").
    assert_eq!(
        feed(&mut m, b":checksum\n"),
        ["CHECKSUM edeaaff3f1774ad2888673770c6d64097e391bc362d7d6fb34982ddf0efd18cb 4"]
    );
    assert_eq!(feed(&mut m, b":checksum-reset\n"), ["CHECKSUM-RESET"]);
    // SHA-256 of nothing.
    assert_eq!(
        feed(&mut m, b":checksum\n"),
        ["CHECKSUM e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0"]
    );
    // Counts are since the start; the reset touched only the checksum.
    feed(&mut m, b"de\n");
    assert_eq!(feed(&mut m, b":count\n"), ["COUNT 7 2"]);
}

#[test]
fn lines_count_lf_and_lone_cr_once_each() {
    let mut m = raw_machine();
    feed(&mut m, b"a\r\nb\rc\n\r");
    feed(&mut m, b"\n");
    // a CRLF, b CR, c LF, CR + LF split across reads: four lines.
    assert_eq!(feed(&mut m, b":count\r"), ["COUNT 9 4"]);
}

#[test]
fn print_writes_the_bytes_before_its_report_and_mark_echoes_a_word() {
    let mut m = started();
    let first = m.next_seq();
    let actions = m.feed(b":print 1b5b3f323030346800\n");
    assert_eq!(
        actions.first(),
        Some(&ProbeAction::Write(b"\x1b[?2004h\x00".to_vec()))
    );
    assert_eq!(bodies_from(first, &actions[1..]), ["PRINTED 9"]);
    assert_eq!(feed(&mut m, b":mark step-2\n"), ["MARK step-2"]);
}

#[test]
fn flood_writes_that_much_plain_text_before_its_report() {
    let mut m = started();
    let (text, reports) = bulk_then_reports(&mut m, b":flood 60\n");
    assert_eq!(text.len(), 60);
    assert!(text.starts_with(b"abcdefghijklmnopqrstuvwxyzabc"));
    assert!(text.iter().all(u8::is_ascii_lowercase));
    assert_eq!(reports, ["FLOODED 60"]);
    assert_eq!(feed(&mut m, b":flood 0\n"), ["FLOODED 0"]);
}

#[test]
fn flood_styled_writes_cells_that_each_set_a_new_pen() {
    let mut m = started();
    let (text, reports) = bulk_then_reports(&mut m, b":flood-styled 300\n");
    let text = String::from_utf8(text).expect("ASCII");
    let cells: Vec<&str> = text.split('\x1b').skip(1).collect();
    assert_eq!(cells.len(), 300);
    assert!(
        cells[0].starts_with("[0;1;38;2;0;0;0;48;2;255;255;0ma"),
        "{}",
        cells[0]
    );
    assert!(
        cells[257].starts_with("[0;3;38;2;1;1;0;48;2;254;254;2mx"),
        "{}",
        cells[257]
    );
    for (i, pair) in cells.windows(2).enumerate() {
        assert_ne!(pair[0], pair[1], "cells {i} and {} share a pen", i + 1);
    }
    // One printable letter after each SGR: only the pen changes between cells.
    for cell in &cells {
        let (sgr, letter) = cell.split_once('m').expect("an SGR");
        assert!(
            sgr.bytes()
                .all(|b| b == b'[' || b == b';' || b.is_ascii_digit())
        );
        assert_eq!(letter.len(), 1);
        assert!(letter.bytes().all(|b| b.is_ascii_lowercase()));
    }
    assert_eq!(reports, ["STYLED 300"]);
    assert_eq!(feed(&mut m, b":flood-styled 0\n"), ["STYLED 0"]);
}

#[test]
fn signal_names_round_trip() {
    for sig in ProbeSignal::ALL {
        assert_eq!(ProbeSignal::from_name(sig.name()), Some(sig));
    }
    assert_eq!(ProbeSignal::from_name("int"), None);
    assert_eq!(ProbeSignal::from_name("SIGINT"), None);
}

/// Input made of payload lines and a few side-effect-free commands.
fn script() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..12),
        Just(b"\n:count\n".to_vec()),
        Just(b"\r:checksum\r\n".to_vec()),
        Just(b"\n:mark m\r".to_vec()),
        Just(b"\n:bad\n".to_vec()),
        Just(b"\r\n".to_vec()),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

fn cut(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut at = 0;
    for p in points.into_iter().chain([bytes.len()]) {
        chunks.push(bytes[at..p].to_vec());
        at = p;
    }
    chunks
}

fn run_chunks(raw: bool, chunks: &[Vec<u8>]) -> Vec<String> {
    let mut m = if raw { raw_machine() } else { started() };
    let mut bodies = Vec::new();
    for chunk in chunks {
        bodies.extend(feed(&mut m, chunk));
    }
    bodies.extend(feed(&mut m, b"\n:count\n:checksum\n"));
    bodies
}

proptest! {
    /// Canonical mode: how the input is split into reads never changes a single report.
    #[test]
    fn canonical_reports_do_not_depend_on_read_boundaries(
        input in script(),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let whole = run_chunks(false, std::slice::from_ref(&input));
        let split = run_chunks(false, &cut(&input, &cuts));
        prop_assert_eq!(whole, split);
    }

    /// Raw mode: reads may split READs, but the payload they carry, every other report,
    /// the count and the checksum stay the same.
    #[test]
    fn raw_payload_and_summaries_do_not_depend_on_read_boundaries(
        input in script(),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let merge = |bodies: Vec<String>| {
            let mut merged: Vec<String> = Vec::new();
            for body in bodies {
                match (merged.last_mut(), body.strip_prefix("READ ")) {
                    (Some(last), Some(hex)) if last.starts_with("READ ") => last.push_str(hex),
                    _ => merged.push(body),
                }
            }
            merged
        };
        let whole = merge(run_chunks(true, std::slice::from_ref(&input)));
        let split = merge(run_chunks(true, &cut(&input, &cuts)));
        prop_assert_eq!(whole, split);
    }
}
