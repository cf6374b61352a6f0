//! The tokens a worker sent to its token runs lately (transforms/vocabulary.py, TokenRuns): a table's token
//! found here is in a run of the same worker already, so order::distinct_tokens leaves it out of the
//! table's tokens. N-gram tables repeat their tokens from table to table (a 2020 shard of 2-grams over 65K
//! tokens gave each 177K-row table 61K tokens: 18M token rows for the vocabulary to sort and merge again),
//! and a set of a table's own tokens cannot know that.
//!
//! A cache, not a set: its size is fixed when it is made, and a token it has no room for is forgotten and
//! given again by a later table (the vocabulary's merge folds the copies, as it folds those of two workers).
//! It never holds a token it was not given: a token's bytes are kept and compared, not its hash alone.

use crate::prefetch;

/// The longest token a slot holds; longer ones are never kept (a slot is 32 bytes, a bucket one cache line).
const INLINE: usize = 23;

#[derive(Clone, Copy)]
struct Slot {
    hash: u64,
    len: u8, // 0: empty (no token of length 0 is kept)
    bytes: [u8; INLINE],
}

const EMPTY: Slot = Slot {
    hash: 0,
    len: 0,
    bytes: [0; INLINE],
};

/// Two slots, the token found or kept last first: a token is looked for in one cache line.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Bucket([Slot; 2]);

pub struct RecentTokens {
    buckets: Vec<Bucket>,
    mask: usize,
}

impl RecentTokens {
    /// A cache of about BYTES (at least one bucket; rounded down to a power of two of buckets).
    pub fn new(bytes: usize) -> Self {
        let wanted = (bytes / std::mem::size_of::<Bucket>()).max(1);
        let buckets = 1usize << (usize::BITS - 1 - wanted.leading_zeros());
        RecentTokens {
            buckets: vec![Bucket([EMPTY; 2]); buckets],
            mask: buckets - 1,
        }
    }

    /// The bucket of a token of HASH brought towards the core's first cache, for a check_in soon after.
    #[inline]
    pub fn fetch(&self, hash: u64) {
        prefetch::fetch(&self.buckets[self.index(hash)]);
    }

    /// The index of the bucket of a token of HASH: its high bits, for the low bits of the hash depend on a
    /// token's first bytes alone (order.rs, WordHasher).
    #[inline]
    fn index(&self, hash: u64) -> usize {
        (hash >> 32) as usize & self.mask
    }

    /// Whether TOKEN (whose hash is HASH) is kept here; when it is not, it is kept from now on, in its
    /// bucket's first slot, the token there before moving to the second (and the second's forgotten).
    #[inline]
    pub fn check_in(&mut self, hash: u64, token: &[u8]) -> bool {
        if token.is_empty() || token.len() > INLINE {
            return false;
        }
        let at = self.index(hash);
        let Bucket(slots) = &mut self.buckets[at];
        let holds = |slot: &Slot| {
            slot.hash == hash
                && slot.len as usize == token.len()
                && slot.bytes[..token.len()] == *token
        };
        if holds(&slots[0]) {
            return true;
        }
        if holds(&slots[1]) {
            slots.swap(0, 1);
            return true;
        }
        slots[1] = slots[0];
        slots[0] = Slot {
            hash,
            len: token.len() as u8,
            bytes: [0; INLINE],
        };
        slots[0].bytes[..token.len()].copy_from_slice(token);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_found_after_it_is_checked_in_and_others_are_not() {
        let mut recent = RecentTokens::new(1 << 12);
        assert!(!recent.check_in(7, b"cat"));
        assert!(recent.check_in(7, b"cat"));
        // The same hash, other bytes or another length: not the token kept.
        assert!(!recent.check_in(7, b"cab"));
        assert!(!recent.check_in(7, b"ca"));
        assert!(recent.check_in(7, b"ca"));
    }

    #[test]
    fn a_bucket_keeps_its_last_two_tokens() {
        // One bucket: every token shares it.
        let mut recent = RecentTokens::new(1);
        assert_eq!(recent.mask, 0);
        for token in [&b"a"[..], b"b", b"c"] {
            assert!(!recent.check_in(1, token));
        }
        assert!(recent.check_in(1, b"c"));
        assert!(recent.check_in(1, b"b"));
        assert!(!recent.check_in(1, b"a")); // forgotten: the third token pushed it out
                                            // "b" was found last, then "a" kept: "c" is the one forgotten.
        assert!(recent.check_in(1, b"b"));
        assert!(!recent.check_in(1, b"c"));
    }

    #[test]
    fn tokens_too_long_or_empty_are_never_kept() {
        let mut recent = RecentTokens::new(1 << 12);
        let long = [b'x'; INLINE + 1];
        let longest = [b'x'; INLINE];
        for _ in 0..2 {
            assert!(!recent.check_in(3, &long));
            assert!(!recent.check_in(0, b""));
        }
        assert!(!recent.check_in(3, &longest));
        assert!(recent.check_in(3, &longest));
    }
}
