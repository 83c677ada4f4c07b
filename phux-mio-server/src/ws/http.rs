//! The listener's one HTTP request per connection, as a pure function of its bytes: a
//! WebSocket upgrade that passes every check, a file of the web client, or a refusal.
//!
//! Nothing here reads or writes a socket; [`super::listener`] gathers the request (bounded
//! in size and time) and writes the answer.

use base64::Engine as _;
use sha1::{Digest, Sha1};

use super::auth::{Origins, PROTOCOL, SECRET_PREFIX, Secret};
use super::site::{self, head};

/// [WS.HANDSHAKE.1] The largest request we read: a browser's upgrade request is well under
/// 2 KiB; more is refused rather than buffered.
pub const MAX_REQUEST: usize = 8 * 1024;

/// The most header lines a request may have.
const MAX_HEADERS: usize = 48;

/// RFC 6455 §1.3: appended to the client's key before hashing.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// What the request asks for, once whole.
#[derive(Debug)]
pub enum Answer {
    /// Not whole yet: read more.
    Partial,
    /// A WebSocket that passed every check: write `response`, then speak frames; the first
    /// `consumed` bytes were the request (the rest are the client's first frames).
    Upgrade { response: Vec<u8>, consumed: usize },
    /// Anything else: write `head` then `body`, then close.
    Respond {
        head: Vec<u8>,
        body: &'static [u8],
        /// What to log (never a header's value).
        why: &'static str,
    },
}

/// The listener's checks, in one place.
#[derive(Debug)]
pub struct Policy {
    pub origins: Origins,
    pub secret: Secret,
}

impl Policy {
    /// Decides what to do with the request in `buf` so far.
    pub fn answer(&self, buf: &[u8]) -> Answer {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        let consumed = match req.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if buf.len() < MAX_REQUEST => return Answer::Partial,
            Ok(httparse::Status::Partial) => {
                return refuse(431, "Request Header Fields Too Large", "request too large");
            }
            Err(httparse::Error::TooManyHeaders) => {
                return refuse(431, "Request Header Fields Too Large", "too many headers");
            }
            Err(_) => return refuse(400, "Bad Request", "malformed request"),
        };
        if req.version != Some(1) {
            return refuse(505, "HTTP Version Not Supported", "not HTTP/1.1");
        }
        let header = |name: &str| {
            req.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value)
        };
        let host_ok = self.origins.host_ok(header("host"));
        let upgrade = header("upgrade").is_some_and(|v| has_token(v, "websocket"));
        if !upgrade {
            if req.method != Some("GET") {
                return refuse(405, "Method Not Allowed", "not GET");
            }
            // [WS.ORIGIN.3] A page is served under our own names only (DNS rebinding).
            if !host_ok {
                return forbidden();
            }
            let page = site::serve(req.path.unwrap_or("/"), header("host").unwrap_or_default());
            return Answer::Respond {
                head: page.head,
                body: page.body,
                why: page.why,
            };
        }
        if req.method != Some("GET") {
            return refuse(405, "Method Not Allowed", "not GET");
        }
        // [WS.AUTH.1] [WS.ORIGIN.1] Every check is made, whichever fails, and every failure
        // gets the same answer: which one failed is not told.
        let origin_ok = self.origins.origin_ok(header("origin"));
        let protocols = || {
            req.headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case("sec-websocket-protocol"))
                .flat_map(|h| h.value.split(|&b| b == b','))
                .map(<[u8]>::trim_ascii)
        };
        let mut secret_ok = false;
        for p in protocols() {
            if let Some(presented) = p.strip_prefix(SECRET_PREFIX.as_bytes()) {
                secret_ok |= self.secret.matches(presented);
            }
        }
        if !(host_ok && origin_ok && secret_ok) {
            return forbidden();
        }
        if !header("connection").is_some_and(|v| has_token(v, "upgrade")) {
            return refuse(400, "Bad Request", "no Connection: upgrade");
        }
        if header("sec-websocket-version") != Some(b"13") {
            return Answer::Respond {
                head: head(426, "Upgrade Required", "Sec-WebSocket-Version: 13\r\n", 0),
                body: b"",
                why: "unsupported WebSocket version",
            };
        }
        let Some(key) = header("sec-websocket-key").filter(|k| key_ok(k)) else {
            return refuse(400, "Bad Request", "bad Sec-WebSocket-Key");
        };
        if !protocols().any(|p| p == PROTOCOL.as_bytes()) {
            return refuse(400, "Bad Request", "the phux subprotocol was not offered");
        }
        let mut sha = Sha1::new();
        sha.update(key);
        sha.update(ACCEPT_GUID.as_bytes());
        let accept = base64::engine::general_purpose::STANDARD.encode(sha.finalize());
        let response = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: {PROTOCOL}\r\n\r\n"
        );
        Answer::Upgrade {
            response: response.into_bytes(),
            consumed,
        }
    }
}

/// A key is the base64 of 16 bytes.
fn key_ok(key: &[u8]) -> bool {
    base64::engine::general_purpose::STANDARD
        .decode(key)
        .is_ok_and(|k| k.len() == 16)
}

/// Whether a comma-separated header value holds `token` (case-insensitive).
fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

fn refuse(code: u16, reason: &str, why: &'static str) -> Answer {
    Answer::Respond {
        head: head(code, reason, "", 0),
        body: b"",
        why,
    }
}

/// [WS.AUTH.1] One answer for every refused upgrade (origin, host or secret): no frame, no
/// hint.
pub fn forbidden() -> Answer {
    refuse(403, "Forbidden", "refused: origin, host or secret")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> (Policy, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let secret = Secret::load_or_create(&dir.path().join("s")).expect("secret");
        let origins = Origins::new("127.0.0.1:8787".parse().expect("addr"), &[], false);
        (Policy { origins, secret }, dir)
    }

    fn upgrade(origin: &str, protocols: &str) -> String {
        format!(
            "GET / HTTP/1.1\r\nHost: 127.0.0.1:8787\r\nUpgrade: websocket\r\n\
             Connection: keep-alive, Upgrade\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{origin}\
             Sec-WebSocket-Protocol: {protocols}\r\n\r\n"
        )
    }

    fn status(answer: &Answer) -> String {
        match answer {
            Answer::Partial => "partial".into(),
            Answer::Upgrade { .. } => "101".into(),
            Answer::Respond { head, .. } => String::from_utf8_lossy(&head[9..12]).into_owned(),
        }
    }

    #[test]
    fn an_upgrade_with_our_origin_and_the_secret_is_accepted() {
        let (p, _dir) = policy();
        let req = upgrade(
            "Origin: http://127.0.0.1:8787\r\n",
            &format!("phux, phux-secret.{}", p.secret.hex()),
        );
        let Answer::Upgrade { response, consumed } = p.answer(req.as_bytes()) else {
            panic!("refused");
        };
        assert_eq!(consumed, req.len());
        let text = String::from_utf8(response).expect("utf8");
        // RFC 6455's own example key and accept value.
        assert!(text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
        assert!(text.contains("Sec-WebSocket-Protocol: phux\r\n"));
        assert!(!text.contains(p.secret.hex()));
    }

    #[test]
    fn a_wrong_origin_host_or_secret_gets_the_same_refusal() {
        let (p, _dir) = policy();
        let good = format!("phux, phux-secret.{}", p.secret.hex());
        let cases = [
            upgrade("Origin: http://evil.example\r\n", &good),
            upgrade("Origin: http://127.0.0.1:8787.evil.example\r\n", &good),
            upgrade("", &good),
            upgrade("Origin: http://127.0.0.1:8787\r\n", "phux"),
            upgrade("Origin: http://127.0.0.1:8787\r\n", "phux, phux-secret.00"),
            upgrade("Origin: http://127.0.0.1:8787\r\n", &good)
                .replace("Host: 127.0.0.1:8787", "Host: rebound.example:8787"),
        ];
        let answers: Vec<Vec<u8>> = cases
            .iter()
            .map(|c| match p.answer(c.as_bytes()) {
                Answer::Respond { head, body, .. } => [head, body.to_vec()].concat(),
                other => panic!("not refused: {other:?}"),
            })
            .collect();
        assert!(answers.iter().all(|a| a == &answers[0]));
        assert!(answers[0].starts_with(b"HTTP/1.1 403 "));
    }

    #[test]
    fn bounds_and_malformed_requests() {
        let (p, _dir) = policy();
        assert_eq!(status(&p.answer(b"GET / HTTP/1.1\r\nHost: x")), "partial");
        let long = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(MAX_REQUEST));
        assert_eq!(status(&p.answer(long.as_bytes())), "431");
        assert_eq!(status(&p.answer(b"\x16\x03\x01 tls\r\n\r\n")), "400");
        assert_eq!(status(&p.answer(b"GET / HTTP/1.0\r\n\r\n")), "505");
        let mut many = String::from("GET / HTTP/1.1\r\n");
        for i in 0..100 {
            many += "X";
            many += &i.to_string();
            many += ": y\r\n";
        }
        many.push_str("\r\n");
        assert_eq!(status(&p.answer(many.as_bytes())), "431");
        let secret = format!("phux-secret.{}", p.secret.hex());
        let no_phux = upgrade("Origin: http://127.0.0.1:8787\r\n", &secret);
        assert_eq!(status(&p.answer(no_phux.as_bytes())), "400");
    }
}
