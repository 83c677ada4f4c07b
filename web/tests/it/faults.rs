//! The web client through each fault a browser meets, one test per fault: the program in the
//! terminal reads every key exactly once and in order, and a key whose fate is uncertain is
//! shown as `unknown`.

use serde_json::json;

use crate::support::{self, Rig, exclusive, rig_or_skip, tally, wait_for};

/// Asserts the run's outcome: nothing lost or doubled, nothing left unresolved.
fn check(rig: &Rig, typed: &str) -> support::Tally {
    let ops = rig.settle();
    let read = || {
        let t = tally(typed, &ops, &rig.recorded());
        (t.lost == 0 && t.applied + t.unknown_read == rig.recorded().len()).then_some(())
    };
    let deadline = std::time::Instant::now() + support::PATIENCE;
    while read().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let t = tally(typed, &ops, &rig.recorded());
    assert_eq!(
        (t.lost, t.duplicated, t.other),
        (0, 0, 0),
        "{t:?}: read {:?}, ops {ops:?}",
        String::from_utf8_lossy(&rig.recorded())
    );
    t
}

#[test]
fn a_half_open_link_mid_typing_loses_and_doubles_nothing() {
    let _one = exclusive();
    let rig = rig_or_skip!(500);
    rig.browser.type_text("abc").expect("type");
    // The link goes silent both ways while keys are in flight; the page finds out by PING.
    assert!(rig.proxy.half_open() >= 1);
    rig.browser.type_text("def").expect("type");
    let t = check(&rig, "abcdef");
    assert!(support::status(&rig.browser)["reconnects"].as_u64() >= Some(1));
    assert_eq!(t.applied + t.unknown, 6);
}

#[test]
fn a_cut_mid_typing_loses_and_doubles_nothing() {
    let _one = exclusive();
    let rig = rig_or_skip!(500);
    rig.browser.type_text("ghi").expect("type");
    assert!(rig.proxy.cut() >= 1);
    rig.browser.type_text("jkl").expect("type");
    check(&rig, "ghijkl");
}

#[test]
fn a_reload_mid_paste_sends_every_part_once() {
    let _one = exclusive();
    let rig = rig_or_skip!(500);
    // Four parts of one submission; the page reloads once the first has been applied.
    let data: String = (0..200_000)
        .map(|i| char::from(b'a' + u8::try_from(i % 26).unwrap_or(0)))
        .collect();
    rig.browser
        .execute("window.phuxWeb.paste(arguments[0])", &[json!(data)])
        .expect("paste");
    wait_for("the first part applied", || {
        support::ops(&rig.browser)
            .iter()
            .any(|o| o["state"] == json!("applied"))
            .then_some(())
    });
    rig.browser.reload().expect("reload");
    rig.wait_page();
    let ops = rig.settle();
    assert_eq!(ops.len(), 4, "a 200,000-byte paste is four parts");
    assert!(
        ops.iter().all(|o| o["state"] == json!("applied")),
        "{ops:?}"
    );
    wait_for("the whole paste read once", || {
        (rig.recorded() == data.as_bytes()).then_some(())
    });
}

#[test]
fn a_killed_tab_loses_and_doubles_nothing() {
    let _one = exclusive();
    let rig = rig_or_skip!(500);
    rig.browser.type_text("mno").expect("type");
    // Once the keys are on disk (a key typed in the milliseconds before its record commits
    // dies with the tab, never shown as queued), the renderer dies at once: no unload handler, nothing flushed. What was recorded is on
    // disk; a new page takes over the outbox and finishes it.
    wait_for("the keys recorded", || {
        (support::ops(&rig.browser).len() == 3).then_some(())
    });
    rig.kill_tab_and_reopen();
    rig.browser.type_text("pqr").expect("type");
    check(&rig, "mnopqr");
}

#[test]
fn two_tabs_typing_send_through_one_outbox_in_order() {
    let _one = exclusive();
    let rig = rig_or_skip!(500);
    let first = rig.browser.current_tab().expect("tab");
    let second = rig.browser.new_tab().expect("new tab");
    rig.browser.switch_to(&second).expect("switch");
    rig.browser.goto(&rig.url()).expect("second page");
    rig.wait_page();
    // The first tab holds the lock; the second records and leaves the sending to it.
    assert_eq!(support::status(&rig.browser)["owner"], json!(false));
    let mut typed = String::new();
    for (i, chunk) in ["ab", "cd", "ef", "gh", "ij", "kl"].iter().enumerate() {
        rig.browser
            .switch_to(if i % 2 == 0 { &first } else { &second })
            .expect("switch");
        rig.wait_page();
        rig.browser.type_text(chunk).expect("type");
        typed.push_str(chunk);
        // The next tab types after this one's keys are recorded (the order the user typed).
        wait_for("the keys recorded", || {
            (support::ops(&rig.browser).len() == typed.len()).then_some(())
        });
    }
    check(&rig, &typed);
}

#[test]
fn a_new_server_incarnation_shows_sent_keys_unknown_and_writes_nothing_old() {
    let _one = exclusive();
    let mut rig = rig_or_skip!(500);
    rig.browser.type_text("ab").expect("type");
    wait_for("ab read", || (rig.recorded() == b"ab").then_some(()));
    // The link goes silent: `c` leaves and is never answered; `d` waits behind it.
    assert!(rig.proxy.half_open() >= 1);
    rig.browser.type_text("cd").expect("type");
    wait_for("c sent", || {
        support::ops(&rig.browser)
            .iter()
            .any(|o| o["label"] == json!("c") && o["state"] == json!("sent"))
            .then_some(())
    });
    // The server is replaced: a new server_id. `c` may or may not have been written (the
    // page cannot know): unknown. `d` never left: not sent, and never written to whatever
    // the new server calls that terminal.
    rig.server.restart();
    let ops = rig.settle();
    let states: Vec<_> = ops
        .iter()
        .map(|o| {
            (
                o["label"].as_str().unwrap_or("").to_owned(),
                o["state"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let want: Vec<_> = [
        ("a", "applied"),
        ("b", "applied"),
        ("c", "unknown"),
        ("d", "notsent"),
    ]
    .iter()
    .map(|(l, s)| ((*l).to_owned(), (*s).to_owned()))
    .collect();
    assert_eq!(states, want);
    // The user sees it: the list marks `c` unknown.
    wait_for("c shown unknown", || {
        let shown = rig
            .browser
            .execute("return Array.from(document.querySelectorAll('#ops li.unknown')).map(li => li.textContent)", &[])
            .ok()?;
        (shown == json!(["c"])).then_some(())
    });
    assert_eq!(rig.recorded(), b"ab");
}

#[test]
fn a_server_upgrade_mid_typing_loses_and_doubles_nothing() {
    let _one = exclusive();
    let rig = rig_or_skip!(ours 500);
    let incarnation = support::status(&rig.browser)["serverId"].clone();
    rig.browser.type_text("stu").expect("type");
    // [WS.UPGRADE.2] `phuxctl upgrade` while keys are in flight: the server takes over in
    // place, the page's WebSocket and the dedupe ledger carried, the server_id the same; a
    // key answered by neither image is resent with its id and written once.
    let (code, said) = rig.ours().upgrade();
    println!(
        "phuxctl upgrade with a browser attached: exit {code:?}: {}",
        said.trim()
    );
    assert_eq!(code, Some(0), "{said}");
    rig.browser.type_text("vwx").expect("type");
    let t = check(&rig, "stuvwx");
    assert_eq!((t.applied, t.unknown), (6, 0), "{t:?}");
    assert_eq!(
        support::status(&rig.browser)["serverId"],
        incarnation,
        "the upgrade kept the incarnation"
    );
}
