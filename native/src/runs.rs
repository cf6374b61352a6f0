//! Consecutive rows of one n-gram collapsed into one run, as transforms/collapse.py does.

use crate::fields::{YEAR_MAX, YEAR_MIN};

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
    /// Whether every run's key is above the one before (byte order), as pushed (unfolded for Python).
    pub ascending: bool,
    /// The kept rows of the open run: one buffer for every run of the chunk, not an allocation each.
    open_rows: Vec<(u16, i64, i64)>,
}

/// The run being collected, whose rows are the kept rows of consecutive lines with one n-gram
/// (`Runs::open_rows`).
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

    pub fn open<'a>(&mut self, key: &'a [u8], policy: &Policy) -> Open<'a> {
        self.open_rows.clear();
        Open {
            key,
            tagged: policy.drop_tagged && crate::policy::tagged(key),
        }
    }

    /// Add one line's rows to `run`, dropping those the policy drops.
    pub fn add(&mut self, run: &Open, rows: &[(u16, i64, i64)], policy: &Policy) {
        for &row in rows {
            if run.tagged || row.0 < policy.year_min || row.0 > policy.year_max {
                self.dropped += 1;
            } else {
                self.open_rows.push(row);
            }
        }
    }

    /// Close `run`: one row of the table, unless the policy dropped all of its rows.
    /// A total past int64 is left to the reference path, which names the n-gram.
    pub fn close(&mut self, run: Open, policy: &Policy) -> Result<(), Unrepresentable> {
        if self.open_rows.is_empty() {
            return Ok(());
        }
        let (mut total_match, mut total_volume) = (0i64, 0i64);
        let mut mask = [0u8; MASK_BYTES];
        let (mut first, mut last) = (usize::MAX, 0); // the bits of the first and last year
        for &(year, m, v) in &self.open_rows {
            total_match = total_match.checked_add(m).ok_or(Unrepresentable)?;
            total_volume = total_volume.checked_add(v).ok_or(Unrepresentable)?;
            let bit = (year - YEAR_MIN) as usize;
            mask[bit >> 3] |= 1 << (bit & 7);
            (first, last) = (first.min(bit), last.max(bit));
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
        if let [.., a, b, c] = self.key_offsets[..] {
            let (a, b, c) = (a as usize, b as usize, c as usize);
            self.ascending &= self.key_bytes[a..b] < self.key_bytes[b..c];
        }
        self.matches.push(total_match);
        self.volumes.push(total_volume);
        crate::masks::push_bytes(&mask, first >> 3, last >> 3, &mut self.masks);
        self.mask_offsets
            .push(i32::try_from(self.masks.len()).map_err(|_| Unrepresentable)?);
        if policy.keep_years {
            let mut rows = std::mem::take(&mut self.open_rows);
            let added = self.add_series(&mut rows);
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
