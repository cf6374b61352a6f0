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

/// A count: plain ASCII digits (leading zeros allowed) that fit an int64.
pub fn count(field: &[u8]) -> Option<i64> {
    if field.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    for &byte in field {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(digit as i64)?;
    }
    Some(value)
}

/// A year: a count within [YEAR_MIN, YEAR_MAX].
pub fn year(field: &[u8]) -> Option<u16> {
    let value = count(field)?;
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
    if spaces >= MAX_ORDER || std::str::from_utf8(field).is_err() {
        return None;
    }
    Some(field)
}

/// The n-gram of one line and its (year, match, volume) rows, pushed onto `rows`. An n-gram equal to
/// `checked` (the previous line's, in a file where an n-gram's lines follow each other) is not checked
/// again.
pub fn line<'a>(
    text: &'a [u8],
    format: Format,
    checked: Option<&[u8]>,
    rows: &mut Vec<(u16, i64, i64)>,
) -> Option<&'a [u8]> {
    if text.last() == Some(&b'\r') {
        return None; // the careful parser strips line endings; let it
    }
    let mut fields = text.split(|&b| b == b'\t');
    let field = fields.next()?;
    let key = if checked == Some(field) {
        field
    } else {
        ngram(field)?
    };
    match format {
        Format::V2012 => {
            let (y, m, v) = (fields.next()?, fields.next()?, fields.next()?);
            rows.push((year(y)?, count(m)?, count(v)?));
        }
        Format::V2009 => {
            let (y, m, p, v) = (
                fields.next()?,
                fields.next()?,
                fields.next()?,
                fields.next()?,
            );
            count(p)?;
            rows.push((year(y)?, count(m)?, count(v)?));
        }
        Format::V2020 => {
            let before = rows.len();
            for tuple in fields.by_ref() {
                let mut parts = tuple.split(|&b| b == b',');
                let (y, m, v) = (parts.next()?, parts.next()?, parts.next()?);
                if parts.next().is_some() {
                    return None;
                }
                rows.push((year(y)?, count(m)?, count(v)?));
            }
            if rows.len() == before {
                return None;
            }
        }
    }
    if fields.next().is_some() {
        return None; // more fields than the format has
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(line(b"a\t1990,1,2\t1991,3,4", Format::V2020, None, &mut rows).is_some());
        assert_eq!(rows, vec![(1990, 1, 2), (1991, 3, 4)]);
        for odd in [
            &b"a"[..],
            b"a\t",
            b"a\t1990,1",
            b"a\t1990,1,2,3",
            b"a\t1990,1,2\t",
        ] {
            assert!(line(odd, Format::V2020, None, &mut rows).is_none());
        }
    }
}
