//! The web client's Rust side (the client itself is TypeScript, in `web/src/`): what its tests
//! in a real browser need.
//!
//! - [`proxy`]: a TCP proxy between the browser and the server that injects the faults a
//!   flaky network makes: a link that goes silent both ways without closing (half-open), and
//!   a cut. A browser's own offline switch may leave an open WebSocket untouched, so the
//!   faults are made on the wire.
//! - [`webdriver`]: a small WebDriver client for Debian's chromium and chromedriver, enough to
//!   load pages, run scripts, type real key events, open tabs and crash a tab's renderer.

pub mod proxy;
pub mod webdriver;
