//! The screen differential against the phux reference (`phux_conformance::screen_diff`): a
//! short fixed-seed campaign must show no undecided difference, and a stream the table decides
//! against the reference, sent as it is, must be caught (the comparison can fail).

use phux_conformance::peer::Server;
use phux_conformance::screen_diff::{Bench, Options, Problem};

use crate::launch;

/// The reference (or `None`, the skip recorded through the testkit) and ours, and a bench
/// over both.
fn bench() -> Option<(Bench, Server, Server)> {
    let reference = Server::reference_or_skip()?;
    let bin = launch::example("conformance-test-server", "phux-conformance");
    let ours = Server::start_ours(&bin).expect("start phux-mio-server");
    let show = vec![
        env!("CARGO_BIN_EXE_phux-conformance").to_owned(),
        "show".to_owned(),
    ];
    let bench = Bench::new(&ours, &reference, show).expect("connect to both servers");
    Some((bench, ours, reference))
}

#[test]
fn a_fixed_seed_campaign_shows_no_undecided_difference() {
    let Some((mut bench, _ours, _reference)) = bench() else {
        return;
    };
    let options = Options {
        seed: 0x5c4e_e11d,
        streams: 400,
        first: 0,
        in_flight: 8,
        max_findings: 3,
    };
    let report = bench.run(&options, |_| {}).expect("the campaign ran");
    let findings: String = report.findings.iter().map(ToString::to_string).collect();
    assert!(findings.is_empty(), "undecided differences:\n{findings}");
    assert_eq!(report.streams, 400);
    assert_eq!(report.identical, 400);
    assert!(report.events > 10_000, "{} events", report.events);
    // The steering is exercised, not idle: the commonest decided rows came up.
    for id in ["zero-count", "rep-after-control", "lone-mark"] {
        assert!(
            report.decided.get(id).is_some_and(|&n| n > 0),
            "{id}: {:?}",
            report.decided
        );
    }
}

#[test]
fn a_decided_difference_sent_as_it_is_is_caught() {
    let Some((mut bench, _ours, _reference)) = bench() else {
        return;
    };
    // TBC without a parameter clears the stop at column 9 in xterm (and ours), not in the
    // reference: the tab then goes to column 17 here and to column 9 there
    // (`tbc-default`, which the generator sends as `CSI 0 g`).
    let report = bench
        .replay((20, 2), b"\x1b[1;9H\x1b[g\rx\tX")
        .expect("replayed");
    let [finding] = &report.findings[..] else {
        panic!("one finding expected: {report:?}");
    };
    let Problem::Differs(diffs, screens) = &finding.problem else {
        panic!("a difference expected: {finding}");
    };
    assert!(!diffs.is_empty());
    assert_eq!(screens[0].lines[0], "x               X");
    assert_eq!(screens[1].lines[0], "x       X");
    // Sent as the generator sends it, it agrees.
    let report = bench
        .replay((20, 2), b"\x1b[1;9H\x1b[0g\rx\tX")
        .expect("replayed");
    assert!(report.findings.is_empty(), "{report:?}");
}
