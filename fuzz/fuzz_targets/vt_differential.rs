#![no_main]
// The body, the generator and the decided differences live in the library.
libfuzzer_sys::fuzz_target!(|data: &[u8]| phux_term::differential::fuzz_one(data));
