//! Coverage of the spec by the transcripts, and clause ids cited in the repository's code.

use std::collections::BTreeSet;
use std::path::Path;

use phux_conformance::coverage::{Coverage, cited_in_source, parse_exemptions};
use phux_conformance::matrix::Status;
use phux_conformance::suite::{Paths, Suite};
use phux_conformance::transcript::Level;

use crate::workspace::{root, rust_files};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn uncovered_list(paths: &Paths) -> BTreeSet<String> {
    let path = paths.not_wire_checkable.with_file_name("uncovered.txt");
    read(&path)
        .lines()
        .map(|l| l.split_once('#').map_or(l, |(c, _)| c).trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_wire_checkable_must_clause_is_cited_by_a_transcript_step() {
    let paths = Paths::default();
    let suite = Suite::load(&paths).unwrap();
    let exemptions = parse_exemptions(&read(&paths.not_wire_checkable)).unwrap();
    let cov = Coverage::new(&suite.spec, &suite.transcripts, &exemptions);
    assert!(
        cov.unknown_exemptions.is_empty(),
        "not-wire-checkable.txt names clauses the spec lacks: {:?}",
        cov.unknown_exemptions
    );
    assert!(
        cov.unknown_citations.is_empty(),
        "transcript steps cite clauses the spec lacks: {:?}",
        cov.unknown_citations
    );
    // A MUST clause is cited, or exempt with a reason, or listed as still to do.
    let todo = uncovered_list(&paths);
    let uncovered: BTreeSet<String> = cov.uncovered_must().iter().map(|r| r.id.clone()).collect();
    let missing: Vec<&String> = uncovered.difference(&todo).collect();
    assert!(
        missing.is_empty(),
        "MUST clauses with no transcript step citing them: {missing:?}\n{}",
        cov.table()
    );
    let done: Vec<&String> = todo.difference(&uncovered).collect();
    assert!(
        done.is_empty(),
        "uncovered.txt lists clauses that are now cited or exempt (delete them): {done:?}"
    );
    // Exemptions are for MUST clauses that are truly off the wire, not for cited ones.
    for e in &exemptions {
        let row = cov.rows.iter().find(|r| r.id == e.id).unwrap();
        assert_eq!(
            row.level,
            Level::Must,
            "{} is exempt but not a MUST clause",
            e.id
        );
        assert!(
            row.transcripts.is_empty(),
            "{} is exempt but cited by {:?}",
            e.id,
            row.transcripts
        );
    }
}

#[test]
fn every_clause_cited_in_the_code_exists_in_the_spec() {
    let paths = Paths::default();
    let suite = Suite::load(&paths).unwrap();
    let root = root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 20, "found only {} .rs files", files.len());
    // Citations that predate this check, listed so that no new one slips in; each line is
    // `path-from-the-repository-root [ID]` and should go once its code cites a real clause.
    let known: BTreeSet<String> = read(
        &paths
            .not_wire_checkable
            .with_file_name("stale-citations.txt"),
    )
    .lines()
    .map(|l| l.split_once('#').map_or(l, |(c, _)| c).trim().to_owned())
    .filter(|l| !l.is_empty())
    .collect();
    let mut found = BTreeSet::new();
    for file in files {
        let rel = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for id in cited_in_source(&read(&file)) {
            if !suite.spec.clauses.contains_key(&id) {
                found.insert(format!("{rel} [{id}]"));
            }
        }
    }
    let new: Vec<&String> = found.difference(&known).collect();
    let fixed: Vec<&String> = known.difference(&found).collect();
    assert!(
        new.is_empty(),
        "cited clause ids not in spec/ (fix the citation or add the clause):\n{}",
        new.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        fixed.is_empty(),
        "stale-citations.txt lists fixed citations (delete them): {fixed:?}"
    );
    if !found.is_empty() {
        eprintln!(
            "{} known stale citations remain (stale-citations.txt)",
            found.len()
        );
    }
}

#[test]
fn coverage_table_lists_every_clause() {
    let paths = Paths::default();
    let suite = Suite::load(&paths).unwrap();
    let exemptions = parse_exemptions(&read(&paths.not_wire_checkable)).unwrap();
    let cov = Coverage::new(&suite.spec, &suite.transcripts, &exemptions);
    let table = cov.table();
    for id in suite.spec.clauses.keys() {
        assert!(table.contains(id.as_str()), "{id} missing from the table");
    }
    assert!(table.contains("handshake/002"));
}

/// Every clause says whose rule it is: ours by an `> Ours …` / `> Beyond phux:` note, phux's by
/// phux's own text, cited by a `> phux:` note or by a row of the requirements matrix
/// (`phux-requirements.toml`). `phux-uncited.txt` lists phux clauses citing neither, and stays
/// empty: a new clause of phux needs its sentence traced before it lands.
#[test]
fn every_phux_clause_cites_phux_text() {
    let paths = Paths::default();
    let suite = Suite::load(&paths).unwrap();
    let listed: BTreeSet<String> =
        read(&paths.not_wire_checkable.with_file_name("phux-uncited.txt"))
            .lines()
            .map(|l| l.split_once('#').map_or(l, |(c, _)| c).trim())
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
    assert!(
        listed.is_empty(),
        "phux-uncited.txt must stay empty (trace the clause in phux-requirements.toml): {listed:?}"
    );
    let uncited: Vec<&str> = suite.uncited_phux().iter().map(|c| c.id.as_str()).collect();
    assert!(
        uncited.is_empty(),
        "clauses of phux citing no phux text: add a row to conformance/phux-requirements.toml \
         that traces phux's sentence to them (or a `> phux:` note), or mark one of ours with \
         `> Ours:` / `> Ours (Rn):` / `> Beyond phux:`: {uncited:?}"
    );
}

/// The requirements matrix: every row's clauses exist, every sentence is traced to clauses or
/// a reason (checked as it is read), every sentence no case checks names a reason, and the published table is the one the matrix generates
/// today (`PHUX_BLESS=1` rewrites it).
#[test]
fn the_requirements_matrix_is_consistent_and_published() {
    let paths = Paths::default();
    let suite = Suite::load(&paths).unwrap();
    let report = suite.matrix_report();
    assert!(
        report.unknown_clauses.is_empty(),
        "phux-requirements.toml names clauses the spec lacks: {:?}",
        report.unknown_clauses
    );
    // [37] Every sentence no case checks says why: a row whose clauses no case cites names a
    // reason, and a reason is dropped once a case under profile phux checks the row.
    let unexplained: Vec<&str> = report
        .matrix
        .rows
        .iter()
        .zip(&report.status)
        .filter(|(_, s)| **s == Status::ClausesOnly)
        .map(|(r, _)| r.id.as_str())
        .collect();
    assert!(
        unexplained.is_empty(),
        "rows whose clauses no case checks, with no reason: {unexplained:?}"
    );
    let stale: Vec<&str> = report
        .matrix
        .rows
        .iter()
        .zip(&report.status)
        .filter(|(r, s)| {
            r.reason.is_some() && !r.clauses.is_empty() && matches!(s, Status::Phux(_))
        })
        .map(|(r, _)| r.id.as_str())
        .collect();
    assert!(
        stale.is_empty(),
        "rows checked under profile phux that still give a reason: {stale:?}"
    );
    let (normative, checked) = report.figures();
    assert!(normative >= 150, "only {normative} normative sentences");
    assert!(checked > 0);
    let published = paths.matrix.with_file_name("PHUX-REQUIREMENTS.md");
    let now = report.markdown();
    if std::env::var_os("PHUX_BLESS").is_some() {
        std::fs::write(&published, &now).unwrap();
    }
    assert!(
        read(&published) == now,
        "conformance/PHUX-REQUIREMENTS.md is stale: regenerate it with \
         `PHUX_BLESS=1 cargo test -p phux-conformance --test it coverage` \
         (or `phux-conformance matrix --markdown`)"
    );
}
