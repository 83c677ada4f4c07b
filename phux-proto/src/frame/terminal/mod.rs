//! Terminal frames: a terminal's life (spawn, resize, close, bell), its output, and the
//! bootstrap that brings a new viewer up to date.

mod bootstrap;
mod control;
mod output;
mod value;

pub use bootstrap::{
    BootstrapBegin, BootstrapChunk, BootstrapCodec, BootstrapReady, BootstrapTombstone,
    TombstoneReason,
};
pub use control::{
    Bell, SpawnError, SpawnResult, SpawnTerminal, TerminalClosed, TerminalResize, TerminalSize,
    TerminalSpawned,
};
pub use output::{TerminalOutput, TerminalOutputRef, TerminalOutputTail, TerminalOutputView};
