//! The one crate that speaks Python: thin PyO3 bindings over the plain-Rust crates.
use pyo3::prelude::*;

mod protocol;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    protocol::register(m)?;
    Ok(())
}
