//! Year-set bit masks (runs.rs builds them: bit `year - YEAR_MIN` of MASK_BYTES bytes) to the
//! columns the n-gram files keep: the first year, the last year and the number of years.

use crate::fields::YEAR_MIN;
use crate::runs::MASK_BYTES;

/// (first year, last year, years) of each mask of MASKS, MASK_BYTES bytes each. An empty mask (no
/// run has one) gives YEAR_MIN - 1, the year before its last bit, and 0, as transforms/columnar.py did.
pub fn stats(masks: &[u8]) -> (Vec<i16>, Vec<i16>, Vec<i16>) {
    let n = masks.len() / MASK_BYTES;
    let (mut first, mut last, mut count) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for mask in masks.chunks_exact(MASK_BYTES) {
        let words = mask
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()));
        let (mut low, mut high, mut years) = (None, None, 0u32);
        for (i, word) in words.enumerate() {
            if word != 0 {
                let base = 64 * i as i32;
                low.get_or_insert(base + word.trailing_zeros() as i32);
                high = Some(base + 63 - word.leading_zeros() as i32);
                years += word.count_ones();
            }
        }
        let year = |bit: i32| (YEAR_MIN as i32 + bit) as i16;
        first.push(year(low.unwrap_or(-1)));
        last.push(year(high.unwrap_or(8 * MASK_BYTES as i32 - 9)));
        count.push(years as i16);
    }
    (first, last, count)
}

/// The OR of the masks of each group of rows, into OUT (MASK_BYTES bytes a group): group g holds the
/// rows at positions `starts[g]` up to the next start (the last: up to `rows`) of `order` (None: the
/// rows themselves). The masks are in CHUNKS, consecutive pieces of one column (MASK_BYTES bytes a
/// row); no chunk is copied.
pub fn or_groups(
    chunks: &[&[u8]],
    order: Option<&[i64]>,
    starts: &[i64],
    rows: usize,
    out: &mut [u8],
) {
    let mut firsts = Vec::with_capacity(chunks.len() + 1); // the first row of each chunk, then the end
    firsts.push(0usize);
    for chunk in chunks {
        firsts.push(firsts.last().unwrap() + chunk.len() / MASK_BYTES);
    }
    let mut chunk = 0; // the chunk of the last row looked up: rows mostly follow each other
    let mut mask = |row: usize| {
        if row < firsts[chunk] || row >= firsts[chunk + 1] {
            chunk = firsts.partition_point(|&first| first <= row) - 1;
        }
        let at = (row - firsts[chunk]) * MASK_BYTES;
        <&[u8; MASK_BYTES]>::try_from(&chunks[chunk][at..at + MASK_BYTES]).unwrap()
    };
    for (g, merged) in out.chunks_exact_mut(MASK_BYTES).enumerate() {
        let merged: &mut [u8; MASK_BYTES] = merged.try_into().unwrap();
        let (first, end) = (
            starts[g] as usize,
            starts.get(g + 1).map_or(rows, |&next| next as usize),
        );
        let row = |at: usize| order.map_or(at, |o| o[at] as usize);
        *merged = *mask(row(first));
        for at in first + 1..end {
            for (byte, add) in merged.iter_mut().zip(mask(row(at))) {
                *byte |= add;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_or_their_rows_across_chunks() {
        let row = |bit: usize| {
            let mut mask = vec![0u8; MASK_BYTES];
            mask[bit / 8] |= 1 << (bit % 8);
            mask
        };
        let (a, b) = ([row(1), row(2)].concat(), [row(3), row(700)].concat());
        let chunks = [&a[..], &b[..]];
        let want = |bits: &[usize]| {
            let mut mask = vec![0u8; MASK_BYTES];
            for &bit in bits {
                mask[bit / 8] |= 1 << (bit % 8);
            }
            mask
        };
        let or = |order: Option<&[i64]>, starts: &[i64]| {
            let mut out = vec![0xffu8; starts.len() * MASK_BYTES];
            or_groups(&chunks, order, starts, 4, &mut out);
            out
        };
        assert_eq!(
            or(None, &[0, 1, 3]),
            [want(&[1]), want(&[2, 3]), want(&[700])].concat()
        );
        assert_eq!(
            or(Some(&[3, 0, 2, 1]), &[0, 2]),
            [want(&[700, 1]), want(&[3, 2])].concat()
        );
    }

    #[test]
    fn first_last_and_count() {
        let mut masks = vec![0u8; 3 * MASK_BYTES];
        for bit in [3usize, 64, 70, 8 * MASK_BYTES - 1] {
            masks[bit / 8] |= 1 << (bit % 8);
        }
        masks[MASK_BYTES + 10] = 0b1000_0001;
        let (first, last, count) = stats(&masks);
        let y = |bit: i32| (YEAR_MIN as i32 + bit) as i16;
        assert_eq!(first, vec![y(3), y(80), y(-1)]);
        assert_eq!(
            last,
            vec![
                y(8 * MASK_BYTES as i32 - 1),
                y(87),
                y(8 * MASK_BYTES as i32 - 9)
            ]
        );
        assert_eq!(count, vec![4, 2, 0]);
    }
}
