//! The fault campaign: a script types into the page while the link is cut, silenced
//! (half-open), the page reloaded and its tab killed, over and over; at the end the program
//! has read every key exactly once, in order, and any key whose fate was uncertain is shown
//! `unknown`. On our server `phuxctl upgrade` is one of the faults. `PHUX_WEB_FAULTS` sets how
//! many faults (CI runs the default, a short run); `PHUX_WEB_SEED` the schedule;
//! `PHUX_WEB_SERVER=reference` runs it on the phux reference's WebSocket listener;
//! `PHUX_WEB_NO_KILL` turns tab kills into cuts; `PHUX_WEB_DWELL_MS` leaves the link up that
//! long before each fault. The figures are printed.

use std::time::Instant;

use serde_json::Value;

use crate::support::{self, Rig, exclusive, rig_or_skip, tally, wait_for};

/// The faults, in the order the figures print them.
const KINDS: [&str; 5] = ["cut", "half-open", "reload", "tab kill", "upgrade"];

/// A small deterministic generator (xorshift64*), so a schedule can be replayed by its seed.
struct Schedule(u64);

impl Schedule {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33;
        usize::try_from(x).unwrap_or(0) % n
    }
}

fn count(rig: &Rig) -> usize {
    let v = rig
        .browser
        .execute_async(
            "const done = arguments[arguments.length - 1]; window.phuxWeb.count().then(done, () => done(-1));",
            &[],
        )
        .unwrap_or(Value::Null);
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
}

fn wait_up(rig: &Rig) {
    // Connected on a link that still forwards (after a half-open the page believes itself
    // connected until its PING goes unanswered).
    wait_for("the page connected", || {
        (rig.proxy.live_links() >= 1 && support::status(&rig.browser)["up"] == Value::Bool(true))
            .then_some(())
    });
}

/// A count as a float, for a rate (counts here are far below 2^52).
#[allow(clippy::cast_precision_loss)]
fn as_f64(n: usize) -> f64 {
    n as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

#[test]
fn fault_campaign_loses_and_doubles_no_key() {
    let _one = exclusive();
    let faults: usize = std::env::var("PHUX_WEB_FAULTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let seed: u64 = std::env::var("PHUX_WEB_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_0041);
    let on_reference = std::env::var("PHUX_WEB_SERVER").is_ok_and(|v| v == "reference")
        || !crate::ours::OurServer::available();
    let rig = if on_reference {
        rig_or_skip!(reference 300)
    } else {
        rig_or_skip!(300)
    };
    let mut upgrades_refused = 0;
    // An in-place upgrade keeps the server's incarnation: the page must see the same server_id
    // after each one (a new one would make every key in flight `unknown`).
    let incarnation = support::status(&rig.browser)["serverId"].clone();
    let mut schedule = Schedule(seed | 1);
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut typed = String::new();
    let mut injected = [0usize; KINDS.len()];
    let started = Instant::now();
    for n in 0..faults {
        if n > 0 && n % 100 == 0 {
            eprintln!(
                "web fault campaign: {n} faults in {:.0} s, {} keys typed",
                started.elapsed().as_secs_f64(),
                typed.len()
            );
        }
        let chunk: String = (0..=schedule.next(6))
            .map(|_| char::from(alphabet[schedule.next(alphabet.len())]))
            .collect();
        rig.browser.type_text(&chunk).expect("type");
        typed.push_str(&chunk);
        // Each key is on disk in the outbox before a fault can take the page down (a key the
        // page never recorded was never accepted: the test counts only accepted keys).
        wait_for("the keys recorded", || {
            (count(&rig) == typed.len()).then_some(())
        });
        // PHUX_WEB_DWELL_MS: leave the page that long with its link up before the fault, to
        // tell the sender's own pace from the time each fault takes from it.
        if let Some(ms) = std::env::var("PHUX_WEB_DWELL_MS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            wait_up(&rig);
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        // The reference has no `phuxctl upgrade`.
        let mut kind = schedule.next(KINDS.len() - usize::from(on_reference));
        // PHUX_WEB_NO_KILL: leave tab kills out (they become cuts), to tell their part.
        if kind == 3 && std::env::var_os("PHUX_WEB_NO_KILL").is_some() {
            kind = 0;
        }
        match kind {
            0 | 1 => {
                wait_up(&rig);
                let hit = if kind == 0 {
                    rig.proxy.cut()
                } else {
                    rig.proxy.half_open()
                };
                assert!(hit >= 1, "a {} with no link to hit", KINDS[kind]);
            }
            2 => {
                rig.browser.reload().expect("reload");
                rig.wait_page();
            }
            3 => rig.kill_tab_and_reopen(),
            _ => {
                let (code, said) = rig.ours().upgrade();
                match code {
                    Some(0) => {
                        wait_up(&rig);
                        let now = support::status(&rig.browser)["serverId"].clone();
                        assert_eq!(now, incarnation, "the upgrade changed the server_id");
                    }
                    Some(4) => upgrades_refused += 1,
                    _ => panic!("phuxctl upgrade: {code:?} {said}"),
                }
            }
        }
        injected[kind] += 1;
    }
    let faulted = started.elapsed();
    let left = support::pending(&rig.browser).unwrap_or(0);
    // The sender's pace while the faults came: keys typed against keys resolved by the last.
    let secs = faulted.as_secs_f64().max(1e-3);
    let resolved = typed
        .len()
        .saturating_sub(usize::try_from(left).unwrap_or(usize::MAX));
    println!(
        "web fault campaign pace: a fault every {:.2} s; typed {:.1} keys/s, resolved {:.1} \
         keys/s while faults came",
        secs / as_f64(faults.max(1)),
        as_f64(typed.len()) / secs,
        as_f64(resolved) / secs,
    );
    let ops = rig.settle();
    let drained = started.elapsed().saturating_sub(faulted);
    wait_for("the program to read what was applied", || {
        let t = tally(&typed, &ops, &rig.recorded());
        (t.applied + t.unknown_read == rig.recorded().len() && t.lost == 0).then_some(())
    });
    let t = tally(&typed, &ops, &rig.recorded());
    let elapsed = started.elapsed();
    println!(
        "web fault campaign on {} (seed {seed:#x}): {faults} faults ({}; upgrades refused: \
         {upgrades_refused}) in {:.1} s; {} keys typed: {} applied, {} unknown ({} of them \
         read), {} other; lost {}, duplicated {}; {} WebSocket connections; {left} keys \
         still to send after the last fault, sent in {:.1} s",
        if on_reference {
            "the reference"
        } else {
            "our server"
        },
        KINDS
            .iter()
            .zip(injected)
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        elapsed.as_secs_f64(),
        t.typed,
        t.applied,
        t.unknown,
        t.unknown_read,
        t.other,
        t.lost,
        t.duplicated,
        rig.proxy.accepted(),
        drained.as_secs_f64(),
    );
    // Where a key's time goes once the faults have stopped (sends after the last key was
    // typed): `sent` is stamped before its record is written and `resolved` before its own.
    let last_typed = ops
        .iter()
        .filter_map(|o| o["addedAt"].as_f64())
        .fold(0.0, f64::max);
    let (mut to_result, mut to_next) = (Vec::new(), Vec::new());
    for pair in ops.windows(2) {
        let [a, b] = pair else { continue };
        let at = |o: &Value, k: &str| o[k].as_f64();
        if let (Some(sent), Some(done), Some(next)) =
            (at(a, "sentAt"), at(a, "resolvedAt"), at(b, "sentAt"))
            && sent > last_typed
            && next >= done
        {
            to_result.push(done - sent);
            to_next.push(next - done);
        }
    }
    println!(
        "sender after the faults, per key ({} keys): sent to resolved p50 {:.1} ms (the `sent` \
         write and the round trip), resolved to the next sent p50 {:.1} ms (the resolution's \
         write and the next read)",
        to_result.len(),
        median(&mut to_result),
        median(&mut to_next),
    );
    let mut servers: Vec<_> = ops
        .iter()
        .map(|o| o["server"].as_str().unwrap_or(""))
        .collect();
    servers.dedup();
    println!("server incarnations in record order: {servers:?}");
    let odd: Vec<_> = ops.iter().filter(|o| o["state"] != "applied").collect();
    assert_eq!((t.lost, t.duplicated, t.other), (0, 0, 0), "{t:?}: {odd:?}");
    assert_eq!(t.applied + t.unknown, t.typed);
}
