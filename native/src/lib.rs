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
mod groups;
mod masks;
mod mkn;
mod order;
mod parquet;
mod policy;
mod prefetch;
mod recent;
mod runs;

use fields::Format;
use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyTuple};
use runs::{Policy, Runs};

/// The runs of a chunk, or None if some line needs the careful parser or a total does not fit.
fn collapse(chunk: &[u8], format: Format, policy: &Policy) -> Option<Runs> {
    let mut runs = Runs::new(policy.keep_years);
    let mut open: Option<runs::Open> = None;
    let mut at = 0;
    // Where the columns get room for the rest of the chunk, from what its first sixteenth filled.
    let mut reserve_at = chunk.len() / 16;
    while at < chunk.len() {
        if at >= reserve_at {
            runs.reserve_for(at, chunk.len());
            reserve_at = usize::MAX;
        }
        // A line of the open run's n-gram in the commonest shape, read with vector compares.
        #[cfg(target_arch = "x86_64")]
        if let (Format::V2012, Some(run)) = (format, open.as_ref()) {
            if let Some((year, matches, volumes, used)) = fields::repeated_2012(chunk, at, run.key)
            {
                runs.add(run, year, matches, volumes, policy);
                runs.lines += 1;
                at += used;
                continue;
            }
        }
        let text = &chunk[at..];
        let key = fields::key(text, open.as_ref().map(|run| run.key))?;
        // The same n-gram as the open run's comes back as that run's key itself.
        if open.as_ref().is_none_or(|run| !std::ptr::eq(run.key, key)) {
            if let Some(run) = open.take() {
                runs.close(run, policy).ok()?;
            }
            open = Some(runs.open(key, policy));
        }
        let run = open.as_ref()?;
        at += fields::counts(text, key, format, |year, matches, volumes| {
            runs.add(run, year, matches, volumes, policy)
        })?;
        runs.lines += 1;
    }
    if let Some(run) = open {
        runs.close(run, policy).ok()?;
    }
    Some(runs)
}

/// The bytes of a slice of plain numbers, in the machine's (little-endian, as Arrow's) order.
pub(crate) fn bytes_of<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: T is a plain number type (no padding, any bit pattern valid as bytes).
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// Numbers or bytes made here, given to Python without a copy: an object with Python's buffer protocol
/// (read-only), which pyarrow's py_buffer and NumPy's frombuffer take as they are, and len() in bytes.
/// (A bytes object was one more copy of every column, into fresh pages: the kernel's whole run table.)
#[pyclass(frozen, module = "ngramflow.transforms._kernel")]
struct Owned(Box<dyn AsBytes + Send + Sync>);

trait AsBytes {
    fn as_bytes(&self) -> &[u8];
}

impl<T: Copy> AsBytes for Vec<T> {
    fn as_bytes(&self) -> &[u8] {
        bytes_of(self)
    }
}

impl Owned {
    /// VALUES as an Owned, cut to their length: a Vec grown by doubling holds up to twice its values, and
    /// Python may keep them long (a spiller's buffer of run tables, budgeted by their length).
    fn wrap<T: Copy + Send + Sync + 'static>(
        py: Python<'_>,
        mut values: Vec<T>,
    ) -> PyResult<Bound<'_, PyAny>> {
        values.shrink_to_fit();
        Ok(Bound::new(py, Owned(Box::new(values)))?.into_any())
    }
}

#[pymethods]
impl Owned {
    /// # Safety
    /// Python calls it with a view to fill; the bytes live as long as the object, which the view holds.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let bytes = slf.get().0.as_bytes();
        let filled = pyo3::ffi::PyBuffer_FillInfo(
            view,
            slf.as_ptr(),
            bytes.as_ptr() as *mut std::os::raw::c_void,
            bytes.len() as pyo3::ffi::Py_ssize_t,
            1, // read-only
            flags,
        );
        if filled == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.0.as_bytes().len()
    }
}

/// collapse_chunk(chunk, format, year_min, year_max, drop_tagged, lowercase, keep_years)
///
/// None, or (key offsets int32, key bytes, fold-in-Python flags uint8, match int64, volume int64,
/// year span mask offsets int32, their bytes, dropped rows, series, ascending, lines) where series is None
/// or (offsets int32, year int16, match int64, volume int64), ascending whether each key is above the
/// one before (as given: before Python folds those flagged), and lines the chunk's lines (the last may
/// lack its newline).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn collapse_chunk<'py>(
    py: Python<'py>,
    chunk: PyBuffer<u8>,
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
    let chunk = buffer_bytes(&chunk)?;
    let Some((runs, flags)) = py.allow_threads(|| {
        let runs = collapse(chunk, format, &policy)?;
        let flags: Vec<u8> = runs.fold_in_python.iter().map(|&f| f as u8).collect();
        Some((runs, flags))
    }) else {
        return Ok(None);
    };
    let series = if keep_years {
        PyTuple::new(
            py,
            [
                Owned::wrap(py, runs.series_offsets)?,
                Owned::wrap(py, runs.series_years)?,
                Owned::wrap(py, runs.series_matches)?,
                Owned::wrap(py, runs.series_volumes)?,
            ],
        )?
        .into_any()
    } else {
        py.None().into_bound(py)
    };
    let result = PyTuple::new(
        py,
        [
            Owned::wrap(py, runs.key_offsets)?,
            Owned::wrap(py, runs.key_bytes)?,
            Owned::wrap(py, flags)?,
            Owned::wrap(py, runs.matches)?,
            Owned::wrap(py, runs.volumes)?,
            Owned::wrap(py, runs.mask_offsets)?,
            Owned::wrap(py, runs.masks)?,
            runs.dropped.into_pyobject(py)?.into_any(),
            series,
            PyBool::new(py, runs.ascending).to_owned().into_any(),
            runs.lines.into_pyobject(py)?.into_any(),
        ],
    )?;
    Ok(Some(result))
}

/// count_lines(text) -> int: the lines of a piece of whole lines (the last may lack its newline).
#[pyfunction]
fn count_lines(py: Python<'_>, text: PyBuffer<u8>) -> PyResult<usize> {
    let text = buffer_bytes(&text)?;
    Ok(py.allow_threads(|| {
        memchr::memchr_iter(b'\n', text).count()
            + usize::from(text.last().is_some_and(|&b| b != b'\n'))
    }))
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

/// The bytes of a contiguous buffer (pyarrow's Buffer exports signed chars; bytes, bytearray and their
/// memoryviews unsigned ones).
fn buffer_bytes<T: Element>(buffer: &PyBuffer<T>) -> PyResult<&[u8]> {
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err("expected a contiguous buffer"));
    }
    // SAFETY: the buffer is contiguous, len_bytes long, and held (so alive and unmoved) by the caller.
    Ok(unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<u8>(), buffer.len_bytes()) })
}

/// What a string array's buffers are refused for when `checked_keys` finds them wrong.
const OFFSETS_OUTSIDE: &str = "string offsets outside their data";

/// The keys of an Arrow string array's buffers (OFFSET_BYTES: n + 1 int32, read as OFFSETS; DATA), if they
/// lie within the data: what `Keys::get` relies on.
fn checked_keys<'a>(
    offset_bytes: &[u8],
    offsets: &'a [i32],
    data: &'a [u8],
) -> Option<order::Keys<'a>> {
    let keys = order::Keys { offsets, data };
    (offset_bytes.len() % 4 == 0 && keys.valid()).then_some(keys)
}

/// F of the keys of an Arrow string array's buffers (OFFSET_BYTES: n + 1 int32, into DATA), once they are
/// checked to lie within the data.
fn with_keys<R>(
    offset_bytes: &[u8],
    data: &[u8],
    f: impl FnOnce(&order::Keys) -> R,
) -> PyResult<R> {
    let offsets = int32s(offset_bytes);
    let keys = checked_keys(offset_bytes, &offsets, data)
        .ok_or_else(|| PyValueError::new_err(OFFSETS_OUTSIDE))?;
    Ok(f(&keys))
}

/// F of the keys of an Arrow string array's buffers (with_keys), checked and run without holding Python's
/// lock: the checks are passes over every row too (the spill's merges held the lock 0.1 s of an import for
/// them, while the other worker waited for it).
fn on_keys<R: Send>(
    py: Python<'_>,
    offsets: &PyBuffer<i8>,
    data: &PyBuffer<i8>,
    f: impl FnOnce(&order::Keys) -> R + Send,
) -> PyResult<R> {
    let (offsets, data) = (buffer_bytes(offsets)?, buffer_bytes(data)?);
    py.allow_threads(|| with_keys(offsets, data, f))
}

/// F of the keys of PIECES, each an Arrow string array's buffers (offsets, data) checked as with_keys checks
/// one, run without holding Python's lock (as on_keys).
fn on_pieces<R: Send>(
    py: Python<'_>,
    pieces: &[(PyBuffer<i8>, PyBuffer<i8>)],
    f: impl FnOnce(&[order::Keys]) -> R + Send,
) -> PyResult<R> {
    let buffers = pieces
        .iter()
        .map(|(offsets, data)| Ok((buffer_bytes(offsets)?, buffer_bytes(data)?)))
        .collect::<PyResult<Vec<_>>>()?;
    py.allow_threads(|| {
        let offsets: Vec<_> = buffers.iter().map(|(offsets, _)| int32s(offsets)).collect();
        let keys = buffers
            .iter()
            .zip(&offsets)
            .map(|(&(offset_bytes, data), offsets)| checked_keys(offset_bytes, offsets, data))
            .collect::<Option<Vec<_>>>();
        keys.map(|keys| f(&keys))
    })
    .ok_or_else(|| PyValueError::new_err(OFFSETS_OUTSIDE))
}

/// merge_order(offsets, data) -> (order, starts)
///
/// Keys laid out as an Arrow string array (OFFSETS: n + 1 int32, into DATA) in key order (order.rs):
/// ORDER is None when they already are, else the rows in that order (int64), and STARTS the position
/// in it of the first row of each group of equal keys (int64).
#[pyfunction]
fn merge_order<'py>(
    py: Python<'py>,
    offsets: PyBuffer<i8>,
    data: PyBuffer<i8>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (order, starts) = on_keys(py, &offsets, &data, order::merge_order)?;
    PyTuple::new(py, [order_object(py, order)?, Owned::wrap(py, starts)?])
}

/// An order of rows as Python gets it: None where they are in order already, else their positions (int64).
fn order_object(py: Python<'_>, order: Option<Vec<i64>>) -> PyResult<Bound<'_, PyAny>> {
    match order {
        Some(rows) => Owned::wrap(py, rows),
        None => Ok(py.None().into_bound(py)),
    }
}

/// rows_in_order(offsets, data) -> order
///
/// merge_order's ORDER alone, for keys whose groups are not asked for (order.rs).
#[pyfunction]
fn rows_in_order<'py>(
    py: Python<'py>,
    offsets: PyBuffer<i8>,
    data: PyBuffer<i8>,
) -> PyResult<Bound<'py, PyAny>> {
    order_object(py, on_keys(py, &offsets, &data, order::rows_in_order)?)
}

/// distinct_tokens(pieces, recent=None) -> (offsets, bytes, unigram rows)
///
/// The distinct tokens of n-grams laid out as PIECES of Arrow string arrays ((offsets, data) each, n + 1
/// int32 into DATA; their rows one piece after another), sorted, laid out as one such array, and each
/// token's first unigram row among the n-grams, int64 (-1: none) (order.rs); without those RECENT (a
/// RecentTokens) holds, which it then holds.
#[pyfunction]
#[pyo3(signature = (pieces, recent=None))]
fn distinct_tokens<'py>(
    py: Python<'py>,
    pieces: Vec<(PyBuffer<i8>, PyBuffer<i8>)>,
    mut recent: Option<PyRefMut<'py, RecentTokens>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let recent = recent.as_deref_mut().map(|recent| &mut recent.0);
    let (offsets, bytes, rows) =
        on_pieces(py, &pieces, |keys| order::distinct_tokens(keys, recent))?;
    PyTuple::new(
        py,
        [
            Owned::wrap(py, offsets)?,
            Owned::wrap(py, bytes)?,
            Owned::wrap(py, rows)?,
        ],
    )
}

/// RecentTokens(bytes)
///
/// The tokens one worker gave its token runs lately, for distinct_tokens to leave out: a cache of about
/// BYTES (recent.rs). Used by one thread at a time (a second is refused while the first has it).
#[pyclass(module = "ngramflow.transforms._kernel")]
struct RecentTokens(recent::RecentTokens);

#[pymethods]
impl RecentTokens {
    #[new]
    fn new(bytes: usize) -> Self {
        RecentTokens(recent::RecentTokens::new(bytes))
    }
}

/// rank_keys(offsets, data, counts) -> (offsets, bytes)
///
/// Each token of an Arrow string array's buffers (OFFSETS: n + 1 int32, into DATA) with its count
/// (COUNTS: n int64, -1 for none) -> its key of the vocabulary's id order, as the offsets (int32) and
/// bytes of an Arrow binary array (order.rs).
#[pyfunction]
fn rank_keys<'py>(
    py: Python<'py>,
    offsets: PyBuffer<i8>,
    data: PyBuffer<i8>,
    counts: PyBuffer<i64>,
) -> PyResult<Bound<'py, PyTuple>> {
    let counts = int64s(&counts)?;
    let keys = on_keys(py, &offsets, &data, |keys| {
        (counts.len() == keys.len()).then(|| order::rank_keys(keys, counts))
    })?;
    match keys {
        None => Err(PyValueError::new_err(
            "rank_keys: one count per token expected",
        )),
        Some(None) => Err(PyValueError::new_err("rank_keys: the keys pass 2 GiB")),
        Some(Some((offsets, bytes))) => {
            PyTuple::new(py, [Owned::wrap(py, offsets)?, Owned::wrap(py, bytes)?])
        }
    }
}

/// prefix_stretches(offsets, data) -> (starts, prefixes)
///
/// The stretches of consecutive keys of a string array's buffers (OFFSETS: n + 1 int32, into DATA)
/// that share their first character and the byte after it: the first row of each (int64) and its
/// prefix as a big-endian number, zero-padded (uint64) (order.rs).
#[pyfunction]
fn prefix_stretches<'py>(
    py: Python<'py>,
    offsets: PyBuffer<i8>,
    data: PyBuffer<i8>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (starts, prefixes) = on_keys(py, &offsets, &data, order::prefix_stretches)?;
    PyTuple::new(py, [Owned::wrap(py, starts)?, Owned::wrap(py, prefixes)?])
}

/// orders(offsets, data) -> bytes
///
/// The order (tokens: spaces + 1, as schemas.order_of counts them) of every n-gram of a string array's
/// buffers (OFFSETS: n + 1 int32, into DATA), one int8 each, at most 127.
#[pyfunction]
fn orders<'py>(
    py: Python<'py>,
    offsets: PyBuffer<i8>,
    data: PyBuffer<i8>,
) -> PyResult<Bound<'py, PyAny>> {
    let orders = on_keys(py, &offsets, &data, order::orders)?;
    Owned::wrap(py, orders)
}

/// mask_stats(offsets, data) -> (first, last, years)
///
/// The first year, last year and number of years (int16 each) of every span mask of a binary
/// column's buffers (OFFSETS: n + 1 int32, into DATA), as masks.rs counts them.
#[pyfunction]
fn mask_stats<'py>(
    py: Python<'py>,
    offsets: PyBuffer<i8>,
    data: PyBuffer<i8>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (offsets, data) = (buffer_bytes(&offsets)?, buffer_bytes(&data)?);
    let (first, last, years) = py.allow_threads(|| with_spans(offsets, data, masks::stats))?;
    PyTuple::new(
        py,
        [
            Owned::wrap(py, first)?,
            Owned::wrap(py, last)?,
            Owned::wrap(py, years)?,
        ],
    )
}

/// F of the span masks of a binary column's buffers, once they are checked to be spans of masks.
fn with_spans<R>(offsets: &[u8], data: &[u8], f: impl FnOnce(&order::Keys) -> R) -> PyResult<R> {
    with_keys(offsets, data, |spans| {
        if !masks::valid(spans) {
            return Err(PyValueError::new_err(
                "year masks that are not spans of a mask",
            ));
        }
        Ok(f(spans))
    })?
}

/// merge_groups(columns) -> (key offsets, key bytes, matches, volumes, mask offsets, mask bytes), or
/// (group, column) of a sum past int64
///
/// The merged row of each group of merge_order's (ORDER, STARTS) over the COLUMNS (GroupColumns: keys,
/// counts and year sets) (groups.rs). A sum past int64 gives the first such group and its column (0:
/// matches, 1: volumes) instead, for the caller to name.
#[pyfunction]
fn merge_groups<'py>(py: Python<'py>, columns: GroupColumns) -> PyResult<Bound<'py, PyAny>> {
    match columns.merge(py, "merge_groups", groups::merge_groups)? {
        Err(overflow) => Ok(PyTuple::new(py, overflow)?.into_any()),
        Ok(m) => Ok(PyTuple::new(
            py,
            [
                Owned::wrap(py, m.key_offsets)?,
                Owned::wrap(py, m.key_bytes)?,
                Owned::wrap(py, m.matches)?,
                Owned::wrap(py, m.volumes)?,
                Owned::wrap(py, m.mask_offsets)?,
                Owned::wrap(py, m.mask_bytes)?,
            ],
        )?
        .into_any()),
    }
}

/// merge_ngrams(columns, min_count) -> [(order, key offsets, key bytes, matches, volumes, first years, last
/// years, years)], or (group, column) of a sum past int64
///
/// merge_groups' rows of at least MIN_COUNT matches as n-gram rows, each order present apart, ascending
/// (groups.rs): int16 years.
#[pyfunction]
fn merge_ngrams<'py>(
    py: Python<'py>,
    columns: GroupColumns,
    min_count: i64,
) -> PyResult<Bound<'py, PyAny>> {
    let merge = |rows: &groups::Groups| groups::merge_ngrams(rows, min_count);
    match columns.merge(py, "merge_ngrams", merge)? {
        Err(overflow) => Ok(PyTuple::new(py, overflow)?.into_any()),
        Ok(orders) => {
            let parts = orders
                .into_iter()
                .map(|(n, rows)| {
                    PyTuple::new(
                        py,
                        [
                            n.into_pyobject(py)?.into_any(),
                            Owned::wrap(py, rows.key_offsets)?,
                            Owned::wrap(py, rows.key_bytes)?,
                            Owned::wrap(py, rows.matches)?,
                            Owned::wrap(py, rows.volumes)?,
                            Owned::wrap(py, rows.first)?,
                            Owned::wrap(py, rows.last)?,
                            Owned::wrap(py, rows.years)?,
                        ],
                    )
                })
                .collect::<PyResult<Vec<_>>>()?;
            Ok(pyo3::types::PyList::new(py, parts)?.into_any())
        }
    }
}

/// The columns of a merge of groups (merge_groups, merge_ngrams), one tuple from Python: keys laid out as
/// an Arrow string array (offsets, data), int64 matches and volumes, the year sets' (offsets, data)
/// buffers of a binary column's consecutive chunks, merge_order's order (or None) and starts.
#[derive(FromPyObject)]
struct GroupColumns(
    PyBuffer<i8>,
    PyBuffer<i8>,
    PyBuffer<i64>,
    PyBuffer<i64>,
    Vec<(PyBuffer<i8>, PyBuffer<i8>)>,
    Option<PyBuffer<i64>>,
    PyBuffer<i64>,
);

impl GroupColumns {
    /// MERGE of the groups, without Python's lock, once the buffers are checked to agree (NAME says whose
    /// they are not): its result, or the (group, column) of a sum past int64.
    fn merge<T: Send>(
        &self,
        py: Python<'_>,
        name: &str,
        merge: impl FnOnce(&groups::Groups) -> Result<T, groups::Unmade> + Send,
    ) -> PyResult<Result<T, [usize; 2]>> {
        let GroupColumns(offsets, data, matches, volumes, mask_chunks, order, starts) = self;
        let mask_buffers = mask_chunks
            .iter()
            .map(|(offsets, data)| Ok((buffer_bytes(offsets)?, buffer_bytes(data)?)))
            .collect::<PyResult<Vec<_>>>()?;
        let (offsets, data) = (buffer_bytes(offsets)?, buffer_bytes(data)?);
        let (matches, volumes) = (int64s(matches)?, int64s(volumes)?);
        let order = order.as_ref().map(int64s).transpose()?;
        let starts = int64s(starts)?;
        // Checked and merged without Python's lock (on_keys).
        let merged = py.allow_threads(|| {
            let buffers: Vec<_> = mask_buffers
                .iter()
                .map(|&(offsets, data)| (int32s(offsets), data))
                .collect();
            let spans: Vec<order::Keys> = buffers
                .iter()
                .map(|(offsets, data)| order::Keys { offsets, data })
                .collect();
            with_keys(offsets, data, |keys| {
                let rows = keys.len();
                let fit = matches.len() == rows
                    && volumes.len() == rows
                    && spans.iter().all(|c| c.valid() && masks::valid(c))
                    && spans.iter().map(order::Keys::len).sum::<usize>() == rows
                    && groups_fit(order, starts, rows, rows.max(1));
                let groups = groups::Groups {
                    keys,
                    matches,
                    volumes,
                    mask_chunks: &spans,
                    order,
                    starts,
                };
                fit.then(|| merge(&groups))
            })
        })?;
        match merged {
            None => Err(PyValueError::new_err(format!(
                "{name}: keys, counts, masks, order and starts disagree"
            ))),
            Some(Err(groups::Unmade::Overflow(group, column))) => Ok(Err([group, column])),
            Some(Err(groups::Unmade::TooLarge)) => Err(PyValueError::new_err(format!(
                "{name}: the merged column passes int32 offsets"
            ))),
            Some(Ok(merged)) => Ok(Ok(merged)),
        }
    }
}

/// sum_groups(values, order, starts) -> (sums, failed)
///
/// Each group of VALUES (int64, one per row) summed, the groups consecutive in ORDER (the rows' order,
/// int64; None: as they are) from each position of STARTS (int64, increasing): int64 sums as bytes, and
/// the first group whose sum does not fit int64 (-1: none), whose sum is then not given (order.rs).
#[pyfunction]
#[pyo3(signature = (values, order, starts))]
fn sum_groups<'py>(
    py: Python<'py>,
    values: PyBuffer<i64>,
    order: Option<PyBuffer<i64>>,
    starts: PyBuffer<i64>,
) -> PyResult<(Bound<'py, PyAny>, i64)> {
    let values = int64s(&values)?;
    let order = order.as_ref().map(int64s).transpose()?;
    let starts = int64s(&starts)?;
    let (sums, failed) = py
        .allow_threads(|| {
            groups_fit(order, starts, values.len(), values.len())
                .then(|| order::fold_groups(values, order, starts, i64::checked_add))
        })
        .ok_or_else(|| PyValueError::new_err("sum_groups: values, order and starts disagree"))?;
    Ok((Owned::wrap(py, sums)?, failed.map_or(-1, |g| g as i64)))
}

/// merge_tokens(offsets, data, matches, volumes, order, starts) -> (offsets, bytes, matches, volumes)
///
/// The merged row of each group of token rows (an Arrow string array's OFFSETS and DATA, int64 MATCHES
/// and VOLUMES, -1: none), grouped by merge_order's (ORDER, STARTS): its token, and the counts of its row of
/// largest match count, the first on ties (order.rs).
#[pyfunction]
#[pyo3(signature = (offsets, data, matches, volumes, order, starts))]
fn merge_tokens<'py>(
    py: Python<'py>,
    offsets: PyBuffer<i8>,
    data: PyBuffer<i8>,
    matches: PyBuffer<i64>,
    volumes: PyBuffer<i64>,
    order: Option<PyBuffer<i64>>,
    starts: PyBuffer<i64>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (matches, volumes) = (int64s(&matches)?, int64s(&volumes)?);
    let order = order.as_ref().map(int64s).transpose()?;
    let starts = int64s(&starts)?;
    let merged = on_keys(py, &offsets, &data, |keys| {
        let rows = keys.len();
        let fit =
            matches.len() == rows && volumes.len() == rows && groups_fit(order, starts, rows, rows);
        fit.then(|| order::merge_tokens(keys, matches, volumes, order, starts))
    })?;
    let Some((offsets, bytes, matches, volumes)) = merged else {
        return Err(PyValueError::new_err(
            "merge_tokens: tokens, counts, order and starts disagree",
        ));
    };
    PyTuple::new(
        py,
        [
            Owned::wrap(py, offsets)?,
            Owned::wrap(py, bytes)?,
            Owned::wrap(py, matches)?,
            Owned::wrap(py, volumes)?,
        ],
    )
}

/// Whether merge_order's (ORDER, STARTS) can group ROWS rows, as the group functions index them:
/// ORDER (when given) holds ROWS rows, each below ROWS; STARTS increase, each below START_BOUND.
fn groups_fit(order: Option<&[i64]>, starts: &[i64], rows: usize, start_bound: usize) -> bool {
    let in_range =
        |values: &[i64], bound: usize| values.iter().all(|&v| 0 <= v && (v as usize) < bound);
    order.is_none_or(|o| o.len() == rows && in_range(o, rows))
        && in_range(starts, start_bound)
        && starts.windows(2).all(|w| w[0] < w[1])
}

/// The int32 values of little-endian bytes, borrowed when they are aligned (Arrow's buffers are).
fn int32s(bytes: &[u8]) -> std::borrow::Cow<'_, [i32]> {
    // SAFETY: any 4 bytes are an i32; align_to leaves out a misaligned head, which is then copied.
    match unsafe { bytes.align_to::<i32>() } {
        (&[], aligned, &[]) => std::borrow::Cow::Borrowed(aligned),
        _ => std::borrow::Cow::Owned(
            bytes
                .chunks_exact(4)
                .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
                .collect(),
        ),
    }
}

/// The values of a contiguous int64 buffer (a NumPy array).
fn int64s(buffer: &PyBuffer<i64>) -> PyResult<&[i64]> {
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err("expected a contiguous int64 buffer"));
    }
    // SAFETY: contiguous, item_count int64s, held by the caller; PyBuffer<i64> checked the item type.
    Ok(unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<i64>(), buffer.item_count()) })
}

/// rows_below(offsets, data, key, through) -> int
///
/// The rows of keys laid out as an Arrow string or binary array (OFFSETS: n + 1 int32, into DATA), sorted,
/// whose keys are below KEY, or up to and with it (THROUGH): a binary search (order.rs), which checks the
/// offsets of the rows it reads alone, holding Python's lock (a search is a few dozen comparisons). Checked
/// whole first (`with_keys`), every search was a pass over its batch's offsets: the 2020 1-grams' numbering,
/// 2,755 searches, 0.11 s of CPU.
#[pyfunction]
fn rows_below(
    offsets: PyBuffer<i8>,
    data: PyBuffer<i8>,
    key: &[u8],
    through: bool,
) -> PyResult<usize> {
    let (offset_bytes, data) = (buffer_bytes(&offsets)?, buffer_bytes(&data)?);
    let offsets = int32s(offset_bytes);
    let keys = order::Keys {
        offsets: &offsets,
        data,
    };
    (offset_bytes.len() % 4 == 0)
        .then(|| order::rows_below(&keys, key, through))
        .flatten()
        .ok_or_else(|| PyValueError::new_err(OFFSETS_OUTSIDE))
}

/// rank_in_order(pieces, counts, volumes) -> (volumes, offsets, bytes)
///
/// Token rows in token order, as PIECES of Arrow string arrays ((offsets, data) each, n + 1 int32 into
/// DATA) whose rows ascend one piece after another, with their COUNTS and VOLUMES (int64, -1: none) -> their
/// volumes in the vocabulary's id order (int64) and their rank keys (which hold their counts) in that order,
/// an Arrow binary array's offsets (int32) and bytes (order.rs).
#[pyfunction]
fn rank_in_order<'py>(
    py: Python<'py>,
    pieces: Vec<(PyBuffer<i8>, PyBuffer<i8>)>,
    counts: PyBuffer<i64>,
    volumes: PyBuffer<i64>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (counts, volumes) = (int64s(&counts)?, int64s(&volumes)?);
    let ranked = on_pieces(py, &pieces, |tokens| {
        let rows: usize = tokens.iter().map(order::Keys::len).sum();
        if rows != counts.len() || rows != volumes.len() || rows > u32::MAX as usize {
            return Err(
                "rank_in_order: one count and one volume per token, at most 2^32 tokens, expected",
            );
        }
        order::rank_in_order(tokens, counts, volumes).ok_or("rank_in_order: the keys pass 2 GiB")
    })?;
    let ranked = ranked.map_err(PyValueError::new_err)?;
    PyTuple::new(
        py,
        [
            Owned::wrap(py, ranked.volumes)?,
            Owned::wrap(py, ranked.offsets)?,
            Owned::wrap(py, ranked.bytes)?,
        ],
    )
}

/// take_keys(offsets, data, order, skip, counts) -> (offsets, bytes, counts or None)
///
/// The rows of keys laid out as an Arrow string or binary array (OFFSETS: n + 1 int32, into DATA) in ORDER
/// (int64; None: as they are), each without its first SKIP bytes, as an Arrow array's offsets (int32) and
/// bytes; with COUNTS, each row's count (int64, -1: none) read from its rank key's head (order.rs).
#[pyfunction]
#[pyo3(signature = (offsets, data, order, skip, counts))]
fn take_keys<'py>(
    py: Python<'py>,
    offsets: PyBuffer<i8>,
    data: PyBuffer<i8>,
    order: Option<PyBuffer<i64>>,
    skip: usize,
    counts: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let order = order.as_ref().map(int64s).transpose()?;
    let mut heads = counts.then(Vec::new);
    let taken = on_keys(py, &offsets, &data, |keys| {
        let within =
            order.is_none_or(|o| o.iter().all(|&row| 0 <= row && (row as usize) < keys.len()));
        within.then(|| order::take_keys(keys, order, skip, heads.as_mut()))
    })?;
    let Some(Some((offsets, bytes))) = taken else {
        return Err(PyValueError::new_err(
            "take_keys: rows outside the keys, keys shorter than their head, or keys past 2 GiB",
        ));
    };
    let counts = match heads {
        Some(counts) => Owned::wrap(py, counts)?,
        None => py.None().into_bound(py),
    };
    PyTuple::new(
        py,
        [Owned::wrap(py, offsets)?, Owned::wrap(py, bytes)?, counts],
    )
}

/// ParquetFile(names, kinds, zstd, optional, key_value, created_by)
///
/// A Parquet file of flat columns (parquet.rs): NAMES, KINDS ("utf8", "int8", "int16", "int32", "int64"),
/// whether each column's pages are compressed with zstd, whether each is optional (may hold nulls: integers
/// only), the footer's KEY_VALUE metadata and CREATED_BY. header(), row_group(buffers, chunks) for each row
/// group and footer() give the file's bytes in turn.
#[pyclass]
struct ParquetFile {
    file: parquet::File,
    /// Per column, its chunks of a row group joined (row_group), the buffers kept from row group to row group.
    joined: Vec<Joined>,
}

/// A column's chunks joined as one chunk's buffers: a string column's offsets (n + 1 int32, from 0) and bytes,
/// or an integer column's values and (optional, with a null among them) a definition byte a row.
#[derive(Default)]
struct Joined {
    first: Vec<u8>,
    second: Vec<u8>,
}

/// One chunk's buffers of a column, as row_group takes them: a string column's offsets and bytes, an integer
/// column's values, and an optional one's definition bytes (empty: no null).
type Buffers<'a> = (&'a [u8], Option<&'a [u8]>);

impl Joined {
    /// CHUNKS of a column of SPEC joined here, as one array's buffers; the buffers to give the writer.
    fn join<'a>(
        &'a mut self,
        spec: &parquet::Spec,
        chunks: &[Buffers],
    ) -> Result<Buffers<'a>, String> {
        self.first.clear();
        self.second.clear();
        match spec.kind {
            parquet::Kind::Utf8 => {
                self.first.extend_from_slice(&0i32.to_le_bytes());
                for &(offset_bytes, data) in chunks {
                    let offsets = int32s(offset_bytes);
                    let data = data.unwrap_or(&[]);
                    let (Some(&start), Some(&end)) = (offsets.first(), offsets.last()) else {
                        return Err(OFFSETS_OUTSIDE.into());
                    };
                    if start < 0 || end < start || end as usize > data.len() {
                        return Err(OFFSETS_OUTSIDE.into());
                    }
                    // Each offset moved to where the chunk's bytes go; one outside the chunk's bytes comes out
                    // of order, which checked_keys refuses.
                    let base = self.second.len() as i64 - start as i64;
                    if self.second.len() + (end - start) as usize > i32::MAX as usize {
                        return Err("row_group: a column's strings past 2 GiB".into());
                    }
                    for &offset in &offsets[1..] {
                        self.first
                            .extend_from_slice(&((offset as i64 + base) as i32).to_le_bytes());
                    }
                    self.second
                        .extend_from_slice(&data[start as usize..end as usize]);
                }
                Ok((&self.first, Some(&self.second)))
            }
            parquet::Kind::Int(bits) => {
                let width = bits as usize / 8;
                let nulls = chunks
                    .iter()
                    .any(|&(_, defined)| defined.is_some_and(|d| !d.is_empty()));
                for &(values, defined) in chunks {
                    let defined = checked_ints(values, width, defined)?;
                    self.first.extend_from_slice(values);
                    match defined {
                        Some(defined) => self.second.extend_from_slice(defined),
                        None if nulls => self
                            .second
                            .resize(self.second.len() + values.len() / width, 1),
                        None => {}
                    }
                }
                Ok((&self.first, spec.optional.then_some(&self.second[..])))
            }
        }
    }
}

/// An integer column's VALUES of WIDTH bytes each and its definition bytes (empty: no null), checked to be whole
/// values and a byte a row; the definition bytes, None when there is no null.
fn checked_ints<'a>(
    values: &[u8],
    width: usize,
    defined: Option<&'a [u8]>,
) -> Result<Option<&'a [u8]>, String> {
    if values.len() % width != 0 {
        return Err(format!(
            "{width}-byte integers in a buffer of {} bytes",
            values.len()
        ));
    }
    let defined = defined.filter(|defined| !defined.is_empty());
    if defined.is_some_and(|defined| defined.len() != values.len() / width) {
        return Err("row_group: one definition byte a row expected".into());
    }
    Ok(defined)
}

#[pymethods]
impl ParquetFile {
    #[new]
    fn new(
        names: Vec<String>,
        kinds: Vec<String>,
        zstd: Vec<bool>,
        optional: Vec<bool>,
        key_value: Vec<(String, String)>,
        created_by: String,
    ) -> PyResult<Self> {
        if names.len() != kinds.len() || names.len() != zstd.len() || names.len() != optional.len()
        {
            return Err(PyValueError::new_err(
                "ParquetFile: names, kinds, zstd and optional disagree",
            ));
        }
        let specs = names
            .into_iter()
            .zip(kinds)
            .zip(zstd)
            .zip(optional)
            .map(|(((name, kind), zstd), optional)| {
                let kind = match kind.as_str() {
                    "utf8" => parquet::Kind::Utf8,
                    "int8" => parquet::Kind::Int(8),
                    "int16" => parquet::Kind::Int(16),
                    "int32" => parquet::Kind::Int(32),
                    "int64" => parquet::Kind::Int(64),
                    other => {
                        return Err(PyValueError::new_err(format!(
                            "unknown column kind {other:?}"
                        )))
                    }
                };
                if optional && kind == parquet::Kind::Utf8 {
                    return Err(PyValueError::new_err(format!(
                        "{name}: optional strings are not written here"
                    )));
                }
                Ok(parquet::Spec {
                    name,
                    kind,
                    zstd,
                    optional,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let joined = specs.iter().map(|_| Joined::default()).collect();
        let file = parquet::File::new(specs, key_value, created_by)
            .map_err(|err| PyValueError::new_err(format!("zstd: {err}")))?;
        Ok(ParquetFile { file, joined })
    }

    fn header<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.file.header())
    }

    /// row_group(buffers, chunks) -> the row group's bytes: per column, CHUNKS of it, and of each chunk, by the
    /// column's kind, a utf8 column's two buffers (an Arrow string array's offsets, n + 1 int32, and data) or an
    /// integer column's values (little-endian), and an optional one's a byte a row more, 0 for a null (an empty
    /// buffer: none is null). A column of several chunks is joined into buffers kept for the next row group:
    /// joined by Arrow (combine_chunks), each row group's columns were fresh memory, faulted in and freed.
    fn row_group<'py>(
        &mut self,
        py: Python<'py>,
        buffers: Vec<PyBuffer<i8>>,
        chunks: Vec<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let slices = buffers
            .iter()
            .map(buffer_bytes)
            .collect::<PyResult<Vec<_>>>()?;
        let (file, joined) = (&mut self.file, &mut self.joined);
        let bytes = py.allow_threads(|| -> Result<Vec<u8>, String> {
            if chunks.len() != file.specs().len() || chunks.contains(&0) {
                return Err("row_group: one or more chunks a column".into());
            }
            let mut given = slices.iter();
            let mut taken = Vec::with_capacity(chunks.len());
            for ((spec, &count), joined) in file.specs().iter().zip(&chunks).zip(joined.iter_mut())
            {
                let mut column = Vec::with_capacity(count);
                for _ in 0..count {
                    let mut next = || given.next().copied().ok_or("row_group: too few buffers");
                    column.push(match (spec.kind, spec.optional) {
                        (parquet::Kind::Int(_), false) => (next()?, None),
                        _ => (next()?, Some(next()?)),
                    });
                }
                taken.push(match column[..] {
                    [one] => one,
                    _ => joined.join(spec, &column)?,
                });
            }
            if given.next().is_some() {
                return Err("row_group: too many buffers".into());
            }
            let offsets: Vec<_> = taken
                .iter()
                .zip(file.specs())
                .map(|((first, _), spec)| (spec.kind == parquet::Kind::Utf8).then(|| int32s(first)))
                .collect();
            let mut columns = Vec::with_capacity(taken.len());
            for ((spec, (first, data)), offsets) in file.specs().iter().zip(&taken).zip(&offsets) {
                columns.push(match (spec.kind, data, offsets) {
                    (parquet::Kind::Utf8, Some(data), Some(offsets)) => parquet::Values::Strings(
                        checked_keys(first, offsets, data).ok_or(OFFSETS_OUTSIDE)?,
                    ),
                    (parquet::Kind::Int(bits), defined, None) => {
                        let width = bits as usize / 8;
                        let defined = checked_ints(first, width, *defined)?;
                        parquet::Values::Ints {
                            bytes: first,
                            width,
                            defined,
                        }
                    }
                    _ => unreachable!("buffers taken by kind"),
                });
            }
            let rows = columns.first().map_or(0, |c| c.len());
            if columns.iter().any(|c| c.len() != rows) {
                return Err("row_group: columns of different lengths".into());
            }
            file.row_group(&columns)
                .map_err(|err| format!("zstd: {err}"))
        });
        Owned::wrap(py, bytes.map_err(PyValueError::new_err)?)
    }

    fn footer<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.file.footer())
    }
}

/// Whether this machine's CPU runs code built for x86-64-v3 (AVX2, BMI2, FMA, ...: Intel since 2013, AMD since
/// 2015): `pip install` builds the kernel twice, for any x86-64 and, as `_kernel_v3`, for x86-64-v3, and
/// transforms/native.py loads the second where this says it runs.
#[pyfunction]
fn runs_x86_64_v3() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        // x86-64-v3's features, and x86-64-v2's below them (the psABI's levels)
        has!("avx")
            && has!("avx2")
            && has!("bmi1")
            && has!("bmi2")
            && has!("f16c")
            && has!("fma")
            && has!("lzcnt")
            && has!("movbe")
            && has!("xsave")
            && has!("cmpxchg16b")
            && has!("popcnt")
            && has!("sse3")
            && has!("sse4.1")
            && has!("sse4.2")
            && has!("ssse3")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

// The same module built for x86-64-v3 is named for its file (pyproject.toml's second ext-module).
#[pymodule]
#[cfg_attr(feature = "x86-64-v3", pyo3(name = "_kernel_v3"))]
fn _kernel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MASK_BYTES", runs::MASK_BYTES)?;
    m.add("RANK_HEAD", order::RANK_HEAD)?;
    m.add_function(wrap_pyfunction!(runs_x86_64_v3, m)?)?;
    m.add_function(wrap_pyfunction!(collapse_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(count_lines, m)?)?;
    m.add_function(wrap_pyfunction!(merge_order, m)?)?;
    m.add_function(wrap_pyfunction!(mask_stats, m)?)?;
    m.add_function(wrap_pyfunction!(orders, m)?)?;
    m.add_function(wrap_pyfunction!(prefix_stretches, m)?)?;
    m.add_function(wrap_pyfunction!(distinct_tokens, m)?)?;
    m.add_class::<RecentTokens>()?;
    m.add_class::<ParquetFile>()?;
    m.add_function(wrap_pyfunction!(sum_groups, m)?)?;
    m.add_function(wrap_pyfunction!(merge_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(merge_groups, m)?)?;
    m.add_function(wrap_pyfunction!(merge_ngrams, m)?)?;
    m.add_function(wrap_pyfunction!(rank_in_order, m)?)?;
    m.add_function(wrap_pyfunction!(take_keys, m)?)?;
    m.add_function(wrap_pyfunction!(rows_below, m)?)?;
    m.add_function(wrap_pyfunction!(rows_in_order, m)?)?;
    m.add_function(wrap_pyfunction!(rank_keys, m)?)?;
    m.add_function(wrap_pyfunction!(arpa_lines, m)?)?;
    mkn::register(m)
}
