//! The committed bundle (`web/dist/`) is the build of the sources in `web/src/` with the
//! pinned packages of `web/package-lock.json`: `npm run check` rebuilds it in memory and
//! compares byte for byte, and runs the TypeScript checker and the unit tests. It needs node
//! and `web/node_modules` (`npm ci` in `web/`, which `.ci/run` does); without them it skips,
//! counted.

use std::path::Path;
use std::process::Command;

fn npm(web: &Path, script: &str) {
    let out = Command::new("npm")
        .args(["run", "--silent", script])
        .current_dir(web)
        .output()
        .expect("npm runs");
    assert!(
        out.status.success(),
        "npm run {script}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_committed_bundle_is_a_rebuild_of_the_sources() {
    let web = Path::new(env!("CARGO_MANIFEST_DIR"));
    if phux_testkit::programs(&["node", "npm"]).is_err() || !web.join("node_modules").is_dir() {
        phux_testkit::skip!("node, npm or web/node_modules missing (npm ci in web/)");
        return;
    }
    npm(web, "check");
    npm(web, "test");
}
