//! A stalled child: the program stops reading (SIGSTOP through SIGNAL_TERMINAL FREEZE) and a
//! 60 KiB paste fills its PTY input queue. The pending operation resolves
//! INPUT_DELIVERY_UNKNOWN within the 5 s bound (plus scheduling slack), another terminal keeps
//! its input latency meanwhile, and thousands of operations refused or left pending on the
//! stalled terminal do not grow the server's memory.

use std::time::{Duration, Instant};

use phux_proto::command::{Command, CommandResult, Signal};
use phux_proto::{ErrorCode, Frame, OperationId, TerminalId};

use crate::support::client::{Client, DEADLINE, Server, pid_of_terminal};
use crate::support::faults::{self, p50_max, paste_command, vm_rss_kib};

/// Round trips measured on the healthy terminal before the stall.
const BASELINE_SAMPLES: usize = 50;
/// Operations thrown at the stalled terminal for the memory reading.
const FLOOD: u32 = 5000;
/// Allowed server RSS growth over the flood.
const RSS_GROWTH_BOUND_KIB: u64 = 4 * 1024;

fn op(id: u128) -> OperationId {
    OperationId::from_u128(id).expect("id")
}

/// One acknowledged line to `terminal`, timed.
fn round_trip(c: &mut Client, id: u128, terminal: &TerminalId) -> Duration {
    let t0 = Instant::now();
    let result = c.command(Command::ApplyInput(phux_proto::command::ApplyInput {
        operation_id: op(id),
        terminal: terminal.clone(),
        events: vec![phux_proto::input::InputEvent::Paste(
            phux_proto::input::PasteEvent {
                trust: phux_proto::input::PasteTrust::Trusted,
                data: format!("healthy-{id}\n").into_bytes(),
            },
        )],
    }));
    assert_eq!(result, CommandResult::Ok, "healthy terminal refused input");
    t0.elapsed()
}

fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s.get(s.rfind(')')? + 1..)?;
            rest.trim_start().chars().next()
        })
        == Some('T')
}

fn result_of(frame: &Frame, request_id: u32) -> Option<CommandResult> {
    match frame {
        Frame::CommandResult(r) if r.request_id == request_id => Some(r.result.clone()),
        _ => None,
    }
}

#[test]
fn a_stalled_child_resolves_unknown_in_bounded_time_without_slowing_others_or_growing_memory() {
    // [INPUT.LANE.2] [INPUT.APPLY.8] [QUEUE.BOUND.1]
    let server = Server::start();
    let mut control = server.connect();
    control.hello();
    let mut healthy_client = server.connect();
    healthy_client.hello();
    let stalled = control.spawn(&["sh", "-c", "stty -echo; exec cat > /dev/null"]);
    let healthy = control.spawn(&["sh", "-c", "stty -echo; exec cat > /dev/null"]);

    let mut baseline = Vec::new();
    for i in 0..BASELINE_SAMPLES {
        baseline.push(round_trip(&mut healthy_client, 1000 + i as u128, &healthy));
    }

    let pid = pid_of_terminal(&mut control, &stalled);
    assert_eq!(
        control.command(Command::SignalTerminal {
            terminal: stalled.clone(),
            signal: Signal::Freeze
        }),
        CommandResult::Ok
    );
    assert!(
        faults::eventually(DEADLINE, || stopped(pid)),
        "the child never stopped"
    );

    // 60 KiB of 100-byte lines: far more than a stopped reader's input queue takes.
    let line: Vec<u8> = [vec![b'x'; 99], vec![b'\n']].concat();
    let big: Vec<u8> = line
        .iter()
        .copied()
        .cycle()
        .take(600 * line.len())
        .collect();
    let stalled_request = 900_000;
    let started = Instant::now();
    control.send(&paste_command(
        stalled_request,
        op(1),
        &stalled,
        big.clone(),
    ));

    // While it is pending, the healthy terminal keeps its latency.
    let mut during = Vec::new();
    let mut id = 10_000u128;
    let result = loop {
        during.push(round_trip(&mut healthy_client, id, &healthy));
        id += 1;
        if let Some(frame) = control.recv(Instant::now() + Duration::from_millis(5))
            && let Some(result) = result_of(&frame, stalled_request)
        {
            break result;
        }
        if let Some(result) = control
            .seen
            .iter()
            .find_map(|f| result_of(f, stalled_request))
        {
            break result;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "the stalled operation never resolved"
        );
    };
    let waited = started.elapsed();
    let CommandResult::Error { code, .. } = result else {
        panic!("stalled write answered {result:?}")
    };
    assert_eq!(code, ErrorCode::INPUT_DELIVERY_UNKNOWN);

    let (base_p50, base_max) = p50_max(&baseline);
    let (stall_p50, stall_max) = p50_max(&during);
    println!(
        "stalled child: INPUT_DELIVERY_UNKNOWN after {waited:?}; healthy APPLY_INPUT round trip \
         before the stall p50 {base_p50:?} max {base_max:?} ({} samples), during it p50 \
         {stall_p50:?} max {stall_max:?} ({} samples)",
        baseline.len(),
        during.len()
    );
    assert!(
        waited >= Duration::from_millis(4500),
        "resolved before the 5 s bound: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(15),
        "resolved far after the bound: {waited:?}"
    );
    // Held behind the stalled job, a healthy operation would wait out its bound too: the
    // slowest healthy round trip stays far below what the stalled one took (a ratio in one
    // run, not a stopwatch that a loaded machine could break).
    assert!(
        stall_max < waited / 3,
        "healthy terminal slowed during the stall: max {stall_max:?}, the stalled job {waited:?}"
    );

    // Memory: thousands of operations to the stalled terminal, pipelined, each refused or left
    // pending (the first admitted one waits out its 5 s bound again).
    let rss_before = vm_rss_kib(u32::try_from(server.pid()).expect("pid")).expect("rss");
    for k in 0..FLOOD {
        let data = [vec![b'y'; 1023], vec![b'\n']].concat();
        control.send(&paste_command(
            1_000_000 + k,
            op(0x1_0000_0000 + u128::from(k)),
            &stalled,
            data,
        ));
    }
    let mut codes: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for k in 0..FLOOD {
        let request = 1_000_000 + k;
        let result = match control.seen.iter().find_map(|f| result_of(f, request)) {
            Some(r) => r,
            None => control.wait_for("a flood result", |f| result_of(f, request)),
        };
        let name = match &result {
            CommandResult::Error { code, .. } => format!("{code:?}"),
            other => format!("{other:?}"),
        };
        *codes.entry(name).or_insert(0) += 1;
    }
    let rss_after = vm_rss_kib(u32::try_from(server.pid()).expect("pid")).expect("rss");
    let growth = rss_after.saturating_sub(rss_before);
    println!(
        "stalled child: {FLOOD} operations to the stalled terminal answered {codes:?}; server \
         VmRSS {rss_before} KiB before, {rss_after} KiB after (growth {growth} KiB)"
    );
    assert!(
        growth < RSS_GROWTH_BOUND_KIB,
        "server memory grew by {growth} KiB"
    );
    // Every one was refused as busy or left in doubt; none was reported written.
    assert!(
        codes
            .keys()
            .all(|k| k == "RESOURCE_EXHAUSTED" || k == "INPUT_DELIVERY_UNKNOWN"),
        "{codes:?}"
    );

    // Resumed, the child drains its queue and the server is still healthy.
    assert_eq!(
        control.command(Command::SignalTerminal {
            terminal: stalled.clone(),
            signal: Signal::Resume
        }),
        CommandResult::Ok
    );
    round_trip(&mut healthy_client, 99_999, &healthy);
}
