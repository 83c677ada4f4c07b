//! The notation of every frame, command and nested record: `ToValue` / `FromValue` impls,
//! one module per family. Nothing here is named from outside; the impls are the point.

mod command;
mod event;
mod frame;
mod input;
mod open;
