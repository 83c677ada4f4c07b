//! `--check-adopt`'s reading of an image ([SERVER.UPGRADE.EXEC.12]): every check an adoption
//! makes, without building what an adoption builds. The engine's half is read one connection
//! and one terminal at a time with the real types and checked as `ServerEngine::from_state`
//! checks it ([`phux_core::upgrade::summarize_parts`]), keeping only ids, pids and counts; the
//! host's half is read and checked against that summary. So the trial child of an upgrade
//! holds about one terminal's state and the host's half without its byte strings (the
//! connections' unwritten bytes and the shared frame heads are read for their lengths only),
//! not a second copy of the whole state beside the mapped image ([SERVER.UPGRADE.EXEC.13]).

use std::os::fd::RawFd;

use phux_core::server::StateError;
use phux_core::upgrade::{SummaryError, summarize_parts};

use super::handover::{AdoptError, ws_policy};
use crate::upgrade::{HostImage, Length, Summary};

/// The verdict [`super::validate`] gives `bytes`, and the same summary, read as a stream.
pub fn check_image(bytes: &[u8], reserved: &[RawFd]) -> Result<Summary, AdoptError> {
    let parts = summarize_parts(bytes).map_err(|e| match e {
        SummaryError::State(e) => AdoptError(format!("cannot rebuild the engine: {e}")),
        other => AdoptError(format!("cannot read the state: {other}")),
    })?;
    let image = HostImage::<Length>::decode(parts.version, parts.host)
        .map_err(|e| AdoptError(format!("cannot read the state: {e}")))?;
    image
        .check(&parts.engine, reserved)
        .map_err(|e| AdoptError(format!("cannot read the state: {e}")))?;
    ws_policy(&image)?;
    // As `from_state`: the incarnation must not change.
    if image.launch.server_id != parts.engine.config().server_id {
        return Err(AdoptError(format!(
            "cannot rebuild the engine: {}",
            StateError::ServerIdChanged
        )));
    }
    Ok(Summary {
        bytes: bytes.len() as u64,
        terminals: parts.engine.terminals().count(),
        connections: parts.engine.connections().count(),
        ledger: parts.engine.ledger_len(),
    })
}
