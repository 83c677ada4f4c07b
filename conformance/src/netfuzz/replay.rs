//! Whether a finding's transcript replays: it must PASS against a correct server (our engine,
//! in process) and FAIL against the server it was found on, or it is not written as a case. A
//! transcript that fails everywhere cannot confirm a fix; one that passes on the target shows
//! nothing.

use std::time::Duration;

use crate::runner::Outcome;
use crate::spec::Profile;
use crate::suite::{RunOptions, Suite};
use crate::transport::Connector;

/// How a finding's transcript fared on each server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replay {
    /// PASS against the correct server, FAIL (or NON_STRICT) against the target.
    Confirmed,
    /// Not both: why (which server, what outcome).
    Unconfirmed(String),
}

/// Runs the transcript `text` (a whole `.phuxt` file) against `correct` and against `target`,
/// each step waiting at most `timeout` on a real transport.
pub fn check(
    text: &str,
    correct: &dyn Connector,
    target: &dyn Connector,
    timeout: Duration,
) -> Replay {
    let mut suite = match Suite::embedded() {
        Ok(s) => s,
        Err(e) => return Replay::Unconfirmed(format!("the suite does not load: {e}")),
    };
    let t = match crate::transcript::parse("netfuzz/finding.phuxt", text) {
        Ok(t) => t,
        Err(e) => return Replay::Unconfirmed(format!("the transcript does not parse: {e}")),
    };
    suite.transcripts = vec![t];
    // Every rule: a finding's clause may be one of ours (the queue bound).
    let options = RunOptions::new(Profile::PhuxRs, timeout);
    let outcome = |connector: &dyn Connector| -> Result<(Outcome, String), String> {
        let reports = suite.run_with(connector, &options, &mut |_| {})?;
        let report = reports
            .into_iter()
            .next()
            .ok_or_else(|| "no case ran".to_owned())?;
        let detail = report.failure.as_ref().map_or_else(
            || report.outcome.reason().unwrap_or("").to_owned(),
            |f| format!("line {}: {}", f.line, f.actual.lines().next().unwrap_or("")),
        );
        Ok((report.outcome, detail))
    };
    match outcome(correct) {
        Ok((Outcome::Pass, _)) => {}
        Ok((other, detail)) => {
            return Replay::Unconfirmed(format!(
                "{} against {} (a correct server): {detail}",
                other.name(),
                correct.describe()
            ));
        }
        Err(e) => return Replay::Unconfirmed(format!("against {}: {e}", correct.describe())),
    }
    match outcome(target) {
        Ok((Outcome::Fail | Outcome::NonStrict, _)) => Replay::Confirmed,
        Ok((other, detail)) => Replay::Unconfirmed(format!(
            "{} against {} (where it was found): {detail}",
            other.name(),
            target.describe()
        )),
        Err(e) => Replay::Unconfirmed(format!(
            "against {} (where it was found): {e}",
            target.describe()
        )),
    }
}
