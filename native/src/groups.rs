//! Rows of run tables merged one row per n-gram: the groups of rows merge_order gives, each made in one
//! pass over them into its key, its two sums and its year set (merge_groups: run rows, for a spill's or a
//! merge pass's run file; transforms/merge.py, merge_runs), or into an n-gram row of its order's table
//! (merge_ngrams: the final merge of a range's run files; transforms/total.py, ngram_tables). (Three passes
//! and a take, one a column, were 65 ns a row of the 105 that merge_runs took, each looking up every row
//! again through the merge's order.)

use crate::masks;
use crate::order::{self, Keys};
use crate::prefetch;
use crate::runs::MASK_BYTES;

/// Rows ahead of the one being merged whose bytes are asked for (`fetch_ahead`).
const AHEAD: usize = 16;

/// The rows of a merge of groups: their keys, match and volume counts and year-set spans (in MASK_CHUNKS,
/// consecutive pieces of one column that `masks::valid` accepts), and the groups: those of merge_order's
/// positions from each of STARTS to the next (the last: to the rows' count) in ORDER (None: the rows as they
/// are), whose keys are equal.
#[derive(Clone, Copy)]
pub struct Groups<'a, 'b> {
    pub keys: &'a Keys<'b>,
    pub matches: &'a [i64],
    pub volumes: &'a [i64],
    pub mask_chunks: &'a [Keys<'b>],
    pub order: Option<&'a [i64]>,
    pub starts: &'a [i64],
}

/// The columns of the merged rows, as Arrow lays them out.
pub struct Merged {
    pub key_offsets: Vec<i32>,
    pub key_bytes: Vec<u8>,
    pub matches: Vec<i64>,
    pub volumes: Vec<i64>,
    pub mask_offsets: Vec<i32>,
    pub mask_bytes: Vec<u8>,
}

/// Why a group's row cannot be made: a sum past int64 (the group and the column: 0 matches,
/// 1 volumes), named by the caller; or an int32 offset passed.
pub enum Unmade {
    Overflow(usize, usize),
    TooLarge,
}

/// A group's year set as `each_group` hands it over: a group of one row's span as it lies (the data of its
/// column from the span on, and the span's length), or the OR of its rows' spans as a whole mask.
enum Years<'a> {
    Span(&'a [u8], usize),
    Mask(&'a [u8; MASK_BYTES]),
}

/// The merged row of each of the GROUPS: its key is its first row's; its matches and volumes the sums of
/// its rows'; its year set the OR of its rows' span masks (masks.rs).
pub fn merge_groups(groups: &Groups) -> Result<Merged, Unmade> {
    let (keys, mask_chunks, count) = (groups.keys, groups.mask_chunks, groups.starts.len());
    let mut merged = Merged {
        key_offsets: Vec::with_capacity(count + 1),
        key_bytes: Vec::with_capacity(keys.data.len()),
        matches: Vec::with_capacity(count),
        volumes: Vec::with_capacity(count),
        mask_offsets: Vec::with_capacity(count + 1),
        mask_bytes: Vec::with_capacity(mask_chunks.iter().map(|c| c.data.len()).sum()),
    };
    merged.key_offsets.push(0);
    merged.mask_offsets.push(0);
    each_group(groups, |head, m, v, years| {
        merged.key_bytes.extend_from_slice(keys.get(head));
        merged.key_offsets.push(offset(merged.key_bytes.len())?);
        merged.matches.push(m);
        merged.volumes.push(v);
        match years {
            Years::Span(at, len) => merged.mask_bytes.extend_from_slice(&at[..len]),
            Years::Mask(mask) => masks::push_span(mask, &mut merged.mask_bytes),
        }
        merged.mask_offsets.push(offset(merged.mask_bytes.len())?);
        Ok(())
    })?;
    Ok(merged)
}

/// The rows of one order of n-gram table (schemas.NGRAMS but the order, which is the same in every row),
/// as Arrow lays them out.
#[derive(Default)]
pub struct OrderRows {
    pub key_offsets: Vec<i32>,
    pub key_bytes: Vec<u8>,
    pub matches: Vec<i64>,
    pub volumes: Vec<i64>,
    pub first: Vec<i16>,
    pub last: Vec<i16>,
    pub years: Vec<i16>,
}

impl OrderRows {
    /// Room for ROWS rows of KEY_BYTES bytes of keys at most, the most one order can have: grown by doubling,
    /// the columns were copied about once more (a tenth of the merge's time), where room never written is
    /// address space only, and Owned::wrap gives back what is left.
    fn for_at_most(rows: usize, key_bytes: usize) -> Self {
        let mut key_offsets = Vec::with_capacity(rows + 1);
        key_offsets.push(0);
        OrderRows {
            key_offsets,
            key_bytes: Vec::with_capacity(key_bytes),
            matches: Vec::with_capacity(rows),
            volumes: Vec::with_capacity(rows),
            first: Vec::with_capacity(rows),
            last: Vec::with_capacity(rows),
            years: Vec::with_capacity(rows),
        }
    }
}

/// The GROUPS merged as `merge_groups` merges them, made into n-gram rows, those of at least MIN_COUNT
/// matches, each order's apart: (order, its rows in the groups' order) of each order present, ascending.
/// An n-gram's order is as order::orders gives it; its year set becomes its first year, last year and
/// number of years (masks::stats). The rows of the final merge of run files, in one pass over the groups: where
/// merging, then finding each row's order and years, and then taking each order's rows were a pass and a
/// copy of every row each.
pub fn merge_ngrams(groups: &Groups, min_count: i64) -> Result<Vec<(u8, OrderRows)>, Unmade> {
    let keys = groups.keys;
    let mut orders: Vec<OrderRows> = Vec::new();
    each_group(groups, |head, m, v, years| {
        if m < min_count {
            return Ok(());
        }
        let n = order::order_of(keys, head) as usize;
        if orders.len() <= n {
            orders.resize_with(n + 1, OrderRows::default);
        }
        let rows = &mut orders[n];
        if rows.key_offsets.is_empty() {
            *rows = OrderRows::for_at_most(groups.starts.len(), keys.data.len());
        }
        rows.key_bytes.extend_from_slice(keys.get(head));
        rows.key_offsets.push(offset(rows.key_bytes.len())?);
        rows.matches.push(m);
        rows.volumes.push(v);
        let (first, last, count) = match years {
            Years::Span(at, len) => masks::stats_at(at, len),
            Years::Mask(mask) => masks::mask_stats(mask),
        };
        rows.first.push(first);
        rows.last.push(last);
        rows.years.push(count);
        Ok(())
    })?;
    Ok(orders
        .into_iter()
        .enumerate()
        .filter(|(_, rows)| !rows.matches.is_empty())
        .map(|(n, rows)| (n as u8, rows))
        .collect())
}

fn offset(len: usize) -> Result<i32, Unmade> {
    i32::try_from(len).map_err(|_| Unmade::TooLarge)
}

/// Whether ORDER is one of rows in little order, sorted whole, rather than a merge of sorted pieces: in a
/// merge, most rows of its first SAMPLE follow their piece's row before them a few positions earlier (as
/// many as there are pieces, at most), and in a sort of shuffled rows hardly any do.
fn scattered(order: &[i64]) -> bool {
    const SAMPLE: usize = 1 << 10;
    const BEHIND: usize = 1 << 6;
    let sample = &order[..order.len().min(SAMPLE)];
    let following = (1..sample.len())
        .filter(|&at| sample[at.saturating_sub(BEHIND)..at].contains(&(sample[at] - 1)))
        .count();
    following < sample.len() / 2
}

/// Rows' year spans, which lie in consecutive chunks of one column, found by row.
struct Spans<'a, 'b> {
    chunks: &'a [Keys<'b>],
    /// Each chunk's first row, then the rows' count.
    firsts: Vec<usize>,
    /// Each row's chunk, for rows looked up in a scattered order (else empty, as for one chunk): a search of
    /// the chunks for each row cost more than asking for its span ahead saved.
    chunk_of: Vec<u16>,
    /// The chunk of the row looked up last, where rows come as they are.
    last: std::cell::Cell<usize>,
}

impl<'a, 'b> Spans<'a, 'b> {
    fn new(chunks: &'a [Keys<'b>], scattered: bool) -> Self {
        let mut firsts = Vec::with_capacity(chunks.len() + 1);
        firsts.push(0usize);
        for chunk in chunks {
            firsts.push(firsts.last().unwrap() + chunk.len());
        }
        let mut chunk_of = Vec::new();
        if scattered && chunks.len() > 1 && chunks.len() <= 1 << 16 {
            chunk_of.reserve_exact(*firsts.last().unwrap());
            for (k, chunk) in chunks.iter().enumerate() {
                chunk_of.extend(std::iter::repeat_n(k as u16, chunk.len()));
            }
        }
        Spans {
            chunks,
            firsts,
            chunk_of,
            last: std::cell::Cell::new(0),
        }
    }

    /// The chunk that holds ROW's span, and its place there.
    #[inline(always)]
    fn place(&self, row: usize) -> (&'a Keys<'b>, usize) {
        let k = match self.chunks.len() {
            1 => 0,
            _ if !self.chunk_of.is_empty() => self.chunk_of[row] as usize,
            _ => {
                let mut k = self.last.get();
                if row < self.firsts[k] || row >= self.firsts[k + 1] {
                    k = self.firsts.partition_point(|&first| first <= row) - 1;
                    self.last.set(k);
                }
                k
            }
        };
        (&self.chunks[k], row - self.firsts[k])
    }
}

/// Each group's merged row handed to TAKE, in the groups' order: (its first row, whose key is the group's,
/// its sums, its year set).
fn each_group(
    groups: &Groups,
    mut take: impl FnMut(usize, i64, i64, Years) -> Result<(), Unmade>,
) -> Result<(), Unmade> {
    let Groups {
        keys,
        matches,
        volumes,
        mask_chunks,
        order,
        starts,
    } = *groups;
    let rows = keys.len();
    let scattered = order.is_some_and(scattered);
    let spans = Spans::new(mask_chunks, scattered);
    let row = |at: usize| order.map_or(at, |o| o[at] as usize);
    // Rows in an order (a sort of shuffled rows) lie anywhere in buffers larger than the caches, and each
    // look-up waited for memory (memmove of a key's bytes was a sixth of such a read stage's CPU): the key AHEAD
    // rows on is asked for first, its offset and values twice as far on; so is its year span, where the order
    // is scattered (1.58M shuffled rows in 42 chunks: 208-224 -> 131-143 ms), not where it merges sorted pieces
    // (the same rows as 42 sorted pieces: 65 -> 77 ms).
    let fetch_ahead = |at: usize| {
        let Some(o) = order else { return };
        if let Some(&far) = o.get(at + 2 * AHEAD) {
            let far = far as usize;
            prefetch::fetch(&keys.offsets[far]);
            prefetch::fetch(&matches[far]);
            prefetch::fetch(&volumes[far]);
            if scattered {
                let (chunk, at) = spans.place(far);
                prefetch::fetch(&chunk.offsets[at]);
            }
        }
        if let Some(&near) = o.get(at + AHEAD) {
            let near = near as usize;
            prefetch::fetch(keys.data.as_ptr().wrapping_add(keys.offsets[near] as usize));
            if scattered {
                let (chunk, at) = spans.place(near);
                prefetch::fetch(chunk.data.as_ptr().wrapping_add(chunk.offsets[at] as usize));
            }
        }
    };
    // A row's span where it lies: the data of its chunk from the span on, and the span's length.
    let span_at = |row: usize| {
        let (chunk, at) = spans.place(row);
        let (start, end) = (chunk.offsets[at] as usize, chunk.offsets[at + 1] as usize);
        (&chunk.data[start..], end - start)
    };
    for (g, &start) in starts.iter().enumerate() {
        let (first, end) = (
            start as usize,
            starts.get(g + 1).map_or(rows, |&next| next as usize),
        );
        fetch_ahead(first);
        let head = row(first);
        if end == first + 1 {
            // A group of one row, most of a merge's: its values and span as they are.
            let (at, len) = span_at(head);
            take(head, matches[head], volumes[head], Years::Span(at, len))?;
        } else {
            let (mut m, mut v) = (0i64, 0i64);
            let mut mask = [0u8; MASK_BYTES];
            for at in first..end {
                let r = row(at);
                m = m.checked_add(matches[r]).ok_or(Unmade::Overflow(g, 0))?;
                v = v.checked_add(volumes[r]).ok_or(Unmade::Overflow(g, 1))?;
                let (at, len) = span_at(r);
                masks::or_into(&at[..len], &mut mask);
            }
            take(head, m, v, Years::Mask(&mask))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::YEAR_MIN;
    use crate::order::tests::keys_of;

    fn groups<'a, 'b>(
        keys: &'a Keys<'b>,
        matches: &'a [i64],
        volumes: &'a [i64],
        mask_chunks: &'a [Keys<'b>],
        order: Option<&'a [i64]>,
        starts: &'a [i64],
    ) -> Groups<'a, 'b> {
        Groups {
            keys,
            matches,
            volumes,
            mask_chunks,
            order,
            starts,
        }
    }

    const ROWS: [i32; 5] = [0, 1, 2, 3, 4];

    #[test]
    fn each_group_is_its_first_key_its_sums_and_the_or_of_its_years() {
        // Rows "b" "a" "b" "a", in key order rows 1 3 0 2; years: row 0 bit 0, row 1 bit 9, row 2
        // bit 1, row 3 bit 8, each as its span (the index of its first byte, then the bytes).
        let keys = Keys {
            offsets: &ROWS,
            data: b"baba",
        };
        let spans = Keys {
            offsets: &[0, 2, 4, 6, 8],
            data: &[0, 0b1, 1, 0b10, 0, 0b10, 1, 0b1],
        };
        let order = [1, 3, 0, 2];
        let Ok(merged) = merge_groups(&groups(
            &keys,
            &[1, 2, 3, 4],
            &[10, 20, 30, 40],
            &[spans],
            Some(&order),
            &[0, 2],
        )) else {
            panic!("not merged")
        };
        assert_eq!(
            (merged.key_offsets, merged.key_bytes),
            (vec![0, 1, 2], b"ab".to_vec())
        );
        assert_eq!((merged.matches, merged.volumes), (vec![6, 4], vec![60, 40]));
        assert_eq!(merged.mask_offsets, [0, 2, 4]);
        assert_eq!(merged.mask_bytes, [1, 0b11, 0, 0b11]);
    }

    #[test]
    fn a_group_of_one_row_is_that_row_and_the_masks_may_lie_in_chunks() {
        let keys = Keys {
            offsets: &[0, 2, 5],
            data: "ab\u{e9}x".as_bytes(),
        };
        let (first, second) = (
            Keys {
                offsets: &[0, 3],
                data: &[2, 0b100, 0b1],
            },
            Keys {
                offsets: &[0, 1],
                data: &[0],
            },
        );
        let Ok(merged) = merge_groups(&groups(
            &keys,
            &[7, 8],
            &[1, 2],
            &[first, second],
            None,
            &[0, 1],
        )) else {
            panic!("not merged")
        };
        assert_eq!(
            (merged.key_offsets, merged.key_bytes),
            (vec![0, 2, 5], "ab\u{e9}x".as_bytes().to_vec())
        );
        assert_eq!((merged.matches, merged.volumes), (vec![7, 8], vec![1, 2]));
        assert_eq!(
            (merged.mask_offsets, merged.mask_bytes),
            (vec![0, 3, 4], vec![2, 0b100, 0b1, 0])
        );
    }

    #[test]
    fn a_sum_past_int64_names_its_group_and_column() {
        let keys = Keys {
            offsets: &ROWS[..4],
            data: b"abb",
        };
        for (matches, volumes, column) in [
            ([1, i64::MAX, 1], [1, 1, 1], 0),
            ([1, 1, 1], [1, 1, i64::MAX], 1),
        ] {
            let spans = Keys {
                offsets: &ROWS[..4],
                data: &[0, 0, 0],
            };
            match merge_groups(&groups(&keys, &matches, &volumes, &[spans], None, &[0, 1])) {
                Err(Unmade::Overflow(1, c)) => assert_eq!(c, column),
                _ => panic!("no overflow named"),
            }
        }
    }

    #[test]
    fn n_gram_rows_come_apart_by_order_with_their_years_and_the_rare_ones_left_out() {
        // Keys in key order through ORDER: "a" (rows 1, 4), "a b" (0, 3), "b" (5), "c d e" (2).
        let (offsets, data) = keys_of(&[
            b"a b".to_vec(),
            b"a".to_vec(),
            b"c d e".to_vec(),
            b"a b".to_vec(),
            b"a".to_vec(),
            b"b".to_vec(),
        ]);
        let keys = Keys {
            offsets: &offsets,
            data: &data,
        };
        // Years: row 0 bit 0, row 3 bit 9, row 1 bits 1 and 2, row 4 bit 2, rows 2 and 5 bit 20.
        let (span_offsets, span_data) = keys_of(&[
            vec![0, 0b1],
            vec![0, 0b110],
            vec![2, 0b1_0000],
            vec![1, 0b10],
            vec![0, 0b100],
            vec![2, 0b1_0000],
        ]);
        let spans = Keys {
            offsets: &span_offsets,
            data: &span_data,
        };
        let order = [1, 4, 0, 3, 5, 2];
        let matches = [5, 1, 7, 6, 2, 1];
        let volumes = [1, 1, 1, 1, 1, 1];
        let spans = [spans];
        let merging = groups(
            &keys,
            &matches,
            &volumes,
            &spans,
            Some(&order),
            &[0, 2, 4, 5],
        );
        let Ok(orders) = merge_ngrams(&merging, 2) else {
            panic!("not merged")
        };
        // "b" (1 match) is left out; "c d e" (7) and "a" (3), "a b" (11) stay, each order apart.
        let year = |bit: i16| YEAR_MIN as i16 + bit;
        let found: Vec<_> = orders
            .iter()
            .map(|(n, rows)| {
                (
                    *n,
                    rows.key_offsets.clone(),
                    rows.key_bytes.clone(),
                    rows.matches.clone(),
                    rows.first.clone(),
                    rows.last.clone(),
                    rows.years.clone(),
                )
            })
            .collect();
        // One row an order: (order, key offsets, key bytes, matches, first, last, years).
        let row = |n: u8, key: &[u8], matches: i64, first: i16, last: i16, years: i16| {
            let offsets = vec![0, key.len() as i32];
            let (first, last) = (vec![year(first)], vec![year(last)]);
            (
                n,
                offsets,
                key.to_vec(),
                vec![matches],
                first,
                last,
                vec![years],
            )
        };
        assert_eq!(
            found,
            vec![
                row(1, b"a", 3, 1, 2, 2),
                row(2, b"a b", 11, 0, 9, 2),
                row(3, b"c d e", 7, 20, 20, 1)
            ]
        );
    }

    #[test]
    fn a_scattered_order_finds_each_rows_years_in_their_chunks() {
        // Rows in little order (more than `scattered` looks at), their spans in chunks of uneven lengths:
        // merged as they are in one column.
        let mut next = crate::order::tests::numbers(5);
        let rows = 3000;
        let spans: Vec<Vec<u8>> = (0..rows)
            .map(|_| vec![(next() % 80) as u8, 1 + (next() % 255) as u8])
            .collect();
        let (key_offsets, key_data) = keys_of(
            &(0..rows)
                .map(|row| format!("{row:05}").into_bytes())
                .collect::<Vec<_>>(),
        );
        let keys = Keys {
            offsets: &key_offsets,
            data: &key_data,
        };
        let mut order: Vec<i64> = (0..rows as i64).collect();
        for at in (1..rows).rev() {
            order.swap(at, next() % (at + 1));
        }
        assert!(scattered(&order));
        let starts: Vec<i64> = (0..rows as i64).collect();
        let values = vec![1i64; rows];
        let (whole_offsets, whole_data) = keys_of(&spans);
        let whole = [Keys {
            offsets: &whole_offsets,
            data: &whole_data,
        }];
        let cuts = [0, 1, 700, 701, 2048, rows];
        let pieces: Vec<_> = cuts
            .windows(2)
            .map(|w| keys_of(&spans[w[0]..w[1]]))
            .collect();
        let chunks: Vec<Keys> = pieces
            .iter()
            .map(|(offsets, data)| Keys { offsets, data })
            .collect();
        let merged = |masks: &[Keys]| match merge_groups(&groups(
            &keys,
            &values,
            &values,
            masks,
            Some(&order),
            &starts,
        )) {
            Ok(m) => (m.key_bytes, m.mask_offsets, m.mask_bytes),
            Err(_) => panic!("not merged"),
        };
        assert_eq!(merged(&chunks), merged(&whole));
        let sorted: Vec<i64> = (0..rows as i64).collect();
        assert!(!scattered(&sorted));
    }
}
