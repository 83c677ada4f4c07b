//! The web client's files, served at `/` on the WebSocket listener (spec/websocket.md,
//! WS.SITE): built into the binary from the repository's `web/dist/` (see `build.rs`), each
//! with a strict Content-Security-Policy.

/// `(path under web/dist, bytes, whether this is the "not built" placeholder)`.
static FILES: &[(&str, &[u8], bool)] = include!(concat!(env!("OUT_DIR"), "/web_files.rs"));

/// Whether the server carries the real client (not the placeholder page).
pub fn client_built() -> bool {
    !FILES.iter().any(|(_, _, placeholder)| *placeholder)
}

/// An HTTP answer that is not an upgrade: its head, its body, and what to log (never a
/// header's value).
#[derive(Debug)]
pub struct Page {
    pub head: Vec<u8>,
    pub body: &'static [u8],
    pub why: &'static str,
}

/// A response head with `extra` header lines and a body of `len` bytes; the connection
/// closes after it.
pub fn head(code: u16, reason: &str, extra: &str, len: usize) -> Vec<u8> {
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Length: {len}\r\nConnection: close\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n{extra}\r\n"
    )
    .into_bytes()
}

/// The answer to `GET path` with the request's (checked) `Host`.
pub fn serve(path: &str, host: &[u8]) -> Page {
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let name = match path.strip_prefix('/') {
        Some("") => "index.html",
        Some(rest) => rest,
        None => "",
    };
    // Only the names in the table exist: no path is ever joined onto a directory.
    let Some((name, body, _)) = FILES.iter().find(|(n, _, _)| *n == name) else {
        return Page {
            head: head(404, "Not Found", "", 0),
            body: b"",
            why: "no such file",
        };
    };
    let host = String::from_utf8_lossy(host);
    // [WS.SITE.2] Scripts, styles and connections from this origin only; no inline script, no
    // framing, no form posts, no plugins. `connect-src` names ws:// and wss:// of the host
    // the page came from, which `'self'` does not cover in every browser.
    let csp = format!(
        "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; \
         img-src 'self' data:; font-src 'self'; connect-src 'self' ws://{host} wss://{host}; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n\
         Content-Type: {}\r\nReferrer-Policy: no-referrer\r\n\
         Cross-Origin-Opener-Policy: same-origin\r\nCross-Origin-Resource-Policy: same-origin\r\n\
         X-Frame-Options: DENY\r\n",
        content_type(name)
    );
    Page {
        head: head(200, "OK", &csp, body.len()),
        body,
        why: "a web client file",
    }
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("wasm") => "application/wasm",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_is_served_with_a_strict_policy_and_nothing_outside_the_table() {
        let Page { head, body, .. } = serve("/?x=1", b"127.0.0.1:8787");
        let head = String::from_utf8(head).expect("utf8");
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(head.contains("default-src 'none'"));
        assert!(head.contains("frame-ancestors 'none'"));
        assert!(head.contains("connect-src 'self' ws://127.0.0.1:8787 wss://127.0.0.1:8787;"));
        assert!(!body.is_empty());
        for path in [
            "/../Cargo.toml",
            "/etc/passwd",
            "//index.html",
            "/nope.js",
            "x",
        ] {
            let Page { head, .. } = serve(path, b"h");
            assert!(head.starts_with(b"HTTP/1.1 404 "), "{path}");
        }
    }
}
