//! HELLO / HELLO_OK and the capability records they carry.

use crate::macros::bit_set;

/// A protocol version triple. Admission is `major == 0 && minor == 8`; patch is free.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ProtocolVersion {
    /// Major (HELLO field 2 / HELLO_OK field 1).
    pub major: u16,
    /// Minor (HELLO field 3 / HELLO_OK field 2).
    pub minor: u16,
    /// Patch (HELLO field 4 / HELLO_OK field 3).
    pub patch: u16,
}

impl ProtocolVersion {
    /// The version this crate speaks: 0.8.0.
    pub const CURRENT: Self = Self {
        major: 0,
        minor: 8,
        patch: 0,
    };

    /// Whether a peer at this version can be admitted (same major and minor).
    pub fn is_compatible(self) -> bool {
        self.major == Self::CURRENT.major && self.minor == Self::CURRENT.minor
    }
}

/// HELLO (0x01, C→S): every field required.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Hello {
    /// Field 1: the client's name (raw UTF-8).
    pub client_name: String,
    /// Fields 2-4: the client's protocol version.
    pub version: ProtocolVersion,
    /// Field 5: what the client can do.
    pub capabilities: ClientCapabilities,
}

/// HELLO_OK (0x80, S→C): every field required.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct HelloOk {
    /// Fields 1-3: the server's protocol version.
    pub version: ProtocolVersion,
    /// Field 4: the server's layers and features.
    pub capabilities: ServerCapabilities,
    /// Field 5: this server incarnation's opaque id (raw bytes; compare bytewise only).
    pub server_id: Vec<u8>,
    /// Field 6: the bootstrap profile chosen for this connection.
    pub profile: BootstrapProfile,
    /// Field 7: the negotiated largest BOOTSTRAP_CHUNK payload.
    pub max_chunk_bytes: ByteLimit,
    /// Field 8: the negotiated largest history page.
    pub max_history_page_bytes: ByteLimit,
}

/// A negotiated byte limit: `1..=8 MiB` (HELLO caps and HELLO_OK fields 7/8).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ByteLimit(u32);

impl ByteLimit {
    /// The smallest limit.
    pub const MIN: u32 = 1;
    /// The largest limit: 8 MiB, half the frame cap, so a chunk frame always fits.
    pub const MAX: u32 = 8 * 1024 * 1024;

    /// Wraps a limit; `None` outside `1..=8 MiB`.
    pub const fn new(value: u32) -> Option<Self> {
        if value >= Self::MIN && value <= Self::MAX {
            Some(Self(value))
        } else {
            None
        }
    }

    /// The limit in bytes.
    pub const fn get(self) -> u32 {
        self.0
    }

    /// The smaller of two limits (negotiation is a per-axis minimum).
    pub fn min(self, other: Self) -> Self {
        Self(self.0.min(other.0))
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for ByteLimit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_u32(self.0)
    }
}

// Outside 1..=8 MiB is refused here as on the wire.
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for ByteLimit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let value = u32::deserialize(d)?;
        Self::new(value).ok_or_else(|| serde::de::Error::custom("byte limit outside 1..=8 MiB"))
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for ByteLimit {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Self(u.int_in_range(Self::MIN..=Self::MAX)?))
    }
}

/// The client's colour support (u8; other values are decode errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ColorSupport {
    /// 24-bit colour (wire 0).
    TrueColor,
    /// 256 indexed colours (wire 1).
    Indexed256,
    /// 16 indexed colours (wire 2).
    Indexed16,
    /// No colour (wire 3).
    Mono,
}

/// Raw output or state-sync output (u8; other values are decode errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum OutputMode {
    /// Exact PTY bytes (wire 0).
    Raw,
    /// Synthesized state updates (wire 1).
    StateSync,
}

/// An RGB colour, three u8s.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Rgb {
    /// Red.
    pub r: u8,
    /// Green.
    pub g: u8,
    /// Blue.
    pub b: u8,
}

/// The client terminal's default foreground and background.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct DefaultColors {
    /// Default foreground.
    pub fg: Rgb,
    /// Default background.
    pub bg: Rgb,
}

bit_set! {
    /// Protocol layers (u8). L1 is always on: the encoder and decoder force it.
    pub struct LayerSet(u8), mask = 0x07, forced = 0x01;
    /// Layer 1, the terminal layer.
    L1 = 0x01, "l1";
    /// Layer 2 (reserved, never mounted).
    L2 = 0x02, "l2";
    /// Layer 3.
    L3 = 0x04, "l3";
}

bit_set! {
    /// Image protocols the client renders (u8).
    pub struct ImageSupport(u8), mask = 0x07, forced = 0x00;
    /// Sixel.
    SIXEL = 0x01, "sixel";
    /// Kitty graphics.
    KITTY_GRAPHICS = 0x02, "kitty_graphics";
    /// iTerm2 inline images.
    ITERM2 = 0x04, "iterm2";
}

bit_set! {
    /// Keyboard protocols the client speaks (u8).
    pub struct KbdProtocols(u8), mask = 0x03, forced = 0x00;
    /// The kitty keyboard protocol.
    KITTY = 0x01, "kitty";
    /// xterm modifyOtherKeys.
    MODIFY_OTHER_KEYS = 0x02, "modify_other_keys";
}

bit_set! {
    /// Bootstrap profiles offered (u8; `0x01` is retired).
    pub struct BootstrapProfiles(u8), mask = 0x0e, forced = 0x00;
    /// SynthesizedVtRaw.
    SYNTHESIZED_VT_RAW = 0x02, "synthesized_vt_raw";
    /// SynthesizedVtStateSync.
    SYNTHESIZED_VT_STATE_SYNC = 0x04, "synthesized_vt_state_sync";
    /// NativeState.
    NATIVE_STATE = 0x08, "native_state";
}

bit_set! {
    /// Native checkpoint codecs (u64).
    pub struct NativeCodecs(u64), mask = 0x04, forced = 0x00;
    /// libghostty checkpoint v2.
    LIBGHOSTTY_CHECKPOINT_V2 = 0x04, "libghostty_checkpoint_v2";
}

bit_set! {
    /// Native bootstrap features (u32).
    pub struct NativeFeatures(u32), mask = 0x0f, forced = 0x00;
    /// Continuation.
    CONTINUATION = 0x01, "continuation";
    /// Ready boundary.
    READY_BOUNDARY = 0x02, "ready_boundary";
    /// History pages.
    HISTORY_PAGES = 0x04, "history_pages";
    /// Bounded history control.
    BOUNDED_HISTORY_CONTROL = 0x08, "bounded_history_control";
}

bit_set! {
    /// Optional server features (u32). A client must not use a gated frame or command unless
    /// its bit is advertised.
    pub struct ServerFeatures(u32), mask = 0x07f0, forced = 0x00;
    /// APPLY_INPUT.
    ACKNOWLEDGED_INPUT = 0x0010, "acknowledged_input";
    /// PUT_FILE.
    FILE_UPLOAD = 0x0020, "file_upload";
    /// MOVE_TERMINAL.
    MOVE_TERMINAL = 0x0040, "move_terminal";
    /// INPUT_TERMINAL_REPLY.
    TERMINAL_REPLY = 0x0080, "terminal_reply";
    /// SHUTDOWN.
    SHUTDOWN = 0x0100, "shutdown";
    /// SPAWN_TERMINAL.initial_size.
    SPAWN_INITIAL_SIZE = 0x0200, "spawn_initial_size";
    /// REPORT_AGENT_STATE.
    REPORT_AGENT_STATE = 0x0400, "report_agent_state";
}

/// HELLO field 5: the client's capabilities, positional (28 bytes, 34 with default colours).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ClientCapabilities {
    /// Colour support.
    pub color: ColorSupport,
    /// Layers the client wants (L1 always on).
    pub layers: LayerSet,
    /// Image protocols.
    pub images: ImageSupport,
    /// Keyboard protocols.
    pub kbd_protocols: KbdProtocols,
    /// Whether OSC 8 hyperlinks render (strict bool).
    pub hyperlinks: bool,
    /// Preferred output mode.
    pub output_mode: OutputMode,
    /// Default colours, if the client knows them (presence byte, then 6 bytes).
    pub default_colors: Option<DefaultColors>,
    /// Bootstrap profiles offered.
    pub bootstrap_profiles: BootstrapProfiles,
    /// Native codecs offered.
    pub native_codecs: NativeCodecs,
    /// Native features offered.
    pub native_features: NativeFeatures,
    /// Largest BOOTSTRAP_CHUNK payload the client accepts.
    pub max_chunk_bytes: ByteLimit,
    /// Largest history page the client accepts.
    pub max_history_page_bytes: ByteLimit,
}

impl Default for ClientCapabilities {
    /// What the reference CLI sends: TrueColor, L1, every image protocol, both keyboard
    /// protocols, hyperlinks, Raw, no palette, both synthesized profiles, 256 KiB / 1 MiB.
    fn default() -> Self {
        Self {
            color: ColorSupport::TrueColor,
            layers: LayerSet::L1,
            images: ImageSupport::all(),
            kbd_protocols: KbdProtocols::all(),
            hyperlinks: true,
            output_mode: OutputMode::Raw,
            default_colors: None,
            bootstrap_profiles: BootstrapProfiles::SYNTHESIZED_VT_RAW
                | BootstrapProfiles::SYNTHESIZED_VT_STATE_SYNC,
            native_codecs: NativeCodecs::empty(),
            native_features: NativeFeatures::empty(),
            max_chunk_bytes: ByteLimit(256 * 1024),
            max_history_page_bytes: ByteLimit(1024 * 1024),
        }
    }
}

/// HELLO_OK field 4: `layers u8` then `features u32` only when features is non-empty.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ServerCapabilities {
    /// The server's own layers (not the intersection).
    pub layers: LayerSet,
    /// Optional features.
    pub features: ServerFeatures,
}

/// HELLO_OK field 6: the chosen bootstrap profile (tag u8; tag 0 is retired).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum BootstrapProfile {
    /// Tag 1: synthesized VT, raw output.
    SynthesizedVtRaw,
    /// Tag 2: synthesized VT, state-sync output.
    SynthesizedVtStateSync,
    /// Tag 3: native state, codec 2 (libghostty checkpoint v2) with every native feature
    /// (`03 02 0000000f`); any other codec, or a feature set missing a bit, is a decode error.
    NativeState,
}

// ---- codec ----

use crate::atoms::{Result, Wire, unknown};
use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::field::{Fields, Put, Reader, once, required, utf8};

fn read_limit(r: &mut Reader<'_>, what: &'static str) -> Result<ByteLimit> {
    let value = r.u32()?;
    // [HELLO.LIMITS.1] Chunk and history-page limits are 1..=8 MiB.
    ByteLimit::new(value).ok_or_else(|| {
        DecodeError::new(if value < ByteLimit::MIN {
            DecodeErrorKind::BelowMinimum {
                what,
                min: ByteLimit::MIN.into(),
                actual: value.into(),
            }
        } else {
            DecodeErrorKind::LimitExceeded {
                what,
                limit: ByteLimit::MAX.into(),
                actual: value.into(),
            }
        })
    })
}

fn read_output_mode(r: &mut Reader<'_>) -> Result<OutputMode> {
    match r.u8()? {
        0 => Ok(OutputMode::Raw),
        1 => Ok(OutputMode::StateSync),
        v => Err(unknown("OutputMode", v)),
    }
}

pub(crate) fn output_mode_byte(mode: OutputMode) -> u8 {
    match mode {
        OutputMode::Raw => 0,
        OutputMode::StateSync => 1,
    }
}

pub(crate) fn read_output_mode_value(v: &[u8]) -> Result<OutputMode> {
    read_output_mode(&mut Reader::new(v))
}

fn read_rgb(r: &mut Reader<'_>) -> Result<Rgb> {
    let [red, green, blue] = r.array()?;
    Ok(Rgb {
        r: red,
        g: green,
        b: blue,
    })
}

impl Wire for ClientCapabilities {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let color = match r.u8()? {
            0 => ColorSupport::TrueColor,
            1 => ColorSupport::Indexed256,
            2 => ColorSupport::Indexed16,
            3 => ColorSupport::Mono,
            v => return Err(unknown("ColorSupport", v)),
        };
        // [HELLO.CAPS.1] Unknown capability bits are masked off; L1 is forced on.
        let layers = LayerSet::from_bits_truncate(r.u8()?);
        let images = ImageSupport::from_bits_truncate(r.u8()?);
        let kbd_protocols = KbdProtocols::from_bits_truncate(r.u8()?);
        let hyperlinks = r.bool()?;
        let output_mode = read_output_mode(r)?;
        let default_colors = r.optional(|r| {
            Ok(DefaultColors {
                fg: read_rgb(r)?,
                bg: read_rgb(r)?,
            })
        })?;
        Ok(Self {
            color,
            layers,
            images,
            kbd_protocols,
            hyperlinks,
            output_mode,
            default_colors,
            bootstrap_profiles: BootstrapProfiles::from_bits_truncate(r.u8()?),
            native_codecs: NativeCodecs::from_bits_truncate(r.u64()?),
            native_features: NativeFeatures::from_bits_truncate(r.u32()?),
            max_chunk_bytes: read_limit(r, "max_chunk_bytes")?,
            max_history_page_bytes: read_limit(r, "max_history_page_bytes")?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u8(match self.color {
            ColorSupport::TrueColor => 0,
            ColorSupport::Indexed256 => 1,
            ColorSupport::Indexed16 => 2,
            ColorSupport::Mono => 3,
        });
        out.put_u8(self.layers.bits());
        out.put_u8(self.images.bits());
        out.put_u8(self.kbd_protocols.bits());
        out.put_bool(self.hyperlinks);
        out.put_u8(output_mode_byte(self.output_mode));
        out.put_optional(self.default_colors, |o, c| {
            o.put_bytes(&[c.fg.r, c.fg.g, c.fg.b, c.bg.r, c.bg.g, c.bg.b]);
        });
        out.put_u8(self.bootstrap_profiles.bits());
        out.put_u64(self.native_codecs.bits());
        out.put_u32(self.native_features.bits());
        out.put_u32(self.max_chunk_bytes.get());
        out.put_u32(self.max_history_page_bytes.get());
    }
}

impl Wire for ServerCapabilities {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let layers = LayerSet::from_bits_truncate(r.u8()?);
        // [HELLO.OK.5] Features follow only if bytes remain; absent = empty.
        let features = if r.is_empty() {
            ServerFeatures::empty()
        } else {
            ServerFeatures::from_bits_truncate(r.u32()?)
        };
        Ok(Self { layers, features })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u8(self.layers.bits());
        if !self.features.is_empty() {
            out.put_u32(self.features.bits());
        }
    }
}

/// The only native codec phux 0.8 knows: libghostty checkpoint v2.
const NATIVE_CODEC_V2: u8 = 2;

impl Wire for BootstrapProfile {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            1 => Ok(Self::SynthesizedVtRaw),
            2 => Ok(Self::SynthesizedVtStateSync),
            3 => {
                let codec = r.u8()?;
                if codec != NATIVE_CODEC_V2 {
                    return Err(unknown("NativeCodec", codec));
                }
                let features = NativeFeatures::from_bits_truncate(r.u32()?);
                if features != NativeFeatures::all() {
                    return Err(DecodeError::new(DecodeErrorKind::Invalid {
                        what: "native profile without every native feature",
                    }));
                }
                Ok(Self::NativeState)
            }
            tag => Err(unknown("BootstrapProfile", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::SynthesizedVtRaw => out.put_u8(1),
            Self::SynthesizedVtStateSync => out.put_u8(2),
            Self::NativeState => {
                out.put_u8(3);
                out.put_u8(NATIVE_CODEC_V2);
                out.put_u32(NativeFeatures::all().bits());
            }
        }
    }
}

fn u16_value(v: &[u8]) -> Result<u16> {
    Reader::new(v).u16()
}

impl Hello {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut name, mut major, mut minor, mut patch, mut caps) = (None, None, None, None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut name, id, "client_name", || utf8(v))?,
                2 => once(&mut major, id, "major", || u16_value(v))?,
                3 => once(&mut minor, id, "minor", || u16_value(v))?,
                4 => once(&mut patch, id, "patch", || u16_value(v))?,
                5 => once(&mut caps, id, "capabilities", || {
                    ClientCapabilities::read(&mut Reader::new(v))
                })?,
                _ => {}
            }
        }
        Ok(Self {
            client_name: required(name, "client_name")?,
            version: ProtocolVersion {
                major: required(major, "major")?,
                minor: required(minor, "minor")?,
                patch: required(patch, "patch")?,
            },
            capabilities: required(caps, "capabilities")?,
        })
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field(1, self.client_name.as_bytes());
        out.put_field(2, &self.version.major.to_be_bytes());
        out.put_field(3, &self.version.minor.to_be_bytes());
        out.put_field(4, &self.version.patch.to_be_bytes());
        out.put_field_with(5, |o| self.capabilities.write(o));
    }
}

impl HelloOk {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut major, mut minor, mut patch, mut caps) = (None, None, None, None);
        let (mut server_id, mut profile, mut chunk, mut page) = (None, None, None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut major, id, "major", || u16_value(v))?,
                2 => once(&mut minor, id, "minor", || u16_value(v))?,
                3 => once(&mut patch, id, "patch", || u16_value(v))?,
                4 => once(&mut caps, id, "capabilities", || {
                    ServerCapabilities::read(&mut Reader::new(v))
                })?,
                5 => once(&mut server_id, id, "server_id", || Ok(v.to_vec()))?,
                6 => once(&mut profile, id, "profile", || {
                    BootstrapProfile::read(&mut Reader::new(v))
                })?,
                7 => once(&mut chunk, id, "max_chunk_bytes", || {
                    read_limit(&mut Reader::new(v), "max_chunk_bytes")
                })?,
                8 => once(&mut page, id, "max_history_page_bytes", || {
                    read_limit(&mut Reader::new(v), "max_history_page_bytes")
                })?,
                _ => {}
            }
        }
        Ok(Self {
            version: ProtocolVersion {
                major: required(major, "major")?,
                minor: required(minor, "minor")?,
                patch: required(patch, "patch")?,
            },
            capabilities: required(caps, "capabilities")?,
            server_id: required(server_id, "server_id")?,
            profile: required(profile, "profile")?,
            max_chunk_bytes: required(chunk, "max_chunk_bytes")?,
            max_history_page_bytes: required(page, "max_history_page_bytes")?,
        })
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field(1, &self.version.major.to_be_bytes());
        out.put_field(2, &self.version.minor.to_be_bytes());
        out.put_field(3, &self.version.patch.to_be_bytes());
        out.put_field_with(4, |o| self.capabilities.write(o));
        out.put_field(5, &self.server_id);
        out.put_field_with(6, |o| self.profile.write(o));
        out.put_field(7, &self.max_chunk_bytes.get().to_be_bytes());
        out.put_field(8, &self.max_history_page_bytes.get().to_be_bytes());
    }
}
