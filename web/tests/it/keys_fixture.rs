//! The Rust side of `web/test/keys.json`: for every browser keydown there, the KeyEvent the web
//! client builds (checked by `web/test/keys.test.ts`) encodes through the server's own encoder
//! to the bytes the table names, and phuxctl's key of the same name encodes to the same bytes.
//! Together: a key pressed in the browser reaches the program as that key typed into phuxctl.

use phux_core::encoder::encode_key;
use phux_core::modes::TerminalModes;
use phux_proto::input::{KeyAction, KeyEvent, ModSet, PhysicalKey};
use serde_json::Value;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn code_point(v: &Value) -> Option<u32> {
    v.as_str().map(|s| {
        let mut chars = s.chars();
        let c = chars.next().expect("one character");
        assert!(chars.next().is_none(), "{s:?} is one character");
        u32::from(c)
    })
}

#[test]
fn browser_key_events_encode_as_phuxctl_keys() {
    // [CLIENT.KEY.1]
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/test/keys.json");
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("keys.json")).expect("JSON");
    let rows = table["rows"].as_array().expect("rows");
    let mut checked = 0;
    for row in rows {
        let Some(event) = row["event"].as_object() else {
            continue;
        };
        let what = format!("{} {}", row["code"], row["mods"]);
        let key_name = event["key"].as_str().expect("key");
        let key = PhysicalKey::from_name(key_name).unwrap_or_else(|| panic!("{what}: {key_name}"));
        let bits = |name: &str| {
            let n = event[name].as_u64().expect(name);
            ModSet(u16::try_from(n).expect("u16"))
        };
        let built = KeyEvent {
            action: KeyAction::Press,
            key,
            mods: bits("mods"),
            consumed_mods: bits("consumed"),
            composing: false,
            text: event["text"].as_str().map(str::to_owned),
            unshifted_codepoint: code_point(&event["unshifted"]),
        };
        let want = row["bytes"].as_str().expect("bytes");
        let mut out = Vec::new();
        encode_key(&built, &TerminalModes::default(), &mut out);
        assert_eq!(hex(&out), want, "{what}: the browser's event");
        if let Some(name) = row["name"].as_str() {
            let spec = phux_ctl::keys::parse_key(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                hex(&phux_ctl::keys::legacy_bytes(&spec.0)),
                want,
                "{what}: phuxctl's {name:?}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} rows");
}
