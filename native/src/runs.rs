//! Consecutive rows of one n-gram collapsed into one run, as transforms/collapse.py does.

use crate::fields::{YEAR_MAX, YEAR_MIN};
use crate::order::key_order;

/// Bytes of a whole year-set bit mask (columnar.MASK_BYTES): bit `year - YEAR_MIN`; a run keeps its
/// span (masks.rs).
pub const MASK_BYTES: usize = (YEAR_MAX - YEAR_MIN) as usize / 8 + 1;

/// What the policy asks of the runs.
pub struct Policy {
    pub year_min: u16,
    pub year_max: u16,
    pub drop_tagged: bool,
    pub lowercase: bool,
    pub keep_years: bool,
}

/// The columns of a run table (collapse.run_schema), built run by run.
#[derive(Default)]
pub struct Runs {
    pub key_offsets: Vec<i32>,
    pub key_bytes: Vec<u8>,
    /// Per run: whether its key was left for Python to fold (not ASCII, lowercase policy).
    pub fold_in_python: Vec<bool>,
    pub matches: Vec<i64>,
    pub volumes: Vec<i64>,
    /// The runs' year sets as span masks (masks.rs), laid out as Arrow binary.
    pub mask_offsets: Vec<i32>,
    pub masks: Vec<u8>,
    pub series_offsets: Vec<i32>,
    pub series_years: Vec<i16>,
    pub series_matches: Vec<i64>,
    pub series_volumes: Vec<i64>,
    /// Year rows the policy dropped.
    pub dropped: u64,
    /// Lines read: the reader numbers its lines by them, with no pass of its own to count them.
    pub lines: u64,
    /// Whether every run's key is above the one before (byte order), as pushed (unfolded for Python).
    pub ascending: bool,
    /// The open run's totals, taken row by row as each line is read: one for every run of the chunk.
    open: Totals,
    /// With keep_years, the kept rows of the open run (one buffer for every run of the chunk).
    open_rows: Vec<(u16, i64, i64)>,
}

/// What a run's kept rows add up to so far.
struct Totals {
    rows: usize,
    matches: i64,
    volumes: i64,
    /// A sum went past int64: the chunk is left to the reference path, which names the n-gram.
    overflowed: bool,
    /// The rows' years as a whole mask, of which only the bytes from `first >> 3` to `last >> 3`
    /// (the bits of the first and last year) are set.
    mask: [u8; MASK_BYTES],
    first: usize,
    last: usize,
}

impl Default for Totals {
    fn default() -> Totals {
        Totals {
            rows: 0,
            matches: 0,
            volumes: 0,
            overflowed: false,
            mask: [0; MASK_BYTES],
            first: usize::MAX,
            last: 0,
        }
    }
}

/// The run being collected, whose rows are the kept rows of consecutive lines with one n-gram
/// (`Runs::open`).
pub struct Open<'a> {
    pub key: &'a [u8],
    tagged: bool,
}

/// Why a chunk's runs cannot be built here.
pub struct Unrepresentable;

impl Runs {
    pub fn new(keep_years: bool) -> Runs {
        let mut runs = Runs {
            key_offsets: vec![0],
            mask_offsets: vec![0],
            ascending: true,
            ..Runs::default()
        };
        if keep_years {
            runs.series_offsets.push(0);
        }
        runs
    }

    /// Room in every column for the rest of a chunk of TOTAL bytes, as its first READ bytes filled them, and
    /// an eighth more: each column grown by doubling was copied about once more, onto fresh pages (a fifth
    /// of the kernel's page faults, perf).
    pub fn reserve_for(&mut self, read: usize, total: usize) {
        let more = |len: usize| len.saturating_mul(total - read) / read.max(1) + len / 8;
        self.key_offsets.reserve(more(self.key_offsets.len()));
        self.key_bytes.reserve(more(self.key_bytes.len()));
        self.fold_in_python.reserve(more(self.fold_in_python.len()));
        self.matches.reserve(more(self.matches.len()));
        self.volumes.reserve(more(self.volumes.len()));
        self.mask_offsets.reserve(more(self.mask_offsets.len()));
        self.masks.reserve(more(self.masks.len()));
        self.series_offsets.reserve(more(self.series_offsets.len()));
        self.series_years.reserve(more(self.series_years.len()));
        self.series_matches.reserve(more(self.series_matches.len()));
        self.series_volumes.reserve(more(self.series_volumes.len()));
    }

    pub fn open<'a>(&mut self, key: &'a [u8], policy: &Policy) -> Open<'a> {
        Open {
            key,
            tagged: policy.drop_tagged && crate::policy::tagged(key),
        }
    }

    /// Add one row of a line of `run`, unless the policy drops it: to the run's totals as it is read
    /// (no row is kept, but for its series with keep_years).
    #[inline(always)]
    pub fn add(&mut self, run: &Open, year: u16, matches: i64, volumes: i64, policy: &Policy) {
        if run.tagged || year < policy.year_min || year > policy.year_max {
            self.dropped += 1;
            return;
        }
        let open = &mut self.open;
        open.rows += 1;
        let (total_match, o1) = open.matches.overflowing_add(matches);
        let (total_volume, o2) = open.volumes.overflowing_add(volumes);
        (open.matches, open.volumes) = (total_match, total_volume);
        open.overflowed |= o1 | o2;
        let bit = (year - YEAR_MIN) as usize;
        open.mask[bit >> 3] |= 1 << (bit & 7);
        (open.first, open.last) = (open.first.min(bit), open.last.max(bit));
        if policy.keep_years {
            self.open_rows.push((year, matches, volumes));
        }
    }

    /// Close `run`: one row of the table, unless the policy dropped all of its rows; the totals are
    /// then empty for the next run. A total past int64 is left to the reference path, which names
    /// the n-gram.
    pub fn close(&mut self, run: Open, policy: &Policy) -> Result<(), Unrepresentable> {
        if self.open.rows == 0 {
            return Ok(());
        }
        if self.open.overflowed {
            return Err(Unrepresentable);
        }
        if policy.lowercase && run.key.is_ascii() {
            crate::policy::fold_ascii(run.key, &mut self.key_bytes);
        } else {
            self.key_bytes.extend_from_slice(run.key);
        }
        self.fold_in_python
            .push(policy.lowercase && !run.key.is_ascii());
        self.key_offsets
            .push(i32::try_from(self.key_bytes.len()).map_err(|_| Unrepresentable)?);
        // One comparison a run, of two keys in cache: a sorted input's check costs no pass of its own.
        if let (true, [.., a, b, c]) = (self.ascending, &self.key_offsets[..]) {
            let (a, b, c) = (*a as usize, *b as usize, *c as usize);
            self.ascending = key_order(&self.key_bytes[a..b], &self.key_bytes[b..c]).is_lt();
        }
        let open = &mut self.open;
        self.matches.push(open.matches);
        self.volumes.push(open.volumes);
        let (lo, hi) = (open.first >> 3, open.last >> 3);
        crate::masks::push_bytes(&open.mask, lo, hi, &mut self.masks);
        open.mask[lo..=hi].fill(0); // the rest of the mask is clear already
        (open.rows, open.matches, open.volumes) = (0, 0, 0);
        (open.first, open.last) = (usize::MAX, 0);
        self.mask_offsets
            .push(i32::try_from(self.masks.len()).map_err(|_| Unrepresentable)?);
        if policy.keep_years {
            let mut rows = std::mem::take(&mut self.open_rows);
            let added = self.add_series(&mut rows);
            rows.clear();
            self.open_rows = rows;
            added?;
        }
        Ok(())
    }

    /// The run's (year, match, volume) series: summed per year, years ascending.
    fn add_series(&mut self, rows: &mut [(u16, i64, i64)]) -> Result<(), Unrepresentable> {
        rows.sort_by_key(|row| row.0); // stable, and usually sorted already
        let mut last = None;
        for &(year, m, v) in rows.iter() {
            if last == Some(year) {
                // Each year's sum is part of the run's total, which fitted.
                *self.series_matches.last_mut().unwrap() += m;
                *self.series_volumes.last_mut().unwrap() += v;
                continue;
            }
            last = Some(year);
            self.series_years.push(year as i16);
            self.series_matches.push(m);
            self.series_volumes.push(v);
        }
        self.series_offsets
            .push(i32::try_from(self.series_years.len()).map_err(|_| Unrepresentable)?);
        Ok(())
    }
}
