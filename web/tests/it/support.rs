//! The rig the browser tests share: a server with a WebSocket listener, the web client's page,
//! a fault-injecting proxy in front of the WebSocket, a terminal running a program that
//! records every byte it reads, and a headless chromium.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use phux_web::webdriver::Browser;
use serde_json::{Value, json};

/// How long any condition is waited for before a test fails: generous, for a loaded machine.
pub(crate) const PATIENCE: Duration = Duration::from_mins(1);

/// Polls `f` until it returns `Some`, failing with `what` after [`PATIENCE`].
pub(crate) fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(50));
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A static file server for `web/dist/` (the pages a server would serve), one thread.
pub(crate) struct StaticFiles {
    pub(crate) addr: SocketAddr,
}

impl StaticFiles {
    pub(crate) fn start(root: PathBuf) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let root = root.clone();
                thread::spawn(move || serve(&root, stream));
            }
        });
        Self { addr }
    }
}

fn serve(root: &Path, mut stream: TcpStream) {
    let mut line = String::new();
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    if reader.read_line(&mut line).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).map_or(true, |n| n == 0) || header == "\r\n" {
            break;
        }
    }
    let path = line.split(' ').nth(1).unwrap_or("/");
    let path = path.split('?').next().unwrap_or("/");
    let name = if path == "/" {
        "index.html"
    } else {
        path.trim_start_matches('/')
    };
    let (status, body, kind) = match std::fs::read(root.join(name)) {
        Ok(body) if !name.contains("..") => {
            let kind = match name.rsplit('.').next() {
                Some("html") => "text/html",
                Some("js") => "text/javascript",
                Some("css") => "text/css",
                _ => "application/octet-stream",
            };
            ("200 OK", body, kind)
        }
        _ => ("404 Not Found", b"not found".to_vec(), "text/plain"),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(&body);
}

/// The phux reference server with its WebSocket listener, in a scratch home.
pub(crate) struct RefServer {
    child: Child,
    pub(crate) bin: PathBuf,
    pub(crate) socket: PathBuf,
    pub(crate) ws: SocketAddr,
    pub(crate) home: tempfile::TempDir,
}

impl RefServer {
    pub(crate) fn start(bin: PathBuf) -> Self {
        let home = tempfile::tempdir().expect("tempdir");
        let run = home.path().join("run");
        std::fs::create_dir_all(&run).expect("run dir");
        let socket = run.join("ref.sock");
        let ws: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
        let child = Self::command(&bin, home.path())
            .args(["server", "--socket"])
            .arg(&socket)
            .args(["--listen", &ws.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("reference server starts");
        wait_for("the reference's WebSocket listener", || {
            TcpStream::connect(ws).ok()
        });
        Self {
            child,
            bin,
            socket,
            ws,
            home,
        }
    }

    fn command(bin: &Path, home: &Path) -> Command {
        let mut c = Command::new(bin);
        c.env("HOME", home)
            .env("XDG_RUNTIME_DIR", home.join("run"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_STATE_HOME", home.join("state"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("SHELL", "/bin/sh");
        c
    }

    /// Spawns `sh -c script` in a new terminal; its local id.
    pub(crate) fn spawn(&self, script: &str) -> u32 {
        let out = Self::command(&self.bin, self.home.path())
            .arg("--socket")
            .arg(&self.socket)
            .args(["spawn", "--", "/bin/sh", "-c", script])
            .output()
            .expect("phux spawn");
        let text = String::from_utf8_lossy(&out.stdout);
        let id = text
            .split('@')
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok());
        id.unwrap_or_else(|| panic!("no pane id in {text:?}"))
    }
}

impl Drop for RefServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A program that records every byte it reads, raw, to a file.
pub(crate) fn recorder_script(file: &Path) -> String {
    format!("stty raw -echo; exec cat > '{}'", file.display())
}

/// The page's view, as `window.phuxWeb` reports it.
pub(crate) fn status(browser: &Browser) -> Value {
    browser
        .execute(
            "return window.phuxWeb ? window.phuxWeb.status() : null",
            &[],
        )
        .unwrap_or(Value::Null)
}

/// Every operation the outbox holds (nothing is pruned under `keep=`).
pub(crate) fn ops(browser: &Browser) -> Vec<Value> {
    let v = browser
        .execute_async(
            "const done = arguments[arguments.length - 1]; window.phuxWeb.ops().then(done, e => done(String(e)));",
            &[],
        )
        .expect("ops");
    v.as_array().cloned().unwrap_or_default()
}

/// Waits until the page is connected and owns the outbox.
pub(crate) fn wait_ready(browser: &Browser) {
    wait_for("the page to connect and own the outbox", || {
        let s = status(browser);
        (s["up"] == json!(true) && s["owner"] == json!(true)).then_some(())
    });
    // The terminal has keyboard focus.
    let _ = browser.execute(
        "document.querySelector('.xterm-helper-textarea').focus()",
        &[],
    );
}
