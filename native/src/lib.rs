//! ngramflow's native per-chunk kernel, imported as `ngramflow.transforms._kernel` by transforms/kernel.py.
//!
//! One pass over a chunk of whole lines: lines and fields found by byte scanning,
//! numbers parsed, every documented malformation checked, the row policy applied
//! and consecutive rows of one n-gram collapsed into runs, whose columns go back
//! to Python as byte buffers that become an Arrow table without another copy.
//! A chunk with any line the kernel cannot vouch for comes back as None: the
//! careful Python parser reads it and names each malformed line.

mod arpa;
mod fields;
mod mkn;
mod policy;
mod runs;

use fields::Format;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use runs::{Policy, Runs};

/// The runs of a chunk, or None if some line needs the careful parser or a total does not fit.
fn collapse(chunk: &[u8], format: Format, policy: &Policy) -> Option<Runs> {
    let mut runs = Runs::new(policy.keep_years);
    let mut rows = Vec::with_capacity(16);
    let mut open: Option<runs::Open> = None;
    let body = chunk.strip_suffix(b"\n").unwrap_or(chunk);
    for text in body.split(|&b| b == b'\n') {
        rows.clear();
        let key = fields::line(text, format, &mut rows)?;
        if open.as_ref().is_none_or(|run| run.key != key) {
            if let Some(run) = open.take() {
                runs.close(run, policy).ok()?;
            }
            open = Some(runs.open(key, policy));
        }
        runs.add(open.as_mut()?, &rows, policy);
    }
    if let Some(run) = open {
        runs.close(run, policy).ok()?;
    }
    Some(runs)
}

/// The bytes of a slice of plain numbers, in the machine's (little-endian, as Arrow's) order.
fn bytes_of<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: T is a plain integer type here (no padding, any bit pattern valid as bytes).
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// collapse_chunk(chunk, format, year_min, year_max, drop_tagged, lowercase, keep_years)
///
/// None, or (key offsets int32, key bytes, fold-in-Python flags uint8, match int64,
/// volume int64, year masks, dropped rows, series) where series is None or
/// (offsets int32, year int16, match int64, volume int64).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn collapse_chunk<'py>(
    py: Python<'py>,
    chunk: &[u8],
    format: &str,
    year_min: u16,
    year_max: u16,
    drop_tagged: bool,
    lowercase: bool,
    keep_years: bool,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let format = match format {
        "2012" => Format::V2012,
        "2020" => Format::V2020,
        "2009" => Format::V2009,
        other => return Err(PyValueError::new_err(format!("unknown format {other:?}"))),
    };
    let policy = Policy {
        year_min,
        year_max,
        drop_tagged,
        lowercase,
        keep_years,
    };
    let Some(runs) = py.allow_threads(|| collapse(chunk, format, &policy)) else {
        return Ok(None);
    };
    let bytes = |data: &[u8]| PyBytes::new(py, data).into_any();
    let flags: Vec<u8> = runs.fold_in_python.iter().map(|&f| f as u8).collect();
    let series = if keep_years {
        PyTuple::new(
            py,
            [
                bytes(bytes_of(&runs.series_offsets)),
                bytes(bytes_of(&runs.series_years)),
                bytes(bytes_of(&runs.series_matches)),
                bytes(bytes_of(&runs.series_volumes)),
            ],
        )?
        .into_any()
    } else {
        py.None().into_bound(py)
    };
    let result = PyTuple::new(
        py,
        [
            bytes(bytes_of(&runs.key_offsets)),
            bytes(&runs.key_bytes),
            bytes(&flags),
            bytes(bytes_of(&runs.matches)),
            bytes(bytes_of(&runs.volumes)),
            bytes(&runs.masks),
            runs.dropped.into_pyobject(py)?.into_any(),
            series,
        ],
    )?;
    Ok(Some(result))
}

/// arpa_lines(offsets, text, log10_probs, log10_backoffs, has_backoff) -> bytes
///
/// The ARPA lines of a batch of entries (arpa.rs): n-gram i is TEXT[OFFSETS[i]..OFFSETS[i + 1]]
/// (offsets int64), its log10 probability and backoff float64, has_backoff one uint8 flag per entry
/// (the highest order has no backoff).
#[pyfunction]
fn arpa_lines<'py>(
    py: Python<'py>,
    offsets: &[u8],
    text: &[u8],
    log10_probs: &[u8],
    log10_backoffs: &[u8],
    has_backoff: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let n = has_backoff.len();
    if offsets.len() != 8 * (n + 1) || log10_probs.len() != 8 * n || log10_backoffs.len() != 8 * n {
        return Err(PyValueError::new_err(
            "arpa_lines: columns of different lengths",
        ));
    }
    let int =
        |b: &[u8], i: usize| i64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap()) as usize;
    let float = |b: &[u8], i: usize| f64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap());
    if int(offsets, n) > text.len() || (0..n).any(|i| int(offsets, i) > int(offsets, i + 1)) {
        return Err(PyValueError::new_err(
            "arpa_lines: offsets outside the text",
        ));
    }
    let lines = py.allow_threads(|| {
        let mut out = Vec::with_capacity(text.len() + 24 * n);
        for i in 0..n {
            let backoff = (has_backoff[i] != 0).then(|| float(log10_backoffs, i));
            arpa::entry(
                &text[int(offsets, i)..int(offsets, i + 1)],
                float(log10_probs, i),
                backoff,
                &mut out,
            );
        }
        out
    });
    Ok(PyBytes::new(py, &lines))
}

#[pymodule]
fn _kernel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MASK_BYTES", runs::MASK_BYTES)?;
    m.add_function(wrap_pyfunction!(collapse_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(arpa_lines, m)?)?;
    mkn::register(m)
}
