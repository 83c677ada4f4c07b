//! Input: bytes split into payload (reported as `READ`) and `:` command lines.

use sha2::Digest;

use super::report::hex;
use super::{CR, LF, MAX_COMMAND, MAX_LINE, ProbeAction, ProbeMachine, State};

impl ProbeMachine {
    /// Processes pending input while running, then end of input if it was read.
    pub(super) fn process(&mut self, out: &mut Vec<ProbeAction>) {
        while self.state == State::Running {
            let Some(b) = self.pending.pop_front() else {
                break;
            };
            self.byte(b, out);
        }
        if self.state != State::Running {
            return;
        }
        // Raw mode reports per read; canonical payload waits for its line end.
        if self.raw {
            self.flush_payload(out);
        }
        if self.eof_pending {
            self.eof_pending = false;
            self.flush_payload(out);
            self.report(out, "EOF");
            self.report(out, "EXITING 0");
            self.exit(0, out);
        }
    }

    fn byte(&mut self, b: u8, out: &mut Vec<ProbeAction>) {
        if let Some(line) = &mut self.held_command {
            if b == CR || b == LF {
                let line = std::mem::take(line);
                self.held_command = None;
                self.at_line_start = true;
                self.swallow_lf = b == CR;
                self.command(&line, out);
            } else {
                line.push(b);
                if line.len() > MAX_COMMAND {
                    let line = std::mem::take(line);
                    self.held_command = None;
                    for b in line {
                        self.payload_byte(b, out);
                    }
                }
            }
            return;
        }
        if std::mem::take(&mut self.swallow_lf) && b == LF {
            return;
        }
        if self.at_line_start && b == b':' {
            self.flush_payload(out);
            self.prev_payload_cr = false;
            self.held_command = Some(vec![b]);
            return;
        }
        self.payload_byte(b, out);
    }

    fn payload_byte(&mut self, b: u8, out: &mut Vec<ProbeAction>) {
        self.payload.push(b);
        match b {
            LF => {
                if !self.prev_payload_cr {
                    self.payload_lines += 1;
                }
                self.prev_payload_cr = false;
                self.at_line_start = true;
                if !self.raw {
                    self.flush_payload(out);
                }
            }
            CR => {
                self.payload_lines += 1;
                self.prev_payload_cr = true;
                self.at_line_start = true;
            }
            _ => {
                self.prev_payload_cr = false;
                self.at_line_start = false;
            }
        }
        if self.payload.len() >= MAX_LINE {
            self.flush_payload(out);
        }
    }

    fn flush_payload(&mut self, out: &mut Vec<ProbeAction>) {
        if self.payload.is_empty() {
            return;
        }
        let payload = std::mem::take(&mut self.payload);
        self.hasher.update(&payload);
        let len = payload.len() as u64;
        self.hashed += len;
        self.payload_bytes += len;
        self.report(out, &format!("READ {}", hex(&payload)));
    }
}
