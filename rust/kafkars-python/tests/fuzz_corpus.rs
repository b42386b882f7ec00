//! The fuzz corpora (`fuzz/corpus/<target>/`) replayed through the fuzz targets
//! (`fuzz/src/lib.rs`, compiled here as a module) on the stable toolchain: the CI smoke
//! of `make fuzz`, built with the rest of the workspace's tests. Every seed and every
//! crash input a fix was made for must run without a panic.

#[allow(unreachable_pub, dead_code)]
#[path = "../../../fuzz/src/lib.rs"]
mod fuzz_targets;

#[test]
fn every_fuzz_corpus_input_runs_clean() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let crashed = fuzz_targets::replay(&root, &[], &mut |line| println!("{line}"));
    assert!(crashed.is_empty(), "fuzz inputs that crash: {crashed:#?}");
}
