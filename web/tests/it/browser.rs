//! The web client in a real browser.

use phux_web::proxy::FaultProxy;
use phux_web::webdriver::{self, Browser};
use serde_json::json;

use crate::support::{self, StaticFiles, wait_for};

fn dist() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("dist")
}

#[test]
fn keys_typed_in_the_browser_reach_the_program_once_against_the_reference() {
    let (chromium, driver) = match webdriver::programs() {
        Ok(p) => p,
        Err(why) => {
            phux_testkit::skip!("{why}");
            return;
        }
    };
    let bin = match phux_testkit::reference_bin() {
        Ok(b) => b,
        Err(why) => {
            phux_testkit::skip!("{why}");
            return;
        }
    };
    let server = support::RefServer::start(bin);
    let record = server.home.path().join("typed");
    let id = server.spawn(&support::recorder_script(&record));
    let proxy = FaultProxy::start(server.ws).expect("proxy");
    let page = StaticFiles::start(dist(), proxy.addr());
    let browser = Browser::start(&chromium, &driver).expect("browser");
    browser
        .goto(&format!(
            "http://{}/index.html?ws=ws://{}/&t={id}",
            page.addr,
            proxy.addr()
        ))
        .expect("page");
    support::wait_ready(&browser);
    browser.type_text("hello").expect("type");
    wait_for("hello recorded", || {
        (std::fs::read(&record).unwrap_or_default() == b"hello").then_some(())
    });
    let ops = support::ops(&browser);
    assert_eq!(ops.len(), 5);
    assert!(
        ops.iter().all(|o| o["state"] == json!("applied")),
        "{ops:?}"
    );
    // The page under the server's Content-Security-Policy still shows the terminal (xterm's
    // run-time styles mirrored into constructable sheets): the program's echo is on screen.
    if let Ok(dir) = std::env::var("PHUX_WEB_SCREENSHOTS") {
        let png = browser.screenshot().expect("screenshot");
        std::fs::write(std::path::Path::new(&dir).join("typed.png"), png).expect("write");
    }
}
