//! `keydiff`, a short fixed-seed campaign: our server's key encoder against the phux
//! reference's, every difference decided (`conformance/keydiff-decided.toml`). Skips, saying
//! so, without the reference binary (`PHUX_REF_BIN`).

use phux_conformance::keydiff::{self, Config};
use phux_conformance::peer::Server;

use crate::launch;

#[test]
fn a_fixed_seed_campaign_has_no_undecided_difference() {
    let Some(reference) = Server::reference_or_skip() else {
        return;
    };
    let ours = Server::start_ours(&launch::example(
        "conformance-test-server",
        "phux-conformance",
    ))
    .expect("start our server");
    let config = Config {
        seed: 35,
        events: 20_000,
        per_round: 1_000,
        probe: vec![
            env!("CARGO_BIN_EXE_phux-conformance").to_owned(),
            "probe".to_owned(),
        ],
        show: 20,
        dump: None,
    };
    let report = keydiff::run(&ours, &reference, &config, &mut |_| {}).expect("the campaign runs");
    println!("{}", report.text());
    assert_eq!(report.events, 20_000);
    assert_eq!(report.undecided_total(), 0, "{}", report.text());
    // The campaign sees both servers agree on most keys and differ where the table says.
    assert!(report.same > report.events / 2, "{}", report.text());
    assert!(!report.decided.is_empty(), "{}", report.text());
}
