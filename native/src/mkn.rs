//! The MKN stage's per-bucket work (transforms/mkn/): joins and group-bys on n-gram strings, as
//! byte slices in hash maps, over the Arrow buffers of one bucket's tables.
//!
//! Each pass's kernel takes its tables as buffers (large-string offsets and bytes, 8-byte number
//! columns) without a copy, and returns its output rows already ordered by the bucket of the key
//! the next pass joins on, with the start of each bucket: Python only slices and writes them. An
//! n-gram's context is its bytes before the last space, its suffix those after the first space
//! (both empty for a unigram); the stage's tokens are joined by single spaces.
//!
//! The formulas are KenLM's (DOMAIN.md): each function says which one it computes.

use crate::bytes_of;
use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const START: &[u8] = b"_START_";
const END: &[u8] = b"_END_";
const UNK: &[u8] = b"<unk>";

/// Where an adjusted count came from, in the order of transforms/mkn/adjust.py's ORIGINS.
const INPUT: u64 = 0;
const SUFFIX: u64 = 1;
const FLOOR: u64 = 2;
const RESERVED: u64 = 3;

/// The log10 written for a probability or backoff of 0 (probability.py's LOG10_ZERO).
const LOG10_ZERO: f64 = -99.0;

/// A stable hash of bytes (FxHash's word step, then MurmurHash3's finalizer so that its low bits,
/// which choose the bucket, mix all of them). Stable across processes and runs: every pass of every
/// worker must put a key in the same bucket.
pub fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        h = (h.rotate_left(5) ^ u64::from_le_bytes(word.try_into().unwrap())).wrapping_mul(K);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(K);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A key with its `hash`, computed once: maps compare the hashes before the bytes.
#[derive(Clone, Copy)]
struct Hashed<'a> {
    hash: u64,
    bytes: &'a [u8],
}

impl std::hash::Hash for Hashed<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialEq for Hashed<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.bytes == other.bytes
    }
}

impl Eq for Hashed<'_> {}

/// The maps' hasher: the key's hash, multiplied and folded so that neither the bits that chose the
/// part (the top ones) nor those that chose the bucket (hash % buckets) are alike in one map.
#[derive(Default)]
struct Remix(u64);

impl Hasher for Remix {
    fn write(&mut self, _bytes: &[u8]) {
        unreachable!("keys write their hash only");
    }
    fn write_u64(&mut self, hash: u64) {
        let h = hash.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 32);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type Map<'a, V> = HashMap<Hashed<'a>, V, BuildHasherDefault<Remix>>;

/// Keys per part: a part's map (and the rows it was built from) stays within the core's cache.
const PART_KEYS: usize = 8 << 10;

/// log2 of the parts for ROWS keys.
fn part_bits(rows: usize) -> u32 {
    (rows / PART_KEYS)
        .max(1)
        .next_power_of_two()
        .trailing_zeros()
}

/// A row of a part: where its key is in the part's bytes, the key's hash, and what the join carries
/// along.
struct Item<T> {
    hash: u64,
    at: u32,
    len: u32,
    value: T,
}

/// Rows split into 2^bits parts by the top bits of their key's hash (a radix partition), each part's
/// rows and key bytes copied together, so that a join or group-by runs part by part over contiguous
/// rows and keys with a map that fits the cache: on whole buckets of ~1M keys, every map access, and
/// every comparison of a key's bytes, was a cache miss. Within a part, rows keep their order.
struct Split<T> {
    items: Vec<Item<T>>,
    keys: Vec<u8>,
    rows: Vec<u32>,
    starts: Vec<usize>,
}

impl<T> Split<T> {
    /// The parts of ROWS rows, row i being (key, value) = ROW(i).
    fn new<'a>(rows: usize, bits: u32, row: impl Fn(usize) -> (&'a [u8], T)) -> Self {
        let part = |h: u64| {
            if bits == 0 {
                0
            } else {
                (h >> (64 - bits)) as usize
            }
        };
        let hashes: Vec<u64> = (0..rows).map(|i| hash(row(i).0)).collect();
        let parts = 1usize << bits;
        let (mut starts, mut byte_starts) = (vec![0usize; parts + 1], vec![0usize; parts + 1]);
        for (i, &h) in hashes.iter().enumerate() {
            starts[part(h) + 1] += 1;
            byte_starts[part(h) + 1] += row(i).0.len();
        }
        for p in 0..parts {
            starts[p + 1] += starts[p];
            byte_starts[p + 1] += byte_starts[p];
        }
        assert!(
            byte_starts[parts] <= u32::MAX as usize,
            "a bucket's keys past 4 GiB"
        );
        let (mut next, mut next_byte) = (starts.clone(), byte_starts.clone());
        let mut items: Vec<Item<T>> = Vec::with_capacity(rows);
        let mut keys = vec![0u8; byte_starts[parts]];
        let mut numbers = vec![0u32; rows];
        let spare = items.spare_capacity_mut();
        for (i, &h) in hashes.iter().enumerate() {
            let (bytes, value) = row(i);
            let (p, at) = (part(h), next_byte[part(h)]);
            keys[at..at + bytes.len()].copy_from_slice(bytes);
            spare[next[p]].write(Item {
                hash: h,
                at: at as u32,
                len: bytes.len() as u32,
                value,
            });
            numbers[next[p]] = i as u32;
            next[p] += 1;
            next_byte[p] += bytes.len();
        }
        // SAFETY: every one of the ROWS slots was written once above (the parts' slots tile 0..rows).
        unsafe { items.set_len(rows) };
        Split {
            items,
            keys,
            rows: numbers,
            starts,
        }
    }

    fn parts(&self) -> usize {
        self.starts.len() - 1
    }

    /// The row numbers of part P's rows.
    fn rows(&self, p: usize) -> &[u32] {
        &self.rows[self.starts[p]..self.starts[p + 1]]
    }

    /// Part P's rows, each with its key.
    fn part(&self, p: usize) -> impl Iterator<Item = (Hashed<'_>, &T)> + '_ {
        self.items[self.starts[p]..self.starts[p + 1]]
            .iter()
            .map(move |item| {
                let bytes = &self.keys[item.at as usize..(item.at + item.len) as usize];
                (
                    Hashed {
                        hash: item.hash,
                        bytes,
                    },
                    &item.value,
                )
            })
    }
}

fn map_with<'a, V>(capacity: usize) -> Map<'a, V> {
    HashMap::with_capacity_and_hasher(capacity, Default::default())
}

/// All tokens but the last ('' for a unigram).
pub fn context(ngram: &[u8]) -> &[u8] {
    ngram
        .iter()
        .rposition(|&b| b == b' ')
        .map_or(&[], |i| &ngram[..i])
}

/// All tokens but the first ('' for a unigram).
pub fn suffix(ngram: &[u8]) -> &[u8] {
    ngram
        .iter()
        .position(|&b| b == b' ')
        .map_or(&[], |i| &ngram[i + 1..])
}

fn is_or_ends_with(ngram: &[u8], token: &[u8]) -> bool {
    ngram == token
        || (ngram.len() > token.len()
            && ngram.ends_with(token)
            && ngram[ngram.len() - token.len() - 1] == b' ')
}

fn starts_sentence(ngram: &[u8]) -> bool {
    ngram == START || (ngram.starts_with(START) && ngram.get(START.len()) == Some(&b' '))
}

/// Whether the n-gram ever gets a backoff: KenLM gives none after </s> (nothing follows it) or
/// <unk> (unseen).
pub fn can_back_off(ngram: &[u8]) -> bool {
    !is_or_ends_with(ngram, END) && !is_or_ends_with(ngram, UNK)
}

/// The key a row's bucket is the hash of.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Key {
    Whole,
    Context,
    Suffix,
}

impl Key {
    fn of(self, ngram: &[u8]) -> &[u8] {
        match self {
            Key::Whole => ngram,
            Key::Context => context(ngram),
            Key::Suffix => suffix(ngram),
        }
    }

    fn parse(name: &str) -> PyResult<Key> {
        match name {
            "ngram" => Ok(Key::Whole),
            "context" => Ok(Key::Context),
            "suffix" => Ok(Key::Suffix),
            other => Err(PyValueError::new_err(format!("unknown key {other:?}"))),
        }
    }
}

pub fn bucket_of(key: &[u8], buckets: u64) -> u64 {
    hash(key) % buckets
}

/// KenLM's discounts D1, D2, D3+ of an order.
#[derive(Clone, Copy)]
pub struct Discounts(pub [f64; 3]);

impl Discounts {
    /// u = (a - D(a)) / S: nothing taken off a zero count, no mass at all under a zero sum.
    pub fn discounted(&self, a: i64, total: i64) -> f64 {
        if total == 0 {
            return 0.0;
        }
        let amount = match a {
            i64::MIN..=0 => 0.0,
            1 => self.0[0],
            2 => self.0[1],
            _ => self.0[2],
        };
        (a as f64 - amount) / total as f64
    }

    /// gamma(h) = (D1 N1 + D2 N2 + D3+ N3+) / S; a context whose successors all count 0 observed
    /// nothing, so all its mass goes to the lower order.
    pub fn backoff_mass(&self, sums: &Sums) -> f64 {
        if sums.total == 0 {
            return 1.0;
        }
        (self.0[0] * sums.n1 as f64 + self.0[1] * sums.n2 as f64 + self.0[2] * sums.n3plus as f64)
            / sums.total as f64
    }
}

fn log10_or_zero(value: f64) -> f64 {
    if value > 0.0 {
        value.log10()
    } else {
        LOG10_ZERO
    }
}

/// KenLM clamps at 0: a sum of floats can exceed 1 by a rounding error.
pub fn log10_prob(p: f64) -> f64 {
    let value = log10_or_zero(p);
    if value > 0.0 {
        0.0
    } else {
        value
    }
}

/// A context's sums over its successors' adjusted counts: the sum, N1, N2, N3+.
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub struct Sums {
    pub total: i64,
    pub n1: i64,
    pub n2: i64,
    pub n3plus: i64,
    overflow: bool,
}

impl Sums {
    pub fn add(&mut self, a: i64) {
        match self.total.checked_add(a) {
            Some(total) => self.total = total,
            None => self.overflow = true,
        }
        match a {
            1 => self.n1 += 1,
            2 => self.n2 += 1,
            3.. => self.n3plus += 1,
            _ => {}
        }
    }
}

/// Rows of strings (slices of the inputs) and 8-byte columns, in the order made.
pub struct Rows<'a> {
    pub strings: Vec<&'a [u8]>,
    pub columns: Vec<Vec<u64>>,
}

impl<'a> Rows<'a> {
    pub fn new(columns: usize, capacity: usize) -> Self {
        Rows {
            strings: Vec::with_capacity(capacity),
            columns: (0..columns).map(|_| Vec::with_capacity(capacity)).collect(),
        }
    }

    fn push(&mut self, string: &'a [u8], values: &[u64]) {
        self.strings.push(string);
        for (column, &value) in self.columns.iter_mut().zip(values) {
            column.push(value);
        }
    }
}

/// Where rows go when laid out as Arrow columns ordered by bucket: bucket b's rows are
/// starts[b]..starts[b + 1], in the order they were made.
pub struct Plan {
    bucket: Vec<u32>,
    starts: Vec<u64>,
    byte_starts: Vec<u64>,
}

/// The plan that orders ROWS by the bucket of KEY of their string (a stable counting sort); BUCKETS
/// 0 keeps them as they are, as one bucket.
pub fn lay_out(rows: &Rows, key: Key, buckets: u64) -> Plan {
    let bucket: Vec<u32> = if buckets == 0 {
        vec![0; rows.strings.len()]
    } else {
        rows.strings
            .iter()
            .map(|s| bucket_of(key.of(s), buckets) as u32)
            .collect()
    };
    let count = buckets.max(1) as usize;
    let (mut starts, mut byte_starts) = (vec![0u64; count + 1], vec![0u64; count + 1]);
    for (&b, s) in bucket.iter().zip(&rows.strings) {
        starts[b as usize + 1] += 1;
        byte_starts[b as usize + 1] += s.len() as u64;
    }
    for b in 0..count {
        starts[b + 1] += starts[b];
        byte_starts[b + 1] += byte_starts[b];
    }
    Plan {
        bucket,
        starts,
        byte_starts,
    }
}

impl Plan {
    pub fn rows(&self) -> usize {
        *self.starts.last().unwrap() as usize
    }

    pub fn bytes(&self) -> usize {
        *self.byte_starts.last().unwrap() as usize
    }

    /// ROWS written into OFFSETS (rows + 1 int64), DATA (the strings' bytes) and COLUMNS (rows
    /// 8-byte numbers each, little-endian as Arrow's): the rows are read in order and each bucket's
    /// rows written in order, so every stream is sequential.
    pub fn fill(
        &self,
        rows: &Rows,
        offsets: &mut [u8],
        data: &mut [u8],
        columns: &mut [&mut [u8]],
    ) {
        let mut next_row = self.starts.clone();
        let mut next_byte = self.byte_starts.clone();
        offsets[..8].copy_from_slice(&0i64.to_le_bytes());
        for (i, (&b, s)) in self.bucket.iter().zip(&rows.strings).enumerate() {
            let (row, at) = (
                next_row[b as usize] as usize,
                next_byte[b as usize] as usize,
            );
            data[at..at + s.len()].copy_from_slice(s);
            let end = (at + s.len()) as i64;
            offsets[8 * (row + 1)..8 * (row + 2)].copy_from_slice(&end.to_le_bytes());
            for (column, values) in columns.iter_mut().zip(&rows.columns) {
                column[8 * row..8 * row + 8].copy_from_slice(&values[i].to_le_bytes());
            }
            next_row[b as usize] += 1;
            next_byte[b as usize] += s.len() as u64;
        }
    }
}

/// A table's strings, in row order (gathered from the chunks of its column).
pub struct Strings<'a> {
    rows: Vec<&'a [u8]>,
}

impl<'a> Strings<'a> {
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn get(&self, i: usize) -> &'a [u8] {
        self.rows[i]
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.rows.iter().copied()
    }
}

/// The suffix of each of a part file's distinct n-grams, each one left extension of it. They are
/// not summed here: a part file's suffixes hardly repeat, and the adjust pass sums them in its bucket.
pub fn suffixes<'a>(ngrams: Strings<'a>) -> Rows<'a> {
    let mut rows = Rows::new(1, ngrams.len());
    for ngram in ngrams.iter() {
        rows.push(suffix(ngram), &[1]);
    }
    rows
}

/// One bucket's adjusted counts a and their origins (adjust.py): the full join of the input's raw
/// counts with the extensions (distinct left extensions) summed over the part files, plus the
/// RESERVED n-grams (order 1) with no raw count unless the input has them.
#[allow(clippy::too_many_arguments)]
pub fn adjust<'a>(
    raw: Strings<'a>,
    raw_counts: &[i64],
    extended: Strings<'a>,
    extensions: &[i64],
    reserved: &[&'a [u8]],
    order: u32,
    model_order: u32,
) -> Rows<'a> {
    // The listed n-grams: the input's, then the reserved ones, with no raw count.
    let listed = raw.len() + reserved.len();
    let ngram_of = |i: usize| {
        if i < raw.len() {
            raw.get(i)
        } else {
            reserved[i - raw.len()]
        }
    };
    let bits = part_bits(listed);
    let listing = Split::new(listed, bits, |i| (ngram_of(i), i as u32));
    let extending = Split::new(extended.len(), bits, |i| {
        let ngram = extended.get(i);
        (ngram, (ngram, extensions[i]))
    });
    // Found by listed row (written in the order of the parts, read back in the rows' order: no
    // n-gram's bytes are read out of order), then the n-grams only the extensions have.
    let mut counts: Vec<Option<i64>> = (0..listed).map(|i| raw_counts.get(i).copied()).collect();
    let mut extensions_of = vec![0i64; listed];
    let mut listed_again = vec![false; listed]; // a reserved n-gram the input has
    let mut implied: Vec<(&[u8], i64)> = Vec::new();
    let mut index: Map<u32> = map_with(2 * PART_KEYS);
    for p in 0..listing.parts() {
        index.clear();
        for (key, &row) in listing.part(p) {
            let first = *index.entry(key).or_insert(row) as usize;
            if first != row as usize {
                if let Some(count) = counts[row as usize] {
                    counts[first] = Some(counts[first].unwrap_or(0) + count);
                }
                listed_again[row as usize] = true;
            }
        }
        for (key, &(ngram, more)) in extending.part(p) {
            let next = (listed + implied.len()) as u32;
            let id = *index.entry(key).or_insert(next) as usize;
            if id < listed {
                extensions_of[id] += more;
            } else if id == next as usize {
                implied.push((ngram, more));
            } else {
                implied[id - listed].1 += more;
            }
        }
    }
    let mut rows = Rows::new(2, listed + implied.len());
    for i in (0..listed).filter(|&i| !listed_again[i]) {
        let ngram = ngram_of(i);
        let (a, origin) = adjusted(ngram, counts[i], extensions_of[i], order, model_order);
        rows.push(ngram, &[a as u64, origin]);
    }
    for (ngram, extensions) in implied {
        let (a, origin) = adjusted(ngram, None, extensions, order, model_order);
        rows.push(ngram, &[a as u64, origin]);
    }
    rows
}

/// An n-gram's adjusted count and its origin, from its raw count (None: not in the input) and its
/// distinct left extensions.
fn adjusted(
    ngram: &[u8],
    raw: Option<i64>,
    extensions: i64,
    order: u32,
    model_order: u32,
) -> (i64, u64) {
    let listed = if raw.is_none() { RESERVED } else { INPUT };
    if order == 1 && (ngram == START || ngram == UNK) {
        (0, listed) // <s> is never predicted, <unk> never seen: count 0, as in KenLM
    } else if order == model_order || starts_sentence(ngram) {
        (raw.unwrap_or(0), listed) // nothing left of them to count: the raw count
    } else if raw.is_none() {
        (extensions, if extensions > 0 { SUFFIX } else { RESERVED })
    } else if extensions == 0 {
        (1, FLOOR) // every left extension pruned away: at least one existed
    } else {
        (extensions, INPUT)
    }
}

/// One context bucket of order n (context.py): the sums of each context of the successors, the
/// log10 probability and backoff of each order-(n-1) row (its backoff: log10 gamma of itself as a
/// context, 0 where it is none), and the successors whose context is an order-(n-1) row, with
/// u = (a - D(a)) / S and the context's gamma ("weighted"); the others are orphans.
pub struct ContextBucket<'a> {
    pub contexts: Rows<'a>,
    pub lower_log10_probs: Vec<f64>,
    pub lower_log10_backoffs: Vec<f64>,
    pub weighted: Rows<'a>,
    pub overflow: Option<&'a [u8]>,
}

pub fn context_bucket<'a>(
    successors: Strings<'a>,
    counts: &[i64],
    lower: Strings<'a>,
    lower_probs: &[f64],
    discounts: Discounts,
) -> ContextBucket<'a> {
    let bits = part_bits(successors.len() / 2 + lower.len());
    let heads = Split::new(successors.len(), bits, |i| {
        let ngram = successors.get(i);
        (context(ngram), (ngram, counts[i]))
    });
    let lows = Split::new(lower.len(), bits, |i| (lower.get(i), i));
    let lower_log10_probs: Vec<f64> = lower_probs.iter().map(|&p| log10_prob(p)).collect();
    let mut lower_log10_backoffs = vec![0.0; lower.len()];
    let mut contexts = Rows::new(4, successors.len() / 2);
    // u and gamma by successor (written in the order of the parts, read back in the rows' order: no
    // n-gram's bytes are read out of order); NaN where the context is not in the model.
    let mut u_of = vec![f64::NAN; successors.len()];
    let mut gamma_of = vec![f64::NAN; successors.len()];
    let mut overflow = None;
    let mut sums: Vec<Sums> = Vec::with_capacity(2 * PART_KEYS);
    // gamma of each context that is an order-(n-1) row: only those are in the model.
    let mut gamma: Vec<Option<f64>> = Vec::with_capacity(2 * PART_KEYS);
    let mut of: Vec<u32> = Vec::new();
    let mut index: Map<u32> = map_with(2 * PART_KEYS);
    let mut start = 0;
    for p in 0..heads.parts() {
        index.clear();
        sums.clear();
        gamma.clear();
        of.clear();
        for (key, &(ngram, a)) in heads.part(p) {
            let next = sums.len() as u32;
            let id = *index.entry(key).or_insert(next);
            if id == next {
                contexts.strings.push(&ngram[..key.bytes.len()]); // its context
                sums.push(Sums::default());
                gamma.push(None);
            }
            sums[id as usize].add(a);
            of.push(id);
        }
        for (key, &row) in lows.part(p) {
            if let Some(&id) = index.get(&key) {
                let mass = discounts.backoff_mass(&sums[id as usize]);
                gamma[id as usize] = Some(mass);
                if can_back_off(key.bytes) {
                    lower_log10_backoffs[row] = log10_or_zero(mass);
                }
            }
        }
        for (&row, &id) in heads.rows(p).iter().zip(&of) {
            if let Some(g) = gamma[id as usize] {
                u_of[row as usize] =
                    discounts.discounted(counts[row as usize], sums[id as usize].total);
                gamma_of[row as usize] = g;
            }
        }
        for s in &sums {
            if s.overflow && overflow.is_none() {
                overflow = Some(contexts.strings[start]);
            }
            start += 1;
            for (column, value) in contexts
                .columns
                .iter_mut()
                .zip([s.total, s.n1, s.n2, s.n3plus])
            {
                column.push(value as u64);
            }
        }
    }
    let mut weighted = Rows::new(3, successors.len());
    for (i, ngram) in successors.iter().enumerate() {
        if !gamma_of[i].is_nan() {
            weighted.push(
                ngram,
                &[counts[i] as u64, u_of[i].to_bits(), gamma_of[i].to_bits()],
            );
        }
    }
    ContextBucket {
        contexts,
        lower_log10_probs,
        lower_log10_backoffs,
        weighted,
        overflow,
    }
}

/// One suffix bucket of order n (probability.py): p(w | h) = u + gamma(h) p(w | h') for each
/// weighted row whose suffix is an order-(n-1) row (the others are orphans): rows (ngram, a, p),
/// or (ngram, a, log10 p) for the model's highest order (AS_LOG10).
pub fn interpolate<'a>(
    weighted: Strings<'a>,
    counts: &[i64],
    u: &[f64],
    gamma: &[f64],
    lower: Strings<'a>,
    lower_probs: &[f64],
    as_log10: bool,
) -> Rows<'a> {
    let bits = part_bits(lower.len());
    let lows = Split::new(lower.len(), bits, |i| (lower.get(i), lower_probs[i]));
    let tails = Split::new(weighted.len(), bits, |i| (suffix(weighted.get(i)), ()));
    // p(w | h') by weighted row (written in the order of the parts, read back in the rows' order);
    // NaN where the suffix is not in the model.
    let mut lower_p_of = vec![f64::NAN; weighted.len()];
    let mut index: Map<f64> = map_with(2 * PART_KEYS);
    for p in 0..lows.parts() {
        index.clear();
        for (key, &lower_p) in lows.part(p) {
            index.insert(key, lower_p);
        }
        for ((key, _), &row) in tails.part(p).zip(tails.rows(p)) {
            if let Some(&lower_p) = index.get(&key) {
                lower_p_of[row as usize] = lower_p;
            }
        }
    }
    let mut rows = Rows::new(2, weighted.len());
    for (i, ngram) in weighted.iter().enumerate() {
        if !lower_p_of[i].is_nan() {
            let p = u[i] + gamma[i] * lower_p_of[i];
            let value = if as_log10 { log10_prob(p) } else { p };
            rows.push(ngram, &[counts[i] as u64, value.to_bits()]);
        }
    }
    rows
}

// ---- Python bindings ----

/// A read-only view of a Python object's bytes (the buffer protocol: pyarrow buffers, numpy
/// arrays, bytes) without a copy.
struct View(Box<ffi::Py_buffer>);

// SAFETY: the view only reads memory its exporter keeps alive and unchanged until release.
unsafe impl Send for View {}
unsafe impl Sync for View {}

impl View {
    fn of(object: &Bound<'_, PyAny>) -> PyResult<View> {
        // SAFETY: a zeroed Py_buffer is what PyObject_GetBuffer fills in.
        let mut view = Box::new(unsafe { std::mem::zeroed::<ffi::Py_buffer>() });
        // SAFETY: OBJECT is a live object; PyBUF_SIMPLE asks for contiguous bytes.
        if unsafe { ffi::PyObject_GetBuffer(object.as_ptr(), &mut *view, ffi::PyBUF_SIMPLE) } != 0 {
            return Err(PyErr::fetch(object.py()));
        }
        Ok(View(view))
    }

    fn bytes(&self) -> &[u8] {
        if self.0.len == 0 {
            return &[];
        }
        // SAFETY: the exporter guarantees LEN readable bytes at BUF while the view is held.
        unsafe { std::slice::from_raw_parts(self.0.buf as *const u8, self.0.len as usize) }
    }

    /// The bytes as 8-byte numbers (Arrow's buffers are 64-byte aligned; anything else is copied).
    fn words<T: Copy + Default>(&self) -> PyResult<std::borrow::Cow<'_, [T]>> {
        let bytes = self.bytes();
        if !bytes.len().is_multiple_of(8) {
            return Err(PyValueError::new_err(
                "a number column's bytes are not a multiple of 8",
            ));
        }
        // SAFETY: T is an 8-byte plain number type here (i64, f64), valid for any bits.
        let (before, middle, after) = unsafe { bytes.align_to::<T>() };
        if before.is_empty() && after.is_empty() {
            return Ok(std::borrow::Cow::Borrowed(middle));
        }
        let mut copied = vec![T::default(); bytes.len() / 8];
        // SAFETY: COPIED has exactly bytes.len() bytes of plain numbers.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                copied.as_mut_ptr().cast::<u8>(),
                bytes.len(),
            )
        };
        Ok(std::borrow::Cow::Owned(copied))
    }
}

impl Drop for View {
    fn drop(&mut self) {
        Python::with_gil(|_| {
            // SAFETY: the view was filled by PyObject_GetBuffer and is released once.
            unsafe { ffi::PyBuffer_Release(&mut *self.0) }
        });
    }
}

fn py_bytes<'py, T: Copy>(py: Python<'py>, values: &[T]) -> Bound<'py, PyAny> {
    PyBytes::new(py, bytes_of(values)).into_any()
}

/// A new bytes object of LEN bytes, and its bytes to fill in before anything else sees it.
fn fresh_bytes<'py>(py: Python<'py>, len: usize) -> PyResult<(Bound<'py, PyAny>, &'py mut [u8])> {
    // SAFETY: a NULL source makes an uninitialised bytes object of LEN bytes, which is ours to fill
    // until it is handed out; its buffer lives as long as the object, which the caller holds.
    unsafe {
        let object = ffi::PyBytes_FromStringAndSize(std::ptr::null(), len as ffi::Py_ssize_t);
        let object = Bound::from_owned_ptr_or_err(py, object)?;
        let data = ffi::PyBytes_AsString(object.as_ptr()) as *mut u8;
        Ok((object, std::slice::from_raw_parts_mut(data, len)))
    }
}

/// (offsets int64, text, [columns of 8-byte numbers], bucket starts uint64) of ROWS laid out by PLAN,
/// written straight into the bytes objects handed to Python.
fn laid_tuple<'py>(py: Python<'py>, rows: &Rows, plan: &Plan) -> PyResult<Bound<'py, PyTuple>> {
    let n = plan.rows();
    let (offsets, offset_bytes) = fresh_bytes(py, 8 * (n + 1))?;
    let (data, data_bytes) = fresh_bytes(py, plan.bytes())?;
    let mut columns = Vec::with_capacity(rows.columns.len());
    let mut column_bytes = Vec::with_capacity(rows.columns.len());
    for _ in &rows.columns {
        let (column, bytes) = fresh_bytes(py, 8 * n)?;
        columns.push(column);
        column_bytes.push(bytes);
    }
    py.allow_threads(|| plan.fill(rows, offset_bytes, data_bytes, &mut column_bytes));
    PyTuple::new(
        py,
        [
            offsets,
            data,
            PyList::new(py, columns)?.into_any(),
            py_bytes(py, &plan.starts),
        ],
    )
}

/// A string column as its chunks' buffers: (offsets, text, whether the offsets are int64 rather
/// than int32), as Python passes them (native.py), read where they are.
type StringChunks<'py> = Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>, bool)>;

/// The views of a string column's chunks.
struct StringViews(Vec<(View, View, bool)>);

impl StringViews {
    fn of(chunks: &StringChunks) -> PyResult<StringViews> {
        let views = chunks
            .iter()
            .map(|(offsets, text, wide)| Ok((View::of(offsets)?, View::of(text)?, *wide)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(StringViews(views))
    }

    /// The strings of every chunk, checked against their text.
    fn strings(&self, what: &str) -> PyResult<Strings<'_>> {
        let mut rows = Vec::new();
        for (offsets, text, wide) in &self.0 {
            let (offsets, text) = (offsets.bytes(), text.bytes());
            let width = if *wide { 8 } else { 4 };
            let offset = |i: usize| {
                let b = &offsets[width * i..width * (i + 1)];
                if *wide {
                    i64::from_le_bytes(b.try_into().unwrap())
                } else {
                    i32::from_le_bytes(b.try_into().unwrap()) as i64
                }
            };
            let n = (offsets.len() / width).saturating_sub(1);
            rows.reserve(n);
            for i in 0..n {
                let (start, end) = (offset(i), offset(i + 1));
                if start < 0 || end < start || end as usize > text.len() {
                    return Err(PyValueError::new_err(format!(
                        "{what}: offsets outside the text"
                    )));
                }
                rows.push(&text[start as usize..end as usize]);
            }
        }
        Ok(Strings { rows })
    }
}

/// The views of a number column's chunks.
struct NumberViews(Vec<View>);

impl NumberViews {
    fn of(chunks: &[Bound<'_, PyAny>]) -> PyResult<NumberViews> {
        Ok(NumberViews(
            chunks.iter().map(View::of).collect::<PyResult<_>>()?,
        ))
    }

    /// The numbers of every chunk: in place for one chunk, else gathered.
    fn values<T: Copy + Default>(&self) -> PyResult<std::borrow::Cow<'_, [T]>> {
        if self.0.len() == 1 {
            return self.0[0].words::<T>();
        }
        let mut values = Vec::new();
        for view in &self.0 {
            values.extend_from_slice(&view.words::<T>()?);
        }
        Ok(std::borrow::Cow::Owned(values))
    }
}

fn same_rows(what: &str, rows: usize, columns: &[usize]) -> PyResult<()> {
    if columns.iter().any(|&n| n != rows) {
        return Err(PyValueError::new_err(format!(
            "{what}: columns of different lengths"
        )));
    }
    Ok(())
}

/// mkn_lay_out(ngrams, columns, key, buckets) -> (offsets, text, columns, starts)
///
/// Rows (strings and 8-byte columns) ordered by the bucket of KEY ("ngram", "context" or "suffix")
/// of their string, with each bucket's first row. A string column is passed as its chunks
/// (offsets, text, int64 offsets?), a number column as its chunks' buffers.
#[pyfunction]
fn mkn_lay_out<'py>(
    py: Python<'py>,
    ngrams: StringChunks<'py>,
    columns: Vec<Vec<Bound<'py, PyAny>>>,
    key: &str,
    buckets: u64,
) -> PyResult<Bound<'py, PyTuple>> {
    let key = Key::parse(key)?;
    let views = StringViews::of(&ngrams)?;
    let column_views = columns
        .iter()
        .map(|c| NumberViews::of(c))
        .collect::<PyResult<Vec<_>>>()?;
    let strings = views.strings("mkn_lay_out")?;
    let words = column_views
        .iter()
        .map(|v| v.values::<u64>())
        .collect::<PyResult<Vec<_>>>()?;
    same_rows(
        "mkn_lay_out",
        strings.len(),
        &words.iter().map(|w| w.len()).collect::<Vec<_>>(),
    )?;
    let (table, plan) = py.allow_threads(|| {
        let table = Rows {
            strings: strings.rows,
            columns: words.iter().map(|w| w.to_vec()).collect(),
        };
        let plan = lay_out(&table, key, buckets);
        (table, plan)
    });
    laid_tuple(py, &table, &plan)
}

/// mkn_suffixes(ngrams, buckets) -> laid-out (suffix, extensions = 1) by the suffix's bucket
#[pyfunction]
fn mkn_suffixes<'py>(
    py: Python<'py>,
    ngrams: StringChunks<'py>,
    buckets: u64,
) -> PyResult<Bound<'py, PyTuple>> {
    let views = StringViews::of(&ngrams)?;
    let strings = views.strings("mkn_suffixes")?;
    let (rows, plan) = py.allow_threads(|| {
        let rows = suffixes(strings);
        let plan = lay_out(&rows, Key::Whole, buckets);
        (rows, plan)
    });
    laid_tuple(py, &rows, &plan)
}

/// mkn_adjust(raw_ngrams, raw, ext_ngrams, extensions, reserved, order, model_order, buckets)
///   -> laid-out (ngram, a, origin) by the bucket of the context (of the n-gram at order 1)
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn mkn_adjust<'py>(
    py: Python<'py>,
    raw_ngrams: StringChunks<'py>,
    raw: Vec<Bound<'py, PyAny>>,
    ext_ngrams: StringChunks<'py>,
    extensions: Vec<Bound<'py, PyAny>>,
    reserved: Vec<Vec<u8>>,
    order: u32,
    model_order: u32,
    buckets: u64,
) -> PyResult<Bound<'py, PyTuple>> {
    let (raw_views, ext_views) = (StringViews::of(&raw_ngrams)?, StringViews::of(&ext_ngrams)?);
    let (raw, extensions) = (NumberViews::of(&raw)?, NumberViews::of(&extensions)?);
    let (raw_counts, ext_counts) = (raw.values::<i64>()?, extensions.values::<i64>()?);
    let (raw_strings, ext_strings) = (
        raw_views.strings("mkn_adjust")?,
        ext_views.strings("mkn_adjust")?,
    );
    same_rows("mkn_adjust", raw_strings.len(), &[raw_counts.len()])?;
    same_rows("mkn_adjust", ext_strings.len(), &[ext_counts.len()])?;
    let reserved: Vec<&[u8]> = reserved.iter().map(|t| t.as_slice()).collect();
    let (rows, plan) = py.allow_threads(|| {
        let rows = adjust(
            raw_strings,
            &raw_counts,
            ext_strings,
            &ext_counts,
            &reserved,
            order,
            model_order,
        );
        let plan = lay_out(
            &rows,
            if order == 1 { Key::Whole } else { Key::Context },
            buckets,
        );
        (rows, plan)
    });
    laid_tuple(py, &rows, &plan)
}

/// mkn_contexts(ngrams, a, lower_ngrams, lower_p, d1, d2, d3plus, buckets)
///   -> (overflowing context or None, contexts laid out as one bucket (context, total, n1, n2, n3plus),
///       lower log10 probs, lower log10 backoffs, weighted laid out by the suffix's bucket
///       (ngram, a, u, gamma))
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn mkn_contexts<'py>(
    py: Python<'py>,
    ngrams: StringChunks<'py>,
    a: Vec<Bound<'py, PyAny>>,
    lower_ngrams: StringChunks<'py>,
    lower_p: Vec<Bound<'py, PyAny>>,
    d1: f64,
    d2: f64,
    d3plus: f64,
    buckets: u64,
) -> PyResult<Bound<'py, PyTuple>> {
    let (views, lower_views) = (StringViews::of(&ngrams)?, StringViews::of(&lower_ngrams)?);
    let (a, lower_p) = (NumberViews::of(&a)?, NumberViews::of(&lower_p)?);
    let (counts, probs) = (a.values::<i64>()?, lower_p.values::<f64>()?);
    let (successors, lower) = (
        views.strings("mkn_contexts")?,
        lower_views.strings("mkn_contexts")?,
    );
    same_rows("mkn_contexts", successors.len(), &[counts.len()])?;
    same_rows("mkn_contexts", lower.len(), &[probs.len()])?;
    let (found, contexts, weighted) = py.allow_threads(|| {
        let found = context_bucket(
            successors,
            &counts,
            lower,
            &probs,
            Discounts([d1, d2, d3plus]),
        );
        let contexts = lay_out(&found.contexts, Key::Whole, 0);
        let weighted = lay_out(&found.weighted, Key::Suffix, buckets);
        (found, contexts, weighted)
    });
    let overflow = match found.overflow {
        Some(name) => PyBytes::new(py, name).into_any(),
        None => py.None().into_bound(py),
    };
    PyTuple::new(
        py,
        [
            overflow,
            laid_tuple(py, &found.contexts, &contexts)?.into_any(),
            py_bytes(py, &found.lower_log10_probs),
            py_bytes(py, &found.lower_log10_backoffs),
            laid_tuple(py, &found.weighted, &weighted)?.into_any(),
        ],
    )
}

/// mkn_interpolate(ngrams, a, u, gamma, lower_ngrams, lower_p, as_log10, buckets)
///   -> laid out (ngram, a, p or log10 p) by the n-gram's bucket (BUCKETS 0: as one bucket)
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn mkn_interpolate<'py>(
    py: Python<'py>,
    ngrams: StringChunks<'py>,
    a: Vec<Bound<'py, PyAny>>,
    u: Vec<Bound<'py, PyAny>>,
    gamma: Vec<Bound<'py, PyAny>>,
    lower_ngrams: StringChunks<'py>,
    lower_p: Vec<Bound<'py, PyAny>>,
    as_log10: bool,
    buckets: u64,
) -> PyResult<Bound<'py, PyTuple>> {
    let (views, lower_views) = (StringViews::of(&ngrams)?, StringViews::of(&lower_ngrams)?);
    let (a, u, gamma, lower_p) = (
        NumberViews::of(&a)?,
        NumberViews::of(&u)?,
        NumberViews::of(&gamma)?,
        NumberViews::of(&lower_p)?,
    );
    let (counts, u, gamma, probs) = (
        a.values::<i64>()?,
        u.values::<f64>()?,
        gamma.values::<f64>()?,
        lower_p.values::<f64>()?,
    );
    let (weighted, lower) = (
        views.strings("mkn_interpolate")?,
        lower_views.strings("mkn_interpolate")?,
    );
    same_rows(
        "mkn_interpolate",
        weighted.len(),
        &[counts.len(), u.len(), gamma.len()],
    )?;
    same_rows("mkn_interpolate", lower.len(), &[probs.len()])?;
    let (rows, plan) = py.allow_threads(|| {
        let rows = interpolate(weighted, &counts, &u, &gamma, lower, &probs, as_log10);
        let plan = lay_out(&rows, Key::Whole, buckets);
        (rows, plan)
    });
    laid_tuple(py, &rows, &plan)
}

/// mkn_unigrams(ngrams, a, (total, n1, n2, n3plus), d1, d2, d3plus, vocab_size, as_log10, buckets)
///   -> laid out (ngram, a, p or log10 p) by the n-gram's bucket (BUCKETS 0: as one bucket)
///
/// The unigram level: u under the unigram context's sums, interpolated with the uniform 1/|V|
/// (|V| counting <unk> but not <s>); <s> is never predicted and gets probability 1, as in KenLM.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn mkn_unigrams<'py>(
    py: Python<'py>,
    ngrams: StringChunks<'py>,
    a: Vec<Bound<'py, PyAny>>,
    sums: (i64, i64, i64, i64),
    d1: f64,
    d2: f64,
    d3plus: f64,
    vocab_size: i64,
    as_log10: bool,
    buckets: u64,
) -> PyResult<Bound<'py, PyTuple>> {
    let views = StringViews::of(&ngrams)?;
    let a = NumberViews::of(&a)?;
    let counts = a.values::<i64>()?;
    let unigrams = views.strings("mkn_unigrams")?;
    same_rows("mkn_unigrams", unigrams.len(), &[counts.len()])?;
    let (total, n1, n2, n3plus) = sums;
    let sums = Sums {
        total,
        n1,
        n2,
        n3plus,
        overflow: false,
    };
    let (rows, plan) = py.allow_threads(|| {
        let discounts = Discounts([d1, d2, d3plus]);
        let uniform = discounts.backoff_mass(&sums) / vocab_size as f64;
        let mut rows = Rows::new(2, counts.len());
        for (ngram, &a) in unigrams.iter().zip(counts.iter()) {
            let p = if ngram == START {
                1.0
            } else {
                discounts.discounted(a, sums.total) + uniform
            };
            let value = if as_log10 { log10_prob(p) } else { p };
            rows.push(ngram, &[a as u64, value.to_bits()]);
        }
        let plan = lay_out(&rows, Key::Whole, buckets);
        (rows, plan)
    });
    laid_tuple(py, &rows, &plan)
}

/// mkn_bucket_of(key, buckets) -> the bucket of KEY (bytes) among BUCKETS
#[pyfunction]
fn mkn_bucket_of(key: &[u8], buckets: u64) -> PyResult<u64> {
    if buckets == 0 {
        return Err(PyValueError::new_err("mkn_bucket_of: no buckets"));
    }
    Ok(bucket_of(key, buckets))
}

/// Adds the MKN kernels to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mkn_bucket_of, m)?)?;
    m.add_function(wrap_pyfunction!(mkn_lay_out, m)?)?;
    m.add_function(wrap_pyfunction!(mkn_suffixes, m)?)?;
    m.add_function(wrap_pyfunction!(mkn_adjust, m)?)?;
    m.add_function(wrap_pyfunction!(mkn_contexts, m)?)?;
    m.add_function(wrap_pyfunction!(mkn_interpolate, m)?)?;
    m.add_function(wrap_pyfunction!(mkn_unigrams, m)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings<'a>(values: &[&'a str]) -> Strings<'a> {
        Strings {
            rows: values.iter().map(|v| v.as_bytes()).collect(),
        }
    }

    #[test]
    fn keys_of_an_ngram() {
        assert_eq!(
            (context(b"a b c"), suffix(b"a b c")),
            (&b"a b"[..], &b"b c"[..])
        );
        assert_eq!((context(b"a"), suffix(b"a")), (&b""[..], &b""[..]));
        assert!(
            starts_sentence(b"_START_ a")
                && starts_sentence(b"_START_")
                && !starts_sentence(b"_START_x a")
        );
        assert!(
            !can_back_off(b"a _END_")
                && !can_back_off(b"<unk>")
                && can_back_off(b"a_END_")
                && can_back_off(b"_START_")
        );
    }

    #[test]
    fn buckets_are_stable_and_spread() {
        assert_eq!(hash(b"a b"), hash(b"a b"));
        let mut seen = [0u32; 4];
        for i in 0..4000 {
            seen[bucket_of(format!("w{i} x").as_bytes(), 4) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }

    #[test]
    fn lay_out_orders_rows_by_bucket_stably() {
        let mut rows = Rows::new(1, 0);
        for (i, s) in ["a x", "b y", "a z", "c"].iter().enumerate() {
            rows.push(s.as_bytes(), &[i as u64]);
        }
        let plan = lay_out(&rows, Key::Context, 3);
        assert_eq!((plan.rows(), plan.bytes()), (4, 10));
        let (mut offsets, mut data, mut ids) = (vec![0u8; 8 * 5], vec![0u8; 10], vec![0u8; 8 * 4]);
        plan.fill(&rows, &mut offsets, &mut data, &mut [&mut ids[..]]);
        let int = |b: &[u8], i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap());
        let mut seen = vec![];
        for b in 0..3 {
            let (lo, hi) = (plan.starts[b] as usize, plan.starts[b + 1] as usize);
            let bucket_ids: Vec<u64> = (lo..hi).map(|i| int(&ids, i)).collect();
            assert!(bucket_ids.windows(2).all(|w| w[0] < w[1]));
            for i in lo..hi {
                let s = &data[int(&offsets, i) as usize..int(&offsets, i + 1) as usize];
                assert_eq!(bucket_of(context(s), 3), b as u64);
                seen.push((String::from_utf8(s.to_vec()).unwrap(), int(&ids, i)));
            }
        }
        seen.sort();
        assert_eq!(
            seen,
            vec![
                ("a x".into(), 0),
                ("a z".into(), 2),
                ("b y".into(), 1),
                ("c".into(), 3)
            ]
        );
    }

    #[test]
    fn contexts_sums_and_backoffs() {
        let successors = strings(&["h a", "h b", "h c", "h d", "h e", "g a"]);
        let lower = strings(&["h", "x"]);
        let found = context_bucket(
            successors,
            &[1, 1, 2, 5, 0, 3],
            lower,
            &[0.5, 1.0000001],
            Discounts([0.5, 1.0, 1.5]),
        );
        assert_eq!(found.contexts.strings, vec![&b"h"[..], &b"g"[..]]);
        assert_eq!(
            found
                .contexts
                .columns
                .iter()
                .map(|c| c[0])
                .collect::<Vec<_>>(),
            vec![9, 2, 1, 1]
        );
        let gamma = (0.5 * 2.0 + 1.0 + 1.5) / 9.0;
        assert_eq!(found.lower_log10_backoffs, vec![f64::log10(gamma), 0.0]);
        assert_eq!(found.lower_log10_probs, vec![f64::log10(0.5), 0.0]);
        assert_eq!(found.weighted.strings.len(), 5); // "g a" has no context in the lower order: an orphan
        assert_eq!(
            f64::from_bits(found.weighted.columns[1][2]),
            (2.0 - 1.0) / 9.0
        );
    }
}
