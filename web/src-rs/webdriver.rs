//! A small WebDriver client for Debian's chromium through chromedriver: one browser per
//! [`Browser`], headless, with a fresh profile, ended with everything it started when dropped.
//! It speaks the W3C WebDriver protocol (JSON over HTTP/1.1, one connection per command) and
//! chromedriver's CDP passthrough for what WebDriver has no command for (crashing a tab).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The flags every test browser runs with: headless, as root, and with nothing that reaches
/// beyond this machine (no updates, sync, QUIC or background fetches).
pub const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1000,700",
];

/// A WebDriver failure: the transport, or the driver's error value.
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Self(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Where the browser and its driver are: `PHUX_CHROMIUM` / `PHUX_CHROMEDRIVER`, else Debian's
/// paths. `Err` says what is missing.
///
/// # Errors
///
/// When either program is not there.
pub fn programs() -> std::result::Result<(PathBuf, PathBuf), String> {
    let find = |var: &str, default: &str| {
        let path = std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from);
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} not found (apt-get install chromium chromium-driver, or set {var})",
                path.display()
            ))
        }
    };
    Ok((
        find("PHUX_CHROMIUM", "/usr/bin/chromium")?,
        find("PHUX_CHROMEDRIVER", "/usr/bin/chromedriver")?,
    ))
}

/// One headless chromium, driven through its own chromedriver.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    profile: tempfile_dir::Dir,
}

impl Browser {
    /// Starts chromedriver and a browser session with a new, empty profile directory.
    ///
    /// # Errors
    ///
    /// When the driver does not start or refuses the session.
    pub fn start(chromium: &Path, chromedriver: &Path) -> Result<Self> {
        let port = free_port()?;
        let profile = tempfile_dir::Dir::new("phux-web-profile")?;
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let mut browser = Self {
            driver,
            port,
            session: String::new(),
            profile,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while browser.http("GET", "/status", None).is_err() {
            if Instant::now() > deadline {
                return Err(Error("chromedriver did not answer in 30 s".into()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| (*s).to_string()).collect();
        args.push(format!(
            "--user-data-dir={}",
            browser.profile.path().display()
        ));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "timeouts": {"script": 60_000, "pageLoad": 60_000},
        }}});
        let value = browser.http("POST", "/session", Some(&caps))?;
        browser.session = value["sessionId"]
            .as_str()
            .ok_or_else(|| Error(format!("no session id in {value}")))?
            .to_string();
        Ok(browser)
    }

    fn command(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        self.http(method, &format!("/session/{}{path}", self.session), body)
    }

    /// Loads `url` in the current tab.
    ///
    /// # Errors
    ///
    /// When the driver reports one.
    pub fn goto(&self, url: &str) -> Result<()> {
        self.command("POST", "/url", Some(&json!({"url": url})))
            .map(drop)
    }

    /// Reloads the current tab.
    ///
    /// # Errors
    ///
    /// When the driver reports one.
    pub fn reload(&self) -> Result<()> {
        self.command("POST", "/refresh", Some(&json!({}))).map(drop)
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    ///
    /// # Errors
    ///
    /// When the script throws or the driver reports an error.
    pub fn execute(&self, script: &str, args: &[Value]) -> Result<Value> {
        self.command(
            "POST",
            "/execute/sync",
            Some(&json!({"script": script, "args": args})),
        )
    }

    /// Runs `script`, which calls its last argument with the result.
    ///
    /// # Errors
    ///
    /// When the script throws, times out, or the driver reports an error.
    pub fn execute_async(&self, script: &str, args: &[Value]) -> Result<Value> {
        self.command(
            "POST",
            "/execute/async",
            Some(&json!({"script": script, "args": args})),
        )
    }

    /// Types `text` as real key presses into the focused element (WebDriver key actions:
    /// the browser's own input pipeline makes the keydown events).
    ///
    /// # Errors
    ///
    /// When the driver reports one.
    pub fn type_text(&self, text: &str) -> Result<()> {
        let mut actions = Vec::new();
        for c in text.chars() {
            actions.push(json!({"type": "keyDown", "value": c.to_string()}));
            actions.push(json!({"type": "keyUp", "value": c.to_string()}));
        }
        self.command(
            "POST",
            "/actions",
            Some(&json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        )
        .map(drop)
    }

    /// Opens a new tab and returns its handle (the current tab stays current).
    ///
    /// # Errors
    ///
    /// When the driver reports one.
    pub fn new_tab(&self) -> Result<String> {
        let v = self.command("POST", "/window/new", Some(&json!({"type": "tab"})))?;
        v["handle"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| Error(format!("no handle in {v}")))
    }

    /// Makes the tab `handle` current.
    ///
    /// # Errors
    ///
    /// When the driver reports one.
    pub fn switch_to(&self, handle: &str) -> Result<()> {
        self.command("POST", "/window", Some(&json!({"handle": handle})))
            .map(drop)
    }

    /// The current tab's handle.
    ///
    /// # Errors
    ///
    /// When the driver reports one.
    pub fn current_tab(&self) -> Result<String> {
        let v = self.command("GET", "/window", None)?;
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| Error(format!("no handle in {v}")))
    }

    /// Kills the current tab's renderer process at once (CDP `Page.crash`): no unload
    /// handler runs, nothing is flushed, as when the OS kills a tab.
    pub fn crash_tab(&self) {
        // The command cannot answer: its page is gone. Its error is the expected outcome.
        let _ = self.command(
            "POST",
            "/goog/cdp/execute",
            Some(&json!({"cmd": "Page.crash", "params": {}})),
        );
    }

    /// A PNG of the current tab.
    ///
    /// # Errors
    ///
    /// When the driver reports one or its answer is not base64.
    pub fn screenshot(&self) -> Result<Vec<u8>> {
        let v = self.command("GET", "/screenshot", None)?;
        base64_decode(v.as_str().unwrap_or_default())
            .ok_or_else(|| Error("the screenshot is not base64".into()))
    }

    /// Kills the current tab's renderer, then makes a new tab current and closes the dead
    /// one (through CDP: WebDriver refuses every command while its current tab is crashed).
    /// Returns the new tab's handle.
    ///
    /// # Errors
    ///
    /// When the driver reports one.
    pub fn crash_tab_and_replace(&self) -> Result<String> {
        let dead = self.current_tab()?;
        let next = self.new_tab()?;
        self.crash_tab();
        self.switch_to(&next)?;
        // chromedriver's window handles are DevTools target ids.
        let _ = self.command(
            "POST",
            "/goog/cdp/execute",
            Some(&json!({"cmd": "Target.closeTarget", "params": {"targetId": dead}})),
        );
        Ok(next)
    }

    /// Sends one HTTP request to chromedriver and returns the response's `value`.
    fn http(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_mins(2)))?;
        let body = body.map(Value::to_string).unwrap_or_default();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        )?;
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status)?;
        let mut length = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 || line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse::<usize>().ok();
            }
        }
        let mut raw = Vec::new();
        match length {
            Some(n) => {
                raw.resize(n, 0);
                reader.read_exact(&mut raw)?;
            }
            None => {
                reader.read_to_end(&mut raw)?;
            }
        }
        let reply: Value = serde_json::from_slice(&raw)
            .map_err(|e| Error(format!("{method} {path}: {status}: {e}")))?;
        let value = reply.get("value").cloned().unwrap_or(Value::Null);
        if let Some(error) = value.get("error") {
            return Err(Error(format!(
                "{method} {path}: {error}: {}",
                value["message"].as_str().unwrap_or("")
            )));
        }
        Ok(value)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.http("DELETE", &format!("/session/{}", self.session), None);
        }
        // chromedriver and every browser process it started share its process group.
        if let Ok(pid) = i32::try_from(self.driver.id())
            && let Some(pid) = rustix::process::Pid::from_raw(pid)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.driver.wait();
    }
}

/// Standard base64 (with padding), as WebDriver sends screenshots.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let bytes: Vec<u8> = text.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let [_, a, b, c] = n.to_be_bytes();
        out.extend_from_slice(&[a, b, c][..chunk.len().saturating_sub(1)]);
    }
    Some(out)
}

fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A private scratch directory removed on drop (the crate's one use of a temp dir outside
/// tests).
mod tempfile_dir {
    use std::path::{Path, PathBuf};

    pub(super) struct Dir(PathBuf);

    impl Dir {
        pub(super) fn new(prefix: &str) -> std::io::Result<Self> {
            let mut bytes = [0u8; 8];
            rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty())
                .map_err(std::io::Error::from)?;
            let name = bytes.iter().fold(String::new(), |mut s, b| {
                use std::fmt::Write as _;
                let _ = write!(s, "{b:02x}");
                s
            });
            let path = std::env::temp_dir().join(format!("{prefix}-{name}"));
            std::fs::create_dir(&path)?;
            Ok(Self(path))
        }

        pub(super) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
