//! The upgrade image: the server engine's whole state ([`EngineState`]) and the driver's own
//! (`H`, opaque here) in one versioned byte string, which a new server image reads back after
//! an exec ([SERVER.UPGRADE.STATE.1]).
//!
//! The bytes are decided in [`image`] (header, version, body, the decoding rules); what the
//! state holds, in `server`'s `EngineState`. This module puts the two together.
//!
//! ```
//! use phux_core::server::{ServerConfig, ServerEngine};
//! use phux_core::upgrade::{self, STATE_VERSION};
//!
//! let engine = ServerEngine::new(ServerConfig::new(vec![7; 16]));
//! let state = engine.export_state()?;
//! let image = upgrade::encode_image(&state, &"the driver's own state");
//! assert_eq!(upgrade::image_version(&image)?, STATE_VERSION);
//! let (state, host): (_, String) = upgrade::decode_image(&image)?;
//! let config = state.config().clone();
//! let engine = ServerEngine::from_state(config, state)?;
//! assert_eq!(engine.server_id(), &[7; 16]);
//! assert_eq!(host, "the driver's own state");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod image;

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use image::{ImageError, MAGIC, READS_VERSIONS, STATE_VERSION, image_version, reads_version};
pub(crate) use image::{encode_value, sorted_map};

pub use crate::server::{EngineState, NotQuiet, StateError};

/// The image of `engine` and the driver's `host` state, in the current version.
pub fn encode_image<H: Serialize>(engine: &EngineState, host: &H) -> Vec<u8> {
    encode_value(&(engine, host))
}

/// Reads an image back: the engine's state and the driver's.
pub fn decode_image<H: DeserializeOwned>(bytes: &[u8]) -> Result<(EngineState, H), ImageError> {
    image::decode_value(bytes)
}
