//! Read-only views: GET_STATE's snapshot and GET_TERMINAL_STATE's document.

use phux_proto::command::{CommandResult, CommandValue, SessionSnapshot, TerminalInfo};
use phux_proto::event::Lifecycle;
use phux_proto::framing::MAX_FRAME_LEN;
use phux_proto::{ErrorCode, TerminalId};
use phux_term::{CellsTooLarge, ScreenLimits};

use super::{ConnId, LocalTerminal, ServerEngine, Terminal};
use crate::time::Instant;

/// The most JSON bytes a reply's `cells` array may take ([SCREEN.LIMIT.2]): a fully styled
/// screen of some 16,000 cells, far more than a person reads; with the largest viewport
/// (about 10 MB of text at 1024x512 and 18 bytes a cell) and a history page of at most 1 MiB
/// the reply stays under the 16 MiB frame cap.
pub(super) const MAX_CELLS_JSON: usize = 4 * 1024 * 1024;

/// The largest JSON text a COMMAND_RESULT frame carries: the frame cap less the frame's
/// header, request id and result envelope (well under 64 bytes).
pub(super) const MAX_REPLY_JSON: usize = MAX_FRAME_LEN as usize - 64;

impl ServerEngine {
    pub(super) fn snapshot(&self) -> SessionSnapshot {
        // [TERMINAL.REMAIN.2] Exited terminals kept for their screen are listed, in id order
        // with the others.
        let mut listed: Vec<&Terminal> = self
            .terminals
            .values()
            .chain(self.remains.terminals())
            .filter(|t| t.pid().is_some())
            .collect();
        listed.sort_by_key(|t| t.id());
        // [SCREEN.SERVER.1] L1 only: no sessions or windows, every terminal (R21).
        SessionSnapshot {
            sessions: Vec::new(),
            windows: Vec::new(),
            terminals: listed
                .into_iter()
                .map(|t| {
                    let (cols, rows) = t.state().size();
                    TerminalInfo {
                        terminal: TerminalId::from(t.id()),
                        window_id: 0,
                        cols,
                        rows,
                        title: t.state().title().map(str::to_owned),
                        cwd: None,
                    }
                })
                .collect(),
            focused_session: 0,
            focused_window: 0,
            focused_pane: TerminalId::Local(0),
        }
    }

    /// What one reply to `id` may hold: its history within the connection's negotiated
    /// history page, its cells within [`MAX_CELLS_JSON`].
    fn screen_limits(&self, id: ConnId) -> ScreenLimits {
        ScreenLimits {
            // [SCREEN.LIMIT.1] History in a reply is bounded by the negotiated page.
            scrollback_bytes: self
                .conns
                .get(&id)
                .map_or(0, |c| c.max_history_page().get() as usize),
            cells_bytes: MAX_CELLS_JSON,
        }
    }

    pub(super) fn cmd_get_screen(
        &mut self,
        id: ConnId,
        rid: u32,
        t: LocalTerminal,
        request_scrollback: Option<u32>,
        cells: bool,
    ) {
        let limits = self.screen_limits(id);
        let Some(term) = self.view(t) else {
            return;
        };
        match term
            .state()
            .screen_json_within(t.0, request_scrollback, cells, limits)
        {
            Ok(json) => self.send_json_result(id, rid, json),
            // [SCREEN.LIMIT.2] Cells that do not fit are refused, typed, never cut short.
            Err(CellsTooLarge) => self.send_error_result(
                id,
                rid,
                ErrorCode::RESOURCE_EXHAUSTED,
                "the screen's styled cells exceed the reply limit; ask without cells",
            ),
        }
    }

    /// `OK_WITH(JSON)`, or RESOURCE_EXHAUSTED when the document cannot fit one frame.
    pub(super) fn send_json_result(&mut self, id: ConnId, rid: u32, json: String) {
        if json.len() > MAX_REPLY_JSON {
            // [SCREEN.LIMIT.3] No reply frame is ever over the frame cap.
            self.send_error_result(
                id,
                rid,
                ErrorCode::RESOURCE_EXHAUSTED,
                "the reply exceeds the frame limit",
            );
        } else {
            self.send_result(id, rid, CommandResult::OkWith(CommandValue::Json(json)));
        }
    }

    pub(super) fn terminal_state_json(
        &self,
        now: Instant,
        id: ConnId,
        t: LocalTerminal,
        scrollback: Option<u32>,
    ) -> Option<String> {
        let term = self.view(t)?;
        let tid = TerminalId::from(t);
        let page = self.screen_limits(id).scrollback_bytes;
        let mut value = term.state().screen_value_within(t.0, scrollback, page);
        let modes = term.modes();
        let lifecycle = match term.lifecycle() {
            Lifecycle::Running => "running",
            Lifecycle::Frozen => "frozen",
            Lifecycle::Exited => "exited",
        };
        let lease_ms = self.leases.expires_at(&tid).map(|at| {
            u64::try_from(at.saturating_duration_since(now).as_millis()).unwrap_or(u64::MAX)
        });
        if let Some(obj) = value.as_object_mut() {
            // [SCREEN.STATE.1] GET_TERMINAL_STATE = ScreenState plus lifecycle, lease and modes (R20).
            obj.insert("lifecycle".into(), lifecycle.into());
            obj.insert("exit_status".into(), term.exit_status().into());
            obj.insert(
                "input_holder".into(),
                self.leases.holder(&tid).map(|c| c.0).into(),
            );
            obj.insert("lease_expires_ms".into(), lease_ms.into());
            obj.insert("pid".into(), term.pid().into());
            obj.insert("canonical".into(), term.canonical().into());
            obj.insert("modes".into(), modes_json(&modes));
            // [SCREEN.STATE.6] The clients attached to it, as `tmux list-clients` shows them.
            let viewers: Vec<serde_json::Value> = term
                .viewers_paused()
                .filter_map(|(conn, paused)| {
                    let c = self.conns.get(&conn)?;
                    // [SCREEN.STATE.7] Each with the screen size it declared, if it did.
                    let viewport = c
                        .viewport()
                        .map(|(cols, rows)| serde_json::json!({"cols": cols, "rows": rows}));
                    Some(serde_json::json!({
                        "client": c.client().0,
                        "local_socket": c.peer().local_socket,
                        "behind": paused,
                        "viewport": viewport,
                    }))
                })
                .collect();
            obj.insert("attached_clients".into(), viewers.into());
            // [SCREEN.STATE.7] The size policy this server applies ([SERVER.SIZE.1]).
            obj.insert("size_policy".into(), "smallest".into());
        }
        Some(value.to_string())
    }
}

fn modes_json(modes: &crate::modes::TerminalModes) -> serde_json::Value {
    use crate::modes::{MouseEncoding, MouseTracking};
    let tracking = match modes.mouse_tracking {
        MouseTracking::Off => "off",
        MouseTracking::X10 => "x10",
        MouseTracking::Normal => "normal",
        MouseTracking::ButtonEvent => "button_event",
        MouseTracking::AnyEvent => "any_event",
    };
    let encoding = match modes.mouse_encoding {
        MouseEncoding::X10 => "x10",
        MouseEncoding::Utf8 => "utf8",
        MouseEncoding::Sgr => "sgr",
        MouseEncoding::Urxvt => "urxvt",
        MouseEncoding::SgrPixels => "sgr_pixels",
    };
    serde_json::json!({
        "application_cursor_keys": modes.application_cursor_keys,
        "application_keypad": modes.application_keypad,
        "backarrow_sends_backspace": modes.backarrow_sends_backspace,
        "line_feed_mode": modes.line_feed_mode,
        "bracketed_paste": modes.bracketed_paste,
        "focus_reporting": modes.focus_reporting,
        "mouse_tracking": tracking,
        "mouse_encoding": encoding,
        "kitty_flags": modes.kitty_flags.0,
        "alternate_screen": modes.alternate_screen,
    })
}
