//! The suite as a whole: the transcripts, the prelude, the spec and the expectations file,
//! loaded from the repository, and a run of all (or a filtered part) of it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::pattern::Templates;
use crate::runner::{CaseReport, Runner, ServerInfo};
use crate::spec::Spec;
use crate::transcript::{self, Transcript};
use crate::transport::Connector;

/// Where the suite's files are.
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
        }
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
    /// Disabled cases and why.
    pub disabled: BTreeMap<String, String>,
}

/// Parses `expectations.txt`: `ID reason…` per line, `#` comments.
pub fn parse_expectations(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(|l| l.split_once('#').map_or(l, |(c, _)| c).trim())
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((id, why)) => (id.to_owned(), why.trim().to_owned()),
            None => (l.to_owned(), "no reason given".to_owned()),
        })
        .collect()
}

impl Suite {
    /// Loads the suite from `paths`.
    pub fn load(paths: &Paths) -> Result<Self, String> {
        let (prelude, transcripts) =
            transcript::load_dir(&paths.transcripts).map_err(|e| e.to_string())?;
        let mut templates = Templates::default();
        for (name, value) in prelude {
            templates.define(&name, value);
        }
        let spec = Spec::load(&paths.spec)?;
        let disabled = match std::fs::read_to_string(&paths.expectations) {
            Ok(text) => parse_expectations(&text),
            Err(_) => BTreeMap::new(),
        };
        Ok(Self {
            templates,
            transcripts,
            spec,
            disabled,
        })
    }

    /// The transcripts `filter` selects: an id prefix (`input/004`, `input`) or a clause id
    /// prefix (`INPUT.DEDUPE`) that the header or a step cites.
    pub fn select(&self, filter: Option<&str>) -> Vec<&Transcript> {
        self.transcripts
            .iter()
            .filter(|t| {
                filter.is_none_or(|f| {
                    t.id.starts_with(f)
                        || t.clauses.iter().any(|c| c.starts_with(f))
                        || t.steps
                            .iter()
                            .any(|s| s.clauses.iter().any(|c| c.starts_with(f)))
                })
            })
            .collect()
    }

    /// Runs the selected transcripts over `connector`, one after another.
    pub fn run(
        &self,
        connector: &dyn Connector,
        filter: Option<&str>,
        timeout: Duration,
    ) -> Result<Vec<CaseReport>, String> {
        let mut runner = Runner {
            connector,
            templates: self.templates.clone(),
            spec: &self.spec,
            timeout,
            disabled: self.disabled.clone(),
            server: ServerInfo::default(),
        };
        runner
            .discover()
            .map_err(|e| format!("first handshake with the server failed: {e}"))?;
        Ok(self
            .select(filter)
            .into_iter()
            .map(|t| runner.run(t))
            .collect())
    }
}
