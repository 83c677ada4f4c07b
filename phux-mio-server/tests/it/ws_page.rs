//! [WS.SITE.1] [WS.SITE.2] The listener serves the web client's page at `/` with a strict
//! Content-Security-Policy, under its own host names only, and nothing outside its files.

use crate::support::ws::{WsServer, raw_exchange};

fn get(server: &WsServer, path: &str, host: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n");
    String::from_utf8_lossy(&raw_exchange(server.addr, request.as_bytes())).into_owned()
}

#[test]
fn the_page_is_served_with_a_strict_policy() {
    let server = WsServer::start(&[]);
    let host = server.addr.to_string();
    let page = get(&server, "/", &host);
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    let csp = page
        .lines()
        .find(|l| l.starts_with("Content-Security-Policy: "))
        .expect("a CSP header");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(page.contains("<html"), "{page}");
    // The secret is never part of what the page is served with.
    assert!(!page.contains(&server.secret));
    // Another name for our address is refused (DNS rebinding), so is any other path.
    assert!(get(&server, "/", "rebound.example").starts_with("HTTP/1.1 403 "));
    assert!(get(&server, "/../../etc/passwd", &host).starts_with("HTTP/1.1 404 "));
    let post = raw_exchange(
        server.addr,
        format!("POST / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n").as_bytes(),
    );
    assert!(post.starts_with(b"HTTP/1.1 405 "));
}
