//! The web client in a real browser, on our server and on the phux reference's WebSocket
//! listener: keys typed reach the program once each, in order, and the page shows them
//! applied.

use serde_json::json;

use crate::support::{self, Rig, exclusive, rig_or_skip, wait_for};

fn types_hello(rig: &Rig) {
    rig.browser.type_text("hello").expect("type");
    wait_for("hello recorded", || {
        (rig.recorded() == b"hello").then_some(())
    });
    let ops = support::ops(&rig.browser);
    assert_eq!(ops.len(), 5);
    assert!(
        ops.iter().all(|o| o["state"] == json!("applied")),
        "{ops:?}"
    );
    wait_for("the list shows five applied inputs", || {
        (rig.shown("applied") == Some(5)).then_some(())
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

/// The page as a person sees it, served by our server under its Content-Security-Policy:
/// `PHUX_WEB_SCREENSHOTS=DIR cargo test -p phux-web -- --ignored a_shell_in_the_page` writes
/// `DIR/shell.png` (a shell's colours, a prompt and what was typed).
#[test]
#[ignore = "writes a screenshot for a person to look at"]
fn a_shell_in_the_page() {
    let _one = exclusive();
    let rig = match Rig::start_running(
        "printf '\\033[1;32mgreen bold\\033[0m \\033[7mreverse\\033[0m \\033[4;34munderlined blue\\033[0m\\n'; \
         PS1='web$ ' exec sh -i",
    ) {
        Ok(rig) => rig,
        Err(why) => {
            phux_testkit::skip!("{why}");
            return;
        }
    };
    rig.browser
        .type_text("echo typed in a browser\u{e007}")
        .expect("type");
    wait_for("the echo applied", || {
        let ops = support::ops(&rig.browser);
        (ops.len() == 24 && ops.iter().all(|o| o["state"] == json!("applied"))).then_some(())
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    let dir = std::env::var("PHUX_WEB_SCREENSHOTS").unwrap_or_else(|_| ".".into());
    let png = rig.browser.screenshot().expect("screenshot");
    std::fs::write(std::path::Path::new(&dir).join("shell.png"), png).expect("write");
}
