//! UPGRADE: the engine's side of an in-place upgrade, from the request to its end (the image
//! itself is [`crate::upgrade`]'s). While one is pending no new write job reaches a PTY
//! (queued input waits, as behind a busy writer), so the driver can wait for the jobs in
//! progress to finish ([`ServerEngine::upgrade_quiet`]) and export the state.

use phux_proto::command::CommandResult;
use phux_proto::{ErrorCode, TerminalId};

use super::terminal::Terminal;
use super::{ConnId, ServerAction, ServerEngine};
use crate::time::Instant;

/// The longest binary path UPGRADE may name (Linux's `PATH_MAX`).
pub const MAX_UPGRADE_BINARY_LEN: usize = 4096;

/// An upgrade asked for and not yet done or failed.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct PendingUpgrade {
    /// The connection and request id owed the answer; `None` for a signal.
    pub(super) requester: Option<(ConnId, u32)>,
}

impl ServerEngine {
    /// Whether an upgrade is pending: asked for, and neither done nor failed yet.
    pub fn is_upgrading(&self) -> bool {
        self.upgrade.is_some()
    }

    /// Whether no write job is in progress in any terminal: every job handed to the driver
    /// has been reported done. While an upgrade is pending this only ever becomes true; the
    /// driver exports once it is.
    pub fn upgrade_quiet(&self) -> bool {
        // [SERVER.UPGRADE.3] Quiet = no job the driver holds; held jobs are the engine's.
        self.terminals.values().all(Terminal::is_quiet)
    }

    pub(super) fn cmd_upgrade(&mut self, id: ConnId, rid: u32, binary: Option<String>) {
        let local = self
            .conns
            .get(&id)
            .is_some_and(super::connection::Connection::is_local);
        if !local {
            // [SERVER.UPGRADE.2] Like SHUTDOWN, accepted on the local socket only.
            return self.send_error_result(
                id,
                rid,
                ErrorCode::PERMISSION_DENIED,
                "UPGRADE is accepted on the local socket only",
            );
        }
        if binary
            .as_ref()
            .is_some_and(|b| b.is_empty() || b.len() > MAX_UPGRADE_BINARY_LEN)
        {
            // [SERVER.UPGRADE.1] The binary's path is 1..=4096 bytes.
            return self.send_error_result(
                id,
                rid,
                ErrorCode::INVALID_COMMAND,
                "UPGRADE's binary path must be 1..=4096 bytes",
            );
        }
        if self.upgrade.is_some() {
            // [SERVER.UPGRADE.4] One upgrade at a time: the second is refused, the first goes on.
            return self.send_error_result(
                id,
                rid,
                ErrorCode::RESOURCE_EXHAUSTED,
                "an upgrade is already in progress",
            );
        }
        self.begin_upgrade(Some((id, rid)), binary);
    }

    /// [SERVER.UPGRADE.3] Enters the upgrading mode and asks the driver to upgrade.
    pub(super) fn begin_upgrade(
        &mut self,
        requester: Option<(ConnId, u32)>,
        binary: Option<String>,
    ) {
        // A server shutting down has told every client so: it does not come back as another
        // image (no connection is open to ask, so only a signal gets here).
        if self.upgrade.is_some() || self.shutting_down {
            return;
        }
        self.upgrade = Some(PendingUpgrade { requester });
        self.actions.push_back(ServerAction::Upgrade { binary });
    }

    /// The driver could not upgrade: the requester hears why, and writing resumes.
    pub(super) fn on_upgrade_failed(&mut self, now: Instant, reason: &str) {
        let Some(upgrade) = self.upgrade.take() else {
            return;
        };
        if let Some((conn, rid)) = upgrade.requester {
            // [SERVER.UPGRADE.5] INTERNAL_ERROR: the server failed to do what it was asked,
            // not the request; the old image keeps serving and the client may ask again.
            self.send_error_result(
                conn,
                rid,
                ErrorCode::INTERNAL_ERROR,
                format!("upgrade failed: {reason}"),
            );
        }
        self.release_held_jobs(now);
    }

    /// The new image adopted the state: the requester hears OK from it, and writing resumes.
    pub(super) fn on_upgrade_done(&mut self, now: Instant) {
        let Some(upgrade) = self.upgrade.take() else {
            return;
        };
        if let Some((conn, rid)) = upgrade.requester {
            // [SERVER.UPGRADE.6] OK comes from the new image, so it proves the new image serves.
            self.send_result(conn, rid, CommandResult::Ok);
        }
        self.release_held_jobs(now);
    }

    /// Hands every job held during the upgrade to the driver, in queue order per terminal; an
    /// acknowledged one's completion bound starts now ([INPUT.LANE.3]).
    fn release_held_jobs(&mut self, now: Instant) {
        for (&terminal, term) in &mut self.terminals {
            for (job, bytes, acknowledged) in term.release_held() {
                if acknowledged {
                    let _ = self.lane.handed_off(now, &TerminalId::from(terminal));
                }
                self.actions.push_back(ServerAction::Write {
                    terminal,
                    job,
                    bytes,
                });
            }
        }
    }
}
