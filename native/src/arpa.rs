//! ARPA entry lines, formatted as KenLM's lmplz writes them, for transforms/mkn/arpa.py.
//!
//! The same text as C's printf("%.7g") (what lmplz's float32 holds) and the boundary tokens spelled
//! as readers expect them; a line per entry, with no Python object per line. Formatting was ~0.4 µs
//! of DuckDB per line (two printf calls, the token rewrite, the concatenation): about a tenth of the
//! whole order-5 stage's CPU time.

use std::io::Write;

const P: i32 = 7;

/// C's `%.7g` of VALUE (-0 printed as 0, as the SQL this replaced added +0.0 first).
pub fn general7(value: f64, out: &mut Vec<u8>) {
    let value = value + 0.0;
    if !value.is_finite() {
        out.extend_from_slice(if value.is_nan() {
            b"nan"
        } else if value > 0.0 {
            b"inf"
        } else {
            b"-inf"
        });
        return;
    }
    let (digits, exponent) = rounded(value.abs()).unwrap_or_else(|| rounded_exactly(value.abs()));
    if value < 0.0 {
        out.push(b'-');
    }
    let start = out.len();
    if (-4..P).contains(&exponent) {
        // C's fixed style rounds at the same digit as its scientific one, so it has the same digits.
        if exponent >= 0 {
            let whole = exponent as usize + 1;
            out.extend_from_slice(&digits[..whole]);
            out.push(b'.');
            out.extend_from_slice(&digits[whole..]);
        } else {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exponent - 1) as usize));
            out.extend_from_slice(&digits);
        }
        strip_zeros(out, start);
    } else {
        out.push(digits[0]);
        out.push(b'.');
        out.extend_from_slice(&digits[1..]);
        strip_zeros(out, start);
        write!(
            out,
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        )
        .expect("a Vec takes it");
    }
}

/// Powers of ten that f64 holds exactly.
const EXACT_POWERS: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The P significant digits of A (> 0 or 0) correctly rounded, and the decimal exponent after rounding,
/// by one scaling: None where the scaled value lies too near a rounding boundary for its one rounding
/// error (at most ~1e-9 here) to be sure of, or outside the exactly held powers. Rust's exact formatting
/// (rounded_exactly) costs ~180 ns a number, this ~20.
fn rounded(a: f64) -> Option<([u8; P as usize], i32)> {
    if a == 0.0 {
        return Some(([b'0'; P as usize], 0));
    }
    let mut exponent = a.log10().floor() as i32;
    for _ in 0..2 {
        let shift = P - 1 - exponent;
        let power = *EXACT_POWERS.get(shift.unsigned_abs() as usize)?;
        let scaled = if shift >= 0 { a * power } else { a / power };
        if scaled < 1e6 {
            exponent -= 1; // log10 was just above a power of ten
            continue;
        }
        if (scaled - scaled.floor() - 0.5).abs() < 1e-6 {
            return None;
        }
        let mut n = scaled.round() as u64;
        if n >= 10_000_000 {
            if scaled >= 1e7 {
                exponent += 1; // log10 was just below a power of ten
                continue;
            }
            n /= 10; // rounded up to the next power of ten
            exponent += 1;
        }
        let mut digits = [b'0'; P as usize];
        for slot in digits.iter_mut().rev() {
            *slot = b'0' + (n % 10) as u8;
            n /= 10;
        }
        return Some((digits, exponent));
    }
    None
}

/// As rounded, by Rust's exact decimal formatting (correctly rounded, as C's printf).
fn rounded_exactly(a: f64) -> ([u8; P as usize], i32) {
    let text = format!("{:.*e}", (P - 1) as usize, a);
    let (mantissa, exponent) = text.split_once('e').expect("Rust's {:e} has an exponent");
    let mut digits = [b'0'; P as usize];
    for (slot, &digit) in digits
        .iter_mut()
        .zip(mantissa.as_bytes().iter().filter(|b| b.is_ascii_digit()))
    {
        *slot = digit;
    }
    (digits, exponent.parse().expect("an integer exponent"))
}

/// Trailing zeros of a fraction written from START on, and its point if nothing is left after it (C without '#').
fn strip_zeros(out: &mut Vec<u8>, start: usize) {
    if !out[start..].contains(&b'.') {
        return;
    }
    while out.last() == Some(&b'0') {
        out.pop();
    }
    if out.last() == Some(&b'.') {
        out.pop();
    }
}

/// The n-gram's tokens, with the dataset's boundary tokens spelled as ARPA readers expect.
pub fn ngram(text: &[u8], out: &mut Vec<u8>) {
    for (i, token) in text.split(|&b| b == b' ').enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(match token {
            b"_START_" => b"<s>",
            b"_END_" => b"</s>",
            other => other,
        });
    }
}

/// One entry: LOG10_PROB TAB n-gram [TAB LOG10_BACKOFF] NEWLINE.
pub fn entry(text: &[u8], log10_prob: f64, log10_backoff: Option<f64>, out: &mut Vec<u8>) {
    general7(log10_prob, out);
    out.push(b'\t');
    ngram(text, out);
    if let Some(backoff) = log10_backoff {
        out.push(b'\t');
        general7(backoff, out);
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(value: f64) -> String {
        let mut out = Vec::new();
        general7(value, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn as_c_printf_general_with_seven_digits() {
        assert_eq!(g(-1.0), "-1");
        assert_eq!(g(-0.0), "0");
        assert_eq!(g(-0.30102999566), "-0.30103");
        assert_eq!(g(-1.234567891), "-1.234568");
        assert_eq!(g(-99.0), "-99");
        assert_eq!(g(-0.000012345678), "-1.234568e-05");
        assert_eq!(g(-0.0001), "-0.0001");
        assert_eq!(g(12345678.0), "1.234568e+07");
        assert_eq!(g(9999999.6), "1e+07");
        assert_eq!(g(-0.99999996), "-1");
        assert_eq!(g(0.5), "0.5");
        assert_eq!(g(1234567.4), "1234567");
        assert_eq!(g(-0.00012345678), "-0.0001234568");
    }

    #[test]
    fn one_scaling_agrees_with_exact_formatting() {
        let mut state = 0x9e3779b97f4a7c15u64;
        let mut checked = 0;
        for i in 0..2_000_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Spread over many magnitudes, and numbers with few digits (near rounding boundaries) too.
            let a = match i % 3 {
                0 => f64::from_bits(state >> 2) % 1e9,
                1 => (state % 100_000_000) as f64 / 1e8 * 99.0,
                _ => (state % 2_000_000) as f64 / 10f64.powi((state % 12) as i32) + 0.5e-7,
            };
            if !(a.is_finite() && a > 0.0) {
                continue;
            }
            if let Some(fast) = rounded(a) {
                assert_eq!(fast, rounded_exactly(a), "{a:e}");
                checked += 1;
            }
        }
        assert!(checked > 1_000_000);
    }

    #[test]
    fn boundary_tokens_only_as_whole_tokens() {
        let mut out = Vec::new();
        entry(b"_START_ a_START_ _END_", -1.0, Some(0.5), &mut out);
        assert_eq!(out, b"-1\t<s> a_START_ </s>\t0.5\n");
    }
}
