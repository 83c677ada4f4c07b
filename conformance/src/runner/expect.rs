//! The steps that check what the server sent: expectations (ordered, unordered, runs and
//! accumulations), `nothing`, `closed`, reading bounds and value checks.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use phux_proto::Frame;
use phux_proto::notation::Value;

use super::POLL_SLICE;
use super::case::{Case, StepError, failed, is_output, name_of};
use super::report::contains;
use crate::pattern::{self, Bindings};
use crate::transcript::CheckOp;

impl Case {
    pub(super) fn expect(
        &mut self,
        conn: &str,
        pattern: &Value,
        within: Duration,
        next: bool,
    ) -> Result<(), StepError> {
        let names = pattern::frame_names(pattern);
        if names.is_empty() {
            return Err(StepError::Runner(format!(
                "`{pattern}` is not a frame pattern"
            )));
        }
        self.conn(conn)?;
        let deadline = Instant::now() + within;
        loop {
            if let Some(c) = self.conns.get_mut(conn)
                && let Some(i) = c
                    .inbox
                    .iter()
                    .position(|f| next || names.iter().any(|n| n == name_of(f)))
            {
                let actual = c.inbox[i].clone();
                return match pattern::matches(pattern, &actual, &mut self.bindings) {
                    Ok(()) => {
                        c.inbox.remove(i);
                        Ok(())
                    }
                    Err(m) => Err(failed(pattern, format!("{actual}\n  ({m})"))),
                };
            }
            if let Some(e) = self.garbage_error(conn) {
                return Err(e);
            }
            let p = pattern.clone();
            self.more(conn, deadline, &|s| {
                failed(
                    &p,
                    format!("no such frame; received: {}", s.inbox_text(conn)),
                )
            })?;
        }
    }

    // Each argument is one part of the wait; a struct for them would be built once per call.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn wait_accumulate(
        &mut self,
        conn: &str,
        pattern: &Value,
        field: &str,
        cond: &dyn Fn(&[u8]) -> bool,
        what: &str,
        within: Duration,
        initial: Vec<u8>,
    ) -> Result<(), StepError> {
        let names = pattern::frame_names(pattern);
        self.conn(conn)?;
        let deadline = Instant::now() + within;
        let mut acc = initial;
        if !acc.is_empty() && cond(&acc) {
            self.bindings.insert("_".into(), Value::Str(acc));
            return Ok(());
        }
        loop {
            if let Some(c) = self.conns.get_mut(conn) {
                let mut i = 0;
                while i < c.inbox.len() {
                    let f = &c.inbox[i];
                    if names.iter().any(|n| n == name_of(f))
                        && pattern::matches(pattern, f, &mut self.bindings).is_ok()
                    {
                        if let Some(v) = pattern::field(f, field) {
                            acc.extend_from_slice(&pattern::as_bytes(v));
                        }
                        c.inbox.remove(i);
                        if cond(&acc) {
                            // `$_` is what this wait consumed, for a later `check`.
                            self.bindings.insert("_".into(), Value::Str(acc));
                            return Ok(());
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            if let Some(e) = self.garbage_error(conn) {
                return Err(e);
            }
            let expected = format!("{pattern} until {what}");
            let seen = Value::Str(acc.clone()).to_string();
            self.more(conn, deadline, &|s| {
                failed(
                    &expected,
                    format!(
                        "{field} so far: {seen}; other frames: {}",
                        s.inbox_text(conn)
                    ),
                )
            })?;
        }
    }

    pub(super) fn unordered(&mut self, conn: &str, patterns: &[Value]) -> Result<(), StepError> {
        self.conn(conn)?;
        let deadline = Instant::now() + self.timeout;
        let mut wanted: BTreeMap<String, usize> = BTreeMap::new();
        for p in patterns {
            let names = pattern::frame_names(p);
            let [name] = names.as_slice() else {
                return Err(StepError::Runner(format!(
                    "`{p}`: one frame type per pattern in a `{{` block"
                )));
            };
            *wanted.entry(name.clone()).or_default() += 1;
        }
        let expected = patterns
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n  and ");
        loop {
            let c = self
                .conns
                .get(conn)
                .ok_or_else(|| StepError::Runner("no conn".into()))?;
            // The first k frames of each wanted type, k = how many patterns name it.
            let mut candidates: Vec<usize> = Vec::new();
            let mut enough = true;
            for (name, k) in &wanted {
                let idx: Vec<usize> = c
                    .inbox
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| name_of(f) == name)
                    .map(|(i, _)| i)
                    .take(*k)
                    .collect();
                enough &= idx.len() == *k;
                candidates.extend(idx);
            }
            if enough {
                let frames: Vec<&Value> = candidates.iter().map(|&i| &c.inbox[i]).collect();
                let mut used = vec![false; frames.len()];
                let mut bindings = self.bindings.clone();
                if assign(patterns, &frames, &mut used, &mut bindings) {
                    self.bindings = bindings;
                    let mut remove = candidates;
                    remove.sort_unstable();
                    if let Some(c) = self.conns.get_mut(conn) {
                        for i in remove.into_iter().rev() {
                            c.inbox.remove(i);
                        }
                    }
                    return Ok(());
                }
                let got = frames
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n  and ");
                return Err(failed(
                    &expected,
                    format!("{got}\n  (no pairing of patterns and frames matches)"),
                ));
            }
            if let Some(e) = self.garbage_error(conn) {
                return Err(e);
            }
            self.more(conn, deadline, &|s| {
                failed(&expected, format!("received: {}", s.inbox_text(conn)))
            })?;
        }
    }

    pub(super) fn nothing(&mut self, conn: &str) -> Result<(), StepError> {
        let nonce = self.next_nonce;
        self.next_nonce += 1;
        let key = self.conn(conn)?;
        let ping = Frame::Ping(phux_proto::frame::Ping { nonce });
        self.wire.push(format!("{conn} > {ping}"));
        self.transport.send(key, &ping.to_bytes())?;
        let pong = Frame::Pong(phux_proto::frame::Pong { nonce }).to_value();
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(c) = self.conns.get_mut(conn)
                && let Some(i) = c.inbox.iter().position(|f| *f == pong)
            {
                let stray = (i > 0).then(|| c.inbox[0].clone());
                c.inbox.remove(i);
                return match stray {
                    None => Ok(()),
                    Some(f) => Err(failed("no frame before the PONG of a PING barrier", f)),
                };
            }
            if let Some(e) = self.garbage_error(conn) {
                return Err(e);
            }
            self.more(conn, deadline, &|s| {
                failed(
                    format!("{pong} answering the runner's PING"),
                    s.inbox_text(conn),
                )
            })?;
        }
    }

    pub(super) fn closed(&mut self, conn: &str) -> Result<(), StepError> {
        self.conn(conn)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(c) = self.conns.get(conn)
                && c.closed
            {
                // Everything the server sent before closing must have been expected.
                return match c.inbox.iter().find(|f| !is_output(f)) {
                    None => Ok(()),
                    Some(f) => Err(failed("nothing more before the close", f)),
                };
            }
            let virtual_time = self.transport.virtual_time();
            let remaining = deadline.saturating_duration_since(Instant::now());
            if !virtual_time && remaining.is_zero() {
                return Err(failed(
                    "the server closes the connection",
                    format!("still open; received: {}", self.inbox_text(conn)),
                ));
            }
            let got = self.fill(
                conn,
                if virtual_time {
                    Duration::ZERO
                } else {
                    remaining.min(POLL_SLICE)
                },
            )?;
            if virtual_time && !got && !self.conns.get(conn).is_some_and(|c| c.closed) {
                return Err(failed(
                    "the server closes the connection",
                    format!("still open; received: {}", self.inbox_text(conn)),
                ));
            }
        }
    }

    /// `pause` / `resume`: the transport stops or resumes reading the connection.
    pub(super) fn set_reading(&mut self, conn: &str, on: bool) -> Result<(), StepError> {
        let key = self.conn(conn)?;
        self.wire
            .push(format!("{conn} {}", if on { "resume" } else { "pause" }));
        self.transport.set_reading(key, on)?;
        if let Some(c) = self.conns.get_mut(conn) {
            c.paused = !on;
            if on {
                c.resumed_at = Some(c.received);
            }
        }
        Ok(())
    }

    /// `<*`: consumes the matching frames at the front of the queue; the first frame that
    /// does not match, or the close, ends the run (and must come). A capture the pattern
    /// introduces is bound afresh by each frame, so after the run it holds the last one's
    /// value (the seq of the last output before a tombstone); none consumed leaves it unbound.
    pub(super) fn expect_run(&mut self, conn: &str, pattern: &Value) -> Result<(), StepError> {
        let names = pattern::frame_names(pattern);
        if names.is_empty() {
            return Err(StepError::Runner(format!(
                "`{pattern}` is not a frame pattern"
            )));
        }
        self.conn(conn)?;
        let deadline = Instant::now() + self.timeout;
        let mut taken = 0usize;
        let before = self.bindings.clone();
        loop {
            if let Some(c) = self.conns.get_mut(conn) {
                while let Some(front) = c.inbox.front() {
                    let mut trial = before.clone();
                    let fits = names.iter().any(|n| n == name_of(front))
                        && pattern::matches(pattern, front, &mut trial).is_ok();
                    if !fits {
                        return Ok(());
                    }
                    self.bindings = trial;
                    c.inbox.pop_front();
                    taken += 1;
                }
                if c.closed {
                    return Ok(());
                }
            }
            if let Some(e) = self.garbage_error(conn) {
                return Err(e);
            }
            let p = pattern.clone();
            let more = self.more(conn, deadline, &|_| {
                failed(
                    format!("frames matching {p}, then another frame or the close"),
                    format!("{taken} matched, then nothing more arrived"),
                )
            });
            // The close that came with (or instead of) more frames ends the run.
            if more.is_err() && !self.conns.get(conn).is_some_and(|c| c.closed) {
                return more;
            }
        }
    }

    /// `bytes since resume <= N`, once nothing more arrives.
    pub(super) fn read_bound(&mut self, conn: &str, max: u64) -> Result<(), StepError> {
        self.conn(conn)?;
        let deadline = Instant::now() + self.timeout;
        let wait = if self.transport.virtual_time() {
            Duration::ZERO
        } else {
            POLL_SLICE
        };
        while self.fill(conn, wait)? && Instant::now() < deadline {}
        let c = self
            .conns
            .get(conn)
            .ok_or_else(|| StepError::Runner("no such conn".into()))?;
        let Some(since) = c.resumed_at else {
            return Err(StepError::Runner(format!(
                "`{conn} bytes since resume` needs an earlier `{conn} resume`"
            )));
        };
        let got = c.received - since;
        if got <= max {
            Ok(())
        } else {
            Err(failed(
                format!("at most {max} bytes on {conn} since it resumed reading"),
                format!("{got} bytes"),
            ))
        }
    }

    pub(super) fn check(&self, left: &Value, op: CheckOp, right: &Value) -> Result<(), StepError> {
        let l = pattern::substitute(left, &self.bindings).map_err(StepError::Runner)?;
        let r = pattern::substitute(right, &self.bindings).map_err(StepError::Runner)?;
        let (ok, word) = match op {
            CheckOp::Eq => (pattern::normalise(&l) == pattern::normalise(&r), "=="),
            CheckOp::Ne => (pattern::normalise(&l) != pattern::normalise(&r), "!="),
            CheckOp::Contains => (
                contains(&pattern::as_bytes(&l), &pattern::as_bytes(&r)),
                "contains",
            ),
            CheckOp::NotContains => (
                !contains(&pattern::as_bytes(&l), &pattern::as_bytes(&r)),
                "!contains",
            ),
        };
        if ok {
            Ok(())
        } else {
            Err(failed(
                format!("{left} {word} {right}"),
                format!("{l} vs {r}"),
            ))
        }
    }
}

/// Pairs every pattern with a distinct frame (backtracking; blocks are small).
fn assign(
    patterns: &[Value],
    frames: &[&Value],
    used: &mut [bool],
    bindings: &mut Bindings,
) -> bool {
    let Some((first, rest)) = patterns.split_first() else {
        return true;
    };
    for i in 0..frames.len() {
        if used[i] {
            continue;
        }
        let mut trial = bindings.clone();
        if pattern::matches(first, frames[i], &mut trial).is_ok() {
            used[i] = true;
            if assign(rest, frames, used, &mut trial) {
                *bindings = trial;
                return true;
            }
            used[i] = false;
        }
    }
    false
}
