//! The one crate that speaks Python: thin PyO3 bindings over the plain-Rust crates.
use pyo3::prelude::*;

mod arrow_decode;
mod client;
mod codec;
mod errors;
mod file_records;
mod logging;
mod network;
mod partition;
mod producer;
mod protocol;
mod purgatory;
mod replica_fetcher;
mod replica_manager;
mod segment_reader;
mod splice;
mod storage;
mod thread_state;

#[doc(hidden)]
pub use arrow_decode::fuzz_decode_batches;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    logging::register(m)?;
    errors::register(m)?;
    codec::register(m)?;
    arrow_decode::register(m)?;
    m.add_class::<segment_reader::SegmentReader>()?;
    protocol::register(m)?;
    m.add_class::<purgatory::PyPurgatory>()?;
    m.add_class::<file_records::FileRecords>()?;
    storage::register(m)?;
    m.add_class::<partition::PyPartition>()?;
    m.add_class::<partition::PyLiveBrokers>()?;
    m.add_class::<replica_manager::PyReplicaManager>()?;
    m.add_class::<replica_fetcher::ReplicaFetcherManager>()?;
    m.add_class::<client::PyBrokerConnection>()?;
    producer::register(m)?;
    m.add_class::<network::PyRequest>()?;
    m.add_class::<network::PySocketServer>()?;
    Ok(())
}
