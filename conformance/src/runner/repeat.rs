//! `repeat` blocks: the body once per iteration, its sends a window of iterations ahead of
//! its expectations, and a wire log that keeps only the block's first frames. And `together`
//! blocks: sends the server finds ready at once.

use phux_proto::notation::Value;

use super::case::{Case, StepError};
use crate::transcript::{Repeat, Step, StepKind};

impl Case {
    /// `together`: its sends go out while the transport holds the server's turns, so that
    /// the server finds them all ready at once (in process; elsewhere they only go out).
    pub(super) fn together(&mut self, body: &[Step]) -> Result<(), StepError> {
        self.transport.hold_turns(true);
        let sent = body.iter().try_for_each(|step| self.step_kind(step));
        self.transport.hold_turns(false);
        sent
    }

    /// `repeat`: the body once per iteration, its sends running a window of iterations ahead
    /// of its expectations, so that many round trips cost little waiting. The wire log keeps
    /// the block's first frames.
    pub(super) fn repeat(&mut self, r: &Repeat) -> Result<(), StepError> {
        let done = self.repeat_body(r);
        self.end_wire_budget();
        done
    }

    /// Back to logging every frame, noting how many a `repeat` left out.
    fn end_wire_budget(&mut self) {
        if let Some((_, skipped)) = self.wire_budget.take()
            && skipped > 0
        {
            self.wire
                .push(format!("… {skipped} more frames of the repeat, not logged"));
        }
    }

    fn repeat_body(&mut self, r: &Repeat) -> Result<(), StepError> {
        // Templates are expanded once: only the iteration variable changes.
        let body = r
            .body
            .iter()
            .map(|s| {
                let kind = match &s.kind {
                    StepKind::Send { conn, frame } => StepKind::Send {
                        conn: conn.clone(),
                        frame: self.pattern(frame)?,
                    },
                    StepKind::Expect {
                        conn,
                        pattern,
                        until,
                        next,
                    } => StepKind::Expect {
                        conn: conn.clone(),
                        pattern: self.pattern(pattern)?,
                        until: until.clone(),
                        next: *next,
                    },
                    other => other.clone(),
                };
                Ok((s, kind))
            })
            .collect::<Result<Vec<_>, StepError>>()?;
        // Formatting every frame of a long block would cost more than sending it.
        self.wire_budget = Some((WIRE_KEEP, 0));
        // Iteration i's sends go out while iteration i - REPEAT_WINDOW's expectations are
        // met: many round trips cost little, and the server never holds more than a window
        // of unread answers (a server MAY detach a client whose answers pile up).
        let window = REPEAT_WINDOW.min(r.count);
        for i in 0..r.count + window {
            if i < r.count {
                self.repeat_iteration(r, &body, i, true)?;
            }
            if let Some(j) = i.checked_sub(window) {
                self.repeat_iteration(r, &body, j, false)?;
            }
        }
        if let Some((name, _)) = &r.var {
            self.bindings.remove(name);
        }
        Ok(())
    }

    /// The sends (or the other steps) of iteration `i` of a `repeat`.
    fn repeat_iteration(
        &mut self,
        r: &Repeat,
        body: &[(&Step, StepKind)],
        i: u64,
        sends: bool,
    ) -> Result<(), StepError> {
        if let Some((name, start)) = &r.var {
            let value = iteration_value(start, i)
                .ok_or_else(|| StepError::Runner(format!("`{start}` + {i} overflows")))?;
            self.bindings.insert(name.clone(), value);
        }
        let is_send = |k: &StepKind| matches!(k, StepKind::Send { .. } | StepKind::SendRaw { .. });
        for (step, kind) in body.iter().filter(|(_, k)| is_send(k) == sends) {
            let done = match kind {
                StepKind::Send { conn, frame } => self.send_expanded(conn, frame),
                StepKind::Expect {
                    conn,
                    pattern,
                    next,
                    ..
                } => self.expect(conn, pattern, self.timeout, *next),
                other => self.step(&Step {
                    line: step.line,
                    text: step.text.clone(),
                    clauses: step.clauses.clone(),
                    kind: other.clone(),
                }),
            };
            done.map_err(|e| match e {
                StepError::Failed { expected, actual } => StepError::Failed {
                    expected,
                    actual: format!(
                        "{actual}\n  (iteration {i} of {}, line {}: {})",
                        r.count, step.line, step.text
                    ),
                },
                runner @ StepError::Runner(_) => runner,
            })?;
        }
        Ok(())
    }
}

/// How many iterations of a `repeat` block may be sent ahead of their expectations.
const REPEAT_WINDOW: u64 = 256;

/// How many frames of a `repeat` block the wire log shows.
const WIRE_KEEP: usize = 32;

/// The value of a `repeat` variable in iteration `i`: the start plus `i`, spelt as the start.
fn iteration_value(start: &Value, i: u64) -> Option<Value> {
    match start {
        Value::Int(v) => v.checked_add(i128::from(i)).map(Value::Int),
        Value::HexInt { value, width } => {
            value.checked_add(u128::from(i)).map(|value| Value::HexInt {
                value,
                width: *width,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeat_values_keep_the_start_spelling() {
        let hex = Value::HexInt {
            value: 0xfe,
            width: 32,
        };
        assert_eq!(
            iteration_value(&hex, 2),
            Some(Value::HexInt {
                value: 0x100,
                width: 32
            })
        );
        assert_eq!(iteration_value(&Value::Int(-1), 3), Some(Value::Int(2)));
        let top = Value::HexInt {
            value: u128::MAX,
            width: 32,
        };
        assert_eq!(iteration_value(&top, 1), None);
        assert_eq!(iteration_value(&Value::Str(b"a".to_vec()), 0), None);
    }
}
