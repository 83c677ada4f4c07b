//! The outbox under load: a backlog is sent at a cost per input that does not grow with it,
//! and a storage transaction that never completes is shown and retried, never waited on.
//!
//! The 1,000-fault campaigns used to "stall" after 560 to 700 faults. They did not stall: the
//! page read every pending record (its whole backlog, with each one's events) to draw its
//! counts after every change, so each send cost more the more input waited, the sender fell
//! behind the typing for good once faults slowed it, and the backlog (1,400 keys, six minutes
//! behind) outlasted the test's one-minute wait at the end. The test's report read the outbox
//! and the sender's step at two moments, so the sender seemed to have skipped a pending record.

use serde_json::Value;

use crate::support::{self, Rig, exclusive, rig_or_skip, tally, wait_for};

/// Keys typed while the server is unreachable: a backlog well beyond what one read may touch.
const BACKLOG: usize = 300;

/// The most records any one outbox transaction may read, whatever the backlog: the newest 80
/// the list shows, with room to spare.
const LARGEST_READ: u64 = 100;

fn number(status: &Value, key: &str) -> u64 {
    status[key].as_u64().unwrap_or(u64::MAX)
}

fn count(rig: &Rig) -> usize {
    rig.browser
        .execute_async(
            "const done = arguments[arguments.length - 1]; window.phuxWeb.count().then(done, () => done(-1));",
            &[],
        )
        .ok()
        .and_then(|v| v.as_u64())
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
}

#[test]
fn a_backlog_is_sent_with_reads_bounded_per_transaction() {
    let _one = exclusive();
    let rig = rig_or_skip!(500);
    // The server becomes unreachable: keys pile up in the outbox.
    rig.proxy.refuse(true);
    rig.proxy.cut();
    wait_for("the page to see the link down", || {
        (support::status(&rig.browser)["up"] == Value::Bool(false)).then_some(())
    });
    let alphabet = "abcdefghijklmnopqrstuvwxyz";
    let typed: String = alphabet.chars().cycle().take(BACKLOG).collect();
    for chunk in typed.as_bytes().chunks(50) {
        rig.browser
            .type_text(std::str::from_utf8(chunk).unwrap_or_default())
            .expect("type");
    }
    wait_for("the backlog recorded", || {
        (count(&rig) == BACKLOG).then_some(())
    });
    let before = support::status(&rig.browser);
    rig.proxy.refuse(false);
    let ops = rig.settle();
    let after = support::status(&rig.browser);
    let sends = number(&after, "applyRequests") - number(&before, "applyRequests");
    let reads = number(&after, "recordsRead") - number(&before, "recordsRead");
    println!(
        "a backlog of {BACKLOG} keys: {sends} APPLY_INPUT requests, {reads} records read \
         ({} a request), at most {} in one transaction",
        reads / sends.max(1),
        number(&after, "largestRead"),
    );
    assert!(sends >= BACKLOG as u64, "{after}");
    // Before the fix every change redrew the counts from a read of the whole backlog.
    assert!(
        number(&after, "largestRead") <= LARGEST_READ,
        "one transaction read more than {LARGEST_READ} records: {after}"
    );
    wait_for("the program to read the backlog", || {
        (rig.recorded().len() == BACKLOG).then_some(())
    });
    let t = tally(&typed, &ops, &rig.recorded());
    assert_eq!(
        (t.applied, t.lost, t.duplicated, t.other),
        (BACKLOG, 0, 0, 0),
        "{t:?}"
    );
}

#[test]
fn a_storage_transaction_that_never_completes_is_shown_and_retried() {
    let _one = exclusive();
    let mut rig = rig_or_skip!(500);
    // Outbox transactions are abandoned after 1.5 s here (10 s by default).
    rig.query.push_str("&storageDeadline=1500");
    rig.browser.goto(&rig.url()).expect("the page loads");
    support::wait_ready(&rig.browser);
    // Another connection of the same origin holds the statistics store in a transaction that
    // never ends for 6 s (a request chain that never stops), as a stuck tab or a browser bug
    // would: every write of the sender needs that store.
    rig.browser
        .execute(
            r#"const q = indexedDB.open("phux-web");
q.onsuccess = () => {
  const until = Date.now() + 6000;
  const store = q.result.transaction(["stats"], "readwrite").objectStore("stats");
  (function spin() { if (Date.now() < until) store.get("applied").onsuccess = spin; })();
};"#,
            &[],
        )
        .expect("the blocking transaction");
    rig.browser.type_text("q").expect("type");
    // The sender's write does not wait silently: the page shows it and tries again.
    let stalled = wait_for("the page to report its storage stalled", || {
        let s = support::status(&rig.browser);
        (number(&s, "storageStalls") >= 1 && number(&s, "storageStalls") != u64::MAX).then_some(s)
    });
    let shown = rig
        .browser
        .execute("return document.getElementById('flash').textContent", &[])
        .unwrap_or_default();
    assert!(
        shown
            .as_str()
            .is_some_and(|e| e.contains("storage did not answer")),
        "the page shows {shown}"
    );
    assert!(
        stalled["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("did not answer within 1500 ms")),
        "{stalled}"
    );
    // Once the store is free, the retry delivers the key, once.
    let ops = rig.settle();
    wait_for("the program to read the key", || {
        (rig.recorded() == b"q").then_some(())
    });
    let t = tally("q", &ops, &rig.recorded());
    assert_eq!((t.applied, t.lost, t.duplicated), (1, 0, 0), "{t:?}");
}
