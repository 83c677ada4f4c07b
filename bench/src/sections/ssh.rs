//! Section 6, ssh: acknowledged input and keystroke echo through `ssh localhost
//! phux-mio-server bridge` (how `phuxctl --ssh HOST` reaches a server), against plain ssh
//! running `cat` on a PTY (`ssh -tt`: one byte there and back through a terminal, the limit any
//! terminal server behind ssh has) and on pipes, with the copying bridge (`--no-handoff`) and
//! the local socket alongside. The bench starts an sshd of
//! its own on loopback; without sshd the section is skipped with the reason.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde_json::json;

use phux_bench::client::Client;
use phux_bench::error::{Context, Error, Result};
use phux_bench::latency::{self, PhuxTerm, echo_argv};
use phux_bench::procs::{PhuxServer, self_exe};
use phux_bench::report::{Op, Report, fmt};
use phux_bench::ssh::LoopbackSsh;
use phux_bench::stats::{Summary, ratio, summarize};

use super::{latency_table, summary_json};
use crate::Plan;

/// `ssh ... cat`: one byte written, the same byte read back.
struct SshCat {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

impl SshCat {
    /// `ssh host cat`: pipes on the far side.
    fn start(ssh: &LoopbackSsh) -> Result<Self> {
        Self::spawn(&ssh.command("exec cat"))
    }

    /// `ssh -tt host cat` with the far PTY raw and silent, as a program in a terminal has it:
    /// the byte crosses the PTY to cat and cat's echo crosses it back, as a keystroke's echo
    /// in a phux terminal does. Ready once the far side says so after its `stty`.
    fn start_tty(ssh: &LoopbackSsh) -> Result<Self> {
        let mut me = Self::spawn(&ssh.command_tty("stty raw -echo; echo ready; exec cat"))?;
        let mut seen = Vec::new();
        let mut byte = [0];
        while !seen.ends_with(b"ready") {
            me.stdout
                .read_exact(&mut byte)
                .context("reading ssh -tt cat's ready line")?;
            seen.push(byte[0]);
        }
        // The line's end: CR LF (the PTY's output processing) or LF once raw.
        while byte[0] != b'\n' {
            me.stdout
                .read_exact(&mut byte)
                .context("reading ssh -tt cat's ready line")?;
        }
        Ok(me)
    }

    fn spawn(command: &str) -> Result<Self> {
        // `exec`: the child killed on drop is ssh itself, not a shell that would leave it.
        let mut child = Command::new("/bin/sh")
            .args(["-c", &format!("exec {command}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting ssh cat")?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::Protocol("ssh cat's pipes are missing".into()));
        };
        Ok(Self {
            child,
            stdin,
            stdout,
        })
    }

    fn round_trip(&mut self) -> Result<f64> {
        let t0 = Instant::now();
        self.stdin.write_all(b"x").context("writing to ssh cat")?;
        let mut byte = [0];
        self.stdout
            .read_exact(&mut byte)
            .context("reading from ssh cat")?;
        Ok(t0.elapsed().as_secs_f64() * 1e6)
    }
}

impl Drop for SshCat {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn section_ssh(
    report: &mut Report,
    plan: &Plan,
    server_bin: Option<&std::path::Path>,
) -> Result<()> {
    println!(
        "\n== 6. through ssh: `ssh localhost phux-mio-server bridge` vs `ssh localhost cat`; \
         {} rounds x {} ops ==",
        plan.lat_rounds, plan.lat_ops
    );
    let ssh = match LoopbackSsh::start() {
        Ok(ssh) => ssh,
        Err(why) => {
            report.note(format!(
                "ssh section skipped: {why} (apt-get install -y openssh-server openssh-client)"
            ));
            return Ok(());
        }
    };
    let server = PhuxServer::start(server_bin)?;
    let socket = server.socket.display().to_string();
    let bridge = match server_bin {
        Some(bin) => format!("'{}' bridge --socket '{socket}'", bin.display()),
        None => format!("'{}' __bridge --socket '{socket}'", self_exe()?.display()),
    };
    // The bridge hands ssh's pipes to the server; `--no-handoff` is the copying bridge, and
    // the local socket is the same server with no ssh at all: the three together say where
    // the time over ssh cat goes.
    let term = |command: &str| -> Result<PhuxTerm> {
        let mut client = Client::over_command(&ssh.command(command))?;
        client.hello()?;
        PhuxTerm::over(client, &echo_argv())
    };
    let mut handed = term(&bridge)?;
    let mut copied = term(&format!("{bridge} --no-handoff"))?;
    let mut local = PhuxTerm::over(server.client()?, &echo_argv())?;
    let mut cat = SshCat::start(&ssh)?;
    let mut tty_cat = SshCat::start_tty(&ssh)?;
    latency::warm_up();
    for i in 0..20u8 {
        for phux in [&mut handed, &mut copied, &mut local] {
            phux.apply()?;
            phux.echo(char::from(b'a' + i % 26))?;
        }
        cat.round_trip()?;
        tty_cat.round_trip()?;
    }
    let mut s: [Vec<f64>; 8] = Default::default();
    for _ in 0..plan.lat_rounds {
        for (k, phux) in [&mut handed, &mut copied, &mut local]
            .into_iter()
            .enumerate()
        {
            for i in 0..plan.lat_ops {
                s[2 * k].push(phux.apply()?);
                // The batch's echo is read by the next wait, never mistaken for a key's.
                s[2 * k + 1].push(phux.echo(char::from(b'k' + (i % 10) as u8))?);
            }
        }
        for _ in 0..plan.lat_ops {
            s[6].push(cat.round_trip()?);
        }
        for _ in 0..plan.lat_ops {
            s[7].push(tty_cat.round_trip()?);
        }
    }
    let sums: Vec<Option<Summary>> = s.iter().map(|v| summarize(v)).collect();
    let names = [
        "APPLY_INPUT -> OK through ssh + bridge",
        "INPUT_KEY -> echo through ssh + bridge",
        "APPLY_INPUT -> OK, bridge --no-handoff",
        "INPUT_KEY -> echo, bridge --no-handoff",
        "APPLY_INPUT -> OK on the local socket",
        "INPUT_KEY -> echo on the local socket",
        "ssh cat: 1 byte round trip",
        "ssh -tt, raw cat: 1 byte round trip",
    ];
    let refs = [
        "<= 1.2x",
        "<= 1.2x",
        "",
        "",
        "no ssh",
        "no ssh",
        "no PTY there",
        "the limit",
    ];
    // The fair limit: a phux terminal is a PTY, so the byte crosses one on the far side.
    let base = sums[7];
    print!("{}", latency_table(&names, &sums, base, &refs));
    let p50 = |i: usize| sums.get(i).copied().flatten().map(|s| s.p50);
    let p99 = |i: usize| sums.get(i).copied().flatten().map(|s| s.p99);
    // What ssh and the bridge add to the server's own path, against what ssh adds to cat's.
    let over = |i: usize| match (p50(i), p50(i + 4)) {
        (Some(a), Some(b)) => Some(a - b),
        _ => None,
    };
    println!(
        "  ssh + handed bridge add {} us (APPLY_INPUT) / {} us (echo) to the local socket's p50; \
         ssh -tt cat's whole round trip is {} us (ssh cat's {} us)",
        fmt(over(0), 1),
        fmt(over(1), 1),
        fmt(p50(7), 1),
        fmt(p50(6), 1)
    );
    for (name, i) in [("APPLY_INPUT", 0), ("echo", 1)] {
        report.target(
            format!("{name} through ssh + bridge p50 / ssh -tt cat p50"),
            ratio(p50(i), p50(7)),
            Op::AtMost,
            1.2,
        );
        report.target(
            format!("{name} through ssh + bridge p99 / ssh -tt cat p99"),
            ratio(p99(i), p99(7)),
            Op::AtMost,
            1.2,
        );
    }
    let mut doc = serde_json::Map::new();
    for (name, s) in names.iter().zip(&sums) {
        doc.insert((*name).to_owned(), summary_json(*s));
    }
    report
        .json
        .insert("ssh_latency".into(), serde_json::Value::Object(doc));
    report.json.insert("ssh".into(), json!({"bridge": bridge}));
    Ok(())
}
