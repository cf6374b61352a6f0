//! The order of a column of keys laid out as Arrow strings (offsets into one byte buffer): the rows
//! in key order, and where each group of equal keys begins in it.
//!
//! A merge of run tables (transforms/merge.py) needs both. Its tables arrive sorted (Google's files
//! are) or as a few sorted pieces (the tables of several files, or a merge step's heads of several
//! run files), so the natural sorted runs of the column are merged: O(n log k) comparisons for k
//! pieces, where a sort of the whole column paid O(n log n) (and a sorted column costs one pass).
//! Keys compare as bytes: UTF-8 byte order, Arrow's and Python's.

use std::cmp::Ordering;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use crate::prefetch;
use crate::recent::RecentTokens;

/// Keys as Arrow's string arrays hold them: key i is `data[offsets[i]..offsets[i + 1]]`.
pub struct Keys<'a> {
    pub offsets: &'a [i32],
    pub data: &'a [u8],
}

impl Keys<'_> {
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn get(&self, i: usize) -> &[u8] {
        &self.data[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// The Ith key where its offsets lie within the data (None elsewhere): for the keys of a check-free caller,
    /// which reads a few of them (`rows_below`).
    pub fn checked_get(&self, i: usize) -> Option<&[u8]> {
        let (start, end) = (*self.offsets.get(i)?, *self.offsets.get(i + 1)?);
        if start < 0 || start > end {
            return None;
        }
        self.data.get(start as usize..end as usize)
    }

    /// Whether the offsets are non-decreasing and within the data: what `get` relies on.
    pub fn valid(&self) -> bool {
        self.offsets.windows(2).all(|w| 0 <= w[0] && w[0] <= w[1])
            && self
                .offsets
                .last()
                .is_none_or(|&end| end as usize <= self.data.len())
    }
}

/// (rows in key order, or None when they already are; the position in that order of the first row
/// of each group of equal keys). Equal keys keep their rows' order.
pub fn merge_order(keys: &Keys) -> (Option<Vec<i64>>, Vec<i64>) {
    ordered(keys, true)
}

/// merge_order's rows in key order alone, for keys whose groups are not asked for (each key once, as the
/// vocabulary's rank keys are): finding where each group begins compared every row's key with the one
/// before it again.
pub fn rows_in_order(keys: &Keys) -> Option<Vec<i64>> {
    ordered(keys, false).0
}

/// merge_order's answer, its group starts left empty but with GROUPS.
fn ordered(keys: &Keys, groups: bool) -> (Option<Vec<i64>>, Vec<i64>) {
    let n = keys.len();
    let Pieces { bounds, ties } = pieces(keys);
    let sorted = bounds.len() <= 2;
    if !sorted && bounds.len() - 1 > n / MANY_PIECES {
        let (order, starts) = sorted_rows(keys);
        return (Some(order), starts);
    }
    if bounds.len() - 1 > TOURNAMENT_PIECES {
        return tournament(keys, &bounds, &ties, groups);
    }
    let order = (!sorted).then(|| stable_order(keys, bounds.clone()));
    if !groups {
        return (order, Vec::new());
    }
    let Some(order) = order else {
        // One piece: its groups are where `pieces` found no tie, nearly every row (room for all at once: a
        // column grown by doubling was copied into fresh memory).
        let mut starts = Vec::with_capacity(n);
        starts.extend((0..n as i64).filter(|&row| !ties.holds(row as usize)));
        return (None, starts);
    };
    let mut starts = Vec::with_capacity(if n == 0 { 0 } else { n / 2 + 1 });
    if n > 0 {
        starts.push(0);
    }
    // Rows next to each other in one piece were compared by `pieces`: a stretch a merge took whole (a run
    // file's rows) is grouped without reading its keys again.
    let piece_start = |row: usize| bounds.binary_search(&row).is_ok();
    for at in 1..n {
        let (before, row) = (order[at - 1] as usize, order[at] as usize);
        let new_key = if row == before + 1 && !piece_start(row) {
            !ties.holds(row)
        } else {
            keys.get(row) != keys.get(before)
        };
        if new_key {
            starts.push(at as i64);
        }
    }
    (Some(order), starts)
}

/// Rows in little order (more than one sorted piece per MANY_PIECES rows) are sorted whole (`sorted_rows`).
const MANY_PIECES: usize = 32;
/// More sorted pieces than this are merged at once (`tournament`), fewer pairwise (`stable_order`).
const TOURNAMENT_PIECES: usize = 4;

/// The rows' sorted pieces (natural runs), from one pass that compares each row's key with the one before.
struct Pieces {
    /// Where each piece begins, and the number of rows last.
    bounds: Vec<usize>,
    /// The rows whose key is that of the row before them in their piece.
    ties: Ties,
}

/// A bit for each row, none when no row is a tie (a run table holds an n-gram once, but a run cut by a
/// chunk's end in two tables that follow each other).
struct Ties(Vec<u64>);

impl Ties {
    fn holds(&self, row: usize) -> bool {
        !self.0.is_empty() && self.0[row / 64] >> (row % 64) & 1 == 1
    }

    fn add(&mut self, row: usize, rows: usize) {
        if self.0.is_empty() {
            self.0 = vec![0; rows.div_ceil(64)];
        }
        self.0[row / 64] |= 1 << (row % 64);
    }
}

fn pieces(keys: &Keys) -> Pieces {
    let n = keys.len();
    let (mut bounds, mut ties) = (vec![0], Ties(Vec::new()));
    for row in 1..n {
        match keys.get(row - 1).cmp(keys.get(row)) {
            Ordering::Less => {}
            Ordering::Equal => ties.add(row, n),
            Ordering::Greater => bounds.push(row),
        }
    }
    bounds.push(n);
    Pieces { bounds, ties }
}

/// The rows in key order, ties in row order: a stable sort. The rows' sorted pieces (BOUNDS, as
/// `pieces` gives them) are merged pairwise, level by level, each merge galloping through the
/// stretches one piece holds alone: Google's files are sorted, so a table of runs is a few sorted
/// pieces that each hold long stretches of the merged order (a prefix's n-grams of one order), and
/// a stretch costs a few comparisons, not one per row.
fn stable_order(keys: &Keys, mut bounds: Vec<usize>) -> Vec<i64> {
    let n = keys.len();
    let mut order: Vec<i64> = (0..n as i64).collect();
    let mut merged = vec![0i64; n];
    while bounds.len() > 2 {
        // Pieces k and k + 1 (bounds[k]..bounds[k + 1], then up to bounds[k + 2]) become one.
        let (pieces, mut next) = (bounds.len() - 1, vec![0]);
        for k in (0..pieces).step_by(2) {
            let (lo, mid) = (bounds[k], bounds[k + 1]);
            let hi = if k + 1 < pieces { bounds[k + 2] } else { mid };
            merge_pieces(keys, &order[lo..mid], &order[mid..hi], &mut merged[lo..hi]);
            next.push(hi);
        }
        std::mem::swap(&mut order, &mut merged);
        bounds = next;
    }
    order
}

/// Rows in little order in key order, ties in row order, and where each group of equal keys begins:
/// sorted by their keys' heads held beside the rows (`sort_from`). A sort that compared two keys' bytes
/// (memcmp, wherever in the buffer they lie) for every pair, then looked up each key again to find the
/// groups, was a third of the read stage's CPU on shuffled input (a spill's buffer of a million rows).
/// The rows are first laid out by the leading bits of their heads (`bucketed`), so each sort is of a
/// bucket that fits the caches.
fn sorted_rows(keys: &Keys) -> (Vec<i64>, Vec<i64>) {
    let n = keys.len();
    let (mut rows, buckets) = bucketed(keys);
    let mut new_key = vec![false; n];
    for bucket in buckets.windows(2) {
        rows[bucket[0]..bucket[1]].sort_unstable();
    }
    split_ties(keys, &mut rows, &mut new_key, 0);
    let order = rows
        .iter()
        .map(|&(_, _, rest)| (rest & ROW_BITS) as i64)
        .collect();
    let starts = (0..n)
        .filter(|&at| at == 0 || new_key[at])
        .map(|at| at as i64)
        .collect();
    (order, starts)
}

/// A row as `sort_from` sorts it: the first and the next 8 bytes of its key's head, then its key's
/// length up to HEAD + 1 above the row (ROW_BITS).
type Headed = (u64, u64, u64);
const HEAD: usize = 16;
const ROW_BITS: u64 = (1 << 59) - 1;

/// ROW as `sort_from` sorts it at some depth, from REST, its key's bytes from that depth on.
fn headed(rest: &[u8], row: u64) -> Headed {
    let length = rest.len().min(HEAD + 1) as u64;
    (
        head(rest),
        head(rest.get(8..).unwrap_or(&[])),
        length << 59 | row,
    )
}

/// Rows per bucket that `bucketed` aims at: a bucket's sort stays within the core's caches.
const BUCKET_ROWS: usize = 64;
/// The most leading bits of a head that `bucketed` lays rows out by (2^16 counts: 512 KiB).
const BUCKET_BITS: u32 = 16;

/// The keys' rows as `sort_from` sorts them from depth 0, laid out by the bits of their first heads that
/// follow the bits every head shares (an input file's n-grams may all begin with one letter pair), so that
/// rows of a lower bucket sort before those of a higher one, and where each bucket begins, then the number
/// of rows. A most-significant-digit radix pass: the sorts that follow are of buckets of about BUCKET_ROWS
/// rows, each within the caches, where one sort of a spill's million rows compared each row some twenty
/// times across 24 MB.
fn bucketed(keys: &Keys) -> (Vec<Headed>, Vec<usize>) {
    let n = keys.len();
    let heads: Vec<u64> = (0..n).map(|row| head(keys.get(row))).collect();
    let (low, high) = heads
        .iter()
        .fold((u64::MAX, 0), |(lo, hi), &h| (lo.min(h), hi.max(h)));
    let shared = (low ^ high).leading_zeros(); // 64 when every head is the same (or no rows)
    let bits = (n / BUCKET_ROWS).max(1).ilog2().min(BUCKET_BITS);
    let bucket = |h: u64| {
        if shared >= 64 || bits == 0 {
            0
        } else {
            ((h << shared) >> (64 - bits)) as usize
        }
    };
    let mut starts = vec![0usize; (1 << bits) + 1];
    for &h in &heads {
        starts[bucket(h) + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    let mut next = starts.clone();
    let mut rows = vec![(0, 0, 0); n];
    for (row, &h) in heads.iter().enumerate() {
        let at = &mut next[bucket(h)];
        rows[*at] = headed(keys.get(row), row as u64);
        *at += 1;
    }
    (rows, starts)
}

/// Sort ROWS, rows whose keys share their first DEPTH bytes, by the keys' bytes from DEPTH on, then by
/// row; mark in NEW_KEY each row but the first whose key differs from the row's before it. A row is
/// sorted as numbers: its key's head from DEPTH (HEAD bytes, zeros past the key's end), its length from
/// DEPTH up to HEAD + 1, then its row. Heads that differ order their keys. Among equal heads, a key that
/// ends within its head is the prefix of those longer than it (zeros pad a head), so length orders them,
/// and keys of one length up to HEAD are equal; those longer (HEAD + 1) are sorted the same way from
/// DEPTH + HEAD, their bytes looked up again (n-grams share a first word: 8 bytes left many ties).
fn sort_from(keys: &Keys, rows: &mut [Headed], new_key: &mut [bool], depth: usize) {
    if depth >= DEEPEST {
        return sort_rest(keys, rows, new_key, depth);
    }
    for row in rows.iter_mut() {
        let at = row.2 & ROW_BITS;
        *row = headed(&keys.get(at as usize)[depth..], at);
    }
    rows.sort_unstable();
    split_ties(keys, rows, new_key, depth);
}

/// Of ROWS sorted by their heads from DEPTH: mark where each new key begins (NEW_KEY, but the first row's,
/// which is the caller's), and sort each run of equal heads of keys longer than them from DEPTH + HEAD.
fn split_ties(keys: &Keys, rows: &mut [Headed], new_key: &mut [bool], depth: usize) {
    let tie = |headed: &Headed| (headed.0, headed.1, headed.2 >> 59);
    let mut at = 0;
    while at < rows.len() {
        let mut end = at + 1;
        while end < rows.len() && tie(&rows[end]) == tie(&rows[at]) {
            end += 1;
        }
        if at > 0 {
            new_key[at] = true;
        }
        if end - at > 1 && rows[at].2 >> 59 == HEAD as u64 + 1 {
            sort_from(
                keys,
                &mut rows[at..end],
                &mut new_key[at..end],
                depth + HEAD,
            );
        }
        at = end;
    }
}

/// The depth in bytes past which `sort_from` compares the rest of the keys instead of going a head deeper:
/// a line may be megabytes long, and a level of recursion for every 16 bytes of such keys could run out of
/// the thread's stack.
const DEEPEST: usize = 1 << 10;

/// `sort_from` for keys that share DEPTH bytes and more: by their bytes from DEPTH, compared whole, then row.
fn sort_rest(keys: &Keys, rows: &mut [Headed], new_key: &mut [bool], depth: usize) {
    let rest = |headed: &Headed| &keys.get((headed.2 & ROW_BITS) as usize)[depth..];
    rows.sort_unstable_by(|a, b| {
        rest(a)
            .cmp(rest(b))
            .then((a.2 & ROW_BITS).cmp(&(b.2 & ROW_BITS)))
    });
    for at in 1..rows.len() {
        if rest(&rows[at]) != rest(&rows[at - 1]) {
            new_key[at] = true;
        }
    }
}

/// Rows in a row taken from one piece of a merge after which it is taken from as a stretch (merge_pieces'
/// exponential search; the tournament's comparisons with the runner-up alone).
const GALLOP: usize = 8;

/// Merge two sorted pieces of rows into OUT, rows of A first among equal keys. After GALLOP rows in a
/// row from one piece, the rest of that piece's stretch is found by an exponential search.
fn merge_pieces(keys: &Keys, a: &[i64], b: &[i64], out: &mut [i64]) {
    let key = |row: i64| keys.get(row as usize);
    let (mut i, mut j, mut at) = (0, 0, 0);
    let (mut from_a, mut from_b) = (0, 0);
    while i < a.len() && j < b.len() {
        let take_a = key(a[i]) <= key(b[j]);
        let (piece, next, other, streak) = if take_a {
            (a, &mut i, key(b[j]), &mut from_a)
        } else {
            (b, &mut j, key(a[i]), &mut from_b)
        };
        // The stretch of PIECE from NEXT that goes before OTHER: keys up to it from A, below it from B.
        let before = |row: i64| {
            if take_a {
                key(row) <= other
            } else {
                key(row) < other
            }
        };
        let mut stretch = 1;
        *streak += 1;
        if *streak >= GALLOP {
            stretch = gallop(&piece[*next..], before);
            *streak = 0;
        }
        out[at..at + stretch].copy_from_slice(&piece[*next..*next + stretch]);
        (*next, at) = (*next + stretch, at + stretch);
        if take_a {
            from_b = 0
        } else {
            from_a = 0
        }
    }
    out[at..at + a.len() - i].copy_from_slice(&a[i..]);
    at += a.len() - i;
    out[at..].copy_from_slice(&b[j..]);
}

/// The length of the leading stretch of ROWS (of which the first is in it) whose rows are BEFORE: an
/// exponential search for a row that is not, then a binary search between the last two probes.
fn gallop(rows: &[i64], before: impl Fn(i64) -> bool) -> usize {
    let (mut inside, mut step) = (1, 1); // rows[..inside] are before
    while inside + step - 1 < rows.len() && before(rows[inside + step - 1]) {
        inside += step;
        step *= 2;
    }
    let end = (inside + step - 1).min(rows.len());
    inside + rows[inside..end].partition_point(|&row| before(row))
}

/// One sorted piece's place in a `tournament`: its next row and that row's key's head, the head of its bytes
/// after the first 8 (`next`), and its length, or none left (`at == end`), when its head is the largest there
/// is.
#[derive(Clone, Copy)]
struct Cursor {
    at: usize,
    end: usize,
    head: u64,
    next: u64,
    len: usize,
}

impl Cursor {
    fn new(keys: &Keys, at: usize, end: usize) -> Cursor {
        let mut cursor = Cursor {
            at,
            end,
            head: 0,
            next: 0,
            len: 0,
        };
        cursor.load(keys);
        cursor
    }

    fn load(&mut self, keys: &Keys) {
        if self.at < self.end {
            let key = keys.get(self.at);
            let next = key.get(8..).map_or(0, head);
            (self.head, self.next, self.len) = (head(key), next, key.len());
        } else {
            self.head = u64::MAX;
        }
    }

    /// The order of the two cursors' rows' keys: by the heads, which decide most comparisons without
    /// reading the keys' bytes; when they tie, as `after_heads` says, by the heads of the bytes after them,
    /// and then by the bytes after those. (Without the second heads, keys that share their first 8 bytes, as
    /// the rank keys of equal counts and many n-grams do, were read at every comparison and at every row
    /// taken: a merge of 16 pieces of 70K rank keys, 1.1M rows: 94-108 -> 70-76 ns a row.)
    #[inline(always)]
    fn cmp(&self, other: &Cursor, keys: &Keys) -> Ordering {
        self.head.cmp(&other.head).then_with(|| {
            after_heads(self.len, other.len, || {
                self.next.cmp(&other.next).then_with(|| {
                    after_heads(self.len - 8, other.len - 8, || {
                        keys.get(self.at)[16..].cmp(&keys.get(other.at)[16..])
                    })
                })
            })
        })
    }
}

/// merge_order of the rows' sorted pieces (BOUNDS, as `pieces` gives them), more than a few: all at
/// once, by a tournament (loser) tree whose comparisons read each piece's current head, where merging
/// them pairwise took a pass over every row per level and looked each key's bytes up by row (the
/// distinct tokens of 64 chunks, 2.1M rows: 115 ns a row pairwise). Equal keys come in piece order,
/// which is row order; with GROUPS, each row is compared with the one taken before it, for the group starts,
/// unless that was the row before it in its piece, which `pieces` compared (TIES).
fn tournament(
    keys: &Keys,
    bounds: &[usize],
    ties: &Ties,
    groups: bool,
) -> (Option<Vec<i64>>, Vec<i64>) {
    let k = bounds.len() - 1;
    let mut cursors: Vec<Cursor> = bounds
        .windows(2)
        .map(|w| Cursor::new(keys, w[0], w[1]))
        .collect();
    // Whether piece P's next row goes before piece Q's: a piece with none left goes last. Heads that differ
    // decide at once, an exhausted piece's the largest; a tie looks further (keys that share their first 8
    // bytes, or a head of all ones, which no UTF-8 key has). A merge of token tables: 37 -> 34 ns a row, where
    // every comparison asked first whether either piece was done.
    let before = |cursors: &[Cursor], p: usize, q: usize| {
        let (a, b) = (&cursors[p], &cursors[q]);
        if a.head != b.head {
            return a.head < b.head;
        }
        if a.at == a.end || b.at == b.end {
            return b.at == b.end && (a.at < a.end || p < q);
        }
        match a.cmp(b, keys) {
            Ordering::Less => true,
            Ordering::Equal => p < q,
            Ordering::Greater => false,
        }
    };
    // Nodes 1..k of a complete binary tree whose leaves k..2k are the pieces: each holds the piece that
    // lost the match there; the winner of all is kept in losers[0].
    let mut losers = vec![0usize; k];
    fn play(
        node: usize,
        k: usize,
        losers: &mut [usize],
        wins: &dyn Fn(usize, usize) -> bool,
    ) -> usize {
        if node >= k {
            return node - k;
        }
        let (left, right) = (
            play(2 * node, k, losers, wins),
            play(2 * node + 1, k, losers, wins),
        );
        let (winner, loser) = if wins(left, right) {
            (left, right)
        } else {
            (right, left)
        };
        losers[node] = loser;
        winner
    }
    losers[0] = play(1, k, &mut losers, &|p, q| before(&cursors, p, q));
    let n = bounds[k];
    let mut order = Vec::with_capacity(n);
    let mut starts = Vec::with_capacity(if groups { n / 2 + 1 } else { 0 });
    // The row taken before, for the group starts, and its piece.
    let mut last: Option<(Cursor, usize)> = None;
    // PIECE's row taken: its group start (unless its key is the row's before) and its place in order. A row
    // that follows the last taken in its piece was compared with it by `pieces`.
    let mut take = |cursor: &mut Cursor, piece: usize| {
        let taken = *cursor;
        if groups {
            let new_key = match &last {
                None => true,
                Some((_, from)) if *from == piece => !ties.holds(taken.at),
                Some((before, _)) => before.cmp(&taken, keys) != Ordering::Equal,
            };
            if new_key {
                starts.push(order.len() as i64);
            }
            last = Some((taken, piece));
        }
        order.push(taken.at as i64);
        cursor.at += 1;
        cursor.load(keys);
    };
    let (mut previous, mut streak) = (usize::MAX, 0); // the piece that won last, how many times in a row
    loop {
        let mut winner = losers[0];
        if cursors[winner].at == cursors[winner].end {
            break;
        }
        streak = if winner == previous { streak + 1 } else { 0 };
        previous = winner;
        take(&mut cursors[winner], winner);
        if streak >= GALLOP {
            // A piece that keeps winning holds a stretch of the merged order (run files of sorted inputs hold
            // whole files' stretches): its rows are taken while they go before the best of the others, the
            // runner-up among the losers on its path, one comparison a row where a replay of the path took
            // one a level. The tree stays as it was: its winner won every match on the path again.
            let mut node = (winner + k) / 2;
            let mut second = losers[node];
            while node > 1 {
                node /= 2;
                if before(&cursors, losers[node], second) {
                    second = losers[node];
                }
            }
            while cursors[winner].at < cursors[winner].end && before(&cursors, winner, second) {
                take(&mut cursors[winner], winner);
            }
        }
        let mut node = (winner + k) / 2;
        while node >= 1 {
            if before(&cursors, losers[node], winner) {
                std::mem::swap(&mut losers[node], &mut winner);
            }
            node /= 2;
        }
        losers[0] = winner;
    }
    (Some(order), starts)
}

/// A fast hash of short byte strings, a word at a time (the multiply-rotate of rustc's FxHasher): the
/// cache of a worker's tokens is private to its process, so it needs no resistance to chosen collisions.
#[derive(Default)]
struct WordHasher(u64);

impl WordHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for WordHasher {
    /// BYTES 8 at a time, little-endian, the last word zero-padded (`tail_word`): the padded word copied into
    /// place by a length not known when compiled called memcpy for every word (with `each_token`, the one
    /// large file's merged tables: 63-66 -> 54-60 ns an n-gram in `distinct_tokens`).
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in words.by_ref() {
            self.add(u64::from_le_bytes(word.try_into().unwrap()));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            self.add(tail_word(rest));
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The tokens of KEY as `split` at each space cuts them, handed to EACH with their places, in order; false, and
/// none handed, when KEY has no space (a unigram, its own token). The spaces are found 8 bytes at a time
/// (`bytes_equal`): a search for the first and a split testing each byte took about a quarter of
/// `distinct_tokens`' time, most of it in the branch at each token's end.
#[inline(always)]
fn each_token<'a>(key: &'a [u8], mut each: impl FnMut(usize, &'a [u8])) -> bool {
    let len = key.len();
    let (mut start, mut place, mut at) = (0, 0, 0);
    while at < len {
        let word = match key.get(at..at + 8) {
            Some(word) => u64::from_le_bytes(word.try_into().unwrap()),
            None => tail_word(&key[at..]), // zeros past the key's end: no space
        };
        let mut spaces = bytes_equal(word, b' ');
        while spaces != 0 {
            let space = at + (spaces.trailing_zeros() / 8) as usize;
            each(place, &key[start..space]);
            (start, place) = (space + 1, place + 1);
            spaces &= spaces - 1;
        }
        at += 8;
    }
    if place == 0 {
        return false;
    }
    each(place, &key[start..]);
    true
}

/// The bytes of REST (1 to 7) as the low bytes of a little-endian word, zero-padded: two loads that overlap, each
/// in its place (a byte read twice lands on itself).
#[inline(always)]
pub(crate) fn tail_word(rest: &[u8]) -> u64 {
    let len = rest.len();
    if len >= 4 {
        let word = |at: usize| u32::from_le_bytes(rest[at..at + 4].try_into().unwrap()) as u64;
        word(0) | word(len - 4) << (8 * (len - 4))
    } else {
        let byte = |at: usize| (rest[at] as u64) << (8 * at);
        byte(0) | byte(len / 2) | byte(len - 1)
    }
}

/// The distinct tokens of the keys of PIECES (n-grams: tokens joined by single spaces; the rows of the
/// pieces one after another), sorted, as (offsets, bytes) of an Arrow string array, and for each token the
/// first row of its unigram among them (-1: none). Pieces, not the keys joined: a range's merge gives its
/// tables one order each, and joining them copied every n-gram of the range once more. With RECENT, the
/// tokens of n-grams of two or more tokens that it holds are left out (they are in a token run already),
/// and those it lacks are checked in; without, a cache of the call's own is. A unigram is always given, for
/// its row (and not checked in: unigrams are distinct, and few n-grams after them in a sorted table hold
/// their token).
pub fn distinct_tokens(
    pieces: &[Keys],
    recent: Option<&mut RecentTokens>,
) -> (Vec<i32>, Vec<u8>, Vec<i64>) {
    // Tokens repeat (n-grams share them): the cache leaves out those it holds, so that few but distinct
    // ones are sorted; what it forgets, or never holds (long tokens), the sort's neighbours fold. (Sets of
    // the call's tokens, dealt by hash a block at a time so that each stayed in cache, left out exactly the
    // tokens the cache had already found: one range of the one large file, 1.5M n-grams, 0.161 -> 0.124 s,
    // medians of 6 processes each: BENCHMARKS.md, forty-first round.)
    let rows: usize = pieces.iter().map(Keys::len).sum();
    let mut own;
    let recent = match recent {
        Some(recent) => recent,
        None => {
            own = RecentTokens::new((rows * OWN_CACHE_BYTES_A_ROW).min(OWN_CACHE_BYTES));
            &mut own
        }
    };
    let mut found: Vec<Hashed> = Vec::new();
    let mut block = Vec::with_capacity(BLOCK);
    // A unigram is its own token: it needs no set, only its row.
    let mut unigrams: Vec<(u64, &[u8], i64)> = Vec::new();
    // Sorted n-grams mostly share their first tokens with the n-gram before, so a token equal to
    // the one in the same place of the n-gram before is known without a set.
    let mut before: Vec<&[u8]> = Vec::new();
    let rows = pieces
        .iter()
        .flat_map(|keys| (0..keys.len()).map(move |i| keys.get(i)));
    for (i, key) in rows.enumerate() {
        let longer = each_token(key, |place, token| {
            match before.get_mut(place) {
                Some(seen) if same_key(seen, token) => return,
                Some(seen) => *seen = token,
                None => before.push(token),
            }
            block.push(Hashed {
                hash: hash_of(token),
                token,
            });
            if block.len() == BLOCK {
                leave_out_recent(&mut block, recent);
                found.append(&mut block);
            }
        });
        if !longer {
            unigrams.push((head(key), key, i as i64));
            match before.first_mut() {
                Some(seen) => *seen = key,
                None => before.push(key),
            }
        }
    }
    leave_out_recent(&mut block, recent);
    found.append(&mut block);
    // Sorted by their first 8 bytes as a number, then by their bytes: most comparisons are one.
    let mut tokens: Vec<(u64, &[u8])> = found
        .into_iter()
        .map(|Hashed { token, .. }| (head(token), token))
        .collect();
    tokens.sort_unstable();
    tokens.dedup();
    unigrams.sort_unstable(); // sorted keys give sorted unigrams: one pass
    unigrams.dedup_by_key(|&mut (head, token, _)| (head, token)); // the first row of each stays
    let mut offsets = Vec::with_capacity(tokens.len() + unigrams.len() + 1);
    // Room for every token's bytes at once (at most: a token both a unigram and another's is written once).
    let mut bytes = Vec::with_capacity(
        tokens.iter().map(|(_, token)| token.len()).sum::<usize>()
            + unigrams
                .iter()
                .map(|(_, token, _)| token.len())
                .sum::<usize>(),
    );
    let mut rows = Vec::with_capacity(tokens.len() + unigrams.len());
    offsets.push(0);
    // The two sorted lists merged; a token in both is one, with its unigram's row.
    let mut push = |token: &[u8], row: i64| {
        bytes.extend_from_slice(token);
        offsets.push(bytes.len() as i32);
        rows.push(row);
    };
    let mut unigrams = unigrams.into_iter().peekable();
    for (key, token) in tokens {
        let mut row = -1;
        while let Some(&(h, unigram, r)) = unigrams.peek() {
            match (h, unigram).cmp(&(key, token)) {
                Ordering::Less => push(unigram, r),
                Ordering::Equal => row = r,
                Ordering::Greater => break,
            }
            unigrams.next();
            if row >= 0 {
                break;
            }
        }
        push(token, row);
    }
    for (_, unigram, row) in unigrams {
        push(unigram, row);
    }
    (offsets, bytes, rows)
}

/// The rows of sorted KEYS whose keys are below KEY, or up to and with it (THROUGH): a binary search.
pub fn rows_below(keys: &Keys, key: &[u8], through: bool) -> Option<usize> {
    let (mut low, mut high) = (0, keys.len());
    while low < high {
        let middle = low + (high - low) / 2;
        let order = key_order(keys.checked_get(middle)?, key);
        if order.is_lt() || (through && order.is_eq()) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    Some(low)
}

/// The bits of a radix sort's digit: three passes for the counts below 2^33 of a vocabulary's rank heads.
const DIGIT_BITS: u32 = 11;

/// ITEMS in ascending order of the WIDTH bits of their KEY from bit FROM up, equal keys in their order (a
/// stable sort: the bits outside, such as a row number below FROM, are left as they come): a
/// least-significant-digit radix sort DIGIT_BITS at a time, all the passes' digits counted in one read of the
/// items, skipping the digits every key shares (counts of a Zipf vocabulary leave most of the high bits
/// alone), each pass moving the items whole (passes that looked each row's key up read the keys all over
/// memory). A vocabulary's rank heads: 2.3M tokens in 4 ranges, NumPy's lexsort 0.19 s.
fn radix_sort<T: Copy + Default>(
    mut items: Vec<T>,
    key: impl Fn(&T) -> u64,
    from: u32,
    width: u32,
) -> Vec<T> {
    let passes = width.div_ceil(DIGIT_BITS) as usize;
    let digits = 1usize << DIGIT_BITS;
    let digit = |item: &T, pass: usize| {
        (key(item) >> (from + DIGIT_BITS * pass as u32)) as usize & (digits - 1)
    };
    let mut counts = vec![0usize; passes * digits];
    for item in &items {
        for pass in 0..passes {
            counts[pass * digits + digit(item, pass)] += 1;
        }
    }
    let mut scratch = vec![T::default(); items.len()];
    for (pass, counted) in counts.chunks_exact_mut(digits).enumerate() {
        if counted.contains(&items.len()) {
            continue; // every key has this digit
        }
        let mut start = 0;
        for slot in counted.iter_mut() {
            (*slot, start) = (start, start + *slot);
        }
        for item in &items {
            let slot = &mut counted[digit(item, pass)];
            scratch[*slot] = *item;
            *slot += 1;
        }
        std::mem::swap(&mut items, &mut scratch);
    }
    items
}

/// The rows of rank heads in ascending head order, equal heads in row order (rank_order).
enum RankOrder {
    /// Each row's varying head bits (the bits where heads differ, shifted down by LOW) above its row number
    /// of ROW_BITS bits; the bits every head shares are SHARED.
    Packed {
        words: Vec<u64>,
        row_bits: u32,
        low: u32,
        shared: u64,
    },
    Pairs(Vec<(u64, u32)>),
}

impl RankOrder {
    fn len(&self) -> usize {
        match self {
            RankOrder::Packed { words, .. } => words.len(),
            RankOrder::Pairs(pairs) => pairs.len(),
        }
    }

    /// The AT-th (head, row) of the order.
    #[inline]
    fn get(&self, at: usize) -> (u64, u32) {
        match self {
            RankOrder::Packed {
                words,
                row_bits,
                low,
                shared,
            } => {
                let word = words[at];
                (
                    shared | (word >> row_bits) << low,
                    (word & ((1 << row_bits) - 1)) as u32,
                )
            }
            RankOrder::Pairs(pairs) => pairs[at],
        }
    }
}

/// The rows of COUNTS (-1: none) in the order of their rank_heads, equal heads in row order, by radix_sort.
/// Where the bits in which the heads differ and a row's number fit one word together (counts below 2^40 with
/// rows below 2^24, as the sequences of unigram rows a worker's budget holds), each row is that word; else a
/// (head, row) pair of 16 bytes, as every row was before (sorted a byte at a time then). One word a row, 1.2M
/// unigram rows of the 2020 1-grams were ranked (rank_in_order, the writing included) in 41 ns a token, not
/// 69, and the import's peak RSS was 20-40 MiB lower (BENCHMARKS.md, forty-second round).
fn rank_order(counts: &[i64]) -> RankOrder {
    let (and, or) = counts.iter().fold((u64::MAX, 0u64), |(a, o), &count| {
        (a & rank_head(count), o | rank_head(count))
    });
    let varying = and ^ or;
    let row_bits = usize::BITS - counts.len().leading_zeros();
    let (low, high) = (
        varying.trailing_zeros().min(63),
        64 - varying.leading_zeros(),
    );
    let width = high.saturating_sub(low);
    if width + row_bits > 64 || row_bits > 32 {
        let pairs = counts
            .iter()
            .zip(0u32..)
            .map(|(&count, row)| (rank_head(count), row))
            .collect();
        return RankOrder::Pairs(radix_sort(pairs, |&(head, _)| head, low, width));
    }
    let words = counts
        .iter()
        .zip(0u64..)
        .map(|(&count, row)| (rank_head(count) & varying) >> low << row_bits | row)
        .collect();
    RankOrder::Packed {
        words: radix_sort(words, |&word| word, row_bits, width),
        row_bits,
        low,
        shared: and,
    }
}

/// Each group of VALUES folded by STEP from its first value, group g holding the rows at positions
/// `starts[g]` up to the next start (the last: up to the end) of `order` (None: the rows themselves),
/// as merge_order gives them; and the first group STEP fails (its result and the later ones are then
/// not given). One pass that reads the values where they lie: NumPy's gather and reduceat copied them
/// twice.
pub fn fold_groups(
    values: &[i64],
    order: Option<&[i64]>,
    starts: &[i64],
    step: impl Fn(i64, i64) -> Option<i64>,
) -> (Vec<i64>, Option<usize>) {
    let value = |at: usize| values[order.map_or(at, |o| o[at] as usize)];
    let mut folded = Vec::with_capacity(starts.len());
    for (group, &start) in starts.iter().enumerate() {
        let (start, end) = (
            start as usize,
            starts.get(group + 1).map_or(values.len(), |&e| e as usize),
        );
        match (start + 1..end).try_fold(value(start), |acc, at| step(acc, value(at))) {
            Some(result) => folded.push(result),
            None => return (folded, Some(group)),
        }
    }
    (folded, None)
}

/// Each token's key of the vocabulary's id order (transforms/vocabulary.py, with_rank), laid out as an
/// Arrow binary array (offsets, bytes): push_rank_key's. None when the keys pass an int32 offset.
pub fn rank_keys(tokens: &Keys, counts: &[i64]) -> Option<(Vec<i32>, Vec<u8>)> {
    let mut offsets = Vec::with_capacity(tokens.len() + 1);
    let span = tokens
        .offsets
        .last()
        .map_or(0, |&end| end - tokens.offsets[0]) as usize;
    let mut bytes = Vec::with_capacity(span + RANK_HEAD * tokens.len());
    offsets.push(0);
    for (i, &count) in counts.iter().enumerate().take(tokens.len()) {
        push_rank_key(&mut bytes, tokens.get(i), count);
        offsets.push(i32::try_from(bytes.len()).ok()?);
    }
    Some((offsets, bytes))
}

/// A token's key of the id order, after BYTES: its rank_head, big-endian, then the token's bytes.
fn push_rank_key(bytes: &mut Vec<u8>, token: &[u8], count: i64) {
    bytes.extend_from_slice(&rank_head(count).to_be_bytes());
    bytes.extend_from_slice(token);
}

/// A token's place in the id order before its bytes, from its COUNT (-1: none): the count complemented,
/// i64::MAX - COUNT, so that larger counts come first, and u64::MAX, after every count, without one. It is
/// a rank key's first 8 bytes, which merges compare as one number (`head`): a flag byte before the count gave
/// every count below 2^56 the same first 8 bytes, and left each comparison of rank keys to the keys' bytes.
fn rank_head(count: i64) -> u64 {
    if count >= 0 {
        (i64::MAX - count) as u64
    } else {
        u64::MAX
    }
}

/// The count whose rank_head HEAD is (-1: none).
fn count_of_head(head: u64) -> i64 {
    if head == u64::MAX {
        -1
    } else {
        i64::MAX - head as i64
    }
}

/// What rank_in_order gives: each row's volume count (-1: none) and rank key (which holds its match count), in
/// the id order; the keys as an Arrow binary array's offsets and bytes.
pub struct Ranked {
    pub volumes: Vec<i64>,
    pub offsets: Vec<i32>,
    pub bytes: Vec<u8>,
}

/// Token rows in token order (TOKENS: pieces whose rows, one piece after another, ascend, as a spill's
/// buffer of merged tables holds them) with their counts (COUNTS and VOLUMES, -1: none, one a row) -> the
/// rows in the id order (Ranked). The order is a stable radix sort of each row's head, its count
/// complemented (u64::MAX without one: last): equal heads keep the token order, which is the rank's
/// tie-break. Each key is written where the order puts it, from the piece its token lies in (the keys were
/// made in token order, then concatenated and taken in order by Arrow: two copies more), its count read back
/// from its head, its volume count taken as it goes, and the rows the order reaches next brought near
/// beforehand: the order scatters them over the pieces, and each look-up waited for memory (1.2M tokens: the
/// writing 40 -> 17.5 ms; the counts, taken by NumPy in that order afterwards, 9 ns a token more). None when
/// the keys pass an int32 offset.
pub fn rank_in_order(tokens: &[Keys], counts: &[i64], volumes: &[i64]) -> Option<Ranked> {
    // The first row of each piece: a row's piece is found by a search of these (a table of each row's bytes
    // was 16 bytes a row more, at the spill's peak).
    let firsts: Vec<usize> = tokens
        .iter()
        .scan(0, |row, keys| {
            let first = *row;
            *row += keys.len();
            Some(first)
        })
        .collect();
    let place = |row: u32| {
        let piece = firsts.partition_point(|&first| first <= row as usize) - 1;
        (piece, row as usize - firsts[piece])
    };
    let span: usize = tokens
        .iter()
        .map(|keys| keys.offsets.last().map_or(0, |&end| end - keys.offsets[0]) as usize)
        .sum();
    // Each row's head comes with it: the writing reads its count back from it.
    let sorted = rank_order(counts);
    let mut ranked = Ranked {
        volumes: Vec::with_capacity(sorted.len()),
        offsets: Vec::with_capacity(sorted.len() + 1),
        bytes: Vec::with_capacity(span + RANK_HEAD * sorted.len()),
    };
    ranked.offsets.push(0);
    // Each row's place is found once, AHEAD rows before it is written, and its offset and volume count
    // fetched then; its bytes are fetched half-way.
    const AHEAD: usize = 32;
    let mut ahead = [(0usize, 0usize); AHEAD];
    for (at, slot) in ahead.iter_mut().enumerate().take(sorted.len()) {
        *slot = place(sorted.get(at).1);
    }
    for at in 0..sorted.len() {
        let (head, row) = sorted.get(at);
        let (piece, local) = ahead[at % AHEAD];
        if at + AHEAD < sorted.len() {
            let far = sorted.get(at + AHEAD).1;
            let (far_piece, far_local) = place(far);
            prefetch::fetch(&tokens[far_piece].offsets[far_local]);
            prefetch::fetch(&volumes[far as usize]);
            ahead[at % AHEAD] = (far_piece, far_local);
        }
        if at + AHEAD / 2 < sorted.len() {
            let (near_piece, near_local) = ahead[(at + AHEAD / 2) % AHEAD];
            let keys = &tokens[near_piece];
            prefetch::fetch(
                keys.data
                    .as_ptr()
                    .wrapping_add(keys.offsets[near_local] as usize),
            );
        }
        let count = count_of_head(head);
        push_rank_key(&mut ranked.bytes, tokens[piece].get(local), count);
        ranked.offsets.push(i32::try_from(ranked.bytes.len()).ok()?);
        ranked.volumes.push(volumes[row as usize]);
    }
    Some(ranked)
}

/// The rows of KEYS in ORDER (None: as they are), each without its first SKIP bytes (a rank key's head: what
/// is left is its token), as an Arrow array's offsets and bytes; with COUNTS, each row's count read back from
/// its rank_head there (count_of_head: the ranked run files hold no count of their own). None when a key is
/// shorter than SKIP (or than a head, with COUNTS) or the bytes pass an int32 offset.
pub fn take_keys(
    keys: &Keys,
    order: Option<&[i64]>,
    skip: usize,
    mut counts: Option<&mut Vec<i64>>,
) -> Option<(Vec<i32>, Vec<u8>)> {
    let rows = order.map_or(keys.len(), <[i64]>::len);
    let mut offsets = Vec::with_capacity(rows + 1);
    let mut bytes = Vec::with_capacity(keys.data.len().saturating_sub(skip * rows));
    if let Some(counts) = counts.as_deref_mut() {
        counts.reserve(rows);
    }
    offsets.push(0);
    for at in 0..rows {
        let key = keys.get(order.map_or(at, |o| o[at] as usize));
        if let Some(counts) = counts.as_deref_mut() {
            let head = key.get(..RANK_HEAD)?.try_into().ok()?;
            counts.push(count_of_head(u64::from_be_bytes(head)));
        }
        bytes.extend_from_slice(key.get(skip..)?);
        offsets.push(i32::try_from(bytes.len()).ok()?);
    }
    Some((offsets, bytes))
}

/// The bytes of a rank key before its token's: its rank_head.
pub const RANK_HEAD: usize = 8;

/// The merged rows of groups of token rows (KEYS, with MATCHES and VOLUMES, -1: none), grouped as fold_groups
/// takes them: each group's token, and the counts of its row of largest match count, the first of them on
/// ties (a token's one counted row, which any of the token run files may hold), as (offsets, bytes, matches,
/// volumes). One pass that gathers each row where it lies, where the rows were found first and then taken by
/// Arrow, which looked each row's chunk up (a merge of 1.75M token rows alone: 180 -> 137 ms; in an import,
/// within the host's spread).
pub fn merge_tokens(
    keys: &Keys,
    matches: &[i64],
    volumes: &[i64],
    order: Option<&[i64]>,
    starts: &[i64],
) -> (Vec<i32>, Vec<u8>, Vec<i64>, Vec<i64>) {
    let row = |at: usize| order.map_or(at, |o| o[at] as usize);
    let mut offsets = Vec::with_capacity(starts.len() + 1);
    offsets.push(0);
    // The keys' bytes at most; room never written is address space only (Owned::wrap gives it back).
    let mut bytes = Vec::with_capacity(keys.data.len());
    let (mut merged_matches, mut merged_volumes) = (
        Vec::with_capacity(starts.len()),
        Vec::with_capacity(starts.len()),
    );
    for (group, &start) in starts.iter().enumerate() {
        let end = starts.get(group + 1).map_or(keys.len(), |&e| e as usize);
        let mut best = row(start as usize);
        for at in start as usize + 1..end {
            if matches[row(at)] > matches[best] {
                best = row(at);
            }
        }
        bytes.extend_from_slice(keys.get(best));
        // Fits: the bytes are at most the keys', whose offsets are int32.
        offsets.push(bytes.len() as i32);
        merged_matches.push(matches[best]);
        merged_volumes.push(volumes[best]);
    }
    (offsets, bytes, merged_matches, merged_volumes)
}

/// The order of each key (an n-gram: its tokens joined by single spaces), one byte each, at most 127: one
/// search for the spaces of all their bytes, each space counted to the key it lies in, where counting each
/// key's spaces took 9 ns a key (226K 1- to 3-grams of a range: 8.6 -> 4.0 ns a key).
pub fn orders(keys: &Keys) -> Vec<u8> {
    let n = keys.len();
    let mut of_row = vec![1u8; n];
    if n == 0 {
        return of_row;
    }
    let (start, end) = (keys.offsets[0] as usize, keys.offsets[n] as usize);
    let mut row = 0;
    for at in memchr::memchr_iter(b' ', &keys.data[start..end]) {
        let at = (start + at) as i32;
        while keys.offsets[row + 1] <= at {
            row += 1;
        }
        of_row[row] = (of_row[row] + 1).min(127);
    }
    of_row
}

/// The order of key I, as `orders` gives it.
#[inline]
pub(crate) fn order_of(keys: &Keys, i: usize) -> u8 {
    let (start, end) = (keys.offsets[i] as usize, keys.offsets[i + 1] as usize);
    (spaces(keys.data, start, end) + 1).min(127) as u8
}

/// The high bit of each byte of WORD that is BYTE, the others clear: a zero byte of word ^ BYTE, found
/// exactly, with no borrow from one byte into the next.
#[inline(always)]
pub(crate) fn bytes_equal(word: u64, byte: u8) -> u64 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let x = word ^ u64::from_le_bytes([byte; 8]);
    !(((x & LOW7) + LOW7) | x | LOW7)
}

/// The spaces in `data[start..end]`, counted 8 bytes at a time: a key's bytes filtered and counted one by one
/// were a thirtieth of the CPU time of an import of distinct 2-grams (perf), for keys of about 14 bytes. A
/// key's last word is loaded whole where the data goes on past it, its bytes beyond the key masked off.
#[inline(always)]
fn spaces(data: &[u8], start: usize, end: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // The spaces among the bytes of WORD that MASK keeps, each found as a high bit (bytes_equal), moved to
    // its byte's low bit and the bytes summed by a multiply (the extension is built for any x86-64, whose
    // count_ones has no instruction).
    let count = |word: u64, mask: u64| {
        let found = bytes_equal(word, b' ') & mask;
        ((found >> 7).wrapping_mul(ONES) >> 56) as usize
    };
    let load = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap());
    let (mut total, mut at) = (0, start);
    while at + 8 <= end {
        total += count(load(at), u64::MAX);
        at += 8;
    }
    let rest = end - at;
    if rest > 0 {
        total += if at + 8 <= data.len() {
            count(load(at), u64::MAX >> (8 * (8 - rest)))
        } else {
            data[at..end].iter().filter(|&&b| b == b' ').count()
        };
    }
    total
}

/// A token with its hash_of, the cache's key: a token is hashed once, where it is cut from its n-gram.
#[derive(Clone, Copy)]
struct Hashed<'a> {
    hash: u64,
    token: &'a [u8],
}

/// The tokens looked up in the cache at a time, their look-ups fetched ahead (leave_out_recent).
const BLOCK: usize = 1 << 16;
/// A call's own cache, where it is given none: about this much a row of its n-grams, at most OWN_CACHE_BYTES
/// (the size of a worker's: transforms/sizing.py, RECENT_TOKENS_BYTES).
const OWN_CACHE_BYTES_A_ROW: usize = 64;
const OWN_CACHE_BYTES: usize = 16 << 20;

/// The tokens of a BLOCK that RECENT holds left out, those it lacks checked in, in the block's order. The
/// cache is larger than a core's own caches: a token's bucket is fetched AHEAD tokens before it is looked
/// at, so that the look-ups wait for memory together (2-grams over 65K tokens, a cache of 4 MiB: 78 ns an
/// n-gram looked up one at a time, 63 fetched ahead).
fn leave_out_recent(block: &mut Vec<Hashed<'_>>, recent: &mut RecentTokens) {
    const AHEAD: usize = 16;
    for token in block.iter().take(AHEAD) {
        recent.fetch(token.hash);
    }
    let mut kept = 0;
    for at in 0..block.len() {
        if let Some(later) = block.get(at + AHEAD) {
            recent.fetch(later.hash);
        }
        let token = block[at];
        if !recent.check_in(token.hash, token.token) {
            block[kept] = token;
            kept += 1;
        }
    }
    block.truncate(kept);
}

/// A key's prefix as sorted_input.py keeps spans by it: its first character (UTF-8: 1 to 4 bytes, by
/// the lead byte) and the byte after it, or the whole key when it is shorter.
fn prefix(key: &[u8]) -> &[u8] {
    let character = match key.first() {
        Some(&lead) if lead >= 0xF0 => 4,
        Some(&lead) if lead >= 0xE0 => 3,
        Some(&lead) if lead >= 0xC0 => 2,
        _ => 1,
    };
    &key[..key.len().min(character + 1)]
}

/// The stretches of consecutive keys that share a prefix: the first row of each, and the prefix as a
/// big-endian number, zeros after it (`head`), so that prefixes compare as their bytes do. One pass
/// of a few byte comparisons per key.
pub fn prefix_stretches(keys: &Keys) -> (Vec<i64>, Vec<u64>) {
    let (mut starts, mut codes) = (Vec::new(), Vec::new());
    let mut last: Option<&[u8]> = None;
    for i in 0..keys.len() {
        let this = prefix(keys.get(i));
        if last != Some(this) {
            starts.push(i as i64);
            codes.push(head(this));
            last = Some(this);
        }
    }
    (starts, codes)
}

/// The hash the cache of recent tokens keys `token` by.
fn hash_of(token: &[u8]) -> u64 {
    BuildHasherDefault::<WordHasher>::default().hash_one(token)
}

/// The byte order of two keys, decided by their heads where they differ: a slice comparison called
/// memcmp for every pair (in the kernel's order check of each run, 1.5% of the CPU time of an import of
/// distinct 2-grams).
#[inline]
pub(crate) fn key_order(a: &[u8], b: &[u8]) -> Ordering {
    head(a)
        .cmp(&head(b))
        .then_with(|| after_heads(a.len(), b.len(), || a[8..].cmp(&b[8..])))
}

/// Whether two keys are the same bytes, compared a word at a time in line: a slice comparison called
/// memcmp for every pair (the parse's check of each line's n-gram against the line before's was 2% of an
/// import's CPU time, perf).
#[inline(always)]
pub(crate) fn same_key(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |key: &[u8], at: usize| u64::from_le_bytes(key[at..at + 8].try_into().unwrap());
    if n < 8 {
        return n == 0 || tail_word(a) == tail_word(b); // a byte loop's exit was a branch mispredicted
    }
    let mut at = 0;
    while at + 8 < n {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    word(a, n - 8) == word(b, n - 8) // the last word, overlapping the one before
}

/// The order of two keys of lengths A and B whose heads tie: when one has 8 bytes or fewer, it is a
/// prefix of the other (zeros pad a head) and the shorter is the smaller; else REST, the order of
/// the bytes after the heads, decides.
#[inline(always)]
fn after_heads(a: usize, b: usize, rest: impl FnOnce() -> Ordering) -> Ordering {
    if a <= 8 || b <= 8 {
        a.cmp(&b)
    } else {
        rest()
    }
}

/// The first 8 bytes of a key (zeros past its end) as a big-endian number: heads compare as the keys'
/// byte order does, equal heads leaving the order to the rest of the bytes.
#[inline]
fn head(key: &[u8]) -> u64 {
    // A word loaded whole; a shorter key's bytes as `tail_word` loads them, byte-swapped (a copy of a length not
    // known when compiled called memcpy, and a byte at a time made a merge of token tables, whose tokens are
    // short, 39.6 ns a row where the loads make it 37.1).
    match key.first_chunk::<8>() {
        Some(word) => u64::from_be_bytes(*word),
        None if key.is_empty() => 0,
        None => tail_word(key).swap_bytes(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn groups_fold_in_the_order_and_stop_where_a_step_fails() {
        let values = [5, 1, 2, 3, i64::MAX, 1];
        let sum = |values, order, starts| fold_groups(values, order, starts, i64::checked_add);
        assert_eq!(sum(&values[..4], None, &[0, 1, 3]), (vec![5, 3, 3], None));
        assert_eq!(
            sum(&values[..4], Some(&[3, 0, 2, 1]), &[0, 2]),
            (vec![8, 3], None)
        );
        assert_eq!(sum(&values, None, &[0, 4]), (vec![11], Some(1)));
        assert_eq!(sum(&[], None, &[]), (vec![], None));
        let max = fold_groups(&values, Some(&[5, 4, 0, 1, 2, 3]), &[0, 3], |a, b| {
            Some(a.max(b))
        });
        assert_eq!(max, (vec![i64::MAX, 3], None));
    }

    /// Pseudo-random numbers from SEED (a linear congruential generator): the same in every run. Tests of
    /// other modules draw theirs here too.
    pub(crate) fn numbers(seed: u64) -> impl FnMut() -> usize {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize
        }
    }

    #[test]
    fn a_head_is_the_first_eight_bytes_zeros_after() {
        // Every length up to 12, of random bytes and of bytes at the edges (0, 0xff), against the bytes
        // shifted in one at a time.
        let mut next = numbers(7);
        for len in 0..=12usize {
            for fill in [None, Some(0u8), Some(0xff)] {
                let key: Vec<u8> = (0..len).map(|_| fill.unwrap_or(next() as u8)).collect();
                let expected = key
                    .iter()
                    .take(8)
                    .enumerate()
                    .fold(0u64, |word, (i, &b)| word | (b as u64) << (56 - 8 * i));
                assert_eq!(head(&key), expected, "{key:?}");
            }
        }
    }

    #[test]
    fn a_head_is_the_first_8_bytes_zero_padded_big_endian() {
        let mut next = numbers(19);
        for len in 0..12 {
            for _ in 0..50 {
                let key: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let mut word = [0u8; 8];
                let n = len.min(8);
                word[..n].copy_from_slice(&key[..n]);
                assert_eq!(head(&key), u64::from_be_bytes(word), "{key:?}");
            }
        }
    }

    #[test]
    fn each_token_cuts_as_split_at_each_space() {
        // Keys of up to three words and a half over spaces and bytes next to them: spaces leading,
        // trailing, doubled, at a word's edges, and none.
        let mut next = numbers(17);
        let alphabet = [b' ', b' ', b'a', 0x1F, 0x21, 0xA0, 0x00, 0xFF];
        for _ in 0..20_000 {
            let key: Vec<u8> = (0..next() % 30)
                .map(|_| alphabet[next() % alphabet.len()])
                .collect();
            let mut tokens = Vec::new();
            let longer = each_token(&key, |place, token| {
                assert_eq!(place, tokens.len());
                tokens.push(token);
            });
            let split: Vec<&[u8]> = key.split(|&b| b == b' ').collect();
            if longer {
                assert_eq!(tokens, split, "{key:?}");
            } else {
                assert!(tokens.is_empty() && split.len() == 1, "{key:?}");
            }
        }
    }

    #[test]
    fn a_token_hashes_as_its_words_copied_into_zeroed_words() {
        // The hash as it was made: each 8 bytes copied into a zeroed word, little-endian.
        fn copied(bytes: &[u8]) -> u64 {
            let mut hasher = WordHasher::default();
            hasher.write_usize(bytes.len());
            for chunk in bytes.chunks(8) {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                hasher.add(u64::from_le_bytes(word));
            }
            hasher.finish()
        }
        let mut next = numbers(13);
        for len in 0..40 {
            for _ in 0..50 {
                let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                assert_eq!(hash_of(&bytes), copied(&bytes), "{bytes:?}");
            }
        }
    }

    #[test]
    fn orders_are_the_spaces_of_each_key_and_one() {
        // Keys of 1-grams alone, then with one longer n-gram among them (first, last, or in a slice of
        // the data that leaves out the bytes around it).
        let words = ["a", "bc", "", "d"];
        let (offsets, data) = keys_of(&words);
        let keys = |offsets: &[i32]| {
            orders(&Keys {
                offsets,
                data: &data,
            })
        };
        assert_eq!(keys(&offsets), [1, 1, 1, 1]);
        for longer in 0..words.len() {
            let mut words: Vec<&str> = words.to_vec();
            words[longer] = "x y z";
            let (offsets, data) = keys_of(&words);
            let mut want = vec![1u8; words.len()];
            want[longer] = 3;
            assert_eq!(
                orders(&Keys {
                    offsets: &offsets,
                    data: &data
                }),
                want
            );
            // The same data, the keys before and after the longer n-gram alone: its spaces are not theirs.
            for (from, to) in [(0, longer), (longer + 1, words.len())] {
                let part = Keys {
                    offsets: &offsets[from..=to],
                    data: &data,
                };
                assert_eq!(orders(&part), vec![1u8; to - from]);
            }
        }
        // Spaces of keys of every length, empty keys between them, and more spaces than an order holds.
        let many = vec!["a"; 200].join(" ");
        let words = [
            "",
            "a b",
            "",
            "",
            "a b c d e",
            " ",
            "  ",
            many.as_str(),
            "",
            "x",
        ];
        let (offsets, data) = keys_of(&words);
        let want: Vec<u8> = words
            .iter()
            .map(|w| (w.matches(' ').count() + 1).min(127) as u8)
            .collect();
        assert_eq!(
            orders(&Keys {
                offsets: &offsets,
                data: &data
            }),
            want
        );
    }

    #[test]
    fn spaces_are_counted_as_bytes_one_by_one() {
        // Every slice of a buffer of spaces and bytes next to them (a borrow's and a carry's edges:
        // 0x1F, 0x21, 0xA0, 0x00, 0xFF), up to its very end, where no whole word can be loaded.
        let mut next = numbers(7);
        let alphabet = [b' ', b' ', b'a', 0x1F, 0x21, 0xA0, 0x00, 0xFF, 0x7F];
        let data: Vec<u8> = (0..70).map(|_| alphabet[next() % alphabet.len()]).collect();
        for start in 0..data.len() {
            for end in start..=data.len() {
                let expected = data[start..end].iter().filter(|&&b| b == b' ').count();
                assert_eq!(spaces(&data, start, end), expected, "{start}..{end}");
            }
        }
        let all = vec![b' '; 40]; // eight in a word: the most a byte of the sum holds
        assert_eq!(spaces(&all, 0, 40), 40);
        assert_eq!(spaces(&all, 3, 36), 33);
    }

    #[test]
    fn keys_order_and_equal_as_their_bytes() {
        // Keys of up to three words and a half, copies, copies with one byte changed, and prefixes.
        let mut next = numbers(11);
        let alphabet = [b'a', b'b', 0x00, 0xFF, b' '];
        let key = |next: &mut dyn FnMut() -> usize| -> Vec<u8> {
            (0..next() % 30)
                .map(|_| alphabet[next() % alphabet.len()])
                .collect()
        };
        for _ in 0..20_000 {
            let a = key(&mut next);
            let mut b = if next() % 2 == 0 {
                a.clone()
            } else {
                key(&mut next)
            };
            match next() % 3 {
                0 => b.truncate(next() % (b.len() + 1)),
                1 if !b.is_empty() => {
                    let at = next() % b.len();
                    b[at] = alphabet[next() % alphabet.len()];
                }
                _ => {}
            }
            assert_eq!(key_order(&a, &b), a.cmp(&b), "{a:?} {b:?}");
            assert_eq!(same_key(&a, &b), a == b, "{a:?} {b:?}");
        }
    }

    /// WORDS laid out as an Arrow string or binary array: (offsets, data). Tests of other modules lay out
    /// their columns here too.
    pub(crate) fn keys_of<W: AsRef<[u8]>>(words: &[W]) -> (Vec<i32>, Vec<u8>) {
        let mut offsets = vec![0];
        let mut data = Vec::new();
        for w in words {
            data.extend_from_slice(w.as_ref());
            offsets.push(data.len() as i32);
        }
        (offsets, data)
    }

    fn check<W: AsRef<[u8]> + std::fmt::Debug>(words: &[W]) {
        let (offsets, data) = keys_of(words);
        let keys = Keys {
            offsets: &offsets,
            data: &data,
        };
        let (order, starts) = merge_order(&keys);
        let rows: Vec<usize> = match &order {
            Some(o) => o.iter().map(|&r| r as usize).collect(),
            None => (0..words.len()).collect(),
        };
        let mut expected: Vec<usize> = (0..words.len()).collect();
        expected.sort_by_key(|&i| (words[i].as_ref(), i)); // stable: ties by row
        assert_eq!(rows, expected, "{words:?}");
        let sorted: Vec<&[u8]> = rows.iter().map(|&r| words[r].as_ref()).collect();
        let mut want = Vec::new();
        for at in 0..sorted.len() {
            if at == 0 || sorted[at] != sorted[at - 1] {
                want.push(at as i64);
            }
        }
        assert_eq!(starts, want, "{words:?}");
        // The order alone, where the groups are not asked for: the same order.
        assert_eq!(rows_in_order(&keys), order, "{words:?}");
    }

    #[test]
    fn prefix_stretches_end_where_the_first_character_or_the_byte_after_it_changes() {
        let words = [
            "a", "a b", "ab", "abc", "é", "éa", "éb", "中", "中文x", "中文y",
        ];
        let (offsets, data) = keys_of(&words);
        let keys = Keys {
            offsets: &offsets,
            data: &data,
        };
        let (starts, codes) = prefix_stretches(&keys);
        assert_eq!(starts, vec![0, 1, 2, 4, 5, 6, 7, 8]);
        assert!(codes.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(codes[0], u64::from(b'a') << 56);
        assert_eq!(codes[1], u64::from_be_bytes(*b"a \0\0\0\0\0\0"));
    }

    #[test]
    fn sorted_keys_need_no_order() {
        let (offsets, data) = keys_of(&["a", "a", "b b", "c"]);
        let (order, starts) = merge_order(&Keys {
            offsets: &offsets,
            data: &data,
        });
        assert!(order.is_none());
        assert_eq!(starts, vec![0, 2, 3]);
    }

    #[test]
    fn pieces_merge_in_byte_order() {
        check::<&str>(&[]);
        check(&["x"]);
        check(&["b", "d", "a", "c", "e", "a", "d"]);
        check(&["é", "z", "a", "é", "", "z"]);
        check(&["d", "c", "b", "a", "a", "b"]);
        check(&["a b", "a", "a", "a b", "ab"]);
    }

    #[test]
    fn groups_of_keys_equal_within_and_across_pieces() {
        // Two pieces (merged pairwise) and six (the tournament): keys repeated next to each other within a
        // piece, as a run cut by a chunk's end is, and keys each piece holds once that other pieces hold too,
        // stretches taken whole and rows taken in turn.
        check(&["a", "b", "b", "c", "b", "b", "c", "c", "d"]);
        check(&["a", "a", "b", "a", "b", "b"]);
        let mut next = numbers(5);
        for pieces in [2, 3, 6, 9] {
            for repeat in [0, 1, 3] {
                let mut words = Vec::new();
                for _ in 0..pieces {
                    let mut piece: Vec<String> = (0..next() % 400)
                        .map(|_| format!("w{}", next() % 300))
                        .collect();
                    piece.sort();
                    if repeat == 0 {
                        piece.dedup();
                    }
                    for word in piece {
                        for _ in 0..1 + usize::from(next() % 4 < repeat) {
                            words.push(word.clone());
                        }
                    }
                }
                check(&words);
            }
        }
        // Pieces that each hold a stretch of the merged order alone (run files of sorted input).
        let words: Vec<String> = (0..6)
            .rev()
            .flat_map(|piece| (0..200).map(move |i| format!("{piece} {i:03}")))
            .collect();
        check(&words);
    }

    #[test]
    fn shuffled_keys_sort_in_byte_order_past_heads_and_nul_bytes() {
        // Keys of a few bytes (NUL among them, which pads a head) after shared prefixes of about one or
        // two heads' length, and one longer than DEEPEST: keys that are others' prefixes, equal keys, keys
        // that tie past a head.
        let mut next = numbers(7);
        let bytes = ["a", "b", "\0", "\u{e9}", " "];
        let long = "x".repeat(DEEPEST + 5); // past the depth from which the rest is compared whole
        let prefixes = [
            "",
            "of the ",
            "aaaaaaaaaaaaaaa",
            "aaaaaaaaaaaaaaaa b",
            "the \0\0\0 of the way to",
            &long,
        ];
        for size in [2, 40, 1000, 5000] {
            let words: Vec<String> = (0..size)
                .map(|_| {
                    let (prefix, length) = (prefixes[next() % prefixes.len()], next() % 20);
                    let tail: String = (0..length).map(|_| bytes[next() % bytes.len()]).collect();
                    prefix.to_owned() + &tail
                })
                .collect();
            check(&words.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }

    #[test]
    fn sorted_pieces_merge_past_both_heads_of_their_cursors() {
        // Pieces sorted apart, more than TOURNAMENT_PIECES of them, few enough to be merged: keys that tie on
        // their first 8 bytes, on their first 16, end within or at either head, or hold NUL bytes (which pad
        // a head); and rank keys of equal counts.
        let mut next = numbers(13);
        let bytes = ["a", "b", "\0", "\u{e9}"];
        let prefixes = [
            "",
            "aaaaaaa",
            "aaaaaaaa",
            "aaaaaaaabbbbbbb",
            "aaaaaaaabbbbbbbb",
            "aaaaaaaa\0",
        ];
        for (pieces, size) in [(5, 40), (8, 100), (17, 60)] {
            let mut words = Vec::new();
            for _ in 0..pieces {
                let mut piece: Vec<String> = (0..size)
                    .map(|_| {
                        let (prefix, length) = (prefixes[next() % prefixes.len()], next() % 4);
                        let tail: String =
                            (0..length).map(|_| bytes[next() % bytes.len()]).collect();
                        prefix.to_owned() + &tail
                    })
                    .collect();
                piece.sort();
                words.extend(piece);
            }
            check(&words.iter().map(String::as_str).collect::<Vec<_>>());
        }
        let ranked: Vec<Vec<u8>> = (0..6)
            .flat_map(|_| {
                let mut piece: Vec<Vec<u8>> = (0..50)
                    .map(|_| {
                        let mut key = Vec::new();
                        let count = [0, 1, 1, 7, -1][next() % 5];
                        push_rank_key(&mut key, format!("t{}", next() % 30).as_bytes(), count);
                        key
                    })
                    .collect();
                piece.sort();
                piece
            })
            .collect();
        check(&ranked);
    }

    #[test]
    fn keys_that_share_leading_bytes_sort_by_the_bits_after_them() {
        // Every key begins as a Google file's names say (one letter pair), some end within the first
        // head or right after the pair, and their bytes after it run from NUL to 0xff: the buckets are
        // laid out past the shared bits, the sort within them decides the rest.
        let mut next = numbers(11);
        for (size, shared) in [
            (300, "th"),
            (20_000, "th"),
            (20_000, ""),
            (20_000, "the quick brown"),
        ] {
            let words: Vec<Vec<u8>> = (0..size)
                .map(|_| {
                    let tail: Vec<u8> = (0..next() % 12).map(|_| (next() % 256) as u8).collect();
                    [shared.as_bytes(), &tail].concat()
                })
                .collect();
            let (offsets, data) = keys_of(&words);
            let keys = Keys {
                offsets: &offsets,
                data: &data,
            };
            let (order, starts) = merge_order(&keys);
            let rows: Vec<usize> = order.unwrap().iter().map(|&r| r as usize).collect();
            let mut expected: Vec<usize> = (0..size).collect();
            expected.sort_by_key(|&i| (&words[i], i));
            assert_eq!(rows, expected, "{shared:?}, {size} keys");
            let firsts: Vec<i64> = (0..size)
                .filter(|&at| at == 0 || words[rows[at]] != words[rows[at - 1]])
                .map(|at| at as i64)
                .collect();
            assert_eq!(starts, firsts, "{shared:?}, {size} keys");
        }
    }

    #[test]
    fn rank_keys_sort_counted_tokens_by_descending_count_then_bytes() {
        let (offsets, data) = keys_of(&["b", "a", "c", "d", "aa"]);
        let counts = [5, 5, -1, 9, 0];
        let (offsets, bytes) = rank_keys(
            &Keys {
                offsets: &offsets,
                data: &data,
            },
            &counts,
        )
        .unwrap();
        let keys: Vec<&[u8]> = offsets
            .windows(2)
            .map(|w| &bytes[w[0] as usize..w[1] as usize])
            .collect();
        assert_eq!(
            &keys[0][..RANK_HEAD],
            &((i64::MAX - 5) as u64).to_be_bytes()
        );
        assert_eq!(&keys[0][RANK_HEAD..], b"b");
        assert_eq!(&keys[2][..RANK_HEAD], &[0xff; RANK_HEAD]);
        assert_eq!(
            &keys[3][..RANK_HEAD],
            &((i64::MAX - 9) as u64).to_be_bytes()
        );
        for (head, count) in [
            (rank_head(0), 0),
            (rank_head(i64::MAX), i64::MAX),
            (u64::MAX, -1),
        ] {
            assert_eq!(count_of_head(head), count);
        }
        assert!(rank_head(i64::MAX) < rank_head(1) && rank_head(0) < rank_head(-1));
        let mut ranked: Vec<usize> = (0..keys.len()).collect();
        ranked.sort_by_key(|&i| keys[i]);
        assert_eq!(ranked, vec![3, 1, 0, 4, 2]); // d (9), a and b (5), aa (0), c (none)
    }

    #[test]
    fn merged_tokens_keep_the_counts_of_their_largest_match_first_on_ties_through_the_order() {
        // rows "b" "a" "a" "b" "a" "c"; groups (in ORDER's positions): "a" [0, 3), "b" [3, 5), "c" [5, 6)
        let (offsets, data) = keys_of(&["b", "a", "a", "b", "a", "c"]);
        let keys = Keys {
            offsets: &offsets,
            data: &data,
        };
        let (matches, volumes) = ([-1, 7, 7, 5, -1, -1], [-1, 2, 3, 4, -1, -1]);
        let order = [4, 1, 2, 0, 3, 5];
        let merged = merge_tokens(&keys, &matches, &volumes, Some(&order), &[0, 3, 5]);
        assert_eq!(
            merged,
            (
                vec![0, 1, 2, 3],
                b"abc".to_vec(),
                vec![7, 5, -1],
                vec![2, 4, -1]
            )
        );
        let (offsets, data) = keys_of(&["a", "b", "b"]);
        let keys = Keys {
            offsets: &offsets,
            data: &data,
        };
        assert_eq!(
            merge_tokens(&keys, &[3, -1, 0], &[1, -1, 0], None, &[0, 1]),
            (vec![0, 1, 2], b"ab".to_vec(), vec![3, 0], vec![1, 0])
        );
        let none = Keys {
            offsets: &[0],
            data: &[],
        };
        assert_eq!(
            merge_tokens(&none, &[], &[], None, &[]),
            (vec![0], vec![], vec![], vec![])
        );
    }

    /// distinct_tokens of KEYS: (tokens as strings, their unigram rows).
    fn tokens_of(keys: &[&str], recent: Option<&mut RecentTokens>) -> (Vec<String>, Vec<i64>) {
        tokens_of_pieces(&[keys], recent)
    }

    /// distinct_tokens of the keys of PIECES, one piece after another.
    fn tokens_of_pieces(
        pieces: &[&[&str]],
        recent: Option<&mut RecentTokens>,
    ) -> (Vec<String>, Vec<i64>) {
        let laid: Vec<(Vec<i32>, Vec<u8>)> = pieces.iter().map(|keys| keys_of(keys)).collect();
        let pieces: Vec<Keys> = laid
            .iter()
            .map(|(offsets, data)| Keys { offsets, data })
            .collect();
        let (offsets, bytes, rows) = distinct_tokens(&pieces, recent);
        let tokens = offsets
            .windows(2)
            .map(|w| String::from_utf8(bytes[w[0] as usize..w[1] as usize].to_vec()).unwrap())
            .collect();
        (tokens, rows)
    }

    #[test]
    fn distinct_tokens_sorted_with_their_unigram_rows() {
        let (tokens, rows) = tokens_of(&["b a", "a", "c b a", "é", "a b", "d"], None);
        assert_eq!(tokens, ["a", "b", "c", "d", "\u{e9}"]);
        assert_eq!(rows, vec![1, -1, -1, 5, 3]);
    }

    #[test]
    fn distinct_tokens_of_pieces_are_those_of_their_rows_joined() {
        // The rows cut into two and three pieces at every place (an empty piece among them): the same tokens,
        // and unigram rows counted over the pieces in turn.
        let keys = ["b a", "a", "c b a", "\u{e9}", "a b", "d", "d", "b"];
        let whole = tokens_of(&keys, None);
        let pieces_of = |cuts: &[usize]| {
            let bounds: Vec<usize> = std::iter::once(0)
                .chain(cuts.iter().copied())
                .chain(std::iter::once(keys.len()))
                .collect();
            let pieces: Vec<&[&str]> = bounds.windows(2).map(|w| &keys[w[0]..w[1]]).collect();
            tokens_of_pieces(&pieces, None)
        };
        for a in 0..=keys.len() {
            assert_eq!(pieces_of(&[a]), whole, "cut at {a}");
            for b in a..=keys.len() {
                assert_eq!(pieces_of(&[a, b]), whole, "cuts at {a} and {b}");
            }
        }
    }

    #[test]
    fn distinct_tokens_leave_out_those_given_before_but_not_unigrams() {
        let mut recent = RecentTokens::new(1 << 12);
        let (tokens, _) = tokens_of(&["a b", "c"], Some(&mut recent));
        assert_eq!(tokens, ["a", "b", "c"]);
        // "a" and "b" given before: left out of n-grams' tokens ("a" given with its unigram's row). "c" was a
        // unigram, which is not checked in: given again. "d" given once, in its first n-gram.
        let (tokens, rows) = tokens_of(&["a", "b d", "c a", "d e", "e c"], Some(&mut recent));
        assert_eq!(tokens, ["a", "c", "d", "e"]);
        assert_eq!(rows, vec![0, -1, -1, -1]);
        // Without the cache, every token.
        assert_eq!(
            tokens_of(&["a", "b d", "c a", "d e", "e c"], None).0,
            ["a", "b", "c", "d", "e"]
        );
    }

    #[test]
    fn pieces_of_long_stretches() {
        // Four sorted pieces of 300 keys that interleave by stretches of 10 to 40, ties across pieces:
        // merged by galloping, where a random order is left to driftsort.
        let mut pieces: Vec<Vec<String>> = (0..4)
            .map(|piece| {
                let mut keys: Vec<String> = (0..300)
                    .map(|k| format!("{:04}-{}", (k / (10 * (piece + 1))) * 4 + piece % 2, k % 7))
                    .collect();
                keys.sort();
                keys
            })
            .collect();
        pieces.rotate_left(1);
        let all: Vec<String> = pieces.concat();
        check(&all.iter().map(String::as_str).collect::<Vec<_>>());
    }

    #[test]
    fn few_random_sorted_pieces() {
        // Few pieces over many rows take the galloping merge; keys repeat within and across pieces.
        let mut next = numbers(11);
        for pieces in 2..6 {
            let mut words: Vec<String> = Vec::new();
            for _ in 0..pieces {
                let mut piece: Vec<String> = (0..next() % 500 + 300)
                    .map(|_| format!("w{}", next() % 200))
                    .collect();
                piece.sort();
                words.extend(piece);
            }
            check(&words.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }

    #[test]
    fn many_pieces_of_long_stretches() {
        // 5 to 16 sorted pieces (the tournament's) that each hold stretches of 1 to 150 consecutive keys
        // of one sorted list, keys repeating within a stretch and across pieces: taken as stretches once a
        // piece has won GALLOP times, still a stable sort with its groups.
        let mut next = numbers(23);
        for pieces in 5..17 {
            let mut all: Vec<Vec<String>> = vec![Vec::new(); pieces];
            let mut key = 0;
            while all.iter().map(Vec::len).sum::<usize>() < 40 * pieces {
                let piece = next() % pieces;
                for _ in 0..next() % 150 + 1 {
                    key += usize::from(next() % 4 != 0); // a key a fourth of the time repeated
                    all[piece].push(format!("k{key:06}"));
                }
                if next() % 5 == 0 {
                    all[next() % pieces].push(format!("k{key:06}")); // the same key in another piece
                }
            }
            let words: Vec<String> = all.concat();
            check(&words.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }

    #[test]
    fn pieces_of_binary_keys_whose_heads_are_all_ones() {
        // Binary keys (a rank's bytes may be any) of eight 0xff bytes and a few more, or fewer, in 5 to 9
        // sorted pieces of 40 to 80 keys (the tournament's): every head is all ones, the head a piece that
        // is done has, and the tournament looks past it.
        let mut next = numbers(31);
        for pieces in 5..10 {
            let words: Vec<Vec<u8>> = (0..pieces)
                .flat_map(|_| {
                    let mut piece: Vec<Vec<u8>> = (0..next() % 40 + 40)
                        .map(|_| {
                            let mut key = vec![0xffu8; 8 - usize::from(next() % 8 == 0)];
                            key.extend((0..next() % 3).map(|_| [0u8, 0x7f, 0xff][next() % 3]));
                            key
                        })
                        .collect();
                    piece.sort();
                    piece
                })
                .collect();
            check(&words);
        }
    }

    #[test]
    fn rows_below_a_key_are_counted_as_by_a_scan() {
        // Sorted keys with repeats and prefixes of each other, and keys between, before and after them.
        let words = [
            "",
            "a",
            "a",
            "a b",
            "ab",
            "abcdefghij",
            "abcdefghij",
            "b",
            "\u{e9}",
        ];
        let (offsets, data) = keys_of(&words);
        let keys = Keys {
            offsets: &offsets,
            data: &data,
        };
        for key in [
            "",
            "a",
            "a a",
            "abcdefghi",
            "abcdefghij",
            "abcdefghijk",
            "b",
            "c",
            "\u{e9}",
            "\u{ff}",
        ] {
            let key = key.as_bytes();
            let below = words.iter().filter(|w| w.as_bytes() < key).count();
            let through = words.iter().filter(|w| w.as_bytes() <= key).count();
            assert_eq!(rows_below(&keys, key, false), Some(below), "{key:?}");
            assert_eq!(rows_below(&keys, key, true), Some(through), "{key:?}");
        }
    }

    #[test]
    fn rows_below_refuse_the_offsets_they_read_outside_the_data() {
        let (mut offsets, data) = keys_of(&["a", "b", "c"]);
        for (at, wrong) in [(2, 9), (2, -1), (1, 3)] {
            let good = offsets[at];
            offsets[at] = wrong; // past the data, negative, after the next key's start
            let keys = Keys {
                offsets: &offsets,
                data: &data,
            };
            assert_eq!(rows_below(&keys, b"b", false), None, "{offsets:?}");
            offsets[at] = good;
        }
        // The offsets of rows the search never reads are not looked at.
        offsets[3] = 99;
        let keys = Keys {
            offsets: &offsets,
            data: &data,
        };
        assert_eq!(rows_below(&keys, b"a", false), Some(0));
    }

    #[test]
    fn radix_sort_sorts_and_keeps_ties_in_place() {
        let mut next = numbers(7);
        let mut next = || next() as u64;
        // Few distinct keys (many ties), keys differing in high bytes only, and keys near u64::MAX.
        let items: Vec<(u64, u32)> = (0..5000u32)
            .map(|i| match i % 4 {
                0 => (next() % 7, i),
                1 => ((next() % 3) << 56, i),
                2 => (u64::MAX - next() % 5, i),
                _ => (next() % 1000, i),
            })
            .collect();
        let mut expected = items.clone();
        expected.sort_by_key(|&(key, _)| key); // stable
        let by_key = |items| radix_sort(items, |&(key, _): &(u64, u32)| key, 0, 64);
        assert_eq!(by_key(items), expected);
        assert_eq!(by_key(vec![]), vec![]);
        let ties = vec![(5, 0), (5, 1), (5, 2)];
        assert_eq!(by_key(ties.clone()), ties);
    }

    #[test]
    fn rank_order_packed_or_not_is_the_stable_order_of_heads() {
        let mut next = numbers(11);
        let mut next = || next() as i64;
        // Zipf-like counts (packed), the same with rows without a count or a count past 2^40 (pairs), counts
        // differing in bits apart only (one middle bit shared), few rows, one, none.
        let zipf: Vec<i64> = (0..70_000)
            .map(|_| 1_000_000 / (1 + next() % 50_000))
            .collect();
        let mut none = zipf.clone();
        none[17] = -1;
        let mut large = zipf.clone();
        large[3] = 1 << 45;
        let apart: Vec<i64> = (0..5000)
            .map(|_| (next() % 4) * 3 << 20 | next() % 3)
            .collect();
        for counts in [zipf, none, large, apart, vec![5, 5, 1], vec![7], vec![]] {
            let sorted = rank_order(&counts);
            let mut expected: Vec<(u64, u32)> = counts
                .iter()
                .zip(0u32..)
                .map(|(&c, row)| (rank_head(c), row))
                .collect();
            expected.sort_by_key(|&(head, _)| head); // stable
            let got: Vec<(u64, u32)> = (0..sorted.len()).map(|at| sorted.get(at)).collect();
            assert_eq!(got, expected);
        }
        assert!(matches!(rank_order(&[1, 2, 3]), RankOrder::Packed { .. }));
        assert!(matches!(rank_order(&[1, -1]), RankOrder::Pairs(_)));
    }

    #[test]
    fn ranked_rows_from_pieces_keep_token_order_on_equal_counts() {
        // Two pieces, ascending one after the other: "a" "b" | "c" "d" "e"
        let pieces = [keys_of(&["a", "b"]), keys_of(&["c", "d", "e"])];
        let tokens: Vec<Keys> = pieces
            .iter()
            .map(|(offsets, data)| Keys { offsets, data })
            .collect();
        let counts = [5, -1, 9, 5, 0];
        let volumes = [50, -1, 90, 51, 1];
        let Ranked {
            volumes: ranked_volumes,
            offsets,
            bytes,
        } = rank_in_order(&tokens, &counts, &volumes).unwrap();
        let order = [2, 0, 3, 4, 1]; // c (9), a and d (5), e (0), b (none)
        assert_eq!(ranked_volumes, order.map(|row| volumes[row]));
        let (all_offsets, all_data) = keys_of(&["a", "b", "c", "d", "e"]);
        let all = Keys {
            offsets: &all_offsets,
            data: &all_data,
        };
        let (key_offsets, key_bytes) = rank_keys(&all, &counts).unwrap();
        let keys = Keys {
            offsets: &key_offsets,
            data: &key_bytes,
        };
        let ranked = Keys {
            offsets: &offsets,
            data: &bytes,
        };
        let got: Vec<&[u8]> = (0..ranked.len()).map(|i| ranked.get(i)).collect();
        let expected: Vec<&[u8]> = order.iter().map(|&row| keys.get(row)).collect();
        assert_eq!(got, expected);
        let empty = rank_in_order(&[], &[], &[]).unwrap();
        assert!(empty.volumes.is_empty() && empty.bytes.is_empty());
        assert_eq!(empty.offsets, vec![0]);
    }

    #[test]
    fn taken_keys_leave_out_their_heads() {
        let (offsets, data) = keys_of(&["xxa", "xxbb", "xx"]);
        let keys = Keys {
            offsets: &offsets,
            data: &data,
        };
        assert_eq!(
            take_keys(&keys, Some(&[1, 2, 0]), 2, None),
            Some((vec![0, 2, 2, 3], b"bba".to_vec()))
        );
        assert_eq!(
            take_keys(&keys, None, 0, None),
            Some((vec![0, 3, 7, 9], b"xxaxxbbxx".to_vec()))
        );
        assert_eq!(take_keys(&keys, None, 3, None), None); // "xx" is shorter than its head
    }

    #[test]
    fn taken_rank_keys_give_their_counts_back() {
        let mut bytes = Vec::new();
        let mut ends = vec![0];
        for (token, count) in [(&b"a"[..], 5), (b"bb", -1), (b"", 0), (b"c", i64::MAX)] {
            push_rank_key(&mut bytes, token, count);
            ends.push(bytes.len() as i32);
        }
        let keys = Keys {
            offsets: &ends,
            data: &bytes,
        };
        let mut counts = Vec::new();
        assert_eq!(
            take_keys(&keys, Some(&[3, 1, 0, 2]), RANK_HEAD, Some(&mut counts)),
            Some((vec![0, 1, 3, 4, 4], b"cbba".to_vec()))
        );
        assert_eq!(counts, vec![i64::MAX, -1, 5, 0]);
        let (offsets, data) = keys_of(&["xxxxxxx"]); // shorter than a head
        let short = Keys {
            offsets: &offsets,
            data: &data,
        };
        assert_eq!(take_keys(&short, None, 0, Some(&mut counts)), None);
    }

    #[test]
    fn heads_that_tie() {
        // Keys that share their first 8 bytes, or end within them, or hold zero bytes, which pad a
        // head: the heads tie and the lengths or the bytes after them decide. Sorted pieces of 32
        // to 91 rows, few (merged pairwise) and more (by a tournament), then the same keys reversed
        // (sorted).
        let mut next = numbers(5);
        let vocabulary = [
            "",
            "\0",
            "a",
            "a\0",
            "a\0\0",
            "abcdefgh",
            "abcdefgh\0",
            "abcdefghi",
            "abcdefghij",
            "abcdefgg",
            "abcdefgh\0a",
            "abcdefgha",
            "\0\0\0\0\0\0\0\0",
            "\0\0\0\0\0\0\0\0\0",
        ];
        for pieces in [2, 3, 5, 9, 40] {
            let mut words: Vec<&str> = Vec::new();
            for _ in 0..pieces {
                let mut piece: Vec<&str> = (0..next() % 60 + 32)
                    .map(|_| vocabulary[next() % vocabulary.len()])
                    .collect();
                piece.sort();
                words.extend(piece);
            }
            check(&words);
            words.reverse();
            check(&words);
        }
    }

    #[test]
    fn random_pieces() {
        let mut next = numbers(7);
        let vocabulary = ["", "a", "ab", "b", "b a", "ba", "c", "ü", "zz"];
        for _ in 0..200 {
            let words: Vec<&str> = (0..next() % 40)
                .map(|_| vocabulary[next() % vocabulary.len()])
                .collect();
            check(&words);
        }
    }
}
