//! The upgrade's memory, on a heavy server: 100 terminals of 2,000 lines of history each, and
//! 30 viewers attached to all of them that never read, their queues full of the terminals'
//! output (frames of their own: each viewer's were printed after it attached), upgraded once. Measured: the server's RSS
//! settled before, its peak while the upgrade runs (sampled every millisecond, the server and
//! its trial-adoption child), settled after; the image's size (from the server's log); and
//! the pause (the UPGRADE request to its OK, and an honest client's longest ping).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use phux_proto::command::{Command, CommandResult};

use crate::error::{Error, Result};
use crate::payload::line_text;
use crate::procs::{PhuxServer, rss_split_kib, settled_rss};
use crate::scale::{Fill, fill_file, spawn_many};
use crate::stats::summarize;
use crate::upgrade::{honest_pinger, server_binary};

/// Terminals, each with a full history.
pub const HEAVY_TERMINALS: usize = 100;
/// Viewers attached to every terminal that never read.
pub const VIEWERS: usize = 30;

/// What the heavy upgrade took.
#[derive(Debug, Clone)]
pub struct Heavy {
    /// The image the server wrote, bytes (from its log).
    pub image_bytes: Option<u64>,
    /// The server's RSS settled before the upgrade, KiB.
    pub before_kib: u64,
    /// The server process's highest RSS sampled during the upgrade, KiB (after the exec,
    /// the mapped image counts in it).
    pub peak_kib: u64,
    /// The highest sum of the server's and its trial-adoption child's private memory (RSS
    /// less shared memory) sampled at once, plus the image once (the memfd both map, which
    /// exists from its writing until the new image has read it): an upper bound of what the
    /// machine held at the worst moment, KiB.
    pub peak_with_trial_kib: u64,
    /// The server's RSS settled after the upgrade, KiB.
    pub after_kib: u64,
    /// The UPGRADE request to its OK.
    pub request_to_ok: Duration,
    /// The honest client's longest ping round trip over the upgrade.
    pub longest_ping: Option<Duration>,
}

/// Runs the measurement.
pub fn measure_heavy(server_bin: Option<&Path>) -> Result<Heavy> {
    let bin = server_binary(server_bin)?;
    let dir = tempfile::tempdir().map_err(|e| Error::Protocol(format!("tempdir: {e}")))?;
    let log = dir.path().join("server.log");
    let server = PhuxServer::start_logged(Some(&bin), Some(&log))?;
    let file = fill_file(dir.path(), Fill::History)?;
    // The history, then again on each line of input: output to fill the viewers' queues.
    let argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        "cat \"$0\"; while read x; do cat \"$0\"; echo \"round $x\"; done".to_owned(),
        file.to_string_lossy().into_owned(),
    ];
    let mut setup = server.client()?;
    let ids = spawn_many(&mut setup, &argv, HEAVY_TERMINALS)?;
    let want = String::from_utf8_lossy(&line_text(2023)).into_owned();
    let end = Instant::now() + Duration::from_mins(10);
    for id in &ids {
        while !setup.screen(id)?.contains(&want) {
            if Instant::now() > end {
                return Err(Error::Protocol(format!("{id} never showed its history")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut viewers = Vec::with_capacity(VIEWERS);
    for round in 0..VIEWERS {
        let mut v = server.client()?;
        for id in &ids {
            v.attach(id)?;
        }
        // From here on it reads nothing. Each terminal prints its history again for it; the
        // viewers attached before it hold full queues already, so no two viewers hold the
        // same frames (the worst case for the image: frames shared are written once).
        viewers.push(v);
        let line = format!("{round}\r");
        for id in &ids {
            let paste = setup.apply_paste(id, line.as_bytes());
            match setup.command(paste)? {
                CommandResult::Ok => {}
                other => return Err(Error::Protocol(format!("the line to {id}: {other:?}"))),
            }
        }
        let done = format!("round {round}");
        for id in &ids {
            while !setup.screen(id)?.contains(&done) {
                if Instant::now() > end {
                    return Err(Error::Protocol(format!("{id} never printed {done}")));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let pid = server.pid();
    let before_kib = settled_rss(pid, Duration::from_secs(2), Duration::from_mins(2))?;
    let terminals: BTreeSet<u32> = children(pid).into_iter().collect();
    let stop = AtomicBool::new(false);
    let sampling = AtomicBool::new(true);
    let socket = server.socket.clone();
    let (request_to_ok, peaks, pings) = std::thread::scope(|s| -> Result<_> {
        let honest = s.spawn(|| honest_pinger(&socket, &stop));
        let sampler = s.spawn(|| sample_peaks(pid, &terminals, &sampling));
        std::thread::sleep(Duration::from_millis(200));
        let t0 = Instant::now();
        let answer = setup.command(Command::Upgrade { binary: None });
        let took = t0.elapsed();
        // The pinger's last round trips and the new image's first moments after the OK.
        std::thread::sleep(Duration::from_millis(300));
        sampling.store(false, Ordering::SeqCst);
        stop.store(true, Ordering::SeqCst);
        let peaks = sampler
            .join()
            .map_err(|_| Error::Protocol("the sampler panicked".into()))?;
        let pings = honest
            .join()
            .map_err(|_| Error::Protocol("the pinger panicked".into()))??;
        match answer? {
            CommandResult::Ok => Ok((took, peaks, pings)),
            other => Err(Error::Protocol(format!("upgrade answered {other:?}"))),
        }
    })?;
    let after_kib = settled_rss(pid, Duration::from_secs(2), Duration::from_mins(2))?;
    drop(viewers);
    let image_bytes = std::fs::read_to_string(&log)
        .ok()
        .and_then(|text| logged_image_bytes(&text));
    Ok(Heavy {
        image_bytes,
        before_kib,
        peak_kib: peaks.0.max(before_kib),
        peak_with_trial_kib: peaks.1 + image_bytes.map_or(0, |b| b.div_ceil(1024)),
        after_kib,
        request_to_ok,
        longest_ping: summarize(&pings).map(|s| Duration::from_micros(s.max as u64)),
    })
}

/// Samples every millisecond until `sampling` is cleared: the highest RSS of `pid`, and the
/// highest sum of the private memory (RSS less shared memory, such as the mapped image) of
/// `pid` and of its child running the trial adoption (not one of `terminals`, and only once it
/// has exec'd: [`runs_the_check`]), KiB.
fn sample_peaks(pid: u32, terminals: &BTreeSet<u32>, sampling: &AtomicBool) -> (u64, u64) {
    let (mut alone, mut private) = (0, 0);
    while sampling.load(Ordering::SeqCst) {
        let (own, own_private) = rss_split_kib(pid).unwrap_or_default();
        let trial: u64 = children(pid)
            .into_iter()
            .filter(|c| !terminals.contains(c) && runs_the_check(*c))
            .filter_map(|c| rss_split_kib(c).map(|(_, p)| p))
            .sum();
        alone = alone.max(own);
        private = private.max(own_private + trial);
        std::thread::sleep(Duration::from_millis(1));
    }
    (alone, private)
}

/// Whether child `pid` has become the trial adoption: its command line names `--check-adopt`.
/// Between its fork and its exec a child still shares the server's pages (the same memory,
/// or copy-on-write), and /proc counts them in both: one run's sample caught that moment and
/// summed the server's private memory twice.
fn runs_the_check(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|argv| names_check_adopt(&argv))
}

/// Whether a /proc cmdline (NUL-separated arguments) holds the argument `--check-adopt`.
fn names_check_adopt(cmdline: &[u8]) -> bool {
    cmdline
        .split(|&b| b == 0)
        .any(|arg| arg == b"--check-adopt")
}

/// The children of `pid`, as /proc lists them.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|text| {
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `image_bytes=N` from the server's `upgrade: exec` log line.
fn logged_image_bytes(log: &str) -> Option<u64> {
    let line = log.lines().find(|l| l.contains("upgrade: exec"))?;
    let start = line.find("image_bytes=")? + "image_bytes=".len();
    let digits: String = line[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_child_that_runs_the_check_counts_as_the_trial() {
        assert!(names_check_adopt(
            b"/usr/bin/phux-mio-server\0--check-adopt\0"
        ));
        assert!(!names_check_adopt(
            b"/usr/bin/phux-mio-server\0--socket\0/tmp/s\0"
        ));
        assert!(!names_check_adopt(
            b"/usr/bin/phux-mio-server\0--check-adopt-x\0"
        ));
        assert!(!names_check_adopt(b""));
    }

    #[test]
    fn the_image_size_is_read_from_the_exec_line() {
        let log = "2026-12-07T12:00:00Z  INFO upgrade: checking\n\
                   2026-12-07T12:00:01Z  INFO phux_mio_server::driver::handover: upgrade: exec \
                   binary=/x image_bytes=168820736 conns=31 terminals=100\n";
        assert_eq!(logged_image_bytes(log), Some(168_820_736));
        assert_eq!(logged_image_bytes("nothing"), None);
    }
}
