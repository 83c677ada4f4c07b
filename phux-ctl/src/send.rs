//! `send` and `paste`: input submitted through the outbox, waited for, and its verdict
//! printed.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant as StdInstant};

use phux_core::client::outbox::Input;
use phux_proto::TerminalId;
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};

use crate::cli::{PasteArgs, SendArgs, SendPart};
use crate::conn::Session;
use crate::error::CtlError;
use crate::report;

/// `send`: the text and keys in the order given, as one acknowledged batch.
pub(crate) fn send(
    session: &mut Session,
    id: TerminalId,
    args: &SendArgs,
    wait: Duration,
) -> Result<u8, CtlError> {
    let events = args
        .ordered_parts()
        .into_iter()
        .filter(|part| !matches!(part, SendPart::Text(t) if t.is_empty()))
        .map(|part| match part {
            SendPart::Text(text) => InputEvent::Paste(PasteEvent {
                trust: PasteTrust::Trusted,
                data: pasteable(text.into_bytes(), args.verbatim),
            }),
            SendPart::Key(key) => InputEvent::Key(key.0),
        })
        .collect();
    deliver(session, id, Input::Events(events), wait, args.json)
}

/// `paste`: `data` (read by [`read_paste`] before connecting) as a paste.
pub(crate) fn paste(
    session: &mut Session,
    id: TerminalId,
    args: &PasteArgs,
    data: Vec<u8>,
    wait: Duration,
) -> Result<u8, CtlError> {
    let trust = if args.untrusted {
        PasteTrust::Untrusted
    } else {
        PasteTrust::Trusted
    };
    let data = pasteable(data, args.verbatim);
    deliver(session, id, Input::Paste { data, trust }, wait, args.json)
}

/// Text as `send` and `paste` type it: made safe to paste ([CLIENT.PASTE.4]), or exactly as
/// given when the user asked for `--verbatim` ([CLIENT.PASTE.5]).
fn pasteable(mut data: Vec<u8>, verbatim: bool) -> Vec<u8> {
    if !verbatim {
        // [CLIENT.PASTE.4] Whatever server answers and whatever the program's modes, nothing
        // in it can end or restart a bracketed paste, edit the line or signal the program.
        phux_core::encoder::neutralize_paste(&mut data);
    }
    data
}

/// Submits input through the outbox, waits for every operation, prints every part's verdict
/// ([CLIENT.SUBMIT.3]).
fn deliver(
    session: &mut Session,
    terminal: TerminalId,
    input: Input,
    wait: Duration,
    json: bool,
) -> Result<u8, CtlError> {
    let ops = session.submit(terminal, input)?;
    let outcomes = session.wait_resolved(&ops, StdInstant::now() + wait)?;
    let parts = report::PartOutcome::collect(&ops, outcomes);
    Ok(report::print(&parts, json, &mut std::io::stdout().lock()))
}

/// Stdin beyond the ceiling is counted up to this, to report a paste's real size without
/// reading an endless stream forever.
const PASTE_COUNT_LIMIT: u64 = 1 << 30;

pub(crate) fn read_paste(file: Option<&PathBuf>) -> Result<Vec<u8>, CtlError> {
    let ceiling = phux_core::client::outbox::DEFAULT_CEILING as u64;
    let mut data = Vec::new();
    let size = if let Some(path) = file {
        let what = |e: std::io::Error| {
            CtlError::Local(format!("cannot read --file {}: {e}", path.display()))
        };
        let mut f = std::fs::File::open(path).map_err(what)?;
        let meta = f.metadata().map_err(what)?;
        if meta.is_dir() {
            return Err(CtlError::Local(format!(
                "--file {} is a directory",
                path.display()
            )));
        }
        (&mut f)
            .take(ceiling + 1)
            .read_to_end(&mut data)
            .map_err(what)?;
        // A regular file's length is its size; anything else is counted.
        if meta.is_file() {
            meta.len().max(data.len() as u64)
        } else {
            data.len() as u64 + count_rest(&mut f)
        }
    } else {
        let mut stdin = std::io::stdin().lock();
        (&mut stdin)
            .take(ceiling + 1)
            .read_to_end(&mut data)
            .map_err(|e| CtlError::Local(format!("reading the paste from stdin: {e}")))?;
        data.len() as u64 + count_rest(&mut stdin)
    };
    if data.is_empty() {
        // An empty paste is bad usage, as `send` with nothing to send is (exit 2).
        return Err(CtlError::Usage(match file {
            Some(path) => format!("--file {} is empty: nothing to paste", path.display()),
            None => "stdin gave nothing: nothing to paste".to_owned(),
        }));
    }
    if size > ceiling {
        let size = if size >= PASTE_COUNT_LIMIT {
            format!("more than {PASTE_COUNT_LIMIT} bytes")
        } else {
            format!("{size} bytes")
        };
        return Err(CtlError::Input(format!(
            "the paste is {size}; phuxctl pastes at most {ceiling} bytes (1 MiB) per run \
             (split it, e.g. with split -b 1M)"
        )));
    }
    Ok(data)
}

/// How many bytes are left in `reader` (up to [`PASTE_COUNT_LIMIT`]), read and dropped.
fn count_rest(reader: &mut impl Read) -> u64 {
    std::io::copy(&mut reader.take(PASTE_COUNT_LIMIT), &mut std::io::sink()).unwrap_or(0)
}
