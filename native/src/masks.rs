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
    let (mut first, mut last, mut count) = (vec![0; n], vec![0; n], vec![0; n]);
    let each = first.iter_mut().zip(last.iter_mut()).zip(count.iter_mut());
    for (w, ((first, last), count)) in spans.offsets.windows(2).zip(each) {
        (*first, *last, *count) = stats_at(&spans.data[w[0] as usize..], (w[1] - w[0]) as usize);
    }
    (first, last, count)
}

/// What `stats` gives an empty set.
const EMPTY: (i16, i16, i16) = (year(-1), year(8 * MASK_BYTES as i32 - 9), 0);

/// The year of a mask's bit BIT.
const fn year(bit: i32) -> i16 {
    (YEAR_MIN as i32 + bit) as i16
}

/// (first year, last year, years) of a set of YEARS bits, those from bit BASE on, that lie in bytes from HEAD
/// to TAIL (each with a bit), the last LAST bytes after the first (0: one byte).
fn of_bytes(base: i32, head: u8, tail: u8, last: usize, years: u32) -> (i16, i16, i16) {
    (
        year(base + head.trailing_zeros() as i32),
        year(base + 8 * last as i32 + 7 - tail.leading_zeros() as i32),
        years as i16,
    )
}

/// The most bytes after a span's first that `stats_at` reads as words: 4 words.
const SHORT: usize = 32;

/// span_stats of the span of LEN bytes that AT begins with (the rest of a column's data from the span on).
/// Most spans are short (8.3 bytes on average at the 2020 1-grams): their bytes after the first are read as
/// four words, those past the span masked off, where the data holds them, with no branch on the length (a
/// byte loop took 23-30 ns a span there, its branches unforeseeable; 13.5-20 ns now, the column checked and
/// the three columns written included: BENCHMARKS.md, forty-third round). The others as span_stats reads
/// them.
#[inline(always)]
pub fn stats_at(at: &[u8], len: usize) -> (i16, i16, i16) {
    let Some(words) = at.get(..1 + SHORT).filter(|_| len <= 1 + SHORT) else {
        return span_stats(&at[..len]);
    };
    let bytes = len.saturating_sub(1); // after the span's first byte
    let (head, tail) = (words[1], words[bytes.max(1)]);
    if bytes == 0 || head == 0 || tail == 0 {
        return span_stats(&words[..len]);
    }
    let years = (0..SHORT / 8)
        .map(|k| {
            let word = u64::from_le_bytes(words[1 + 8 * k..9 + 8 * k].try_into().unwrap());
            let kept = bytes.saturating_sub(8 * k).min(8); // of the word's bytes, those of the span
            let mask = if kept == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * kept)) - 1
            };
            (word & mask).count_ones()
        })
        .sum();
    of_bytes(8 * words[0] as i32, head, tail, bytes - 1, years)
}

/// (first year, last year, years) of one span mask, as `stats` gives them.
pub fn span_stats(span: &[u8]) -> (i16, i16, i16) {
    let (&lo, bytes) = span.split_first().unwrap_or((&0, &[]));
    let (Some(&head), Some(&tail)) = (bytes.first(), bytes.last()) else {
        return EMPTY;
    };
    if head == 0 || tail == 0 {
        // No span this crate writes (push_span cuts such bytes off), but a span read from a file is taken
        // as it is: a whole mask's stats, from its bytes laid in place.
        let mut mask = [0u8; MASK_BYTES];
        or_into(span, &mut mask);
        return mask_stats(&mask);
    }
    // The years counted a word at a time, the last word read as tail_word reads it.
    let mut words = bytes.chunks_exact(8);
    let mut years: u32 = words
        .by_ref()
        .map(|word| u64::from_le_bytes(word.try_into().unwrap()).count_ones())
        .sum();
    let rest = words.remainder();
    if !rest.is_empty() {
        years += crate::order::tail_word(rest).count_ones();
    }
    of_bytes(8 * lo as i32, head, tail, bytes.len() - 1, years)
}

/// (first year, last year, years) of a whole mask, as `stats` gives them for its span: its words read
/// once, the first and last with a bit found among them.
pub fn mask_stats(mask: &[u8; MASK_BYTES]) -> (i16, i16, i16) {
    let (mut low, mut high, mut years) = (None, None, 0u32);
    for (at, word) in mask.chunks(8).enumerate() {
        let mut bytes = [0u8; 8];
        bytes[..word.len()].copy_from_slice(word);
        let word = u64::from_le_bytes(bytes);
        if word != 0 {
            let bit = 64 * at as i32;
            low.get_or_insert(bit + word.trailing_zeros() as i32);
            high = Some(bit + 63 - word.leading_zeros() as i32);
        }
        years += word.count_ones();
    }
    match (low, high) {
        (Some(low), Some(high)) => (year(low), year(high), years as i16),
        _ => EMPTY,
    }
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

    /// span_stats by each bit of the span: (first, last, years), the empty set as `stats` gives it.
    fn bit_by_bit(span: &[u8]) -> (i16, i16, i16) {
        let (lo, bytes) = (span[0] as i32, &span[1..]);
        let bits: Vec<i32> = (0..8 * bytes.len())
            .filter(|&bit| bytes[bit / 8] >> (bit % 8) & 1 == 1)
            .map(|bit| 8 * lo + bit as i32)
            .collect();
        (
            year(*bits.first().unwrap_or(&-1)),
            year(*bits.last().unwrap_or(&(8 * MASK_BYTES as i32 - 9))),
            bits.len() as i16,
        )
    }

    #[test]
    fn span_stats_of_spans_of_every_length_and_padded_ones() {
        // Sets over 1 to 24 bytes, dense and sparse, from every byte; spans as push_span cuts them,
        // and the same with bytes of no bit before and after (as a file could hold them), and empty sets.
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut spans: Vec<Vec<u8>> = vec![vec![0], vec![3, 0], vec![5, 0, 0, 0, 0, 0, 0, 0, 0, 0]];
        for _ in 0..20_000 {
            let (lo, len) = (next() as usize % MASK_BYTES, 1 + next() as usize % 24);
            let density = 1 + next() % 8;
            let bits: Vec<usize> = (8 * lo..(8 * (lo + len)).min(8 * MASK_BYTES))
                .filter(|_| next() % 8 < density)
                .collect();
            let mut span = Vec::new();
            push_span(&mask_of(&bits), &mut span);
            spans.push(span.clone());
            if span.len() > 1 && span[0] > 0 && span[0] as usize + span.len() <= MASK_BYTES {
                let mut padded = vec![span[0] - 1, 0];
                padded.extend_from_slice(&span[1..]);
                padded.push(0);
                spans.push(padded);
            }
        }
        for span in &spans {
            assert_eq!(span_stats(span), bit_by_bit(span), "span {span:?}");
        }
        // Whole masks, as a merge of several rows gives them.
        for span in &spans {
            let mut mask = [0u8; MASK_BYTES];
            or_into(span, &mut mask);
            assert_eq!(mask_stats(&mask), bit_by_bit(span), "mask of span {span:?}");
        }
        // A column of them, as `stats` reads them: most from words of the column's data.
        let (mut offsets, mut data) = (vec![0], Vec::new());
        for span in &spans {
            data.extend_from_slice(span);
            offsets.push(data.len() as i32);
        }
        let (first, last, years) = stats(&Keys {
            offsets: &offsets,
            data: &data,
        });
        for (i, span) in spans.iter().enumerate() {
            assert_eq!(
                (first[i], last[i], years[i]),
                bit_by_bit(span),
                "span {span:?}"
            );
        }
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
