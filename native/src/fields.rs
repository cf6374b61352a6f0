//! One line of a Google Books n-gram file, read by byte scanning.
//!
//! Every function here vouches for a line only when the careful Python parser
//! (transforms/formats.py) would read it the same way without a word to say:
//! anything it would reject, normalise or read otherwise (padded numbers,
//! doubled spaces, a trailing carriage return) returns None, and the chunk
//! goes to that parser, which names every malformed line.

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
/// fitting an int64; the first byte that is not a digit ends it.
fn leading_count(text: &[u8]) -> Option<(i64, usize)> {
    // One pass, unchecked: 18 digits stay below 10^18 < 2^63. Longer numbers are read again, checked.
    let mut value: i64 = 0;
    let mut digits = 0;
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

/// Reads the fields of one line from the start of a chunk's unread text, digits where they are,
/// each number ended by the byte that must follow it: one pass, no line or field split first.
struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// The count at the cursor, then past it and the one byte after it, which must be `then`.
    fn count_then(&mut self, then: u8) -> Option<i64> {
        let (value, digits) = leading_count(&self.text[self.at..])?;
        self.at += digits;
        (self.text.get(self.at) == Some(&then)).then(|| {
            self.at += 1;
            value
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

/// The first line of `text` (a newline, or the end of `text`, ends it): its n-gram, its
/// (year, match, volume) rows pushed onto `rows`, and the bytes the line and its newline take.
/// An n-gram equal to `checked` (the previous line's, in a file where an n-gram's lines follow
/// each other) is compared, not checked again, and given back as `checked` itself. A carriage
/// return, a missing or extra field, or anything but plain digits in a number gives None.
pub fn line<'a>(
    text: &'a [u8],
    format: Format,
    checked: Option<&'a [u8]>,
    rows: &mut Vec<(u16, i64, i64)>,
) -> Option<(&'a [u8], usize)> {
    let key = match checked {
        Some(previous)
            if text.get(previous.len()) == Some(&b'\t') && text.starts_with(previous) =>
        {
            previous
        }
        _ => {
            let end = text.iter().position(|&b| b == b'\t' || b == b'\n')?;
            if text[end] != b'\t' {
                return None;
            }
            ngram(&text[..end])?
        }
    };
    let mut cursor = Cursor {
        text,
        at: key.len() + 1,
    };
    match format {
        Format::V2012 => {
            let year = in_years(cursor.count_then(b'\t')?)?;
            let matches = cursor.count_then(b'\t')?;
            rows.push((year, matches, cursor.last_count()?));
        }
        Format::V2009 => {
            let year = in_years(cursor.count_then(b'\t')?)?;
            let matches = cursor.count_then(b'\t')?;
            cursor.count_then(b'\t')?; // pages: checked, not kept
            rows.push((year, matches, cursor.last_count()?));
        }
        Format::V2020 => loop {
            let year = in_years(cursor.count_then(b',')?)?;
            let matches = cursor.count_then(b',')?;
            let (volumes, digits) = leading_count(&text[cursor.at..])?;
            cursor.at += digits;
            rows.push((year, matches, volumes));
            if cursor.line_end() {
                break;
            }
            if text[cursor.at] != b'\t' {
                return None;
            }
            cursor.at += 1; // another tuple follows
        },
    }
    Some((key, cursor.at))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn odd_spacing_and_too_many_tokens_are_not_vouched_for() {
        assert!(ngram(b"a b c d e").is_some());
        for odd in [&b"a b c d e f"[..], b" a", b"a ", b"a  b", b"", b"\xff"] {
            assert!(ngram(odd).is_none());
        }
    }

    #[test]
    fn a_2020_line_needs_whole_tuples() {
        let mut rows = Vec::new();
        fn line_of<'a>(
            text: &'a [u8],
            rows: &mut Vec<(u16, i64, i64)>,
        ) -> Option<(&'a [u8], usize)> {
            line(text, Format::V2020, None, rows)
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
}
