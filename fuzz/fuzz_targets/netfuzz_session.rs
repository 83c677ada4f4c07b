#![no_main]
// The body and its oracles live in the library, so stable tests replay the corpus.
libfuzzer_sys::fuzz_target!(|data: &[u8]| phux_conformance::netfuzz::fuzzing::session(data));
