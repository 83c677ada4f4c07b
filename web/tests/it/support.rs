//! The rig the browser tests share: a server with a WebSocket listener, the web client's page,
//! a fault-injecting proxy in front of the WebSocket, a terminal running a program that
//! records every byte it reads, and a headless chromium.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use phux_web::proxy::FaultProxy;

pub(crate) use crate::ours::OurServer;
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
    /// Serves `root` with the Content-Security-Policy our server sends (spec/websocket.md,
    /// WS.SITE.2), its `connect-src` naming `ws`, where the page's WebSocket goes.
    pub(crate) fn start(root: PathBuf, ws: SocketAddr) -> Self {
        let csp = format!(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             font-src 'self'; connect-src 'self' ws://{ws}; base-uri 'none'; form-action 'none'; \
             frame-ancestors 'none'"
        );
        Self::serve_with(root, csp)
    }

    /// Serves `root` with no policy at all (a page of someone else's).
    pub(crate) fn start_plain(root: PathBuf) -> Self {
        Self::serve_with(root, String::new())
    }

    fn serve_with(root: PathBuf, csp: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let root = root.clone();
                let csp = csp.clone();
                thread::spawn(move || serve(&root, &csp, stream));
            }
        });
        Self { addr }
    }
}

fn serve(root: &Path, csp: &str, mut stream: TcpStream) {
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
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n{}Content-Length: {}\r\nConnection: close\r\n\r\n",
        if csp.is_empty() {
            String::new()
        } else {
            format!("Content-Security-Policy: {csp}\r\n")
        },
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
    /// The reference with its WebSocket listener on `ws`.
    pub(crate) fn start_on(bin: PathBuf, ws: SocketAddr) -> Self {
        let home = tempfile::tempdir().expect("tempdir");
        let run = home.path().join("run");
        std::fs::create_dir_all(&run).expect("run dir");
        let socket = run.join("ref.sock");
        let child = Self::launch(&bin, home.path(), &socket, ws);
        Self {
            child,
            bin,
            socket,
            ws,
            home,
        }
    }

    fn launch(bin: &Path, home: &Path, socket: &Path, ws: SocketAddr) -> Child {
        let child = Self::command(bin, home)
            .args(["server", "--socket"])
            .arg(socket)
            .args(["--listen", &ws.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("reference server starts");
        wait_for("the reference's WebSocket listener", || {
            TcpStream::connect(ws).ok()
        });
        child
    }

    /// Stops the server and starts a new one (a new incarnation) on the same addresses.
    pub(crate) fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
        self.child = Self::launch(&self.bin, self.home.path(), &self.socket, self.ws);
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

/// Every test's arrangement: server, proxy, page, browser, and the recording terminal.
/// The server under test: ours (the default), or the phux reference's WebSocket listener.
pub(crate) enum Server {
    Ours(OurServer),
    Reference(RefServer),
}

impl Server {
    fn spawn(&self, script: &str) -> u32 {
        match self {
            Self::Ours(s) => s.spawn(script),
            Self::Reference(s) => s.spawn(script),
        }
    }

    /// Stops the server and starts a new incarnation (a new `server_id`) in its place.
    pub(crate) fn restart(&mut self) {
        match self {
            Self::Ours(s) => s.restart(),
            Self::Reference(s) => s.restart(),
        }
    }

    fn scratch(&self) -> &Path {
        match self {
            Self::Ours(s) => s.dir.path(),
            Self::Reference(s) => s.home.path(),
        }
    }
}

/// Every test's arrangement: server, proxy, page, browser, and the recording terminal.
pub(crate) struct Rig {
    pub(crate) server: Server,
    pub(crate) proxy: FaultProxy,
    /// The page's own server, for the reference (ours serves the page itself).
    page: Option<StaticFiles>,
    pub(crate) browser: Browser,
    pub(crate) record: PathBuf,
    pub(crate) terminal: u32,
    /// Extra page parameters (timings).
    pub(crate) query: String,
}

impl Rig {
    /// A rig on our server whose page checks its link every `ping_ms` (and gives a PING as
    /// long again to answer).
    /// (On the phux reference's listener when our server has none, `--listen-ws`.)
    pub(crate) fn start(ping_ms: u32) -> Result<Self, String> {
        Self::start_on(ping_ms, !OurServer::available(), None)
    }

    /// A rig on our server only: `Err` (a skip) when it has no WebSocket listener.
    pub(crate) fn start_ours(ping_ms: u32) -> Result<Self, String> {
        Self::start_on(ping_ms, false, None)
    }

    /// A rig on our server whose terminal runs `sh -c script` instead of the recorder.
    pub(crate) fn start_running(script: &str) -> Result<Self, String> {
        Self::start_on(3000, false, Some(script))
    }

    /// The same on the phux reference's WebSocket listener.
    pub(crate) fn start_on_reference(ping_ms: u32) -> Result<Self, String> {
        Self::start_on(ping_ms, true, None)
    }

    fn start_on(ping_ms: u32, reference: bool, script: Option<&str>) -> Result<Self, String> {
        let (chromium, driver) = phux_web::webdriver::programs()?;
        if !reference && !OurServer::available() {
            return Err("this server has no WebSocket listener (--listen-ws)".into());
        }
        // The server's port is chosen first: the proxy in front of it is the origin the
        // browser sees, and our server must be told it (--ws-origin).
        let ws: SocketAddr = format!("127.0.0.1:{}", free_port())
            .parse()
            .map_err(|e| format!("{e}"))?;
        let proxy = FaultProxy::start(ws).map_err(|e| e.to_string())?;
        let (server, page) = if reference {
            let server = RefServer::start_on(phux_testkit::reference_bin()?, ws);
            let page = StaticFiles::start(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("dist"),
                proxy.addr(),
            );
            (Server::Reference(server), Some(page))
        } else {
            let origin = format!("http://{}", proxy.addr());
            (Server::Ours(OurServer::start(ws, &origin)), None)
        };
        let record = server.scratch().join("typed");
        let terminal =
            server.spawn(&script.map_or_else(|| recorder_script(&record), str::to_owned));
        let browser = Browser::start(&chromium, &driver).map_err(|e| e.to_string())?;
        let rig = Self {
            server,
            proxy,
            page,
            browser,
            record,
            terminal,
            query: format!("ping={ping_ms}&pingTimeout={}&keep=1000000", ping_ms * 2),
        };
        rig.browser.goto(&rig.url()).expect("the page loads");
        wait_ready(&rig.browser);
        Ok(rig)
    }

    /// Our server (for a test that only runs there).
    pub(crate) fn ours(&self) -> &OurServer {
        match &self.server {
            Server::Ours(s) => s,
            Server::Reference(_) => panic!("this test runs on our server"),
        }
    }

    /// How many inputs the page's list shows in `state` (its CSS class).
    pub(crate) fn shown(&self, state: &str) -> Option<u64> {
        self.browser
            .execute(
                "return document.querySelectorAll('#ops li.' + arguments[0]).length",
                &[Value::from(state)],
            )
            .ok()?
            .as_u64()
    }

    /// The listener's secret (our server's; the reference has none on loopback).
    pub(crate) fn secret(&self) -> Option<&str> {
        match &self.server {
            Server::Ours(s) => Some(&s.secret),
            Server::Reference(_) => None,
        }
    }

    /// The page's address: from our server through the proxy, with the secret in the
    /// fragment as a user opens it; or from the test's file server for the reference.
    pub(crate) fn url(&self) -> String {
        match (&self.server, &self.page) {
            (Server::Ours(s), _) => format!(
                "http://{}/?t={}&{}#secret={}",
                self.proxy.addr(),
                self.terminal,
                self.query,
                s.secret
            ),
            (Server::Reference(_), page) => format!(
                "http://{}/index.html?ws=ws://{}/&t={}&{}",
                page.as_ref().map_or_else(|| self.proxy.addr(), |p| p.addr),
                self.proxy.addr(),
                self.terminal,
                self.query
            ),
        }
    }

    /// The bytes the program has read so far.
    pub(crate) fn recorded(&self) -> Vec<u8> {
        std::fs::read(&self.record).unwrap_or_default()
    }

    /// Waits until the page has loaded its outbox (connected or not) and has focus.
    pub(crate) fn wait_page(&self) {
        wait_for("the page's outbox", || {
            let s = status(&self.browser);
            (!s.is_null()).then_some(())
        });
        let _ = self.browser.execute(
            "document.querySelector('.xterm-helper-textarea').focus()",
            &[],
        );
    }

    /// Kills the current tab's renderer (nothing flushed, no unload handler), then opens the
    /// page in a new tab, as a user does after a tab died.
    pub(crate) fn kill_tab_and_reopen(&self) {
        self.browser.crash_tab_and_replace().expect("a new tab");
        self.browser
            .goto(&self.url())
            .expect("the page loads again");
        self.wait_page();
    }

    /// Waits until no input is left to send, and returns every operation. A backlog drains at
    /// its own pace: this fails only when nothing has been resolved for [`PATIENCE`], and then
    /// reports one snapshot of the page (its sender's step and the head of its outbox, read
    /// together, so the report never mixes two moments).
    pub(crate) fn settle(&self) -> Vec<Value> {
        let mut least = u64::MAX;
        let mut progress = Instant::now();
        loop {
            let left = pending(&self.browser);
            if left == Some(0) {
                return ops(&self.browser);
            }
            if let Some(n) = left.filter(|&n| n < least) {
                least = n;
                progress = Instant::now();
            }
            assert!(
                progress.elapsed() < PATIENCE,
                "the outbox did not drain: nothing resolved for {PATIENCE:?} with {least} left; \
                 the page: {}",
                diagnose(&self.browser)
            );
            thread::sleep(Duration::from_millis(200));
        }
    }
}

/// How many operations the page's outbox has not resolved (a count, not a read of them).
pub(crate) fn pending(browser: &Browser) -> Option<u64> {
    browser
        .execute_async(
            "const done = arguments[arguments.length - 1]; window.phuxWeb.pending().then(done, () => done(null));",
            &[],
        )
        .ok()?
        .as_u64()
}

/// What a run typed, what the outbox resolved, and what the program read, compared: every
/// applied key read exactly once and in order, every key read at most once, and the keys that
/// may or may not have been read only those shown `unknown`.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) typed: usize,
    pub(crate) applied: usize,
    pub(crate) unknown: usize,
    pub(crate) unknown_read: usize,
    pub(crate) other: usize,
    pub(crate) lost: usize,
    pub(crate) duplicated: usize,
}

/// Compares the operations (each one typed character, oldest first) with the bytes read.
pub(crate) fn tally(typed: &str, ops: &[Value], read: &[u8]) -> Tally {
    let mut t = Tally {
        typed: typed.chars().count(),
        ..Tally::default()
    };
    let labels: String = ops
        .iter()
        .map(|o| o["label"].as_str().unwrap_or("?"))
        .map(|l| if l == "Space" { " " } else { l })
        .collect();
    assert_eq!(
        labels, typed,
        "the outbox recorded every key typed, in order"
    );
    let mut at = 0;
    for o in ops {
        let label = o["label"].as_str().unwrap_or("?");
        let c = if label == "Space" {
            b' '
        } else {
            label.as_bytes()[0]
        };
        match o["state"].as_str() {
            Some("applied") => {
                t.applied += 1;
                if read.get(at) == Some(&c) {
                    at += 1;
                } else {
                    t.lost += 1;
                }
            }
            Some("unknown") => {
                t.unknown += 1;
                if read.get(at) == Some(&c) {
                    at += 1;
                    t.unknown_read += 1;
                }
            }
            _ => t.other += 1,
        }
    }
    // Whatever the program read beyond the keys matched is a key written twice (or junk).
    t.duplicated = read.len() - at;
    t
}

/// One browser test at a time: each runs a chromium, and two at once on a 2-core machine
/// only slow each other down.
pub(crate) fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Starts a rig (on our server; `reference` for the phux reference's), or records a skip
/// and returns from the test.
macro_rules! rig_or_skip {
    (ours $ping:expr) => {
        match $crate::support::Rig::start_ours($ping) {
            Ok(rig) => rig,
            Err(why) => {
                phux_testkit::skip!("{why}");
                return;
            }
        }
    };
    (reference $ping:expr) => {
        match $crate::support::Rig::start_on_reference($ping) {
            Ok(rig) => rig,
            Err(why) => {
                phux_testkit::skip!("{why}");
                return;
            }
        }
    };
    ($ping:expr) => {
        match $crate::support::Rig::start($ping) {
            Ok(rig) => rig,
            Err(why) => {
                phux_testkit::skip!("{why}");
                return;
            }
        }
    };
}
pub(crate) use rig_or_skip;

/// The page at one moment: its status (the sender's step, its last error), the head of its
/// outbox, and, from a second IndexedDB connection, which stores a read and a read-write transaction
/// reach within 5 s, and the page's Web Locks.
pub(crate) fn diagnose(browser: &Browser) -> Value {
    browser
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
const within = (p, ms = 5000) => Promise.race([p, new Promise((r) => setTimeout(() => r("TIMEOUT"), ms))]);
const tx = (db, stores, mode, f) => new Promise((res, rej) => {
  const t = db.transaction(stores, mode);
  const out = f(t);
  t.oncomplete = () => res(out.v === undefined ? "complete" : out.v);
  t.onabort = () => rej(String(t.error));
});
(async () => {
  const r = {};
  const db = await new Promise((res, rej) => { const q = indexedDB.open("phux-web"); q.onsuccess = () => res(q.result); q.onerror = () => rej(q.error); });
  r.status = window.phuxWeb ? window.phuxWeb.status() : null;
  r.head = await within(tx(db, ["ops"], "readonly", (t) => { const o = { v: [] }; const q = t.objectStore("ops").index("pending").openCursor(); q.onsuccess = () => { const c = q.result; if (!c || o.v.length >= 4) return; const { events, ...rest } = c.value; o.v.push(rest); c.continue(); }; return o; }));
  r.pendingIndex = await within(tx(db, ["ops"], "readonly", (t) => { const o = {}; const q = t.objectStore("ops").index("pending").getAllKeys(); q.onsuccess = () => o.v = q.result.slice(0, 12); return o; }));
  r.pendingRecords = await within(tx(db, ["ops"], "readonly", (t) => { const o = {}; const q = t.objectStore("ops").getAll(); q.onsuccess = () => o.v = q.result.filter((x) => x.pending === 1).slice(0, 12).map((x) => [x.seq, x.state]); return o; }));
  r.readStats = await within(tx(db, ["stats"], "readonly", (t) => { const o = {}; const q = t.objectStore("stats").getAll(); q.onsuccess = () => o.v = q.result; return o; }));
  r.writeMeta = await within(tx(db, ["meta"], "readwrite", (t) => { t.objectStore("meta").get("server"); return {}; }));
  r.writeStats = await within(tx(db, ["stats"], "readwrite", (t) => { t.objectStore("stats").get("applied"); return {}; }));
  r.writeOps = await within(tx(db, ["ops"], "readwrite", (t) => { t.objectStore("ops").get(1); return {}; }));
  r.locks = await within(navigator.locks.query());
  db.close();
  return r;
})().then(done, (e) => done("diagnosis failed: " + String(e)));"#,
            &[],
        )
        .unwrap_or_else(|e| Value::from(e.to_string()))
}
