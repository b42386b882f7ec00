#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kafkars_fuzz::checkpoint_files(data));
