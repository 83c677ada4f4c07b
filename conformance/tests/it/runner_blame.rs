//! The runner blames a clause only for what a step citing it saw: a setup step that fails is
//! an ERROR of setup, a server that stops completing handshakes ends the run with the case
//! after which it stopped named and the rest not run, and a FAIL's requirement is the failing
//! step's clause, not the case header's.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use phux_conformance::report;
use phux_conformance::runner::{CaseReport, Outcome};
use phux_conformance::spec::Profile;
use phux_conformance::suite::{Paths, RunOptions, Suite};
use phux_conformance::transport::{ConnKey, Connector, InProcess, Recv, Transport, TransportError};
use phux_proto::notation::Value;

/// Opens in-process servers until `healthy` opens are used up; every later transport is a
/// server that accepts connections and never answers, as a wedged server does.
struct Wedging {
    healthy: Cell<usize>,
}

impl Connector for Wedging {
    fn describe(&self) -> String {
        "a server that wedges".into()
    }

    fn kind(&self) -> &'static str {
        "socket"
    }

    fn open(&self) -> Result<Box<dyn Transport>, TransportError> {
        match self.healthy.get() {
            0 => Ok(Box::new(Mute)),
            n => {
                self.healthy.set(n - 1);
                InProcess.open()
            }
        }
    }
}

/// A server that takes every byte and says nothing.
struct Mute;

impl Transport for Mute {
    fn virtual_time(&self) -> bool {
        false
    }
    fn shared_server(&self) -> bool {
        true
    }
    fn max_connections(&self) -> Option<usize> {
        None
    }
    fn vars(&self) -> Vec<(String, Value)> {
        InProcess.open().map(|t| t.vars()).unwrap_or_default()
    }
    fn connect(&mut self) -> Result<ConnKey, TransportError> {
        Ok(0)
    }
    fn send(&mut self, _: ConnKey, _: &[u8]) -> Result<(), TransportError> {
        Ok(())
    }
    fn recv(&mut self, _: ConnKey, wait: Duration) -> Result<Recv, TransportError> {
        std::thread::sleep(wait);
        Ok(Recv::Nothing)
    }
    fn disconnect(&mut self, _: ConnKey) {}
    fn set_reading(&mut self, _: ConnKey, _: bool) -> Result<(), TransportError> {
        Ok(())
    }
    fn advance(&mut self, by: Duration) {
        std::thread::sleep(by);
    }
}

fn options(filters: &[&str]) -> RunOptions {
    let mut options = RunOptions::new(Profile::PhuxRs, Duration::from_millis(300));
    options.filters = filters.iter().map(|f| (*f).to_owned()).collect();
    options
}

fn outcome_of<'a>(cases: &'a [CaseReport], id: &str) -> &'a Outcome {
    &cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("{id} not in the run"))
        .outcome
}

#[test]
fn a_server_that_stops_answering_is_named_and_no_clause_is_blamed() {
    let suite = Suite::load(&Paths::default()).unwrap();
    // The first handshake and two cases get a server; from the third case on it is wedged.
    let connector = Wedging {
        healthy: Cell::new(3),
    };
    let cases = suite
        .run_with(
            &connector,
            &options(&[
                "handshake/001",
                "handshake/002",
                "handshake/003",
                "handshake/004",
            ]),
            &mut |_| {},
        )
        .unwrap();
    let tree = report::tree("wedging", &cases);
    assert_eq!(cases.len(), 4, "{tree}");
    assert_eq!(
        outcome_of(&cases, "handshake/001"),
        &Outcome::Pass,
        "{tree}"
    );
    assert_eq!(
        outcome_of(&cases, "handshake/002"),
        &Outcome::Pass,
        "{tree}"
    );
    for id in ["handshake/003", "handshake/004"] {
        let Outcome::NotRun(why) = outcome_of(&cases, id) else {
            panic!("{id} should be NOT_RUN:\n{tree}");
        };
        assert!(
            why.contains("stopped completing handshakes after case handshake/002"),
            "{why}"
        );
    }
    assert!(!cases.iter().any(|c| c.outcome == Outcome::Fail), "{tree}");
    assert!(tree.contains("2 NOT_RUN"), "{tree}");
    assert!(!tree.contains("requirement:"), "no clause blamed:\n{tree}");
}

/// A transcripts directory with the prelude and the given cases (`(file, text)`).
fn transcripts(tag: &str, cases: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("phux-conf-blame-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("blame")).unwrap();
    let prelude = Path::new(env!("CARGO_MANIFEST_DIR")).join("transcripts/prelude.phuxt");
    std::fs::copy(prelude, dir.join("prelude.phuxt")).unwrap();
    for (name, text) in cases {
        std::fs::write(dir.join("blame").join(name), text).unwrap();
    }
    dir
}

#[test]
fn a_setup_step_that_fails_is_an_error_and_a_fail_quotes_the_failing_steps_clause() {
    let dir = transcripts(
        "steps",
        &[
            (
                "001-setup.phuxt",
                "id: blame/001\nclauses: PING.ECHO.1\nlevel: MUST\ndescription: setup fails\n\
                 requirement: the case header's sentence\n---\n\
                 c1 > PING{nonce=1}\nc1 < PONG{nonce=2}\n\
                 c1 > PING{nonce=3}\nc1 < PONG{nonce=3}     # [PING.ECHO.1]\n",
            ),
            (
                "002-check.phuxt",
                "id: blame/002\nclauses: HELLO.ORDER.2\nlevel: MUST\ndescription: a check fails\n\
                 requirement: the case header's sentence\n---\n\
                 c1 > PING{nonce=1}\nc1 < PONG{nonce=2}     # [PING.ECHO.1]\n",
            ),
        ],
    );
    let paths = Paths {
        transcripts: dir.clone(),
        ..Paths::default()
    };
    let suite = Suite::load(&paths).unwrap();
    let cases = suite
        .run_with(&InProcess, &options(&["blame/"]), &mut |_| {})
        .unwrap();
    let tree = report::tree("in-process", &cases);
    let Outcome::Error(why) = outcome_of(&cases, "blame/001") else {
        panic!("a failed setup step is an ERROR:\n{tree}");
    };
    assert!(why.contains("setup failed at line 8"), "{why}");
    assert_eq!(outcome_of(&cases, "blame/002"), &Outcome::Fail, "{tree}");
    // The FAIL quotes PING.ECHO.1, the clause the failing step cites, not the header's.
    let ping_echo = suite.spec.text("PING.ECHO.1").unwrap();
    let shown = report::case(None, &cases[1]);
    assert!(
        shown.contains(&format!("requirement: [PING.ECHO.1] {ping_echo} (phux: ")),
        "{shown}"
    );
    assert!(!shown.contains("the case header's sentence"), "{shown}");
    assert!(!shown.contains("HELLO.ORDER.2"), "{shown}");
    let _ = std::fs::remove_dir_all(dir);
}
