//! The harness's one `perform(ServerAction)`: every engine action carried out against the
//! simulated clients and PTYs, and every PTY event reported back to the engine.

use phux_proto::command::Signal;

use super::{Harness, PtyEvent, SimPty, WriteRecord};
use crate::server::{ConnId, LocalTerminal, ServerAction, ServerEvent, SpawnSpec, WriteOutcome};

impl Harness {
    // ---- performing actions ---------------------------------------------------------------

    /// Queues what `append` adds on the connection's transport, handed over at once while
    /// its client reads.
    pub(super) fn deliver(&mut self, conn: ConnId, append: impl FnOnce(&mut Vec<u8>)) {
        let Some(c) = self.conns.get_mut(&conn) else {
            self.stray_sends += 1;
            return;
        };
        if !c.open {
            c.sends_after_close += 1;
        }
        let before = c.transport.len();
        append(&mut c.transport);
        c.queued_total += c.transport.len() - before;
        if c.reading {
            self.flush_conn(conn);
        } else {
            self.fill_socket(conn);
        }
    }

    pub(super) fn perform(&mut self, action: ServerAction) {
        match action {
            ServerAction::Send { conn, bytes } => {
                self.deliver(conn, |transport| transport.extend_from_slice(&bytes));
                self.server.reclaim(bytes);
            }
            ServerAction::SendShared { conn, frame } => {
                if self.recording {
                    self.shared_sends
                        .push((conn, std::sync::Arc::as_ptr(&frame.head) as usize));
                }
                self.deliver(conn, |transport| frame.append_to(transport));
                self.server.reclaim_shared(frame.head);
            }
            ServerAction::Close { conn } => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                if !c.open {
                    return;
                }
                c.closed_by_server = true;
                let name = c.name.clone();
                if c.reading {
                    self.flush_conn(conn);
                }
                let now = self.now;
                if let Some(bound) = self.close_bound
                    && let Some(c) = self.conns.get_mut(&conn)
                    && !c.transport.is_empty()
                {
                    // Flushed while the client reads, dropped at the bound if it does not.
                    c.closing_at.get_or_insert(now + bound);
                    self.log.push(|| format!("{name} closing by server"));
                    return;
                }
                self.log.push(|| format!("{name} closed by server"));
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.open = false;
                }
                self.observe(ServerEvent::Disconnected { conn });
            }
            ServerAction::Spawn { terminal, spec } => {
                self.log_spawn(terminal, &spec);
                self.record_action(ServerAction::Spawn {
                    terminal,
                    spec: spec.clone(),
                });
                if self.fail_next_spawns > 0 {
                    self.fail_next_spawns -= 1;
                    self.observe(ServerEvent::SpawnFailed {
                        terminal,
                        message: "simulated spawn failure".into(),
                    });
                } else if self.hold_spawns {
                    self.held_spawns.push((terminal, spec));
                } else {
                    self.start_pty(terminal, &spec);
                }
            }
            ServerAction::Write {
                terminal,
                job,
                bytes,
            } => {
                self.dirty.insert(terminal);
                self.log.push(|| {
                    format!(
                        "pty{terminal} < write {job:?} {} bytes {:?}",
                        bytes.len(),
                        String::from_utf8_lossy(&bytes)
                    )
                });
                if self.recording {
                    self.writes.push(WriteRecord {
                        incarnation: self.incarnation,
                        terminal,
                        job,
                        bytes: bytes.clone(),
                        issued_at: self.now,
                        completed: None,
                    });
                }
                match self.ptys.get_mut(&terminal) {
                    Some(pty) if !pty.is_gone() => pty.write(job, bytes),
                    _ => self.report_pty_event(
                        terminal,
                        PtyEvent::WriteDone {
                            job,
                            outcome: WriteOutcome::NotWritten,
                        },
                    ),
                }
            }
            ServerAction::Signal { terminal, signal } => {
                self.dirty.insert(terminal);
                self.log
                    .push(|| format!("pty{terminal} < signal {signal:?}"));
                if let Some(pty) = self.ptys.get_mut(&terminal) {
                    pty.signal(signal);
                }
                self.record_action(ServerAction::Signal { terminal, signal });
            }
            ServerAction::Kill { terminal } => {
                self.dirty.insert(terminal);
                self.log.push(|| format!("pty{terminal} < kill"));
                if let Some(pty) = self.ptys.get_mut(&terminal) {
                    pty.kill(Signal::Kill);
                }
                self.record_action(ServerAction::Kill { terminal });
            }
            ServerAction::Upgrade { binary } => {
                self.log.push(|| format!("# upgrade requested: {binary:?}"));
                self.upgrade_asked = true;
                self.record_action(ServerAction::Upgrade { binary });
            }
            ServerAction::Shutdown => {
                self.log.push(|| "# server shutdown".to_owned());
                self.shut_down = true;
                self.record_action(ServerAction::Shutdown);
            }
            ServerAction::Resize {
                terminal,
                cols,
                rows,
            } => {
                let action = ServerAction::Resize {
                    terminal,
                    cols,
                    rows,
                };
                self.log.push(|| format!("# action {action:?}"));
                self.dirty.insert(terminal);
                if let Some(pty) = self.ptys.get_mut(&terminal) {
                    pty.resize(cols, rows);
                }
                self.record_action(action);
            }
        }
    }

    fn record_action(&mut self, action: ServerAction) {
        if self.recording {
            self.actions.push(action);
        }
    }

    pub(super) fn log_spawn(&mut self, terminal: LocalTerminal, spec: &SpawnSpec) {
        self.log.push(|| {
            format!(
                "pty{terminal} spawn {:?} {}x{}",
                spec.command, spec.cols, spec.rows
            )
        });
    }

    /// Answers a spawn: the spawner's child (or `spawn_mode`'s) on a fresh PTY, or the
    /// spawner's failure.
    pub(super) fn start_pty(&mut self, terminal: LocalTerminal, spec: &SpawnSpec) {
        let child = match &mut self.spawner {
            Some(spawner) => spawner(spec),
            None => Ok(self.spawn_mode.model()),
        };
        let child = match child {
            Ok(child) => child,
            Err(message) => {
                self.log
                    .push(|| format!("pty{terminal} spawn failed: {message}"));
                self.observe(ServerEvent::SpawnFailed { terminal, message });
                return;
            }
        };
        let pid = self.next_pid;
        self.next_pid += 1;
        let mut pty = SimPty::with_child(child, pid);
        pty.script_writes(self.scripted_writes);
        self.ptys.insert(terminal, pty);
        self.dirty.insert(terminal);
        self.observe(ServerEvent::Spawned { terminal, pid });
    }

    pub(super) fn report_pty_event(&mut self, terminal: LocalTerminal, event: PtyEvent) {
        match event {
            PtyEvent::WriteDone { job, outcome } => {
                self.log
                    .push(|| format!("pty{terminal} > done {job:?} {outcome:?}"));
                let now = self.now;
                let incarnation = self.incarnation;
                if let Some(w) = self
                    .writes
                    .iter_mut()
                    .rev()
                    .find(|w| w.incarnation == incarnation && w.job == job)
                {
                    w.completed = Some((now, outcome));
                }
                self.server.handle(
                    self.now,
                    ServerEvent::WriteDone {
                        terminal,
                        job,
                        outcome,
                    },
                );
            }
            PtyEvent::Output(bytes) => {
                self.log.push(|| {
                    format!(
                        "pty{terminal} > output {:?}",
                        String::from_utf8_lossy(&bytes)
                    )
                });
                let read = self.pty_read.unwrap_or(usize::MAX);
                for bytes in bytes.chunks(read) {
                    self.server
                        .handle(self.now, ServerEvent::PtyOutput { terminal, bytes });
                }
            }
            PtyEvent::Exited(kind) => {
                self.log.push(|| format!("pty{terminal} > exited {kind:?}"));
                self.server.handle(
                    self.now,
                    ServerEvent::ChildExited {
                        terminal,
                        exit_status: kind.exit_status(),
                    },
                );
            }
        }
    }
}
