#![no_main]
// The body and its properties live in the library, so stable tests replay the corpus.
libfuzzer_sys::fuzz_target!(|data: &[u8]| phux_core::fuzzing::ledger_model(data));
