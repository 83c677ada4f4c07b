//! HELLO: version and profile admission, negotiated limits, HELLO_OK.

use phux_proto::frame::{
    BootstrapProfile, BootstrapProfiles, ByteLimit, Hello, HelloOk, LayerSet, ProtocolVersion,
    ServerCapabilities, ServerFeatures,
};
use phux_proto::{ErrorCode, Frame};

use super::connection::{Connection, SMALLEST_LIMIT};
use super::{ConnId, ServerEngine};

/// The protocol version we speak.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::CURRENT;

/// The largest bootstrap chunk we offer (negotiated down to the client's).
pub(super) const SERVER_MAX_CHUNK: u32 = 256 * 1024;
/// The largest history page we offer (negotiated down to the client's).
pub(super) const SERVER_MAX_HISTORY_PAGE: u32 = 1024 * 1024;

impl ServerEngine {
    pub(super) fn on_hello(&mut self, id: ConnId, hello: &Hello) {
        // [HELLO.VERSION.1] Admission needs major.minor == 0.8; the patch is free.
        if !hello.version.is_compatible() {
            let v = hello.version;
            self.fail(
                id,
                ErrorCode::VERSION_INCOMPATIBLE,
                &format!("protocol {}.{}.{} is not 0.8", v.major, v.minor, v.patch),
            );
            return;
        }
        let caps = &hello.capabilities;
        // [HELLO.PROFILE.2] We serve SynthesizedVtRaw only; a client without it cannot attach.
        if !caps
            .bootstrap_profiles
            .contains(BootstrapProfiles::SYNTHESIZED_VT_RAW)
        {
            self.fail(
                id,
                ErrorCode::CODEC_UNAVAILABLE,
                "no common bootstrap profile (need synthesized_vt_raw)",
            );
            return;
        }
        self.stop_handshake_timer(id);
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        // [HELLO.LIMITS.1] Limits are the per-axis minimum of the client's and ours.
        conn.admit(
            caps.max_chunk_bytes.min(limit(SERVER_MAX_CHUNK)),
            caps.max_history_page_bytes
                .min(limit(SERVER_MAX_HISTORY_PAGE)),
        );
        let ok = Frame::HelloOk(hello_ok(&self.config.server_id, conn));
        self.send(id, &ok);
    }
}

fn limit(value: u32) -> ByteLimit {
    ByteLimit::new(value).unwrap_or(SMALLEST_LIMIT)
}

fn hello_ok(server_id: &[u8], conn: &Connection) -> HelloOk {
    HelloOk {
        version: PROTOCOL_VERSION,
        // [HELLO.OK.2] We mount L1 only; features ACKNOWLEDGED_INPUT, SHUTDOWN,
        // SPAWN_INITIAL_SIZE (our rule R14).
        capabilities: ServerCapabilities {
            layers: LayerSet::L1,
            features: ServerFeatures::ACKNOWLEDGED_INPUT
                | ServerFeatures::SHUTDOWN
                | ServerFeatures::SPAWN_INITIAL_SIZE,
        },
        server_id: server_id.to_vec(),
        profile: BootstrapProfile::SynthesizedVtRaw,
        max_chunk_bytes: conn.max_chunk(),
        max_history_page_bytes: conn.max_history_page(),
    }
}
