//! The suite as a whole: the transcripts, the prelude, the spec and an expectations file,
//! loaded from a directory tree or from the copies built into this program, and a run of all
//! (or a filtered part) of it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::expectations::Expectations;
use crate::matrix::{Matrix, Report as MatrixReport};
use crate::pattern::Templates;
use crate::runner::{CaseReport, Outcome, Runner, ServerInfo};
use crate::spec::{Clause, Profile, Spec};
use crate::transcript::{self, Transcript};
use crate::transport::Connector;

/// Where the suite's files are on disk.
#[derive(Clone, Debug)]
pub struct Paths {
    /// `conformance/transcripts`.
    pub transcripts: PathBuf,
    /// `spec`.
    pub spec: PathBuf,
    /// `conformance/expectations.txt`.
    pub expectations: PathBuf,
    /// `conformance/not-wire-checkable.txt`.
    pub not_wire_checkable: PathBuf,
    /// `conformance/phux-requirements.toml`, the requirements matrix of phux 0.8.
    pub matrix: PathBuf,
}

impl Default for Paths {
    /// The files of the repository this crate was built from.
    fn default() -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        Self {
            transcripts: root.join("transcripts"),
            spec: root.join("../spec"),
            expectations: root.join("expectations.txt"),
            not_wire_checkable: root.join("not-wire-checkable.txt"),
            matrix: root.join("phux-requirements.toml"),
        }
    }
}

/// The suite's files as built into this program (`build.rs`), so that an installed runner
/// works from any directory: `(path, text)` with paths relative to the package
/// (`transcripts/input/003-dedupe-retry.phuxt`, `spec/input.md`, `peers/phux-0.22.0.toml`).
pub mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));

    /// The text of an embedded file.
    pub fn file(path: &str) -> Option<&'static str> {
        FILES.iter().find(|(p, _)| *p == path).map(|(_, t)| *t)
    }

    /// The embedded files under a directory (`transcripts/`), in path order.
    pub fn under(dir: &str) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        FILES
            .iter()
            .copied()
            .filter(move |(p, _)| p.starts_with(dir))
    }
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct Suite {
    /// The prelude's templates.
    pub templates: Templates,
    /// Every transcript, by id.
    pub transcripts: Vec<Transcript>,
    /// The spec.
    pub spec: Spec,
    /// Disabled cases and known deviations.
    pub expectations: Expectations,
    /// phux's own requirements, traced to our clauses.
    pub matrix: Matrix,
}

/// How a run goes.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Run only cases some filter selects (see [`Suite::select`]); none: every case.
    pub filters: Vec<String>,
    /// How long an expectation waits on a real transport.
    pub timeout: Duration,
    /// Which rules to check.
    pub profile: Profile,
    /// Stop after the first case that fails the run.
    pub fail_fast: bool,
}

impl RunOptions {
    /// Every case, under `profile`, waiting `timeout`.
    pub fn new(profile: Profile, timeout: Duration) -> Self {
        Self {
            filters: Vec::new(),
            timeout,
            profile,
            fail_fast: false,
        }
    }
}

impl Suite {
    /// Loads the suite from `paths`.
    pub fn load(paths: &Paths) -> Result<Self, String> {
        let (prelude, transcripts) =
            transcript::load_dir(&paths.transcripts).map_err(|e| e.to_string())?;
        let spec = Spec::load(&paths.spec)?;
        let expectations = match std::fs::read_to_string(&paths.expectations) {
            Ok(text) => Expectations::parse(&paths.expectations.display().to_string(), &text)?,
            Err(_) => Expectations::default(),
        };
        let matrix = std::fs::read_to_string(&paths.matrix)
            .map_err(|e| format!("{}: {e}", paths.matrix.display()))
            .and_then(|text| {
                Matrix::parse(&text).map_err(|e| format!("{}: {e}", paths.matrix.display()))
            })?;
        Ok(Self::assemble(
            prelude,
            transcripts,
            spec,
            expectations,
            matrix,
        ))
    }

    /// Loads the suite built into this program.
    pub fn embedded() -> Result<Self, String> {
        let files: Vec<(String, String)> = embedded::under("transcripts/")
            .map(|(p, t)| {
                (
                    p.trim_start_matches("transcripts/").to_owned(),
                    t.to_owned(),
                )
            })
            .collect();
        let (prelude, transcripts) = transcript::load_files(&files).map_err(|e| e.to_string())?;
        let mut spec = Spec::default();
        for (path, text) in embedded::under("spec/") {
            spec.add_file(path.trim_start_matches("spec/"), text)?;
        }
        let expectations = embedded::file("expectations.txt")
            .map(|t| Expectations::parse("expectations.txt", t))
            .transpose()?
            .unwrap_or_default();
        let matrix = Matrix::parse(embedded::file("phux-requirements.toml").unwrap_or_default())
            .map_err(|e| format!("phux-requirements.toml: {e}"))?;
        Ok(Self::assemble(
            prelude,
            transcripts,
            spec,
            expectations,
            matrix,
        ))
    }

    fn assemble(
        prelude: Vec<(String, phux_proto::notation::Value)>,
        transcripts: Vec<Transcript>,
        spec: Spec,
        expectations: Expectations,
        matrix: Matrix,
    ) -> Self {
        let mut templates = Templates::default();
        for (name, value) in prelude {
            templates.define(&name, value);
        }
        Self {
            templates,
            transcripts,
            spec,
            expectations,
            matrix,
        }
    }

    /// phux's own clauses (no `Ours` note) that cite no phux text: neither a `> phux:` note
    /// nor a row of the requirements matrix names them.
    pub fn uncited_phux(&self) -> Vec<&Clause> {
        let traced = self.matrix.rows_by_clause();
        self.spec
            .uncited_phux()
            .filter(|c| !traced.contains_key(c.id.as_str()))
            .collect()
    }

    /// Whether profile phux leaves a case out (it cites or assumes a rule of ours).
    pub fn outside_phux(&self, t: &Transcript) -> bool {
        !self.ours_cited(t).is_empty()
    }

    /// The requirements matrix held against this suite.
    pub fn matrix_report(&self) -> MatrixReport<'_> {
        MatrixReport::new(&self.matrix, &self.spec, &self.transcripts, &|t| {
            self.outside_phux(t)
        })
    }

    /// The transcripts the filters select (all when there are none): a filter selects a case
    /// whose id starts with it (`input/004`, `input`) or that cites, in its header or a step,
    /// a clause whose id starts with it (`INPUT.DEDUPE`).
    pub fn select(&self, filters: &[String]) -> Vec<&Transcript> {
        self.transcripts
            .iter()
            .filter(|t| filters.is_empty() || filters.iter().any(|f| selects(f, t)))
            .collect()
    }

    /// The clauses of phux-rs only that a case cites (in its header or a step): a case that
    /// cites any is outside the `phux` profile.
    pub fn ours_cited(&self, t: &Transcript) -> Vec<String> {
        let mut ours: Vec<String> = t
            .clauses
            .iter()
            .chain(&t.assumes)
            .chain(t.steps.iter().flat_map(|s| s.clauses.iter()))
            .filter(|c| self.spec.is_ours(c))
            .cloned()
            .collect();
        ours.sort();
        ours.dedup();
        if t.phux_rs_only {
            ours.push("(the case's header: profile phux-rs)".to_owned());
        }
        ours
    }

    /// Runs the selected transcripts over `connector` with the filter and timeout given and
    /// the phux-rs profile (every rule): what our own tests ask of our server.
    pub fn run(
        &self,
        connector: &dyn Connector,
        filter: Option<&str>,
        timeout: Duration,
    ) -> Result<Vec<CaseReport>, String> {
        let mut options = RunOptions::new(Profile::PhuxRs, timeout);
        options.filters.extend(filter.map(str::to_owned));
        self.run_with(connector, &options, &mut |_| {})
    }

    /// Runs the selected transcripts over `connector`, one after another, handing each
    /// report to `on_case` as it is decided.
    pub fn run_with(
        &self,
        connector: &dyn Connector,
        options: &RunOptions,
        on_case: &mut dyn FnMut(&CaseReport),
    ) -> Result<Vec<CaseReport>, String> {
        let mut runner = Runner {
            connector,
            templates: self.templates.clone(),
            spec: &self.spec,
            matrix: &self.matrix,
            timeout: options.timeout,
            expectations: &self.expectations,
            server: ServerInfo::default(),
            profile: options.profile,
        };
        runner
            .discover()
            .map_err(|e| format!("first handshake with the server failed: {e}"))?;
        let mut reports = Vec::new();
        // The last case that ran, and, once the server stopped completing handshakes, why.
        let mut last_run: Option<&str> = None;
        let mut stopped: Option<String> = None;
        for t in self.select(&options.filters) {
            let ours = self.ours_cited(t);
            let mut report = if let Some(why) = &stopped {
                runner.not_run(t, why.clone())
            } else if options.profile == Profile::Phux && !ours.is_empty() {
                runner.skipped(
                    t,
                    format!("checks rules of phux-rs only: {}", ours.join(" ")),
                )
            } else {
                runner.run(t)
            };
            if stopped.is_none() && ran_and_did_not_pass(&report) {
                // A case that failed may have been failed by a server that no longer answers
                // anyone: ask it for a handshake on a connection of its own.
                if let Err(e) = runner.handshake() {
                    // A case that never got past its setup, or never heard from the server,
                    // met a server that was gone before it began; one that did may have
                    // ended it, and keeps its outcome.
                    let gone_before = setup_failed(&report) || !report.heard_from_server;
                    let after = if gone_before {
                        last_run.map_or_else(|| "the first handshake".to_owned(), str::to_owned)
                    } else {
                        report.id.clone()
                    };
                    let why = format!(
                        "the server stopped completing handshakes after case {after} ({e}); \
                         the cases from here on were not run"
                    );
                    if gone_before {
                        report.outcome = Outcome::NotRun(why.clone());
                    }
                    stopped = Some(why);
                }
            }
            if !matches!(
                report.outcome,
                Outcome::Skipped(_) | Outcome::Disabled(_) | Outcome::NotRun(_)
            ) {
                last_run = Some(&t.id);
            }
            on_case(&report);
            let stop = options.fail_fast && report.outcome.is_failure();
            reports.push(report);
            if stop {
                break;
            }
        }
        Ok(reports)
    }
}

/// Whether a case ran and ended in anything but a PASS (a KNOWN failure included).
fn ran_and_did_not_pass(report: &CaseReport) -> bool {
    matches!(
        report.outcome,
        Outcome::Fail | Outcome::NonStrict | Outcome::Error(_) | Outcome::Known(_)
    )
}

/// Whether a case failed at a step that checks no clause (its setup), or before any step.
fn setup_failed(report: &CaseReport) -> bool {
    report.failure.as_ref().is_none_or(|f| f.clauses.is_empty())
}

fn selects(filter: &str, t: &Transcript) -> bool {
    t.id.starts_with(filter)
        || t.clauses.iter().any(|c| c.starts_with(filter))
        || t.steps
            .iter()
            .any(|s| s.clauses.iter().any(|c| c.starts_with(filter)))
}
