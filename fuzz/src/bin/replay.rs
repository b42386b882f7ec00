//! Runs every input of the committed corpora through its fuzz target without libFuzzer:
//! `replay [CORPUS_DIR] [TARGET...]` (default `fuzz/corpus`, every target). A panic
//! fails the run, naming the target and the input. CI runs the same replay as
//! `rust/kafkars-python/tests/fuzz_corpus.rs`; the coverage-guided runs are `make fuzz`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(args.next().unwrap_or_else(|| "fuzz/corpus".into()));
    let only: Vec<String> = args.collect();
    let crashed = kafkars_fuzz::replay(&root, &only, &mut |line| println!("{line}"));
    for c in &crashed {
        eprintln!("CRASH {c}");
    }
    if crashed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
