//! One probe terminal on one server: spawned, attached, put in raw mode and in the round's
//! keyboard modes, then fed APPLY_INPUT batches; what the probe reads comes back as its
//! `READ` reports in the terminal's output, joined into one byte stream.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use phux_proto::command::ApplyInput;
use phux_proto::frame::{Ping, TerminalSize};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Command, CommandResult, Frame, OperationId, TerminalId};

use super::KeydiffError;
use crate::peer::{Client, DEADLINE};

/// The nonce of the PING that tells whether the server attached the spawning connection.
const ATTACH_PROBE_NONCE: u64 = 0x6b65_7964_6966_6600;

/// A probe terminal under test.
pub(super) struct Lane {
    /// Which server, for messages.
    pub(super) name: &'static str,
    client: Client,
    terminal: TerminalId,
    /// Output not yet split into lines.
    pending: Vec<u8>,
    /// Report bodies not yet taken (`READ` ones go to `payload` instead).
    reports: Vec<String>,
    /// Everything the probe read, in order.
    pub(super) payload: Vec<u8>,
    /// Answers to commands, by request id.
    results: HashMap<u32, CommandResult>,
    /// The next operation id (ids are never reused: a reused id would be answered from the
    /// server's ledger and not written).
    next_operation: u128,
}

impl Lane {
    /// Spawns `probe` through `client` (a connection to the server `name`), attaches to its
    /// output, and waits until it is in raw mode under `modes` (the bytes the probe prints to
    /// set them). Operation ids count up from `operations`.
    pub(super) fn open(
        name: &'static str,
        mut client: Client,
        operations: u128,
        probe: &[String],
        modes: &[u8],
    ) -> Result<Self, KeydiffError> {
        let terminal = client.spawn(
            probe,
            TerminalSize {
                cols: 200,
                rows: 50,
            },
        )?;
        let mut lane = Self {
            name,
            client,
            terminal,
            pending: Vec::new(),
            reports: Vec::new(),
            payload: Vec::new(),
            results: HashMap::new(),
            next_operation: operations,
        };
        lane.attach()?;
        // The probe may have said READY before the attach: a mark proves the stream is live.
        lane.command(":mark attached", "MARK attached")?;
        lane.command(":raw", "TERMIOS raw -echo -isig -icrnl")?;
        if !modes.is_empty() {
            let mut hex = String::with_capacity(modes.len() * 2);
            for b in modes {
                let _ = write!(hex, "{b:02x}");
            }
            lane.command(
                &format!(":print {hex}"),
                &format!("PRINTED {}", modes.len()),
            )?;
        }
        Ok(lane)
    }

    /// Attaches to the terminal's output unless the server already did on spawn (ours does,
    /// [SPAWN.ATTACH.1]; the reference does not): a PING answered before any bootstrap of the
    /// terminal means it did not.
    fn attach(&mut self) -> Result<(), KeydiffError> {
        self.client.send(&Frame::Ping(Ping {
            nonce: ATTACH_PROBE_NONCE,
        }))?;
        let until = Instant::now() + DEADLINE;
        let mut attached = false;
        loop {
            let frame = self
                .client
                .recv(until.saturating_duration_since(Instant::now()))?
                .ok_or(KeydiffError::Stuck {
                    server: self.name,
                    what: "PONG".into(),
                })?;
            match frame {
                Frame::Pong(p) if p.nonce == ATTACH_PROBE_NONCE => break,
                Frame::BootstrapBegin(b) if b.terminal == self.terminal => attached = true,
                other => self.take(other),
            }
        }
        if !attached {
            let result = self.client.command(Command::AttachTerminal {
                terminal: self.terminal.clone(),
            })?;
            self.expect_ok("ATTACH_TERMINAL", result)?;
        }
        Ok(())
    }

    /// Sends one probe command line and waits for its report.
    fn command(&mut self, line: &str, report: &str) -> Result<(), KeydiffError> {
        let paste = InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: format!("{line}\n").into_bytes(),
        });
        let id = self.send(vec![paste])?;
        self.wait_ok(id)?;
        let until = Instant::now() + DEADLINE;
        loop {
            if let Some(i) = self.reports.iter().position(|r| r == report) {
                self.reports.drain(..=i);
                return Ok(());
            }
            if let Some(bad) = self.reports.iter().find(|r| r.starts_with("BADCMD")) {
                return Err(KeydiffError::Stuck {
                    server: self.name,
                    what: format!("the probe took {line:?} as {bad}"),
                });
            }
            if !self.pump(until)? {
                return Err(KeydiffError::Stuck {
                    server: self.name,
                    what: format!("{report} (reports so far: {:?})", self.reports),
                });
            }
        }
    }

    /// Sends one APPLY_INPUT of `events` without waiting; the request id to wait on.
    pub(super) fn send(&mut self, events: Vec<InputEvent>) -> Result<u32, KeydiffError> {
        self.next_operation = self.next_operation.wrapping_add(1).max(1);
        let operation_id = OperationId::from_u128(self.next_operation)
            .unwrap_or_else(|| unreachable!("never zero"));
        Ok(self.client.send_command(Command::ApplyInput(ApplyInput {
            operation_id,
            terminal: self.terminal.clone(),
            events,
        }))?)
    }

    /// Waits for request `id`'s answer, which must be OK.
    pub(super) fn wait_ok(&mut self, id: u32) -> Result<(), KeydiffError> {
        let until = Instant::now() + DEADLINE;
        loop {
            if let Some(result) = self.results.remove(&id) {
                return self.expect_ok("APPLY_INPUT", result);
            }
            if !self.pump(until)? {
                return Err(KeydiffError::Stuck {
                    server: self.name,
                    what: format!("the answer to request {id}"),
                });
            }
        }
    }

    fn expect_ok(&self, what: &str, result: CommandResult) -> Result<(), KeydiffError> {
        match result {
            CommandResult::Ok | CommandResult::OkWith(_) => Ok(()),
            CommandResult::Error { code, message } => Err(KeydiffError::Refused {
                server: self.name,
                what: format!("{what}: {code:?} {message}"),
            }),
        }
    }

    /// Reads until the payload holds `needle`, for at most [`DEADLINE`] from now.
    pub(super) fn wait_payload(&mut self, needle: &[u8]) -> Result<(), KeydiffError> {
        let until = Instant::now() + DEADLINE;
        let mut searched: usize = 0;
        loop {
            let from = searched.saturating_sub(needle.len());
            if find(&self.payload[from..], needle).is_some() {
                return Ok(());
            }
            searched = self.payload.len();
            if !self.pump(until)? {
                return Err(KeydiffError::Stuck {
                    server: self.name,
                    what: format!(
                        "the probe to read {:?}; it read {} bytes, ending {:?}",
                        String::from_utf8_lossy(needle),
                        self.payload.len(),
                        String::from_utf8_lossy(
                            &self.payload[self.payload.len().saturating_sub(80)..]
                        )
                    ),
                });
            }
        }
    }

    /// Reads and handles one frame; `false` when the deadline passed first.
    fn pump(&mut self, until: Instant) -> Result<bool, KeydiffError> {
        let wait = until.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            return Ok(false);
        }
        match self.client.recv(wait.min(Duration::from_millis(500)))? {
            Some(frame) => {
                self.take(frame);
                Ok(true)
            }
            None => Ok(Instant::now() < until),
        }
    }

    /// Files one frame: command answers by id, the terminal's live output as reports.
    fn take(&mut self, frame: Frame) {
        match frame {
            Frame::CommandResult(r) => {
                self.results.insert(r.request_id, r.result);
            }
            Frame::TerminalOutput(out) if out.terminal == self.terminal => {
                self.pending.extend_from_slice(&out.bytes);
                self.split_reports();
            }
            // Bootstraps (the screen so far), events, other terminals: not what the probe read.
            _ => {}
        }
    }

    /// Reports are `\r\nPROBE <seq> <body>\r\n`; anything else between them is what the probe
    /// printed (mode sequences) and is skipped.
    fn split_reports(&mut self) {
        let mut start = 0;
        while let Some(end) = find(&self.pending[start..], b"\r\n") {
            let line = &self.pending[start..start + end];
            if let Some(rest) = line.strip_prefix(b"PROBE ") {
                let text = String::from_utf8_lossy(rest);
                let body = text.split_once(' ').map_or("", |(_, b)| b);
                // What the probe read: raw payload (`READ`) or a line it held as a would-be
                // command and then found none (`BADCMD`): both are bytes the program got.
                if let Some(hex) = body
                    .strip_prefix("READ ")
                    .or_else(|| body.strip_prefix("BADCMD "))
                {
                    self.payload.extend(decode_hex(hex));
                } else {
                    self.reports.push(body.to_owned());
                }
            }
            start += end + 2;
        }
        self.pending.drain(..start);
    }

    /// Kills the terminal (the connection stays for the next one).
    pub(super) fn close(mut self) -> Result<Client, KeydiffError> {
        let result = self.client.command(Command::KillTerminal {
            terminal: self.terminal.clone(),
        })?;
        self.expect_ok("KILL_TERMINAL", result)?;
        Ok(self.client)
    }
}

fn decode_hex(hex: &str) -> impl Iterator<Item = u8> + '_ {
    hex.as_bytes()
        .chunks_exact(2)
        .filter_map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
}

pub(super) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}
