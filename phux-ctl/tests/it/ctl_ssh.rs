//! `phuxctl --ssh HOST` end to end, through a real sshd: the test starts `sshd` on a loopback
//! high port with a host key, an `authorized_keys` and a config of its own in a scratch
//! directory, running as the current user, and points `ssh` at it with a config file (a shim
//! named `ssh` first on PATH adds `-F`). Over that link phuxctl spawns, sends (acknowledged),
//! reads the screen, lists and kills, with the server's socket on the "far" side: sshd runs
//! `phux-mio-server bridge --socket S`, which hands ssh's pipes to the server.

use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::support::server::server_exe;
use crate::support::{Ctl, Server, wait_until};

/// sshd, killed and reaped on drop.
struct Sshd(Child);

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_ok(cmd: &mut Command) {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write_mode(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A free loopback port (bound and released; sshd binds it a moment later).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The current user's name (sshd authenticates it).
fn user() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// Starts sshd for `dir`'s keys on a free port; the port and the process.
fn start_sshd(dir: &Path, sshd: &Path, bin: &Path) -> (u16, Sshd) {
    // sshd's privilege separation directory (root only; a packaged sshd expects it).
    let _ = std::fs::create_dir_all("/run/sshd");
    for attempt in 0..5 {
        let port = free_port();
        let config = dir.join("sshd_config");
        write_mode(
            &config,
            &format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n\
                 AuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\n\
                 PubkeyAuthentication yes\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n\
                 UsePAM no\nStrictModes no\nAllowUsers {user}\n\
                 SetEnv PATH={bin}:/usr/local/bin:/usr/bin:/bin\n",
                d = dir.display(),
                user = user(),
                bin = bin.display(),
            ),
            0o600,
        );
        let mut child = Command::new(sshd)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join(format!("sshd-{attempt}.log"))).expect("log"))
            .spawn()
            .expect("start sshd");
        let listening = wait_until(|| {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
                || child.try_wait().ok().flatten().is_some()
        });
        if listening && child.try_wait().ok().flatten().is_none() {
            return (port, Sshd(child));
        }
        // The port was taken in between, or sshd refused its config: try again, then say why.
        let _ = child.kill();
        let _ = child.wait();
    }
    let log = std::fs::read_to_string(dir.join("sshd-4.log")).unwrap_or_default();
    panic!("sshd did not start: {log}");
}

#[test]
fn phuxctl_over_ssh_spawns_sends_reads_and_kills_through_a_real_sshd() {
    phux_testkit::require_programs!("sshd", "ssh", "ssh-keygen");
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = scratch.path();
    let sshd = phux_testkit::program("sshd").expect("sshd");
    let real_ssh = phux_testkit::program("ssh").expect("ssh");
    for key in ["host_key", "user_key"] {
        run_ok(
            Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", ""])
                .arg("-f")
                .arg(dir.join(key)),
        );
    }
    let user_pub = std::fs::read_to_string(dir.join("user_key.pub")).expect("user key");
    write_mode(&dir.join("authorized_keys"), &user_pub, 0o600);

    // The far side's PATH: `phux-mio-server` is the server under test.
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).expect("bin");
    std::os::unix::fs::symlink(server_exe(), bin.join("phux-mio-server")).expect("symlink");
    let (port, _sshd) = start_sshd(dir, &sshd, &bin);

    let host_pub = std::fs::read_to_string(dir.join("host_key.pub")).expect("host key");
    write_mode(
        &dir.join("known_hosts"),
        &format!("[127.0.0.1]:{port} {host_pub}"),
        0o600,
    );
    let ssh_config = dir.join("ssh_config");
    write_mode(
        &ssh_config,
        &format!(
            "Host phux-test-host\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n\
             IdentityFile {d}/user_key\n  IdentitiesOnly yes\n  UserKnownHostsFile \
             {d}/known_hosts\n  StrictHostKeyChecking yes\n  BatchMode yes\n",
            user = user(),
            d = dir.display(),
        ),
        0o600,
    );
    // phuxctl runs `ssh` from PATH: this one is the real ssh with the test's config.
    let shim = dir.join("shim");
    std::fs::create_dir(&shim).expect("shim dir");
    write_mode(
        &shim.join("ssh"),
        &format!(
            "#!/bin/sh\nexec '{}' -F '{}' \"$@\"\n",
            real_ssh.display(),
            ssh_config.display()
        ),
        0o755,
    );
    let path = format!(
        "{}:{}",
        shim.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let server = Server::start();
    let ctl = Ctl::new(&server);
    let over_ssh = |args: &[&str]| -> Output {
        let mut cmd = ctl.command(&[]);
        cmd.args(["--ssh", "phux-test-host"])
            .args(args)
            .env("PATH", &path);
        cmd.output().expect("run phuxctl")
    };
    let ok = |args: &[&str]| -> String {
        let out = over_ssh(args);
        assert!(
            out.status.success(),
            "phuxctl --ssh {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };

    let id = ok(&["spawn", "--", "/bin/cat"]).trim().to_owned();
    assert!(id.starts_with("local:"), "spawn printed {id:?}");
    assert_eq!(
        ok(&["send", &id, "hello-over-ssh", "--key", "Enter"]).trim(),
        "delivered"
    );
    assert!(
        wait_until(|| ok(&["screen", &id]).contains("hello-over-ssh")),
        "the screen never showed what was sent: {}",
        ok(&["screen", &id])
    );
    // The same terminal, seen directly on the server's socket.
    assert!(ctl.ok(&["list"]).contains(&id));
    assert!(ok(&["list"]).contains(&id));
    ok(&["kill", &id]);
    assert!(
        wait_until(|| !ctl.ok(&["list"]).contains(&id)),
        "the terminal killed over ssh is still listed"
    );
    // Every ssh session ended with its verb: no bridge is left on the far side.
    assert!(
        wait_until(|| !bridges_running(&server.socket)),
        "a bridge outlived its ssh session"
    );
}

/// Whether a `phux-mio-server bridge` for `socket` is still running.
fn bridges_running(socket: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    let want = socket.to_string_lossy().into_owned();
    entries.filter_map(Result::ok).any(|e| {
        let cmdline: PathBuf = e.path().join("cmdline");
        std::fs::read(cmdline).is_ok_and(|c| {
            let text = String::from_utf8_lossy(&c).replace('\0', " ");
            text.contains(" bridge ") && text.contains(&want)
        })
    })
}
