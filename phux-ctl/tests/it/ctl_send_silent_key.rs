//! `phuxctl send --key` with a key that no terminal mode turns into bytes says so and sends
//! nothing, rather than an operation the server would answer `delivered` after writing
//! nothing ([CLIENT.KEY.3]).

use crate::support::{Ctl, Server};

#[test]
fn a_key_that_sends_nothing_is_refused_before_anything_is_sent() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["cat"]);
    for key in ["Fn", "C-M-Unidentified", "BrowserBack"] {
        let out = ctl.run(&["send", &id, "before", "--key", key]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{key}: {stderr}");
        assert!(stderr.contains("sends nothing"), "{key}: {stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("delivered"));
    }
    // Nothing was recorded, nothing reached the program.
    assert!(ctl.journals().is_empty(), "{:?}", ctl.journals());
    ctl.ok(&["send", &id, "after", "--key", "Enter"]);
    let screen = ctl.wait_screen(&id, "the later send", |s| s.contains("after"));
    assert!(!screen.contains("before"), "{screen}");
}
