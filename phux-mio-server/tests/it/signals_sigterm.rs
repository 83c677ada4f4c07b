//! SIGTERM, SIGINT, SIGHUP and SIGUSR2 arrive as mio readiness instead of ending the process.

use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};
use phux_mio_server::{ServerSignal, ShutdownSignal, Signals};
use rustix::process::{Signal, getpid, kill_process};

const SIGNALS: Token = Token(7);

fn wait_for(poll: &mut Poll, signals: &mut Signals, want: ServerSignal) {
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
fn sigterm_sigint_sighup_and_sigusr2_become_readiness() {
    // [SERVER.SIGNAL.1] SIGHUP is caught too, not left to end the process.
    let mut poll = Poll::new().expect("poll");
    let mut signals = Signals::new().expect("signals");
    signals
        .register(poll.registry(), SIGNALS)
        .expect("register");
    assert!(signals.pending().is_empty());

    kill_process(getpid(), Signal::TERM).expect("raise SIGTERM");
    wait_for(
        &mut poll,
        &mut signals,
        ServerSignal::Shutdown(ShutdownSignal::Terminate),
    );

    kill_process(getpid(), Signal::INT).expect("raise SIGINT");
    wait_for(
        &mut poll,
        &mut signals,
        ServerSignal::Shutdown(ShutdownSignal::Interrupt),
    );

    kill_process(getpid(), Signal::HUP).expect("raise SIGHUP");
    wait_for(
        &mut poll,
        &mut signals,
        ServerSignal::Shutdown(ShutdownSignal::Hangup),
    );

    // [SERVER.UPGRADE.EXEC.1] SIGUSR2 asks for an upgrade, and does not end the process.
    kill_process(getpid(), Signal::USR2).expect("raise SIGUSR2");
    wait_for(&mut poll, &mut signals, ServerSignal::Upgrade);
}
