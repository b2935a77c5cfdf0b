//! The extension's fingerprint pipeline for Python: `simhash_core`, the same crate the server
//! runs, so a fingerprint made here is bit for bit the server's for the same options. This
//! layer only converts arguments and errors; `simhash_pg/__init__.py` wraps the results in
//! `Fingerprint` values. Long calls release the GIL, so threads fingerprint in parallel.

use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use simhash_core::feature_table::{Budget, TooLarge};
use simhash_core::fingerprint;
use simhash_core::options::Options;
use simhash_core::near_index::{self, NearIndexError};
use simhash_core::{dedup, distance, hex, memory, overlap};

/// The server's default budget for a text's table of distinct features: `work_mem` is 4 MB by
/// default, below the floor of 64 MB, so every server without a larger `work_mem` uses this.
fn budget() -> Budget {
    Budget::default()
}

fn no_check() {}

/// Options as JSON text (`None`: the defaults), with the server's messages for bad ones.
fn options(json: Option<&str>) -> PyResult<Options> {
    match json {
        None => Ok(Options::default()),
        Some(text) => Options::from_json_str(text).map_err(|e| PyValueError::new_err(e.to_string())),
    }
}

/// A text too large for the feature budget, as the server words it (`54000` / `53200` there).
fn too_large(function: &str, e: TooLarge) -> PyErr {
    match e {
        TooLarge::OutOfMemory { .. } => PyMemoryError::new_err(format!("{function}: {e}")),
        _ => PyValueError::new_err(format!("{function}: {e}")),
    }
}

/// `simhash(body, options)`: the fingerprint as an unsigned 64-bit integer.
#[pyfunction]
#[pyo3(signature = (body, options = None))]
fn simhash(py: Python<'_>, body: &str, options: Option<&str>) -> PyResult<u64> {
    let opts = self::options(options)?;
    py.allow_threads(|| fingerprint::simhash(body, &opts, budget(), &mut no_check)).map_err(|e| too_large("simhash", e))
}

/// Bytes of text fingerprinted between two looks at Python's signals: about a tenth of a second
/// of Chinese at 20 MB/s, so Ctrl-C stops a long batch soon.
const CHUNK_BYTES: usize = 2 << 20;

/// `simhash(body, options)` of every text of `bodies`, in order. The GIL is released while
/// fingerprinting, taken back between chunks of about `CHUNK_BYTES` to look for signals: a
/// KeyboardInterrupt stops the call.
#[pyfunction]
#[pyo3(signature = (bodies, options = None))]
fn simhash_many(py: Python<'_>, bodies: Vec<String>, options: Option<&str>) -> PyResult<Vec<u64>> {
    let opts = self::options(options)?;
    let mut out = Vec::with_capacity(bodies.len());
    let mut rest = &bodies[..];
    while !rest.is_empty() {
        // Texts until CHUNK_BYTES are passed, at least one.
        let mut bytes = 0;
        let n = rest
            .iter()
            .take_while(|b| {
                let before = bytes;
                bytes += b.len();
                before < CHUNK_BYTES
            })
            .count();
        let (chunk, after) = rest.split_at(n);
        let fps = py
            .allow_threads(|| {
                chunk.iter().map(|body| fingerprint::simhash(body, &opts, budget(), &mut no_check)).collect::<Result<Vec<u64>, _>>()
            })
            .map_err(|e| too_large("simhash", e))?;
        out.extend(fps);
        rest = after;
        py.check_signals()?;
    }
    Ok(out)
}

/// `simhash_set(body, b, options)`: b fingerprints, seeds `seed` .. `seed + b - 1`.
#[pyfunction]
#[pyo3(signature = (body, b, options = None))]
fn simhash_set(py: Python<'_>, body: &str, b: i64, options: Option<&str>) -> PyResult<Vec<u64>> {
    let opts = self::options(options)?;
    py.allow_threads(|| fingerprint::simhash_set(body, &opts, b, budget(), &mut no_check)).map_err(|e| match e {
        fingerprint::SetError::Size(e) => PyValueError::new_err(format!("simhash_set: {e}")),
        fingerprint::SetError::TooLarge(e) => too_large("simhash_set", e),
    })
}

/// `simhash_weighted(features, weights)`: the fingerprint of your own features and weights.
#[pyfunction]
fn simhash_weighted(py: Python<'_>, features: Vec<String>, weights: Vec<f64>) -> PyResult<u64> {
    if features.len() != weights.len() {
        return Err(PyValueError::new_err(format!(
            "features and weights must have the same length, got {} and {}",
            features.len(),
            weights.len()
        )));
    }
    py.allow_threads(|| {
        let items = || features.iter().map(String::as_str).zip(weights.iter().copied());
        fingerprint::simhash_weighted(items, 0, &mut no_check)
    })
    .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `simhash_features(body, options)`: (feature, weight, hash) of each distinct feature, in
/// order of first occurrence; the hash as an unsigned integer.
#[pyfunction]
#[pyo3(signature = (body, options = None))]
fn simhash_features(py: Python<'_>, body: &str, options: Option<&str>) -> PyResult<Vec<(String, f64, u64)>> {
    let opts = self::options(options)?;
    let listed = py
        .allow_threads(|| fingerprint::features(body, &opts, budget(), &mut no_check))
        .map_err(|e| too_large("simhash_features", e))?;
    Ok(listed.into_iter().map(|f| (f.text, f.weight, f.hash)).collect())
}

/// `simhash_extract(body, options)`: the text the pipeline reads (with `{"markup": "html"}`,
/// what a reader of the page sees).
#[pyfunction]
#[pyo3(signature = (body, options = None))]
fn simhash_extract(py: Python<'_>, body: &str, options: Option<&str>) -> PyResult<String> {
    let opts = self::options(options)?;
    Ok(py.allow_threads(|| fingerprint::read_text(body, &opts, &mut no_check).into_owned()))
}

/// `simhash_jaccard(a, b, options)`: Jaccard similarity of the two texts' distinct features.
#[pyfunction]
#[pyo3(signature = (a, b, options = None))]
fn simhash_jaccard(py: Python<'_>, a: &str, b: &str, options: Option<&str>) -> PyResult<f64> {
    let opts = self::options(options)?;
    py.allow_threads(|| overlap::overlap(a, b, &opts, budget(), &mut no_check))
        .map(|o| o.jaccard())
        .map_err(|e| too_large("simhash_jaccard", e))
}

/// Which fingerprints of an ordered batch stay when each is dropped if it lies within `k` bits
/// of an earlier one that stayed: the in-batch rule of `simhash_ingest`, with the same in-memory
/// block index. `None` (a row without a fingerprint) always stays.
#[pyfunction]
fn keep_first_of_near(py: Python<'_>, fps: Vec<Option<u64>>, k: i64) -> PyResult<Vec<bool>> {
    let k = distance::check_threshold(k).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.allow_threads(|| dedup::keep_first_of_near(&fps, 1, k, memory::Meter::unlimited("keep_first_of_near"), &mut no_check))
        .map_err(|e| PyMemoryError::new_err(e.to_string()))
}

/// Fingerprints to load against, held by the client: `simhash_ingest`'s rule without asking the
/// server (`simhash_core::near_index`). Not for sharing between threads.
#[pyclass(module = "simhash_pg._core")]
struct NearIndex {
    inner: near_index::NearIndex,
}

fn index_error(e: NearIndexError) -> PyErr {
    match e {
        NearIndexError::Memory(e) => PyMemoryError::new_err(e.to_string()),
        NearIndexError::Broken => PyRuntimeError::new_err(e.to_string()),
    }
}

#[pymethods]
impl NearIndex {
    #[new]
    fn new(k: i64) -> PyResult<Self> {
        let k = distance::check_threshold(k).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(NearIndex { inner: near_index::NearIndex::new(k) })
    }

    #[getter]
    fn k(&self) -> u32 {
        self.inner.k()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// `NearIndex.extend`'s members, packed 8 bytes each in the machine's byte order (the bytes of
    /// an `array.array("Q")`): no Python integer per member.
    fn extend_packed(&mut self, py: Python<'_>, packed: &[u8]) -> PyResult<()> {
        if packed.len() % 8 != 0 {
            return Err(PyValueError::new_err(format!("packed fingerprints take 8 bytes each, got {} bytes", packed.len())));
        }
        let mut fps = Vec::new();
        fps.try_reserve_exact(packed.len() / 8).map_err(|_| PyMemoryError::new_err("out of memory for the packed fingerprints"))?;
        fps.extend(packed.chunks_exact(8).map(|b| u64::from_ne_bytes(b.try_into().expect("chunks of 8"))));
        let inner = &mut self.inner;
        py.allow_threads(|| inner.extend(&fps)).map_err(index_error)
    }

    fn any_near(&self, fp: u64) -> PyResult<bool> {
        self.inner.any_near(fp).map_err(index_error)
    }

    fn keep_new(&mut self, py: Python<'_>, fps: Vec<Option<u64>>) -> PyResult<Vec<bool>> {
        let inner = &mut self.inner;
        py.allow_threads(|| inner.keep_new(&fps, &mut no_check)).map_err(index_error)
    }
}

/// Hamming distance of two unsigned 64-bit fingerprints.
#[pyfunction]
fn hamming(a: u64, b: u64) -> u32 {
    distance::hamming(a, b)
}

/// `simhash64`'s text input: 16 hexadecimal digits, an optional `0x`.
#[pyfunction]
fn parse_hex(text: &str) -> PyResult<u64> {
    hex::parse(text).map_err(|e| PyValueError::new_err(format!("invalid input syntax for type simhash64: \"{text}\": {e}")))
}

/// `simhash64`'s text output: 16 lowercase hexadecimal digits.
#[pyfunction]
fn format_hex(value: u64) -> String {
    hex::format(value)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simhash, m)?)?;
    m.add_function(wrap_pyfunction!(simhash_many, m)?)?;
    m.add_function(wrap_pyfunction!(simhash_set, m)?)?;
    m.add_function(wrap_pyfunction!(simhash_weighted, m)?)?;
    m.add_function(wrap_pyfunction!(simhash_features, m)?)?;
    m.add_function(wrap_pyfunction!(simhash_extract, m)?)?;
    m.add_function(wrap_pyfunction!(simhash_jaccard, m)?)?;
    m.add_function(wrap_pyfunction!(keep_first_of_near, m)?)?;
    m.add_function(wrap_pyfunction!(hamming, m)?)?;
    m.add_class::<NearIndex>()?;
    m.add_function(wrap_pyfunction!(parse_hex, m)?)?;
    m.add_function(wrap_pyfunction!(format_hex, m)?)?;
    m.add("PIPELINE_VERSION", simhash_core::options::PIPELINE_VERSION)?;
    Ok(())
}
