//! The upgrade image: the server engine's whole state ([`EngineState`]) and the driver's own
//! (`H`, opaque here) in one versioned byte string, which a new server image reads back after
//! an exec ([SERVER.UPGRADE.STATE.1]).
//!
//! The bytes are decided in [`image`] (header, version, body, the decoding rules); what the
//! state holds, in `server`'s `EngineState`. This module puts the two together. A driver
//! whose half changed layout between the versions it reads decodes the engine's half with
//! [`decode_parts`] and its own by the version ([`decode_host`]).
//!
//! An image of a large server is tens or hundreds of megabytes:
//! [`ServerEngine::export_image_to`] writes it once, straight into the driver's file (no copy
//! of it on the heap), and a reader decodes it from wherever it lies (a mapped file).
//!
//! [`ServerEngine::export_image_to`]: crate::server::ServerEngine::export_image_to
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

pub use image::{
    ExportError, ImageError, MAGIC, READS_VERSIONS, STATE_VERSION, image_version, reads_version,
};
pub(crate) use image::{encode_value, write_value};
pub use phux_term::bytes;

use crate::server::ServerEngine;
use crate::server::{BaseState, SummaryFault, read_summary};
pub use crate::server::{EngineState, NotQuiet, StateError, StateSummary};

/// The engine's half of an image written from the live engine: these two belong to the image,
/// not to the engine, which knows what its state holds ([`EngineState`]) and not its bytes.
impl ServerEngine {
    /// The image of the whole state and the driver's `host` state, once quiet: the bytes
    /// [`encode_image`] makes of
    /// [`ServerEngine::export_state`], without copying the engine first (an upgrade of a big server
    /// holds one image in memory, not a copy of the state besides).
    pub fn export_image<H: Serialize>(&self, host: &H) -> Result<Vec<u8>, NotQuiet> {
        self.check_quiet()?;
        Ok(encode_value(&(self.state_ref(), host)))
    }

    /// Writes the image of the whole state and the driver's `host` state to `out` once quiet,
    /// in one pass and without holding it in memory ([`export_image`](Self::export_image)'s
    /// bytes, from `out`'s position). Returns the image's length.
    pub fn export_image_to<H: Serialize, W: std::io::Write + std::io::Seek>(
        &self,
        host: &H,
        out: W,
    ) -> Result<u64, ExportError> {
        self.check_quiet()?;
        write_value(&(self.state_ref(), host), out)
    }
}

/// The image of `engine` and the driver's `host` state, in the current version.
pub fn encode_image<H: Serialize>(engine: &EngineState, host: &H) -> Vec<u8> {
    encode_value(&(engine, host))
}

/// Reads an image back: the engine's state and the driver's, for a driver whose half has one
/// layout in every version it reads.
pub fn decode_image<H: DeserializeOwned>(bytes: &[u8]) -> Result<(EngineState, H), ImageError> {
    let parts = decode_parts(bytes)?;
    Ok((parts.engine, decode_host(parts.host)?))
}

/// An image's version, the engine's state, and the driver's half still encoded.
#[derive(Debug)]
pub struct Parts<'a> {
    /// The state version the image holds.
    pub version: u32,
    /// The engine's state.
    pub engine: EngineState,
    /// The driver's half, for [`decode_host`] in the layout of `version`.
    pub host: &'a [u8],
}

/// Reads an image's header and the engine's half (in the layout of the image's version),
/// leaving the driver's half to the driver.
pub fn decode_parts(bytes: &[u8]) -> Result<Parts<'_>, ImageError> {
    let (version, body) = image::body(bytes)?;
    let (engine, host) = if image::has_viewports(version) {
        image::take::<EngineState>(body)?
    } else {
        let (base, host) = image::take::<BaseState>(body)?;
        (EngineState::from_base(base), host)
    };
    Ok(Parts {
        version,
        engine,
        host,
    })
}

/// An image's version, what a trial adoption keeps of the engine's state, and the driver's
/// half still encoded.
#[derive(Debug)]
pub struct SummaryParts<'a> {
    /// The state version the image holds.
    pub version: u32,
    /// The engine's state, as a trial adoption keeps it.
    pub engine: StateSummary,
    /// The driver's half, for [`decode_host`] in the layout of `version`.
    pub host: &'a [u8],
}

/// Why an image cannot be adopted, as [`summarize_parts`] finds it.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummaryError {
    /// The bytes are not an image this binary reads.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// They decode, and an engine could not be rebuilt from them.
    #[error(transparent)]
    State(#[from] StateError),
}

/// Reads an image as an adoption would, with the same verdict as [`decode_parts`] followed by
/// `ServerEngine::from_state`, without holding the state: the connections and terminals are
/// read one at a time with the real types, each checked as `from_state` checks it, and only
/// their ids and pids kept ([`StateSummary`]). A trial adoption's reader, whose memory is
/// then the largest single element, not a second copy of the state beside the image.
pub fn summarize_parts(bytes: &[u8]) -> Result<SummaryParts<'_>, SummaryError> {
    let (version, body) = image::body(bytes)?;
    let (engine, host) =
        read_summary(body, image::has_viewports(version)).map_err(|fault| match fault {
            SummaryFault::Corrupt(text) => SummaryError::Image(ImageError::Corrupt(text)),
            SummaryFault::State(e) => SummaryError::State(e),
        })?;
    Ok(SummaryParts {
        version,
        engine,
        host,
    })
}

/// Reads the driver's half of an image ([`Parts::host`]), which must take every byte left.
pub fn decode_host<H: DeserializeOwned>(host: &[u8]) -> Result<H, ImageError> {
    image::take_all(host)
}
