//! The row policy's rules on n-grams, as transforms/policy.py states them.

use crate::order::bytes_equal;

const TAGS: [&[u8]; 12] = [
    b"NOUN", b"VERB", b"ADJ", b"ADV", b"PRON", b"DET", b"ADP", b"NUM", b"CONJ", b"PRT", b"X", b".",
];
const BOUNDARY_TOKENS: [&[u8]; 2] = [b"_START_", b"_END_"];

/// The length of `token`'s POS suffix ("_VERB" of "burnt_VERB") when it is a tagged word: what follows its
/// last underscore, which no tag holds, is a tag, and a word comes before it. (Each tag tried in turn as the
/// token's ending: the parse of 2020 2-grams, two in five of them with an underscore, 109.2 -> 106.7 ns a
/// line with this and `underscore`'s last word.)
fn tag_suffix(token: &[u8]) -> Option<usize> {
    let at = token.iter().rposition(|&b| b == b'_')?;
    let tag = &token[at + 1..];
    (at > 0 && TAGS.contains(&tag)).then_some(tag.len() + 1)
}

/// A wildcard token such as `_NOUN_`.
fn wildcard(token: &[u8]) -> bool {
    token.len() >= 3
        && token[0] == b'_'
        && token[token.len() - 1] == b'_'
        && TAGS.contains(&&token[1..token.len() - 1])
}

/// Whether any token of an n-gram is POS-tagged (policy.TAGGED_IN_NGRAM).
pub fn tagged(ngram: &[u8]) -> bool {
    // Tags and wildcards all have an underscore, which most n-grams do not.
    underscore(ngram)
        && ngram
            .split(|&b| b == b' ')
            .any(|token| wildcard(token) || tag_suffix(token).is_some())
}

/// Whether BYTES hold an underscore, 8 at a time: an n-gram is short, and memchr's vector search cost
/// more to set up than its bytes took (perf: memchr and `tagged` 2.2% of a 2020 import's CPU).
#[inline]
fn underscore(bytes: &[u8]) -> bool {
    let word = |at: usize| {
        bytes_equal(
            u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()),
            b'_',
        ) != 0
    };
    match bytes.len() {
        0..8 => bytes.contains(&b'_'),
        // The last 8 bytes loaded whole, overlapping the word before: no byte at a time for the rest.
        len => (0..len - 8).step_by(8).any(word) || word(len - 8),
    }
}

/// policy.fold_case of every token of an ASCII n-gram, appended to `out`: words lower-cased,
/// never a POS tag, a wildcard or a boundary token. (Other n-grams are folded in Python,
/// whose Unicode case rules are the reference.)
pub fn fold_ascii(ngram: &[u8], out: &mut Vec<u8>) {
    for (i, token) in ngram.split(|&b| b == b' ').enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        if BOUNDARY_TOKENS.contains(&token) || wildcard(token) {
            out.extend_from_slice(token);
            continue;
        }
        let word = token.len() - tag_suffix(token).unwrap_or(0);
        out.extend(token[..word].iter().map(u8::to_ascii_lowercase));
        out.extend_from_slice(&token[word..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_words_and_wildcards() {
        for yes in [
            &b"burnt_VERB"[..],
            b"a _NOUN_",
            b"x_. b",
            b"__X",
            b"a_NOUN_NOUN",
        ] {
            assert!(tagged(yes), "{:?}", yes);
        }
        for no in [
            &b"_VERB"[..],
            b"_START_",
            b"a_verb",
            b"NOUN",
            b"_NOUN_x",
            b"__",
        ] {
            assert!(!tagged(no), "{:?}", no);
        }
    }

    #[test]
    fn an_underscore_is_found_wherever_it_lies() {
        for len in 0..40 {
            let mut bytes = vec![b'a'; len];
            assert!(!underscore(&bytes));
            for at in 0..len {
                bytes[at] = b'_';
                assert!(underscore(&bytes), "{len} {at}");
                bytes[at] = b'_' ^ 0x80; // the same low seven bits
                assert!(!underscore(&bytes), "{len} {at}");
                bytes[at] = b'a';
            }
        }
    }

    #[test]
    fn folding_keeps_tags_wildcards_and_boundaries() {
        let mut out = Vec::new();
        fold_ascii(b"The_DET _NOUN_ _START_ A_NOUN_NOUN QUICK", &mut out);
        assert_eq!(out, b"the_DET _NOUN_ _START_ a_noun_NOUN quick");
    }
}
