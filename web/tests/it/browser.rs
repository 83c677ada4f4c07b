//! The web client in a real browser, on our server and on the phux reference's WebSocket
//! listener: keys typed reach the program once each, in order, and the page shows them
//! applied.

use serde_json::json;

use crate::support::{self, Rig, exclusive, rig_or_skip, wait_for};

fn types_hello(rig: &Rig) {
    rig.browser.type_text("hello").expect("type");
    wait_for("hello recorded", || (rig.recorded() == b"hello").then_some(()));
    let ops = support::ops(&rig.browser);
    assert_eq!(ops.len(), 5);
    assert!(ops.iter().all(|o| o["state"] == json!("applied")), "{ops:?}");
    wait_for("the list shows five applied inputs", || {
        let shown = rig
            .browser
            .execute("return document.querySelectorAll('#ops li.applied').length", &[])
            .ok()?;
        (shown == json!(5)).then_some(())
    });
    if let Ok(dir) = std::env::var("PHUX_WEB_SCREENSHOTS") {
        let png = rig.browser.screenshot().expect("screenshot");
        std::fs::write(std::path::Path::new(&dir).join("typed.png"), png).expect("write");
    }
}

#[test]
fn keys_typed_in_the_browser_reach_the_program_once() {
    let _one = exclusive();
    let rig = rig_or_skip!(3000);
    types_hello(&rig);
}

#[test]
fn keys_typed_in_the_browser_reach_the_program_once_against_the_reference() {
    let _one = exclusive();
    let rig = rig_or_skip!(reference 3000);
    types_hello(&rig);
}
