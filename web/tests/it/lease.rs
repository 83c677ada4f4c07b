//! The page shows who holds the terminal's input lease, and what it typed meanwhile as
//! refused, never written; once the lease is released its keys go through again.

use serde_json::json;

use crate::support::{self, exclusive, rig_or_skip, wait_for};

fn lease_line(rig: &support::Rig) -> String {
    rig.browser
        .execute("return document.getElementById('lease').textContent", &[])
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[test]
fn the_page_shows_the_lease_holder_and_refuses_nothing_silently() {
    let _one = exclusive();
    let rig = rig_or_skip!(ours 3000);
    let mut holder = rig.ours().hold_lease(rig.terminal);
    wait_for("the page to show the lease held", || {
        lease_line(&rig).contains("held by client").then_some(())
    });
    rig.browser.type_text("z").expect("type");
    let ops = rig.settle();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["state"], json!("refused"), "{ops:?}");
    wait_for("the list shows it refused", || {
        (rig.shown("refused") == Some(1)).then_some(())
    });
    // The holder goes: the lease is released, and the page says so.
    drop(holder.stdin.take());
    let _ = holder.wait();
    wait_for("the page to show the lease open", || {
        lease_line(&rig).ends_with("open").then_some(())
    });
    rig.browser.type_text("y").expect("type");
    wait_for("y read", || (rig.recorded() == b"y").then_some(()));
}
