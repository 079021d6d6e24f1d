#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rill_fuzz::ja_dictionary(data));
