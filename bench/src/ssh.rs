//! An sshd of the bench's own on a loopback port, for the section that reaches the server
//! the way a remote user does (`ssh HOST phux-mio-server bridge`): its own host key, its own
//! client key, this user only, gone with the value. Where sshd, ssh or ssh-keygen is missing
//! (or sshd will not start here) the section is skipped with the reason.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long sshd gets to accept a first login.
const START: Duration = Duration::from_secs(15);

/// A running loopback sshd and how to log in to it.
#[derive(Debug)]
pub struct LoopbackSsh {
    sshd: Child,
    port: u16,
    key: PathBuf,
    dir: tempfile::TempDir,
}

fn find(tool: &str, also: &[&str]) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain(also.iter().map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

fn keygen(keygen: &Path, path: &Path) -> Result<(), String> {
    let ok = Command::new(keygen)
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(())
        .ok_or_else(|| format!("ssh-keygen could not make {}", path.display()))
}

impl LoopbackSsh {
    /// Starts sshd on a free loopback port and waits until a login works; `Err` says why
    /// there is none.
    pub fn start() -> Result<Self, String> {
        let sshd = find("sshd", &["/usr/sbin", "/usr/local/sbin"]).ok_or("no sshd")?;
        let ssh_keygen = find("ssh-keygen", &[]).ok_or("no ssh-keygen")?;
        find("ssh", &[]).ok_or("no ssh")?;
        let dir = tempfile::tempdir().map_err(|e| format!("scratch directory: {e}"))?;
        let d = dir.path();
        keygen(&ssh_keygen, &d.join("host_key"))?;
        keygen(&ssh_keygen, &d.join("user_key"))?;
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys"))
            .map_err(|e| format!("authorized_keys: {e}"))?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("a free port: {e}"))?
            .port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nAuthorizedKeysFile {keys}\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\nPidFile {pid}\n",
            host = d.join("host_key").display(),
            keys = d.join("authorized_keys").display(),
            pid = d.join("sshd.pid").display(),
        );
        std::fs::write(d.join("sshd_config"), config).map_err(|e| format!("sshd_config: {e}"))?;
        if rustix::process::geteuid().is_root() {
            // sshd's privilege-separation directory; packaged sshd expects it.
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let log = std::fs::File::create(d.join("sshd.log")).map_err(|e| format!("log: {e}"))?;
        let child = Command::new(&sshd)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting sshd: {e}"))?;
        let me = Self {
            sshd: child,
            port,
            key: d.join("user_key"),
            dir,
        };
        let end = Instant::now() + START;
        loop {
            let ok = Command::new("/bin/sh")
                .args(["-c", &me.command("true")])
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return Ok(me);
            }
            if Instant::now() >= end {
                let log =
                    std::fs::read_to_string(me.dir.path().join("sshd.log")).unwrap_or_default();
                return Err(format!("no login through sshd: {}", log.trim()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The shell command line that runs `remote` (one shell word list, as ssh takes it)
    /// on this sshd, without a terminal on the far side.
    pub fn command(&self, remote: &str) -> String {
        self.command_with("-T", remote)
    }

    /// [`Self::command`] with a terminal on the far side (`ssh -tt`), as a login through ssh
    /// has: what is sent crosses a PTY there, as it does into a phux terminal.
    pub fn command_tty(&self, remote: &str) -> String {
        self.command_with("-tt -e none", remote)
    }

    fn command_with(&self, tty: &str, remote: &str) -> String {
        format!(
            "ssh -q {tty} -i '{}' -p {} -o StrictHostKeyChecking=no \
             -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR 127.0.0.1 '{}'",
            self.key.display(),
            self.port,
            remote.replace('\'', r"'\''")
        )
    }
}

impl Drop for LoopbackSsh {
    fn drop(&mut self) {
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
    }
}
