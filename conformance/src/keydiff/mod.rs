//! `keydiff`: our server's key encoder against the phux reference's (libghostty's), compared by
//! what a raw-mode program inside each terminal reads.
//!
//! A campaign is a sequence of *rounds*. Each round draws keyboard modes ([`ProgramModes`]:
//! DECCKM, DECKPAM, modifyOtherKeys, kitty flags, bracketed paste, DECBKM, LNM), spawns the
//! probe child on both servers, has it set those modes by writing them to its terminal, and
//! sends both the same APPLY_INPUT batches of generated key events ([`Generator`]). After
//! every key the batch carries a trusted paste of a numbered marker (`U+E000 n U+E001`: private
//! use code points no generated key types), so the bytes the probe reads split back into one
//! segment per key. A key whose two segments differ is either a *decided difference*, a row of
//! `conformance/keydiff-decided.toml` (each citing xterm's ctlseqs or source, the kitty keyboard
//! protocol, or phux's own text, with an example), or *undecided*: a finding, to fix in our
//! encoder or to decide and add to the table with its evidence.
//!
//! Every draw comes from the campaign's seed, so a finding replays from `--seed` alone.

mod decided;
mod events;
mod lane;
mod modes;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;

use phux_proto::command::MAX_APPLY_INPUT_EVENTS;
use phux_proto::input::{InputEvent, KeyEvent, PasteEvent, PasteTrust};

pub use decided::{Case, DecidedTable, Decision, classify};
pub use events::{Drawn, Generator, Layout};
pub use modes::ProgramModes;

use crate::peer::{PeerError, Server, reference_binary};
use lane::{Lane, find};

/// Why a campaign could not run (not a difference: those are in the [`Report`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeydiffError {
    /// Starting or talking to a server failed.
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// A server refused something the campaign needs.
    #[error("the {server} server refused {what}")]
    Refused {
        /// Which server.
        server: &'static str,
        /// What it refused, and its answer.
        what: String,
    },
    /// Something did not come in time.
    #[error("the {server} server: no {what}")]
    Stuck {
        /// Which server.
        server: &'static str,
        /// What was awaited.
        what: String,
    },
    /// The decided-differences table does not parse.
    #[error("{0}")]
    Table(String),
}

/// How a campaign runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The seed every draw comes from.
    pub seed: u64,
    /// How many key events in all.
    pub events: u64,
    /// How many key events per round (per probe terminal, under one set of modes).
    pub per_round: u64,
    /// The probe child's argument vector (`phux-conformance probe`).
    pub probe: Vec<String>,
    /// How many undecided differences to describe in full in the report.
    pub show: usize,
    /// Describe every difference, decided (`decided <id>: …`) or not (`undecided: …`), here.
    pub dump: Option<PathBuf>,
}

/// Keys per APPLY_INPUT: each is followed by its marker, and the first batch of a round also
/// starts with marker 0.
const KEYS_PER_BATCH: usize = MAX_APPLY_INPUT_EVENTS / 2 - 1;

/// What a campaign found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Key events sent to both servers and compared.
    pub events: u64,
    /// Rounds (probe terminals per server).
    pub rounds: u64,
    /// Events whose bytes were the same on both.
    pub same: u64,
    /// Decided differences by table row id.
    pub decided: BTreeMap<&'static str, u64>,
    /// Undecided differences, counted by a coarse class, with the first few in full.
    pub undecided: BTreeMap<String, u64>,
    /// The first [`Config::show`] undecided differences, described.
    pub samples: Vec<String>,
    /// One example per decided row, described.
    pub decided_examples: BTreeMap<&'static str, String>,
    /// How long it took.
    pub elapsed: Duration,
}

impl Report {
    /// How many differences no row decides.
    pub fn undecided_total(&self) -> u64 {
        self.undecided.values().sum()
    }

    /// A human summary.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let decided: u64 = self.decided.values().sum();
        let _ = writeln!(
            out,
            "keydiff: {} events in {} rounds, {:.1}s: {} same, {} decided differences, {} undecided",
            self.events,
            self.rounds,
            self.elapsed.as_secs_f64(),
            self.same,
            decided,
            self.undecided_total()
        );
        for (id, n) in &self.decided {
            let _ = writeln!(out, "  decided {id}: {n}");
            if let Some(example) = self.decided_examples.get(id) {
                let _ = writeln!(out, "      e.g. {example}");
            }
        }
        for (class, n) in &self.undecided {
            let _ = writeln!(out, "  UNDECIDED {class}: {n}");
        }
        for s in &self.samples {
            let _ = writeln!(out, "  - {s}");
        }
        out
    }
}

/// Runs a campaign: ours against the reference. `progress` is called after each round.
pub fn run(
    ours: &Server,
    reference: &Server,
    config: &Config,
    progress: &mut dyn FnMut(&Report),
) -> Result<Report, KeydiffError> {
    // A rule without its row of evidence (or a row without a rule) fails before anything runs.
    DecidedTable::committed()?;
    let started = Instant::now();
    let mut report = Report::default();
    let mut dump = match &config.dump {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| KeydiffError::Table(format!("{}: {e}", path.display())))?,
        )),
        None => None,
    };
    let mut generator = Generator::new(config.seed);
    let mut clients = [ours.client()?, reference.client()?];
    let names = [ours.name(), reference.name()];
    while report.events < config.events {
        let n = config.per_round.min(config.events - report.events).max(1);
        let modes = ProgramModes::draw(generator.rng());
        let operations = u128::from(generator.rng().next_u64()) << 64;
        let drawn: Vec<Drawn> = (0..n).map(|_| generator.event()).collect();
        let mut lanes = Vec::with_capacity(2);
        for (client, name) in clients.into_iter().zip(names) {
            lanes.push(Lane::open(
                name,
                client,
                operations,
                &config.probe,
                &modes.sequence(),
            )?);
        }
        for (index, chunk) in drawn.chunks(KEYS_PER_BATCH).enumerate() {
            let first = index * KEYS_PER_BATCH;
            let batch = batch(first, chunk);
            let ids = lanes
                .iter_mut()
                .map(|lane| lane.send(batch.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            for (lane, id) in lanes.iter_mut().zip(ids) {
                lane.wait_ok(id)?;
            }
        }
        let last = marker(drawn.len());
        for lane in &mut lanes {
            lane.wait_payload(&last)?;
        }
        let segments = lanes
            .iter()
            .map(|lane| split(&lane.payload, drawn.len(), modes.bracketed_paste, lane.name))
            .collect::<Result<Vec<_>, _>>()?;
        for (i, d) in drawn.iter().enumerate() {
            let (a, b) = (&segments[0][i], &segments[1][i]);
            report.events += 1;
            if a == b {
                report.same += 1;
                continue;
            }
            let case = Case {
                event: &d.event,
                modes: &modes,
                ours: a,
                theirs: b,
            };
            let described = || describe(config.seed, report.rounds, i, d, modes, a, b);
            let decision = classify(&case);
            if let Some(out) = dump.as_mut() {
                use std::io::Write as _;
                let tag = match &decision {
                    Decision::Decided(id) => format!("decided {id}"),
                    Decision::Undecided(class) => format!("undecided {class}"),
                };
                let _ = writeln!(out, "{tag}: {}", described());
            }
            match decision {
                Decision::Decided(id) => {
                    *report.decided.entry(id).or_default() += 1;
                    report.decided_examples.entry(id).or_insert_with(described);
                }
                Decision::Undecided(class) => {
                    *report.undecided.entry(class).or_default() += 1;
                    if report.samples.len() < config.show {
                        report.samples.push(described());
                    }
                }
            }
        }
        clients = [lanes.remove(0).close()?, lanes.remove(0).close()?];
        report.rounds += 1;
        report.elapsed = started.elapsed();
        progress(&report);
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

/// `phux-conformance keydiff`'s arguments.
#[derive(Debug, Args)]
pub struct KeydiffArgs {
    /// The phux reference binary (default: `PHUX_REF_BIN`, else the interop peer beside the
    /// workspace).
    #[arg(long, value_name = "PATH")]
    pub reference: Option<PathBuf>,
    /// Our server binary (default: `phux-mio-server` beside this program).
    #[arg(long, value_name = "PATH")]
    pub ours: Option<PathBuf>,
    /// The campaign's seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Key events in all.
    #[arg(long, default_value_t = 100_000)]
    pub events: u64,
    /// Key events per round (per probe terminal, under one set of modes).
    #[arg(long, default_value_t = 2_000)]
    pub per_round: u64,
    /// Undecided differences to print in full.
    #[arg(long, default_value_t = 40)]
    pub show: usize,
    /// Write every difference, decided or not, one per line, to this file.
    #[arg(long, value_name = "FILE")]
    pub dump: Option<PathBuf>,
}

/// Runs `phux-conformance keydiff`: exit 0 when every difference is decided, 1 when some are
/// not, 2 when the campaign could not run.
pub fn cli(args: &KeydiffArgs) -> ExitCode {
    let exe = std::env::current_exe().ok();
    let Some(reference) = args.reference.clone().or_else(reference_binary) else {
        eprintln!("phux-conformance keydiff: {}", PeerError::NoReference);
        return ExitCode::from(2);
    };
    let Some(ours) = args.ours.clone().or_else(|| {
        exe.as_ref()
            .and_then(|e| e.parent())
            .map(|dir| dir.join("phux-mio-server"))
    }) else {
        eprintln!("phux-conformance keydiff: say which server is ours: --ours PATH");
        return ExitCode::from(2);
    };
    let Some(exe) = exe else {
        eprintln!("phux-conformance keydiff: cannot find this program to run its probe");
        return ExitCode::from(2);
    };
    let config = Config {
        seed: args.seed,
        events: args.events,
        per_round: args.per_round,
        probe: vec![exe.display().to_string(), "probe".to_owned()],
        show: args.show,
        dump: args.dump.clone(),
    };
    let outcome = (|| {
        let ours = Server::start_ours(&ours)?;
        let reference = Server::start_reference(&reference)?;
        let mut last_print = Instant::now();
        run(&ours, &reference, &config, &mut |r| {
            if last_print.elapsed() >= Duration::from_secs(10) {
                last_print = Instant::now();
                eprintln!(
                    "keydiff: {} events, {} rounds, {:.0}s, {} undecided",
                    r.events,
                    r.rounds,
                    r.elapsed.as_secs_f64(),
                    r.undecided_total()
                );
            }
        })
    })();
    match outcome {
        Ok(report) => {
            print!("{}", report.text());
            if report.undecided_total() == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("phux-conformance keydiff: {e}");
            ExitCode::from(2)
        }
    }
}

/// The marker that follows key `n` of a round (marker 0 precedes key 0).
fn marker(n: usize) -> Vec<u8> {
    format!("\u{e000}{n}\u{e001}").into_bytes()
}

fn marker_event(n: usize) -> InputEvent {
    InputEvent::Paste(PasteEvent {
        trust: PasteTrust::Trusted,
        data: marker(n),
    })
}

/// One APPLY_INPUT: each key followed by its marker, the round's first batch opened by marker 0.
fn batch(first: usize, keys: &[Drawn]) -> Vec<InputEvent> {
    let mut events = Vec::with_capacity(keys.len() * 2 + 1);
    if first == 0 {
        events.push(marker_event(0));
    }
    for (i, d) in keys.iter().enumerate() {
        events.push(InputEvent::Key(d.event.clone()));
        events.push(marker_event(first + i + 1));
    }
    events
}

/// Cuts what the probe read into the bytes of each of `keys` keys. Under bracketed paste each
/// marker arrives wrapped in `CSI 200~` … `CSI 201~`, which are not the key's.
fn split(
    payload: &[u8],
    keys: usize,
    bracketed: bool,
    server: &'static str,
) -> Result<Vec<Vec<u8>>, KeydiffError> {
    const OPEN: &[u8] = b"\x1b[200~";
    const CLOSE: &[u8] = b"\x1b[201~";
    let bad = |what: String| KeydiffError::Stuck {
        server,
        what: format!("a readable marker stream: {what}"),
    };
    let mut segments = Vec::with_capacity(keys);
    let m0 = marker(0);
    let mut at = find(payload, &m0).ok_or_else(|| bad("no marker 0".into()))? + m0.len();
    for n in 1..=keys {
        let m = marker(n);
        let start = find(&payload[at..], &m).ok_or_else(|| bad(format!("no marker {n}")))? + at;
        let mut segment = &payload[at..start];
        if bracketed {
            segment = segment
                .strip_prefix(CLOSE)
                .and_then(|s| s.strip_suffix(OPEN))
                .ok_or_else(|| bad(format!("marker {n} is not bracketed")))?;
        }
        segments.push(segment.to_vec());
        at = start + m.len();
    }
    Ok(segments)
}

fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "(nothing)".to_owned();
    }
    phux_proto::hex::to_hex_spaced(bytes)
}

/// A one-line description of a key for reports.
pub fn key_text(e: &KeyEvent) -> String {
    let mut s = format!("{:?} {} {}", e.action, e.key, e.mods.names());
    if e.consumed_mods.0 != 0 {
        let _ = write!(s, " consumed={}", e.consumed_mods.names());
    }
    if e.composing {
        s.push_str(" composing");
    }
    match &e.text {
        Some(t) => {
            let _ = write!(s, " text={t:?}");
        }
        None => s.push_str(" text=none"),
    }
    match e.unshifted_codepoint.and_then(char::from_u32) {
        Some(c) => {
            let _ = write!(s, " unshifted={c:?}");
        }
        None => s.push_str(" unshifted=none"),
    }
    s
}

fn describe(
    seed: u64,
    round: u64,
    index: usize,
    d: &Drawn,
    modes: ProgramModes,
    ours: &[u8],
    theirs: &[u8],
) -> String {
    format!(
        "seed {seed} round {round} key {index} [{modes}] layout {}: {}: ours {} | reference {}",
        d.layout.name(),
        key_text(&d.event),
        hex(ours),
        hex(theirs)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_cuts_between_markers_and_strips_brackets() {
        let mut plain = marker(0);
        plain.extend_from_slice(b"a");
        plain.extend(marker(1));
        plain.extend(marker(2));
        plain.extend_from_slice(b"\x1b[A");
        plain.extend(marker(3));
        assert_eq!(
            split(&plain, 3, false, "x").unwrap(),
            vec![b"a".to_vec(), vec![], b"\x1b[A".to_vec()]
        );
        let mut wrapped = b"\x1b[200~".to_vec();
        wrapped.extend(marker(0));
        wrapped.extend_from_slice(b"\x1b[201~q\x1b[200~");
        wrapped.extend(marker(1));
        wrapped.extend_from_slice(b"\x1b[201~");
        assert_eq!(split(&wrapped, 1, true, "x").unwrap(), vec![b"q".to_vec()]);
        assert!(split(&plain, 4, false, "x").is_err());
    }

    #[test]
    fn batches_fit_one_apply_input() {
        let mut g = Generator::new(3);
        let keys: Vec<Drawn> = (0..KEYS_PER_BATCH).map(|_| g.event()).collect();
        assert!(batch(0, &keys).len() <= MAX_APPLY_INPUT_EVENTS);
        assert_eq!(batch(5, &keys[..1]).len(), 2);
    }
}
