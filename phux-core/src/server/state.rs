//! Read-only views: GET_STATE's snapshot and GET_TERMINAL_STATE's document.

use phux_proto::TerminalId;
use phux_proto::command::{SessionSnapshot, TerminalInfo};
use phux_proto::event::Lifecycle;

use super::{LocalTerminal, ServerEngine};
use crate::time::Instant;

impl ServerEngine {
    pub(super) fn snapshot(&self) -> SessionSnapshot {
        // [SCREEN.SERVER.1] L1 only: no sessions or windows, every terminal (R21).
        SessionSnapshot {
            sessions: Vec::new(),
            windows: Vec::new(),
            terminals: self
                .terminals
                .values()
                .filter(|t| t.pid.is_some())
                .map(|t| {
                    let (cols, rows) = t.state.size();
                    TerminalInfo {
                        terminal: TerminalId::from(t.id),
                        window_id: 0,
                        cols,
                        rows,
                        title: t.state.title().map(str::to_owned),
                        cwd: None,
                    }
                })
                .collect(),
            focused_session: 0,
            focused_window: 0,
            focused_pane: TerminalId::Local(0),
        }
    }

    pub(super) fn terminal_state_json(
        &self,
        now: Instant,
        t: LocalTerminal,
        scrollback: Option<u32>,
    ) -> Option<String> {
        let term = self.terminals.get(&t)?;
        let tid = TerminalId::from(t);
        let mut value = term.state.screen_value(t.0, scrollback, false);
        let modes = term.state.modes();
        let lifecycle = match term.lifecycle {
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
            obj.insert("exit_status".into(), term.exit_status.into());
            obj.insert(
                "input_holder".into(),
                self.leases.holder(&tid).map(|c| c.0).into(),
            );
            obj.insert("lease_expires_ms".into(), lease_ms.into());
            obj.insert("pid".into(), term.pid.into());
            obj.insert("canonical".into(), term.canonical.into());
            obj.insert("modes".into(), modes_json(&modes));
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
