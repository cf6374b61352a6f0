//! Year sets as span masks (runs.rs builds them), and the columns the n-gram files keep from them: the
//! first year, the last year and the number of years.
//!
//! A year set is a bit mask, bit `year - YEAR_MIN` of MASK_BYTES bytes, stored as its span: one byte,
//! the index LO of its first byte that has a bit, then its bytes LO..=HI up to the last that has one
//! (an empty set: the byte 0 alone). A run's years cover a part of the 701 a mask can hold: its span
//! took 7.2 bytes on average on `make bench`'s corpus, and takes 28 for a word seen every year from
//! 1800 to 2008, where the whole mask took 88 in every table, run file and merge. A column of them is
//! laid out as Arrow binary (order::Keys: int32 offsets into one byte buffer).

use crate::fields::YEAR_MIN;
use crate::order::Keys;
use crate::runs::MASK_BYTES;

/// Appends the span of the whole mask MASK to DATA.
pub fn push_span(mask: &[u8; MASK_BYTES], data: &mut Vec<u8>) {
    match mask.iter().position(|&b| b != 0) {
        Some(lo) => {
            let hi = MASK_BYTES - 1 - mask.iter().rev().position(|&b| b != 0).unwrap();
            push_bytes(mask, lo, hi, data);
        }
        None => data.push(0),
    }
}

/// Appends the span of the whole mask MASK to DATA, its first and last bytes with a bit being LO
/// and HI (known to the caller).
pub fn push_bytes(mask: &[u8; MASK_BYTES], lo: usize, hi: usize, data: &mut Vec<u8>) {
    data.push(lo as u8);
    data.extend_from_slice(&mask[lo..=hi]);
}

/// ORs the span SPAN (one that `valid` accepts) into the whole mask MASK.
pub fn or_into(span: &[u8], mask: &mut [u8; MASK_BYTES]) {
    let (&lo, bytes) = span
        .split_first()
        .expect("a span has its first byte's index");
    for (byte, add) in mask[lo as usize..lo as usize + bytes.len()]
        .iter_mut()
        .zip(bytes)
    {
        *byte |= add;
    }
}

/// Whether every value of SPANS is a span of a mask (its bytes within MASK_BYTES).
pub fn valid(spans: &Keys) -> bool {
    (0..spans.len()).all(|i| {
        let span = spans.get(i);
        span.split_first()
            .is_some_and(|(&lo, bytes)| lo as usize + bytes.len() <= MASK_BYTES)
    })
}

/// (first year, last year, years) of each span mask of SPANS. An empty set (no run has one) gives
/// YEAR_MIN - 1, the year before a mask's last bit, and 0, as transforms/columnar.py did.
pub fn stats(spans: &Keys) -> (Vec<i16>, Vec<i16>, Vec<i16>) {
    let n = spans.len();
    let (mut first, mut last, mut count) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for i in 0..n {
        let (a, b, c) = span_stats(spans.get(i));
        first.push(a);
        last.push(b);
        count.push(c);
    }
    (first, last, count)
}

/// (first year, last year, years) of one span mask, as `stats` gives them.
#[inline]
pub fn span_stats(span: &[u8]) -> (i16, i16, i16) {
    let (&lo, bytes) = span.split_first().unwrap_or((&0, &[]));
    let base = 8 * lo as i32;
    // A span's first and last bytes have bits (but for an empty set): the searches stop at once,
    // and the count is one pass with no branch per byte (a loop testing each byte took twice as long).
    let low = bytes
        .iter()
        .position(|&b| b != 0)
        .map(|at| base + 8 * at as i32 + bytes[at].trailing_zeros() as i32);
    let high = bytes
        .iter()
        .rposition(|&b| b != 0)
        .map(|at| base + 8 * at as i32 + 7 - bytes[at].leading_zeros() as i32);
    // counted a word at a time (a span of 8 years a line over five centuries: 60 bytes)
    let mut words = bytes.chunks_exact(8);
    let mut years: u32 = words
        .by_ref()
        .map(|word| u64::from_le_bytes(word.try_into().unwrap()).count_ones())
        .sum();
    years += words
        .remainder()
        .iter()
        .map(|b| b.count_ones())
        .sum::<u32>();
    let year = |bit: i32| (YEAR_MIN as i32 + bit) as i16;
    (
        year(low.unwrap_or(-1)),
        year(high.unwrap_or(8 * MASK_BYTES as i32 - 9)),
        years as i16,
    )
}

/// (first year, last year, years) of a whole mask, as `stats` gives them for its span.
pub fn mask_stats(mask: &[u8; MASK_BYTES]) -> (i16, i16, i16) {
    // The whole mask read as the span from byte 0: the same bits at the same places.
    let mut span = [0u8; MASK_BYTES + 1];
    span[1..].copy_from_slice(mask);
    span_stats(&span)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask_of(bits: &[usize]) -> [u8; MASK_BYTES] {
        let mut mask = [0u8; MASK_BYTES];
        for &bit in bits {
            mask[bit / 8] |= 1 << (bit % 8);
        }
        mask
    }

    /// A column of the spans of masks with these bits.
    fn spans(masks: &[&[usize]]) -> (Vec<i32>, Vec<u8>) {
        let (mut offsets, mut data) = (vec![0], Vec::new());
        for bits in masks {
            push_span(&mask_of(bits), &mut data);
            offsets.push(data.len() as i32);
        }
        (offsets, data)
    }

    fn values(offsets: &[i32], data: &[u8]) -> Vec<Vec<u8>> {
        offsets
            .windows(2)
            .map(|w| data[w[0] as usize..w[1] as usize].to_vec())
            .collect()
    }

    #[test]
    fn a_span_is_the_bytes_between_the_first_and_last_bit() {
        let (offsets, data) = spans(&[&[9, 23], &[], &[8 * MASK_BYTES - 1]]);
        assert_eq!(
            values(&offsets, &data),
            vec![
                vec![1, 0b10, 0b1000_0000],
                vec![0],
                vec![MASK_BYTES as u8 - 1, 0b1000_0000]
            ]
        );
    }

    #[test]
    fn first_last_and_count() {
        let (offsets, data) = spans(&[&[3, 64, 70, 8 * MASK_BYTES - 1], &[80, 87], &[]]);
        let (first, last, count) = stats(&Keys {
            offsets: &offsets,
            data: &data,
        });
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

    #[test]
    fn values_past_a_mask_are_not_spans() {
        let (offsets, data) = (vec![0, 3], vec![MASK_BYTES as u8 - 1, 1, 1]);
        assert!(!valid(&Keys {
            offsets: &offsets,
            data: &data
        }));
    }
}
