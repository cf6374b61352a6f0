//! One line of a Google Books n-gram file, read by byte scanning.
//!
//! Every function here vouches for a line only when the careful Python parser
//! (transforms/formats.py) would read it the same way without a word to say:
//! anything it would reject, normalise or read otherwise (padded numbers,
//! doubled spaces, a trailing carriage return) returns None, and the chunk
//! goes to that parser, which names every malformed line.

use crate::order::same_key;

/// Years a row may carry (schemas.YEAR_MIN / YEAR_MAX).
pub const YEAR_MIN: u16 = 1400;
pub const YEAR_MAX: u16 = 2100;
/// Most tokens in an n-gram (schemas.MAX_ORDER).
const MAX_ORDER: usize = 5;

/// The input formats of transforms/formats.py.
#[derive(Clone, Copy)]
pub enum Format {
    V2012,
    V2020,
    V2009,
}

/// The count that `text` starts with, and the bytes its digits take: at least one digit, the value
/// fitting an int64; the first byte that is not a digit ends it. Its first three digits are read in
/// line, each exit with its length known, and count_on's loop, out of line, reads on: nearly every
/// count has one to three digits (99% of a 2020 2-gram file's matches and volumes), and one loop for
/// all was 3-5% slower on the 2020 files. Eight bytes read as one word were slower still (BENCHMARKS.md).
#[inline(always)]
fn leading_count(text: &[u8]) -> Option<(i64, usize)> {
    let digit = |at: usize| {
        text.get(at)
            .map(|b| b.wrapping_sub(b'0'))
            .filter(|&d| d <= 9)
            .map(|d| d as i64)
    };
    let first = digit(0)?;
    let Some(second) = digit(1) else {
        return Some((first, 1));
    };
    let Some(third) = digit(2) else {
        return Some((first * 10 + second, 2));
    };
    count_on(text, first * 100 + second * 10 + third, 3)
}

/// leading_count's byte loop, from `digits` digits already read, worth `value`: counts of more than
/// three digits.
#[cold]
#[inline(never)]
fn count_on(text: &[u8], mut value: i64, mut digits: usize) -> Option<(i64, usize)> {
    // One pass, unchecked: 18 digits stay below 10^18 < 2^63. Longer numbers are read again, checked.
    while let Some(digit) = text
        .get(digits)
        .map(|b| b.wrapping_sub(b'0'))
        .filter(|&d| d <= 9)
    {
        value = value.wrapping_mul(10).wrapping_add(digit as i64);
        digits += 1;
    }
    match digits {
        0 => None,
        1..=18 => Some((value, digits)),
        _ => text[..digits]
            .iter()
            .try_fold(0i64, |value, &b| {
                value.checked_mul(10)?.checked_add((b - b'0') as i64)
            })
            .map(|value| (value, digits)),
    }
}

/// The value of four digits that `text` starts with when `then` follows them, as every year is written
/// (a comma after a 2020 tuple's, a tab after a 2012 or 2009 line's): one load and compare, where
/// leading_count takes a byte at a time (a 2020 line's tuples were a third of its kernel time).
/// Anything else (None) is read by leading_count.
#[inline(always)]
fn four_digits_then(text: &[u8], then: u8) -> Option<i64> {
    let head: [u8; 5] = text.get(..5)?.try_into().ok()?;
    let digits = u32::from_le_bytes([head[0], head[1], head[2], head[3]]).wrapping_sub(0x3030_3030);
    // Each byte a digit: below 10 after the subtraction, with no borrow from a byte below b'0' (a borrow
    // sets the high bits of the bytes above; 0x76 added to a byte of 0..=9 leaves its high bit clear).
    let plain = (digits | digits.wrapping_add(0x7676_7676)) & 0x8080_8080 == 0;
    (plain && head[4] == then).then(|| four_digits_of(digits))
}

/// A count as a year, if it is within [YEAR_MIN, YEAR_MAX].
fn in_years(value: i64) -> Option<u16> {
    (YEAR_MIN as i64..=YEAR_MAX as i64)
        .contains(&value)
        .then_some(value as u16)
}

/// An n-gram as it is stored: valid UTF-8, 1..=MAX_ORDER tokens joined by single spaces.
pub fn ngram(field: &[u8]) -> Option<&[u8]> {
    if field.is_empty() || field[0] == b' ' || field[field.len() - 1] == b' ' {
        return None;
    }
    let mut spaces = 0;
    let mut previous = 0u8;
    for &byte in field {
        if byte == b' ' {
            if previous == b' ' {
                return None;
            }
            spaces += 1;
        }
        previous = byte;
    }
    if spaces >= MAX_ORDER || !(field.is_ascii() || std::str::from_utf8(field).is_ok()) {
        return None;
    }
    Some(field)
}

/// The length of the n-gram that starts `text`, found with 32-byte vector compares when it is short
/// and plain: ASCII bytes ended by a tab within the first 32, tokens joined by single spaces, fewer
/// than MAX_ORDER spaces. Anything else (None) is left to the byte loop and `ngram`, which accept no
/// more than this does for such keys. (A byte loop over each new n-gram took a sixth of the time of
/// a line of sorted 2-grams.)
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn plain_key(text: &[u8]) -> Option<usize> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    if text.len() < 32 {
        return None;
    }
    // SAFETY: SSE2 is part of every x86-64 processor; the loads read text[..32], which exists.
    let (tabs, stops, spaces) = unsafe {
        let halves = [0, 16].map(|at| _mm_loadu_si128(text.as_ptr().add(at) as *const __m128i));
        // The high bit of each byte of the 32 that BYTES gives, as a bit each.
        let bits = |bytes: &dyn Fn(__m128i) -> __m128i| {
            let [low, high] = halves.map(|half| _mm_movemask_epi8(bytes(half)) as u32);
            low | high << 16
        };
        let equal = |byte: u8| bits(&|half| _mm_cmpeq_epi8(half, _mm_set1_epi8(byte as i8)));
        (equal(b'\t'), equal(b'\n') | bits(&|half| half), equal(b' '))
    };
    let len = tabs.trailing_zeros(); // 32: no tab
    if len == 0 || len == 32 {
        return None;
    }
    let inside = (1u32 << len) - 1;
    let spaces = spaces & inside;
    let plain = stops & inside == 0
        && spaces & (1 | 1 << (len - 1)) == 0
        && spaces & (spaces >> 1) == 0
        && (spaces.count_ones() as usize) < MAX_ORDER;
    plain.then_some(len as usize)
}

/// Elsewhere every n-gram takes the byte loop.
#[cfg(not(target_arch = "x86_64"))]
fn plain_key(_text: &[u8]) -> Option<usize> {
    None
}

/// Reads the fields of one line from the start of a chunk's unread text, digits where they are,
/// each number ended by the byte that must follow it: one pass, no line or field split first.
struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// The count at the cursor, then past it and the one byte after it, which must be `then`.
    #[inline(always)]
    fn count_then(&mut self, then: u8) -> Option<i64> {
        let (value, digits) = leading_count(&self.text[self.at..])?;
        self.at += digits;
        (self.text.get(self.at) == Some(&then)).then(|| {
            self.at += 1;
            value
        })
    }

    /// count_then of a year: four digits and `then` with one load and compare, else count_then.
    #[inline(always)]
    fn year_then(&mut self, then: u8) -> Option<u16> {
        in_years(match four_digits_then(&self.text[self.at..], then) {
            Some(year) => {
                self.at += 5;
                year
            }
            None => self.count_then(then)?,
        })
    }

    /// The line's last count: the line ends after it, at a newline or the end of the text.
    fn last_count(&mut self) -> Option<i64> {
        let (value, digits) = leading_count(&self.text[self.at..])?;
        self.at += digits;
        self.line_end().then_some(value)
    }

    /// Whether the cursor is at the line's end; then past its newline.
    fn line_end(&mut self) -> bool {
        match self.text.get(self.at) {
            None => true,
            Some(b'\n') => {
                self.at += 1;
                true
            }
            Some(_) => false,
        }
    }
}

/// The n-gram that starts `text` (the first field of its first line), if it is one as stored. An
/// n-gram equal to `checked` (the previous line's, in a file where an n-gram's lines follow each
/// other) is compared, not checked again, and given back as `checked` itself.
pub fn key<'a>(text: &'a [u8], checked: Option<&'a [u8]>) -> Option<&'a [u8]> {
    match checked {
        Some(previous)
            if text.get(previous.len()) == Some(&b'\t')
                && same_key(&text[..previous.len()], previous) =>
        {
            Some(previous)
        }
        _ => match plain_key(text) {
            Some(end) => Some(&text[..end]),
            None => {
                let end = text.iter().position(|&b| b == b'\t' || b == b'\n')?;
                if text[end] != b'\t' {
                    return None;
                }
                ngram(&text[..end])
            }
        },
    }
}

/// The (year, match, volume) rows of the line of `text` whose n-gram `key` starts it, each handed to
/// `row` as it is read, and the bytes the line and its newline take (a newline, or the end of `text`,
/// ends it). A carriage return, a missing or extra field, or anything but plain digits in a number
/// gives None (after the rows before it were handed over: the caller drops the chunk).
#[inline(always)]
pub fn counts(
    text: &[u8],
    key: &[u8],
    format: Format,
    mut row: impl FnMut(u16, i64, i64),
) -> Option<usize> {
    let mut cursor = Cursor {
        text,
        at: key.len() + 1,
    };
    match format {
        Format::V2012 => {
            let year = cursor.year_then(b'\t')?;
            let matches = cursor.count_then(b'\t')?;
            row(year, matches, cursor.last_count()?);
        }
        Format::V2009 => {
            let year = cursor.year_then(b'\t')?;
            let matches = cursor.count_then(b'\t')?;
            cursor.count_then(b'\t')?; // pages: checked, not kept
            row(year, matches, cursor.last_count()?);
        }
        Format::V2020 => loop {
            let year = cursor.year_then(b',')?;
            let matches = cursor.count_then(b',')?;
            let (volumes, digits) = leading_count(&text[cursor.at..])?;
            cursor.at += digits;
            row(year, matches, volumes);
            if cursor.line_end() {
                break;
            }
            if text[cursor.at] != b'\t' {
                return None;
            }
            cursor.at += 1; // another tuple follows
        },
    }
    Some(cursor.at)
}

/// The commonest line of a 2012 file, read with vector compares where `counts` reads a byte at a time: the
/// n-gram of the run open before it again (at `key` in `chunk`, the line before had it), a year of four
/// digits, counts of 1-8 digits, a newline, all within 16 bytes after the n-gram's tab. The line starts
/// at `at` in `chunk`. (year, match, volume, the bytes the line and its newline take), or None: the line
/// is read as any other (`key` and `counts`, which read this one the same way). Its 16-byte loads keep
/// the line's numbers off the branches a byte loop takes for each digit count (`collapse` took some
/// 260 instructions a line, valgrind: BENCHMARKS.md, fifty-second round).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn repeated_2012(chunk: &[u8], at: usize, key: &[u8]) -> Option<(u16, i64, i64, usize)> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_set1_epi8,
        _mm_sub_epi8,
    };
    let len = key.len();
    let key_at = (key.as_ptr() as usize).checked_sub(chunk.as_ptr() as usize)?;
    // The year's first digit. The loads need room: 16 bytes at the line, at the key (before it) and here,
    // and 8 at each count.
    let after = at + len + 1;
    if len >= 16 || key_at >= at || chunk.len() < after + 24 {
        return None;
    }
    // SAFETY: SSE2 is part of every x86-64 processor; each load reads 16 bytes within CHUNK (key_at < at,
    // and at + 16 <= after + 16 <= chunk.len()).
    let (same, digits, tabs, newlines) = unsafe {
        let load = |at: usize| _mm_loadu_si128(chunk.as_ptr().add(at) as *const __m128i);
        let bits = |bytes: __m128i| _mm_movemask_epi8(bytes) as u32;
        let (line, run, rest) = (load(at), load(key_at), load(after));
        let values = _mm_sub_epi8(rest, _mm_set1_epi8(b'0' as i8));
        (
            bits(_mm_cmpeq_epi8(line, run)),
            bits(_mm_cmpeq_epi8(
                _mm_min_epu8(values, _mm_set1_epi8(9)),
                values,
            )),
            bits(_mm_cmpeq_epi8(rest, _mm_set1_epi8(b'\t' as i8))),
            bits(_mm_cmpeq_epi8(rest, _mm_set1_epi8(b'\n' as i8))),
        )
    };
    // The n-gram and the tab after it: the run's key is followed by its line's tab (`key` found it there).
    let key_bits = (1u32 << (len + 1)) - 1;
    if same & key_bits != key_bits || digits & 0xF != 0xF || tabs & 0x10 == 0 {
        return None;
    }
    // The match count's digits from byte 5 to its tab, the volume count's from there to the newline.
    let tab = (tabs & !0x1F).trailing_zeros() as usize; // 32: none
    let end = newlines.trailing_zeros() as usize;
    if !(6..=13).contains(&tab) || end <= tab + 1 || end >= 16 {
        return None;
    }
    let wanted = ((1u32 << end) - 1) & !0x1F & !(1 << tab);
    if digits & wanted != wanted {
        return None;
    }
    let year = in_years(four_digits_value(chunk, after))?;
    let matches = digits_value(chunk, after + 5, tab - 5);
    let volumes = digits_value(chunk, after + tab + 1, end - tab - 1);
    Some((year, matches, volumes, len + 1 + end + 1))
}

/// The value of the four decimal digits at `at` in `text`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn four_digits_value(text: &[u8], at: usize) -> i64 {
    four_digits_of(
        u32::from_le_bytes(text[at..at + 4].try_into().unwrap()).wrapping_sub(0x3030_3030),
    )
}

/// The value of four digits' values (0-9), one a byte of WORD, the first the lowest: added in pairs, then
/// the pairs, with two multiplies where a byte at a time took four.
#[inline(always)]
fn four_digits_of(word: u32) -> i64 {
    let pairs = (word.wrapping_mul(10 << 8 | 1) >> 8) & 0x00FF_00FF;
    (pairs.wrapping_mul(100 << 16 | 1) >> 16) as i64
}

/// The value of the DIGITS (1-8) decimal digits at `at` in `text`, which has 8 bytes there: the digits moved
/// to the top of a word (of four bytes for most counts, else of eight), the bytes after them shifted out
/// (a byte below b'0' after the digits borrows only from the bytes above it, which the shift drops), then
/// each four read by `four_digits_of`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn digits_value(text: &[u8], at: usize, digits: usize) -> i64 {
    if digits <= 4 {
        let word = u32::from_le_bytes(text[at..at + 4].try_into().unwrap());
        return four_digits_of(word.wrapping_sub(0x3030_3030) << (8 * (4 - digits)));
    }
    let word = u64::from_le_bytes(text[at..at + 8].try_into().unwrap());
    let value = word.wrapping_sub(0x3030_3030_3030_3030) << (8 * (8 - digits));
    four_digits_of(value as u32) * 10_000 + four_digits_of((value >> 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::tests::numbers;

    /// A count that is the whole field.
    fn count(field: &[u8]) -> Option<i64> {
        let (value, used) = leading_count(field)?;
        (used == field.len()).then_some(value)
    }

    #[test]
    fn counts_are_plain_digits_that_fit() {
        assert_eq!(count(b"007"), Some(7));
        assert_eq!(count(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(count(b"9223372036854775808"), None);
        for odd in [&b""[..], b"-0", b"+5", b" 5", b"5 ", b"0x10", b"5.0"] {
            assert_eq!(count(odd), None);
        }
    }

    /// leading_count as it was, one loop a byte at a time from the first digit: the reference.
    fn leading_count_bytes(text: &[u8]) -> Option<(i64, usize)> {
        count_on(text, 0, 0)
    }

    /// leading_count of `text` and of each of its heads (the shorter ones end where the text does),
    /// compared with the byte loop's.
    fn same_as_bytes(text: &[u8]) -> usize {
        for end in 0..=text.len() {
            let head = &text[..end];
            assert_eq!(leading_count(head), leading_count_bytes(head), "{head:?}");
        }
        text.len() + 1
    }

    #[test]
    fn a_count_is_read_as_the_byte_loop_reads_it() {
        let mut next = numbers(29);
        // Bytes after a count's digits: the edges of the digits ('/' and ':'), the separators, the
        // edges of a borrow and a carry in arithmetic on words, and others.
        let stops: &[u8] = b"/:,\t\n\r \x00\x01\x7f\x80\x8a\xa5\xaf\xb0\xb9\xba\xc0\xff";
        let mut texts = 0;
        // Every digit count 0..=20 (of random digits, zeros, nines, 1 then zeros, and i64::MAX's
        // heads and its neighbours), then a stop or the end of the text, then random bytes.
        let max = i64::MAX.to_string().into_bytes();
        for digits in 0..=20usize {
            let mut numbers: Vec<Vec<u8>> = vec![
                vec![b'0'; digits],
                vec![b'9'; digits],
                (0..digits)
                    .map(|i| if i == 0 { b'1' } else { b'0' })
                    .collect(),
                (0..digits).map(|i| b'0' + (i % 10) as u8).collect(),
                (0..digits).map(|i| b'0' + (9 - i % 10) as u8).collect(),
                max.iter().chain(b"000").take(digits).copied().collect(),
            ];
            for _ in 0..50 {
                let mut number: Vec<u8> = (0..digits).map(|_| b'0' + (next() % 10) as u8).collect();
                if digits > 1 && next().is_multiple_of(2) {
                    let zeros = 1 + next() % (digits - 1);
                    number[..zeros].fill(b'0'); // leading zeros
                }
                numbers.push(number);
            }
            if digits == max.len() {
                // i64::MAX and the numbers beside it.
                for value in [i64::MAX - 1, i64::MAX] {
                    numbers.push(value.to_string().into_bytes());
                }
                numbers.push(b"9223372036854775808".to_vec());
                numbers.push(b"9223372036854775810".to_vec());
                numbers.push(b"9999999999999999999".to_vec());
                numbers.push(b"1000000000000000000".to_vec());
            }
            if digits == 20 {
                numbers.push(b"09223372036854775807".to_vec());
                numbers.push(b"00000000000000000001".to_vec());
            }
            for number in &numbers {
                assert_eq!(number.len(), digits);
                for &stop in stops {
                    for tail in 0..12 {
                        let mut text = number.clone();
                        text.push(stop);
                        text.extend((0..tail).map(|_| match next() % 3 {
                            0 => b'0' + (next() % 10) as u8,
                            1 => stops[next() % stops.len()],
                            _ => next() as u8,
                        }));
                        texts += same_as_bytes(&text);
                    }
                }
                texts += same_as_bytes(number); // the digits end the text
            }
        }
        // Every text of 8 bytes from digits and the bytes that could be mistaken for them, alone
        // and with a ninth byte: a digit, a newline or a high byte.
        let alphabet = b"059/:,\x00\xff";
        let mut text = [0u8; 9];
        for n in 0..alphabet.len().pow(8) {
            let mut rest = n;
            for byte in text[..8].iter_mut() {
                *byte = alphabet[rest % alphabet.len()];
                rest /= alphabet.len();
            }
            text[8] = [b'7', b'\n', 0x80][n % 3];
            assert_eq!(leading_count(&text), leading_count_bytes(&text), "{text:?}");
            assert_eq!(
                leading_count(&text[..8]),
                leading_count_bytes(&text[..8]),
                "{text:?}"
            );
            texts += 2;
        }
        // Random texts of digits and stops, of every length up to 30 (their heads too).
        for _ in 0..100_000 {
            let len = next() % 31;
            let text: Vec<u8> = (0..len)
                .map(|_| match next() % 8 {
                    0 => stops[next() % stops.len()],
                    1 => next() as u8,
                    _ => b'0' + (next() % 10) as u8,
                })
                .collect();
            texts += same_as_bytes(&text);
        }
        assert!(texts > 20_000_000, "{texts}");
    }

    #[test]
    fn odd_spacing_and_too_many_tokens_are_not_vouched_for() {
        assert!(ngram(b"a b c d e").is_some());
        for odd in [&b"a b c d e f"[..], b" a", b"a ", b"a  b", b"", b"\xff"] {
            assert!(ngram(odd).is_none());
        }
    }

    #[test]
    fn plain_keys_are_what_the_byte_loop_accepts() {
        // Lines of random bytes, mostly letters, with spaces, tabs, newlines and high bytes here
        // and there: whatever plain_key vouches for, the byte loop and `ngram` read the same way.
        let mut next = numbers(17);
        let (mut vouched, mut lines) = (0, 0);
        while lines < 20_000 {
            let len = next() % 48 + 32;
            let text: Vec<u8> = (0..len)
                .map(|_| match next() % 40 {
                    0..=5 => b' ',
                    6 => b'\t',
                    7 => b'\n',
                    8 => 0xC3,
                    9 => b'\r',
                    n => b'a' + (n % 26) as u8,
                })
                .collect();
            lines += 1;
            let Some(end) = plain_key(&text) else {
                continue;
            };
            vouched += 1;
            let stop = text.iter().position(|&b| b == b'\t' || b == b'\n');
            assert_eq!(stop, Some(end), "{text:?}");
            assert_eq!(ngram(&text[..end]), Some(&text[..end]), "{text:?}");
        }
        assert!(vouched > 1000, "{vouched} of {lines} vouched for");
        assert_eq!(
            plain_key(b"the cat\t1990\t5\t3\nthe cat\t1991\t12\t7\n"),
            Some(7)
        );
    }

    #[test]
    fn a_four_digit_year_is_read_as_the_byte_loop_reads_it() {
        // Every head of five bytes from digits and the bytes beside them ('/' and ':' around the
        // digits, a borrow's and a carry's edges), compared with the byte loop and its comma or tab.
        let alphabet = b"0123456789/:,\t\x00\x7f\x80\xaf\xb0\xff ";
        for then in [b',', b'\t'] {
            let mut heads = 0;
            for n in 0..alphabet.len().pow(5) {
                let mut head = [0u8; 5];
                let mut rest = n;
                for byte in head.iter_mut() {
                    *byte = alphabet[rest % alphabet.len()];
                    rest /= alphabet.len();
                }
                let reference = leading_count_bytes(&head)
                    .filter(|&(_, digits)| digits == 4 && head[4] == then)
                    .map(|(value, _)| value);
                assert_eq!(four_digits_then(&head, then), reference, "{head:?}");
                heads += reference.is_some() as usize;
            }
            assert_eq!(heads, 10_000);
            assert_eq!(four_digits_then(b"1990", then), None); // no room for the comma or tab
        }
    }

    #[test]
    fn a_2020_line_needs_whole_tuples() {
        let mut rows = Vec::new();
        fn line_of<'a>(
            text: &'a [u8],
            rows: &mut Vec<(u16, i64, i64)>,
        ) -> Option<(&'a [u8], usize)> {
            rows.clear();
            let key = key(text, None)?;
            let used = counts(text, key, Format::V2020, |y, m, v| rows.push((y, m, v)))?;
            Some((key, used))
        }
        assert_eq!(
            line_of(b"a\t1990,1,2\t1991,3,4\nb", &mut rows),
            Some((&b"a"[..], 20))
        );
        assert_eq!(rows, vec![(1990, 1, 2), (1991, 3, 4)]);
        for odd in [
            &b"a"[..],
            b"a\t",
            b"a\t1990,1",
            b"a\t1990,1,2,3",
            b"a\t1990,1,2\t",
        ] {
            assert!(line_of(odd, &mut rows).is_none());
        }
    }

    /// A line after one of the same n-gram, as `collapse` reads it when repeated_2012 gives nothing:
    /// (year, match, volume, bytes used), or None.
    #[cfg(target_arch = "x86_64")]
    fn read_as_any(text: &[u8], previous: &[u8]) -> Option<(u16, i64, i64, usize)> {
        let key = key(text, Some(previous))?;
        let mut rows = Vec::new();
        let used = counts(text, key, Format::V2012, |y, m, v| rows.push((y, m, v)))?;
        std::ptr::eq(key, previous).then_some((rows[0].0, rows[0].1, rows[0].2, used))
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_repeated_2012_line_is_read_as_any_line_is() {
        let mut next = numbers(41);
        let pick = |next: &mut dyn FnMut() -> usize, bytes: &[u8]| bytes[next() % bytes.len()];
        let mut lines = 0;
        for _ in 0..200_000 {
            // A first line, then a line of fields whose lengths and bytes vary around the commonest shape.
            let ngram: Vec<u8> = (0..next() % 20)
                .map(|_| pick(&mut next, b"ab z_.\xc3"))
                .collect();
            let mut first = ngram.clone();
            first.extend_from_slice(b"\t1990\t1\t1\n");
            let mut line = if next() % 8 == 0 {
                (0..ngram.len())
                    .map(|i| if next() % 4 == 0 { b'a' } else { ngram[i] })
                    .collect()
            } else {
                ngram.clone()
            };
            for (field, width) in [(0, 4), (1, 3), (2, 3)] {
                if next() % 16 != 0 {
                    line.push(b'\t'); // the field's tab, or none
                }
                let mut digits: Vec<u8> = match (field, next() % 8) {
                    (_, 0) => (0..next() % 12)
                        .map(|_| b'0' + (next() % 10) as u8)
                        .collect(),
                    (0, _) => (1400 + next() % 701).to_string().into_bytes(),
                    _ => (0..1 + next() % width)
                        .map(|_| b'0' + (next() % 10) as u8)
                        .collect(),
                };
                if next() % 16 == 0 && !digits.is_empty() {
                    let at = next() % digits.len();
                    digits[at] = pick(&mut next, b" \r-+/:\t\n,\x00\xff");
                }
                line.extend_from_slice(&digits);
            }
            if next() % 16 != 0 {
                line.push(b'\n');
            }
            let mut chunk = first;
            let at = chunk.len();
            chunk.extend_from_slice(&line);
            let room = if next() % 8 == 0 {
                next() % 24
            } else {
                24 + next() % 16
            };
            chunk.extend((0..room).map(|_| pick(&mut next, b"0123456789\t\na")));
            let previous = &chunk[..ngram.len()];
            let Some(fast) = repeated_2012(&chunk, at, previous) else {
                continue;
            };
            lines += 1;
            assert_eq!(
                Some(fast),
                read_as_any(&chunk[at..], previous),
                "{:?}",
                &chunk[at..]
            );
        }
        // Nothing else is mistaken for the commonest shape (above), and the shape is taken.
        assert!(lines > 40_000, "{lines}");
        let room = [b'0'; 24];
        let text = |lines: &[&[u8]]| [lines.concat(), room.to_vec()].concat();
        let chunk = text(&[b"ab c\t1990\t1\t1\n", b"ab c\t2000\t1234567\t90\n"]);
        assert_eq!(
            repeated_2012(&chunk, 14, &chunk[..4]),
            Some((2000, 1234567, 90, 21))
        );
        // Read as any line: a count of 9 digits, an n-gram of 16 bytes, a line whose last count runs
        // into the room (the end of a chunk), another n-gram.
        let chunk = text(&[b"ab c\t1990\t1\t1\n", b"ab c\t2000\t123456789\t0\n"]);
        assert_eq!(repeated_2012(&chunk, 14, &chunk[..4]), None);
        let long = b"abcdefghijklmnop\t1990\t1\t1\n";
        let chunk = text(&[long, long]);
        assert_eq!(repeated_2012(&chunk, long.len(), &chunk[..16]), None);
        let chunk = text(&[b"ab\t1990\t1\t1\n", b"ab\t2000\t1\t1"]);
        assert_eq!(repeated_2012(&chunk, 12, &chunk[..2]), None);
        let chunk = text(&[b"ab\t1990\t1\t1\n", b"ac\t2000\t1\t1\n"]);
        assert_eq!(repeated_2012(&chunk, 12, &chunk[..2]), None);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn digits_are_read_a_word_at_a_time_as_one_at_a_time() {
        // Every four digits, then every count of 1-8 digits of random digits followed by random bytes.
        for value in 0..10_000 {
            let text = format!("{value:04}");
            assert_eq!(four_digits_value(text.as_bytes(), 0), value);
        }
        let mut next = numbers(43);
        for digits in 1..=8 {
            for _ in 0..2_000 {
                let mut text: Vec<u8> = (0..digits).map(|_| b'0' + (next() % 10) as u8).collect();
                text.extend((0..8).map(|_| next() as u8));
                let value: i64 = std::str::from_utf8(&text[..digits])
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(digits_value(&text, 0, digits), value, "{text:?}");
            }
        }
    }
}
