//! SIGTERM, SIGINT and SIGHUP arrive as mio readiness instead of ending the process.

use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};
use phux_mio_server::{ShutdownSignal, Signals};
use rustix::process::{Signal, getpid, kill_process};

const SIGNALS: Token = Token(7);

fn wait_for(poll: &mut Poll, signals: &mut Signals, want: ShutdownSignal) {
    let mut events = Events::with_capacity(4);
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let now = Instant::now();
        assert!(now < end, "{want:?} not seen through the Poll");
        poll.poll(&mut events, Some(end - now)).expect("poll");
        if events
            .iter()
            .any(|e| e.token() == SIGNALS && e.is_readable())
        {
            let got = signals.pending();
            if got.contains(&want) {
                return;
            }
        }
    }
}

#[test]
fn sigterm_sigint_and_sighup_become_readiness() {
    // [SERVER.SIGNAL.1] SIGHUP is caught too, not left to end the process.
    let mut poll = Poll::new().expect("poll");
    let mut signals = Signals::new().expect("signals");
    signals
        .register(poll.registry(), SIGNALS)
        .expect("register");
    assert!(signals.pending().is_empty());

    kill_process(getpid(), Signal::TERM).expect("raise SIGTERM");
    wait_for(&mut poll, &mut signals, ShutdownSignal::Terminate);

    kill_process(getpid(), Signal::INT).expect("raise SIGINT");
    wait_for(&mut poll, &mut signals, ShutdownSignal::Interrupt);

    kill_process(getpid(), Signal::HUP).expect("raise SIGHUP");
    wait_for(&mut poll, &mut signals, ShutdownSignal::Hangup);
}
