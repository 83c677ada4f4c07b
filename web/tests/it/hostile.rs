//! A page from another origin tries to reach the terminal server the user runs: it gets
//! nothing, not even with the listener's secret (as if it had leaked), since the origin is
//! checked apart from the secret (spec/websocket.md, WS.AUTH.1, WS.ORIGIN.1).

use std::time::Duration;

use serde_json::json;

use crate::support::{self, StaticFiles, exclusive, rig_or_skip, wait_for};

const HOSTILE_JS: &str = r#"
const q = new URLSearchParams(location.search);
const url = q.get("target");
window.hostile = { opened: 0, messages: 0, ended: 0, read: null };
const hello = new Uint8Array([0,0,0,1,0x7f]);
for (const protocols of [[], ["phux"], ["phux", "phux-secret." + q.get("secret")]]) {
  const ws = protocols.length ? new WebSocket(url, protocols) : new WebSocket(url);
  ws.binaryType = "arraybuffer";
  ws.onopen = () => { window.hostile.opened++; ws.send(hello); };
  ws.onmessage = () => { window.hostile.messages++; };
  ws.onclose = () => { window.hostile.ended++; };
}
fetch(url.replace("ws:", "http:")).then(r => r.text()).then(t => { window.hostile.read = t.length; },
  () => { window.hostile.read = "refused"; });
"#;

#[test]
fn a_page_from_another_origin_gets_nothing() {
    let _one = exclusive();
    let rig = rig_or_skip!(ours 500);
    let Some(secret) = rig.secret() else {
        phux_testkit::skip!("the reference checks no Origin: nothing to show there");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("index.html"),
        "<!doctype html><script src=\"hostile.js\"></script>",
    )
    .expect("page");
    std::fs::write(dir.path().join("hostile.js"), HOSTILE_JS).expect("script");
    // Another origin on the same machine: another port.
    let evil = StaticFiles::start_plain(dir.path().to_path_buf());
    let before = rig.recorded();
    rig.browser
        .goto(&format!(
            "http://{}/index.html?target=ws://{}/&secret={secret}",
            evil.addr,
            rig.proxy.addr()
        ))
        .expect("the hostile page loads");
    let result = wait_for("the hostile page's three sockets to end", || {
        let v = rig.browser.execute("return window.hostile", &[]).ok()?;
        (v["ended"] == json!(3) && !v["read"].is_null()).then_some(v)
    });
    assert_eq!(result["opened"], json!(0), "{result}");
    assert_eq!(result["messages"], json!(0), "{result}");
    // A cross-origin read of the page is refused by the browser (no CORS), and the
    // listener serves its page only under its own host names.
    assert_eq!(result["read"], json!("refused"), "{result}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(rig.recorded(), before);
    let _ = support::status;
}
