#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kafkars_fuzz::index_files(data));
