//! Rows of run tables merged one row per n-gram (transforms/merge.py, merge_runs): the groups of rows
//! merge_order gives, each made into its key, its two sums and its year set in one pass over them.
//! (Three passes and a take, one a column, were 65 ns a row of the 105 that merge_runs took, each
//! looking up every row again through the merge's order.)

use crate::masks;
use crate::order::Keys;
use crate::prefetch;
use crate::runs::MASK_BYTES;

/// Rows ahead of the one being merged whose bytes are asked for (`fetch_ahead`).
const AHEAD: usize = 16;

/// The columns of the merged rows, as Arrow lays them out.
pub struct Merged {
    pub key_offsets: Vec<i32>,
    pub key_bytes: Vec<u8>,
    pub matches: Vec<i64>,
    pub volumes: Vec<i64>,
    pub mask_offsets: Vec<i32>,
    pub mask_bytes: Vec<u8>,
}

/// Why a group's row cannot be made: a sum past int64 (the group and the column: 0 matches,
/// 1 volumes), named by the caller; or an int32 offset passed.
pub enum Unmade {
    Overflow(usize, usize),
    TooLarge,
}

/// The merged row of each group of rows: group g holds the rows at positions `starts[g]` up to the
/// next start (the last: up to the rows' count) of `order` (None: the rows themselves), whose keys
/// are equal. Its key is its first row's; its matches and volumes the sums of its rows'; its year
/// set the OR of its rows' span masks (masks.rs), which lie in MASK_CHUNKS, consecutive pieces of one
/// column that `masks::valid` accepts.
pub fn merge_groups(
    keys: &Keys,
    matches: &[i64],
    volumes: &[i64],
    mask_chunks: &[Keys],
    order: Option<&[i64]>,
    starts: &[i64],
) -> Result<Merged, Unmade> {
    let rows = keys.len();
    let groups = starts.len();
    let mut merged = Merged {
        key_offsets: Vec::with_capacity(groups + 1),
        key_bytes: Vec::with_capacity(keys.data.len()),
        matches: Vec::with_capacity(groups),
        volumes: Vec::with_capacity(groups),
        mask_offsets: Vec::with_capacity(groups + 1),
        mask_bytes: Vec::with_capacity(mask_chunks.iter().map(|c| c.data.len()).sum()),
    };
    merged.key_offsets.push(0);
    merged.mask_offsets.push(0);
    let mut firsts = Vec::with_capacity(mask_chunks.len() + 1); // each chunk's first row, then the end
    firsts.push(0usize);
    for chunk in mask_chunks {
        firsts.push(firsts.last().unwrap() + chunk.len());
    }
    let mut chunk = 0; // the chunk of the last row looked up
    let mut span = |row: usize| {
        if row < firsts[chunk] || row >= firsts[chunk + 1] {
            chunk = firsts.partition_point(|&first| first <= row) - 1;
        }
        mask_chunks[chunk].get(row - firsts[chunk])
    };
    let row = |at: usize| order.map_or(at, |o| o[at] as usize);
    let offset = |len: usize| i32::try_from(len).map_err(|_| Unmade::TooLarge);
    // Rows in an order (a sort of shuffled rows) lie anywhere in buffers larger than the caches, and each
    // look-up waited for memory (memmove of a key's bytes was a sixth of such a read stage's CPU): the key AHEAD
    // rows on is asked for first, its offset and values twice as far on. (The year spans too cost a search of
    // their chunks a row, more than they saved where the order is a merge of a few sorted pieces.)
    let fetch_ahead = |at: usize| {
        let Some(o) = order else { return };
        if let Some(&far) = o.get(at + 2 * AHEAD) {
            let far = far as usize;
            prefetch::fetch(&keys.offsets[far]);
            prefetch::fetch(&matches[far]);
            prefetch::fetch(&volumes[far]);
        }
        if let Some(&near) = o.get(at + AHEAD) {
            prefetch::fetch(
                keys.data
                    .as_ptr()
                    .wrapping_add(keys.offsets[near as usize] as usize),
            );
        }
    };
    for (g, &start) in starts.iter().enumerate() {
        let (first, end) = (
            start as usize,
            starts.get(g + 1).map_or(rows, |&next| next as usize),
        );
        fetch_ahead(first);
        let head = row(first);
        merged.key_bytes.extend_from_slice(keys.get(head));
        merged.key_offsets.push(offset(merged.key_bytes.len())?);
        if end == first + 1 {
            // A group of one row, most of a merge's: its values and span as they are.
            merged.matches.push(matches[head]);
            merged.volumes.push(volumes[head]);
            merged.mask_bytes.extend_from_slice(span(head));
        } else {
            let (mut m, mut v) = (0i64, 0i64);
            let mut mask = [0u8; MASK_BYTES];
            for at in first..end {
                let r = row(at);
                m = m.checked_add(matches[r]).ok_or(Unmade::Overflow(g, 0))?;
                v = v.checked_add(volumes[r]).ok_or(Unmade::Overflow(g, 1))?;
                masks::or_into(span(r), &mut mask);
            }
            merged.matches.push(m);
            merged.volumes.push(v);
            masks::push_span(&mask, &mut merged.mask_bytes);
        }
        merged.mask_offsets.push(offset(merged.mask_bytes.len())?);
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: [i32; 5] = [0, 1, 2, 3, 4];

    #[test]
    fn each_group_is_its_first_key_its_sums_and_the_or_of_its_years() {
        // Rows "b" "a" "b" "a", in key order rows 1 3 0 2; years: row 0 bit 0, row 1 bit 9, row 2
        // bit 1, row 3 bit 8, each as its span (the index of its first byte, then the bytes).
        let keys = Keys {
            offsets: &ROWS,
            data: b"baba",
        };
        let spans = Keys {
            offsets: &[0, 2, 4, 6, 8],
            data: &[0, 0b1, 1, 0b10, 0, 0b10, 1, 0b1],
        };
        let order = [1, 3, 0, 2];
        let Ok(merged) = merge_groups(
            &keys,
            &[1, 2, 3, 4],
            &[10, 20, 30, 40],
            &[spans],
            Some(&order),
            &[0, 2],
        ) else {
            panic!("not merged")
        };
        assert_eq!(
            (merged.key_offsets, merged.key_bytes),
            (vec![0, 1, 2], b"ab".to_vec())
        );
        assert_eq!((merged.matches, merged.volumes), (vec![6, 4], vec![60, 40]));
        assert_eq!(merged.mask_offsets, [0, 2, 4]);
        assert_eq!(merged.mask_bytes, [1, 0b11, 0, 0b11]);
    }

    #[test]
    fn a_group_of_one_row_is_that_row_and_the_masks_may_lie_in_chunks() {
        let keys = Keys {
            offsets: &[0, 2, 5],
            data: "ab\u{e9}x".as_bytes(),
        };
        let (first, second) = (
            Keys {
                offsets: &[0, 3],
                data: &[2, 0b100, 0b1],
            },
            Keys {
                offsets: &[0, 1],
                data: &[0],
            },
        );
        let Ok(merged) = merge_groups(&keys, &[7, 8], &[1, 2], &[first, second], None, &[0, 1])
        else {
            panic!("not merged")
        };
        assert_eq!(
            (merged.key_offsets, merged.key_bytes),
            (vec![0, 2, 5], "ab\u{e9}x".as_bytes().to_vec())
        );
        assert_eq!((merged.matches, merged.volumes), (vec![7, 8], vec![1, 2]));
        assert_eq!(
            (merged.mask_offsets, merged.mask_bytes),
            (vec![0, 3, 4], vec![2, 0b100, 0b1, 0])
        );
    }

    #[test]
    fn a_sum_past_int64_names_its_group_and_column() {
        let keys = Keys {
            offsets: &ROWS[..4],
            data: b"abb",
        };
        for (matches, volumes, column) in [
            ([1, i64::MAX, 1], [1, 1, 1], 0),
            ([1, 1, 1], [1, 1, i64::MAX], 1),
        ] {
            let spans = Keys {
                offsets: &ROWS[..4],
                data: &[0, 0, 0],
            };
            match merge_groups(&keys, &matches, &volumes, &[spans], None, &[0, 1]) {
                Err(Unmade::Overflow(1, c)) => assert_eq!(c, column),
                _ => panic!("no overflow named"),
            }
        }
    }
}
