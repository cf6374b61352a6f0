//! Parquet files of flat columns, the n-gram part files' and the vocabulary's (transforms/sinks.py), encoded
//! here as Arrow's writer encodes them: strings DELTA_BYTE_ARRAY, integers DELTA_BINARY_PACKED, pages of the
//! columns sinks.py asks for compressed with zstd, min/max statistics for every column chunk. Integer columns
//! may be optional (a vocabulary's counts, null for a token with no unigram): their pages begin with the
//! rows' definition levels, and hold the values of the rows that have one.
//!
//! Stream contract: `File::header`, then `File::row_group` for each row group's columns (their bytes are
//! appended to the file in that order), then `File::footer`; each returns the bytes to append.
//!
//! Why not Arrow's writer: its DELTA_BYTE_ARRAY encoder spent 54 ns a row on 2-grams of about 13 bytes (the
//! common prefixes, two length streams and the suffixes through generic builders) and its integers' bit
//! packing 5-7 ns a value, most of an import's Parquet time; here a prefix is found a word at a time, the
//! statistics of sorted keys are their first and last, and a miniblock is packed 64 bits at a time.

use crate::order::Keys;

/// A column's values as the file stores them.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    /// UTF-8 strings (BYTE_ARRAY, logical type STRING).
    Utf8,
    /// Signed integers of 8, 16, 32 or 64 bits (INT32 for up to 32, INT64 for 64).
    Int(u8),
}

impl Kind {
    fn physical(self) -> i32 {
        match self {
            Kind::Utf8 => 6,    // BYTE_ARRAY
            Kind::Int(64) => 2, // INT64
            Kind::Int(_) => 1,  // INT32
        }
    }

    fn encoding(self) -> i32 {
        match self {
            Kind::Utf8 => DELTA_BYTE_ARRAY,
            Kind::Int(_) => DELTA_BINARY_PACKED,
        }
    }
}

/// One column of the file: its name, kind, whether its pages are compressed (zstd), and whether it is
/// optional (may hold nulls: integers only).
pub struct Spec {
    pub name: String,
    pub kind: Kind,
    pub zstd: bool,
    pub optional: bool,
}

/// One column's values in a row group: strings, or integers of WIDTH bytes each, little-endian, with (an
/// optional column's) DEFINED, a byte a row, 0 for a null (whose bytes in BYTES are not read; None: no null).
pub enum Values<'a> {
    Strings(Keys<'a>),
    Ints {
        bytes: &'a [u8],
        width: usize,
        defined: Option<&'a [u8]>,
    },
}

impl Values<'_> {
    pub fn len(&self) -> usize {
        match self {
            Values::Strings(keys) => keys.len(),
            Values::Ints { bytes, width, .. } => bytes.len() / width,
        }
    }
}

/// Buffers a file's pages are made in, kept from page to page.
#[derive(Default)]
struct Scratch {
    body: Vec<u8>,
    compressed: Vec<u8>,
    ints: Vec<i64>,
    /// A page's values of an optional column, its nulls left out.
    kept: Vec<i64>,
    prefixes: Vec<i64>,
    suffixes: Vec<i64>,
}

const RLE: i32 = 3;
const DELTA_BINARY_PACKED: i32 = 5;
const DELTA_BYTE_ARRAY: i32 = 7;
const ZSTD: i32 = 6;
/// Arrow's level for zstd when none is given: the same files, byte for byte in their pages.
pub const ZSTD_LEVEL: i32 = 1;
/// A data page ends once its values' bytes reach this, as Arrow's do (its default page size).
const PAGE_BYTES: usize = 1 << 20;
/// A min or max statistic longer than this is left out, as Arrow leaves it out.
const MAX_STATISTICS_BYTES: usize = 4096;

/// What the footer records of a column chunk.
struct Chunk {
    offset: u64,
    compressed: u64,
    uncompressed: u64,
    min_max: Option<(Vec<u8>, Vec<u8>)>,
    nulls: u64,
}

struct RowGroup {
    rows: usize,
    chunks: Vec<Chunk>,
}

/// A file being written: its columns, where the next bytes go, and what its footer will list.
pub struct File {
    specs: Vec<Spec>,
    key_value: Vec<(String, String)>,
    created_by: String,
    position: u64,
    row_groups: Vec<RowGroup>,
    compressor: zstd::bulk::Compressor<'static>,
    scratch: Scratch,
}

impl File {
    pub fn new(
        specs: Vec<Spec>,
        key_value: Vec<(String, String)>,
        created_by: String,
    ) -> std::io::Result<File> {
        Ok(File {
            specs,
            key_value,
            created_by,
            position: 0,
            row_groups: Vec::new(),
            compressor: zstd::bulk::Compressor::new(ZSTD_LEVEL)?,
            scratch: Scratch::default(),
        })
    }

    pub fn specs(&self) -> &[Spec] {
        &self.specs
    }

    pub fn header(&mut self) -> Vec<u8> {
        self.position = 4;
        b"PAR1".to_vec()
    }

    /// The bytes of a row group of COLUMNS (one per spec, of their kinds, as many rows each).
    pub fn row_group(&mut self, columns: &[Values]) -> std::io::Result<Vec<u8>> {
        let rows = columns.first().map_or(0, Values::len);
        let mut out = Vec::new();
        let mut chunks = Vec::with_capacity(columns.len());
        for (at, values) in columns.iter().enumerate() {
            let offset = self.position + out.len() as u64;
            let spec = &self.specs[at];
            let (kind, zstd, optional) = (spec.kind, spec.zstd, spec.optional);
            let (uncompressed, min_max, nulls) =
                self.chunk(values, kind, zstd, optional, &mut out)?;
            let compressed = self.position + out.len() as u64 - offset;
            chunks.push(Chunk {
                offset,
                compressed,
                uncompressed,
                min_max,
                nulls,
            });
        }
        self.position += out.len() as u64;
        self.row_groups.push(RowGroup { rows, chunks });
        Ok(out)
    }

    /// One column chunk's pages appended to OUT: (its bytes uncompressed, headers included; min and max; its
    /// nulls). An OPTIONAL column's pages begin with their rows' definition levels.
    fn chunk(
        &mut self,
        values: &Values,
        kind: Kind,
        zstd: bool,
        optional: bool,
        out: &mut Vec<u8>,
    ) -> std::io::Result<(u64, Option<(Vec<u8>, Vec<u8>)>, u64)> {
        let narrow = kind.physical() == 1;
        let scratch = &mut self.scratch;
        let (encoding, mut min_max, nulls) = match values {
            Values::Strings(keys) => (DELTA_BYTE_ARRAY, first_and_last(keys), 0),
            Values::Ints {
                bytes,
                width,
                defined,
            } => {
                widened(bytes, *width, &mut scratch.ints);
                match defined {
                    None => (DELTA_BINARY_PACKED, int_min_max(&scratch.ints, narrow), 0),
                    Some(defined) => {
                        scratch.kept.clear();
                        scratch.kept.extend(kept(&scratch.ints, defined));
                        let nulls = (scratch.ints.len() - scratch.kept.len()) as u64;
                        (
                            DELTA_BINARY_PACKED,
                            int_min_max(&scratch.kept, narrow),
                            nulls,
                        )
                    }
                }
            }
        };
        let (mut start, mut uncompressed, mut ascending) = (0, 0, true);
        while start < values.len() {
            let stop = page_end(values, start);
            scratch.body.clear();
            match values {
                Values::Strings(keys) => {
                    let after = start == 0 || keys.get(start - 1) <= keys.get(start);
                    ascending &= after && delta_byte_array(keys, start, stop, scratch);
                }
                Values::Ints { defined, .. } => {
                    let defined = defined.map(|defined| &defined[start..stop]);
                    if optional {
                        definition_levels(defined, stop - start, &mut scratch.body);
                    }
                    match defined {
                        None => delta_binary_packed(
                            &scratch.ints[start..stop],
                            narrow,
                            &mut scratch.body,
                        ),
                        Some(defined) => {
                            scratch.kept.clear();
                            scratch
                                .kept
                                .extend(kept(&scratch.ints[start..stop], defined));
                            delta_binary_packed(&scratch.kept, narrow, &mut scratch.body)
                        }
                    }
                }
            }
            let page: &[u8] = if zstd {
                let bound = zstd::zstd_safe::compress_bound(scratch.body.len());
                scratch.compressed.clear();
                scratch.compressed.reserve(bound);
                self.compressor
                    .compress_to_buffer(&scratch.body, &mut scratch.compressed)?;
                &scratch.compressed
            } else {
                &scratch.body
            };
            let header = page_header(stop - start, encoding, scratch.body.len(), page.len());
            uncompressed += (header.len() + scratch.body.len()) as u64;
            out.extend_from_slice(&header);
            out.extend_from_slice(page);
            start = stop;
        }
        if let (Values::Strings(keys), false) = (values, ascending) {
            min_max = least_and_greatest(keys);
        }
        Ok((uncompressed, min_max, nulls))
    }

    /// The file's metadata, its length and the closing magic.
    pub fn footer(&self) -> Vec<u8> {
        let mut t = Thrift::new();
        t.i32(1, 2); // version
        t.list(2, STRUCT, self.specs.len() + 1);
        t.element();
        t.binary(4, b"schema");
        t.i32(5, self.specs.len() as i32);
        t.end();
        for spec in &self.specs {
            t.element();
            t.i32(1, spec.kind.physical());
            t.i32(3, spec.optional as i32); // REQUIRED (0) or OPTIONAL (1)
            t.binary(4, spec.name.as_bytes());
            match spec.kind {
                Kind::Utf8 => {
                    t.i32(6, 0); // UTF8
                    t.begin(10);
                    t.begin(1); // STRING
                    t.end();
                    t.end();
                }
                Kind::Int(64) => {}
                Kind::Int(bits) => {
                    t.i32(6, [15, 16, 17][(bits / 16) as usize]); // INT_8, INT_16, INT_32
                    t.begin(10);
                    t.begin(10); // INTEGER
                    t.byte(1, bits as i8);
                    t.bool(2, true);
                    t.end();
                    t.end();
                }
            }
            t.end();
        }
        t.i64(3, self.row_groups.iter().map(|g| g.rows as i64).sum());
        t.list(4, STRUCT, self.row_groups.len());
        for (ordinal, group) in self.row_groups.iter().enumerate() {
            t.element();
            t.list(1, STRUCT, group.chunks.len());
            for (chunk, spec) in group.chunks.iter().zip(&self.specs) {
                t.element();
                t.i64(2, (chunk.offset + chunk.compressed) as i64); // as Arrow: the chunk's end
                t.begin(3);
                t.i32(1, spec.kind.physical());
                t.list(2, I32, 2);
                t.list_i32(RLE);
                t.list_i32(spec.kind.encoding());
                t.list(3, BINARY, 1);
                t.list_binary(spec.name.as_bytes());
                t.i32(4, if spec.zstd { ZSTD } else { 0 });
                t.i64(5, group.rows as i64);
                t.i64(6, chunk.uncompressed as i64);
                t.i64(7, chunk.compressed as i64);
                t.i64(9, chunk.offset as i64);
                t.begin(12);
                t.i64(3, chunk.nulls as i64); // null count
                                              // Each of min and max left out when longer than MAX_STATISTICS_BYTES, as Arrow leaves it out
                let kept = |value: &Vec<u8>| value.len() <= MAX_STATISTICS_BYTES;
                if let Some((min, max)) = &chunk.min_max {
                    if kept(max) {
                        t.binary(5, max);
                    }
                    if kept(min) {
                        t.binary(6, min);
                    }
                }
                t.end();
                t.end();
                t.end();
            }
            t.i64(2, group.chunks.iter().map(|c| c.uncompressed as i64).sum());
            t.i64(3, group.rows as i64);
            t.i64(5, group.chunks.first().map_or(0, |c| c.offset as i64));
            t.i64(6, group.chunks.iter().map(|c| c.compressed as i64).sum());
            t.i16(7, ordinal as i16);
            t.end();
        }
        t.list(5, STRUCT, self.key_value.len());
        for (key, value) in &self.key_value {
            t.element();
            t.binary(1, key.as_bytes());
            t.binary(2, value.as_bytes());
            t.end();
        }
        t.binary(6, self.created_by.as_bytes());
        t.list(7, STRUCT, self.specs.len());
        for _ in &self.specs {
            t.element();
            t.begin(1); // TYPE_ORDER: min and max compare as the type's values
            t.end();
            t.end();
        }
        let mut out = t.finish();
        let length = out.len() as u32;
        out.extend_from_slice(&length.to_le_bytes());
        out.extend_from_slice(b"PAR1");
        out
    }
}

/// The end of the page that begins at row START: PAGE_BYTES of its values' bytes, or the column's end.
fn page_end(values: &Values, start: usize) -> usize {
    match values {
        Values::Ints { .. } => values.len().min(start + PAGE_BYTES / 8),
        Values::Strings(keys) => {
            let limit = keys.offsets[start] as i64 + PAGE_BYTES as i64;
            let within = keys.offsets[start + 1..].partition_point(|&o| (o as i64) < limit);
            // rows start.. up to the first whose end reaches the limit, that one included
            (start + within + 1).min(keys.len())
        }
    }
}

/// A DATA_PAGE header (Parquet's thrift, compact protocol) of ROWS values of ENCODING (nulls among them, in an
/// optional column's page: its definition levels come first, in the page's bytes).
fn page_header(rows: usize, encoding: i32, uncompressed: usize, compressed: usize) -> Vec<u8> {
    let mut t = Thrift::new();
    t.i32(1, 0); // DATA_PAGE
    t.i32(2, uncompressed as i32);
    t.i32(3, compressed as i32);
    t.begin(5);
    t.i32(1, rows as i32);
    t.i32(2, encoding);
    t.i32(3, RLE);
    t.i32(4, RLE);
    t.end();
    t.finish()
}

/// The values of INTS whose row is DEFINED (non-zero).
fn kept<'a>(ints: &'a [i64], defined: &'a [u8]) -> impl Iterator<Item = i64> + 'a {
    ints.iter()
        .zip(defined)
        .filter(|(_, &d)| d != 0)
        .map(|(&v, _)| v)
}

/// The definition levels of an optional column's ROWS rows, DEFINED (a byte a row, 0 for a null; None: none
/// is) appended to OUT, as a data page (v1) holds them: their bytes' length (4, little-endian), then runs of
/// one level each in the RLE/bit-packed hybrid at bit width 1 (a vocabulary's nulls are its last rows: a run or
/// two a page).
fn definition_levels(defined: Option<&[u8]>, rows: usize, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    let mut run = |level: bool, count: usize| {
        uleb(out, (count as u64) << 1); // an RLE run's header: its length, and 0 in its lowest bit
        out.push(level as u8);
    };
    match defined {
        None if rows > 0 => run(true, rows),
        None => {}
        Some(defined) => {
            let mut start = 0;
            while start < defined.len() {
                let level = defined[start] != 0;
                let length = defined[start..]
                    .iter()
                    .position(|&d| (d != 0) != level)
                    .unwrap_or(defined.len() - start);
                run(level, length);
                start += length;
            }
        }
    }
    let length = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&length.to_le_bytes());
}

/// (min, max) of string keys that ascend, as sorted n-grams do: their first and last.
fn first_and_last(keys: &Keys) -> Option<(Vec<u8>, Vec<u8>)> {
    let n = keys.len();
    (n > 0).then(|| (keys.get(0).to_vec(), keys.get(n - 1).to_vec()))
}

/// (min, max) of string keys in any order.
fn least_and_greatest(keys: &Keys) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut all = (0..keys.len()).map(|i| keys.get(i));
    let first = all.next()?;
    let (min, max) = all.fold((first, first), |(lo, hi), k| (lo.min(k), hi.max(k)));
    Some((min.to_vec(), max.to_vec()))
}

/// (min, max) of integers, as the physical type's little-endian bytes: 4 of them when NARROW (INT32).
fn int_min_max(ints: &[i64], narrow: bool) -> Option<(Vec<u8>, Vec<u8>)> {
    let (&first, rest) = ints.split_first()?;
    let (min, max) = rest
        .iter()
        .fold((first, first), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let bytes = |v: i64| v.to_le_bytes()[..if narrow { 4 } else { 8 }].to_vec();
    Some((bytes(min), bytes(max)))
}

/// The bytes two keys share at their start, compared a word at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_le_bytes(a[i..i + 8].try_into().unwrap())
            ^ u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// The bytes that DATA's ranges A and B (B after A) share at their start, compared a word at a time: where
/// fewer than 8 bytes of a key are left, a word is still read where the data holds one (keys are short: most
/// of a word-by-word comparison was its last bytes, compared one at a time).
fn shared_prefix(data: &[u8], a: std::ops::Range<usize>, b: std::ops::Range<usize>) -> usize {
    let n = a.len().min(b.len());
    let word = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap());
    let mut i = 0;
    while i < n {
        if b.start + i + 8 > data.len() {
            return i + common_prefix(
                &data[a.start + i..a.start + n],
                &data[b.start + i..b.start + n],
            );
        }
        let x = word(a.start + i) ^ word(b.start + i);
        if x != 0 {
            return n.min(i + (x.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    n
}

/// DELTA_BYTE_ARRAY of keys START..STOP into the scratch's body: each key's prefix shared with the key
/// before (none for the page's first) and the lengths of the rest, DELTA_BINARY_PACKED, then the rests' bytes;
/// whether the keys ascend (each at or above the one before), which the shared prefix tells.
fn delta_byte_array(keys: &Keys, start: usize, stop: usize, scratch: &mut Scratch) -> bool {
    let (prefixes, suffixes) = (&mut scratch.prefixes, &mut scratch.suffixes);
    prefixes.clear();
    suffixes.clear();
    let (data, offsets) = (keys.data, &keys.offsets[start..=stop]);
    let (mut previous, mut ascending, mut rest_bytes) = (0..0, true, 0);
    for bounds in offsets.windows(2) {
        let key = bounds[0] as usize..bounds[1] as usize;
        let shared = shared_prefix(data, previous.clone(), key.clone());
        let (before, this) = (&data[previous.clone()], &data[key.clone()]);
        ascending &=
            shared == before.len() || (shared < this.len() && this[shared] > before[shared]);
        prefixes.push(shared as i64);
        suffixes.push((this.len() - shared) as i64);
        rest_bytes += this.len() - shared;
        previous = key;
    }
    let body = &mut scratch.body;
    delta_binary_packed(prefixes, true, body);
    delta_binary_packed(suffixes, true, body);
    // The rests, most a few bytes: each copied as a whole word or two where the data has them, not by a call
    // to memcpy a key (a third of the encoding's time).
    body.reserve(rest_bytes + 16);
    let (mut at, base) = (body.len(), body.as_mut_ptr());
    for (bounds, &shared) in offsets.windows(2).zip(prefixes.iter()) {
        let (from, to) = (bounds[0] as usize + shared as usize, bounds[1] as usize);
        let rest = to - from;
        // SAFETY: FROM..TO lies within the data (the offsets were checked, Keys::valid), a copy of 16 bytes
        // from FROM only where the data holds them, and the body has room for every rest and 16 bytes more.
        unsafe {
            if rest <= 16 && from + 16 <= data.len() {
                std::ptr::copy_nonoverlapping(data.as_ptr().add(from), base.add(at), 16);
            } else {
                std::ptr::copy_nonoverlapping(data.as_ptr().add(from), base.add(at), rest);
            }
        }
        at += rest;
    }
    // SAFETY: every byte up to AT was written just now.
    unsafe { body.set_len(at) };
    ascending
}

/// Signed integers of WIDTH bytes each, little-endian, widened into INTS.
fn widened(bytes: &[u8], width: usize, ints: &mut Vec<i64>) {
    ints.clear();
    match width {
        1 => ints.extend(bytes.iter().map(|&b| b as i8 as i64)),
        2 => ints.extend(
            bytes
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]) as i64),
        ),
        4 => ints.extend(
            bytes
                .chunks_exact(4)
                .map(|b| i32::from_le_bytes(b.try_into().unwrap()) as i64),
        ),
        _ => ints.extend(
            bytes
                .chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().unwrap())),
        ),
    }
}

const BLOCK: usize = 128;
const MINIBLOCKS: usize = 4;
const MINIBLOCK: usize = BLOCK / MINIBLOCKS;

/// DELTA_BINARY_PACKED of VALUES: a header (block size, miniblocks a block, values, the first value), then
/// per block of 128 differences their least (zigzag varint), the bit width of each miniblock of 32, and the
/// miniblocks, each difference less the least bit-packed. The differences wrap as integers of the column's
/// physical type: 32 bits when NARROW (INT32), as its readers add them up.
fn delta_binary_packed(values: &[i64], narrow: bool, out: &mut Vec<u8>) {
    uleb(out, BLOCK as u64);
    uleb(out, MINIBLOCKS as u64);
    uleb(out, values.len() as u64);
    let Some((&first, rest)) = values.split_first() else {
        uleb(out, 0);
        return;
    };
    uleb(out, zigzag(first));
    let mut previous = first;
    // A block's differences in a whole array, so that every pass over them is one of constant length, which
    // the compiler keeps in vector registers; a short last block is padded with its least difference, which
    // packs as zero bits.
    let mut deltas = [0i64; BLOCK];
    for block in rest.chunks(BLOCK) {
        let n = block.len();
        deltas[0] = block[0].wrapping_sub(previous);
        for i in 1..n {
            deltas[i] = block[i].wrapping_sub(block[i - 1]);
        }
        previous = block[n - 1];
        if narrow {
            for delta in &mut deltas[..n] {
                *delta = *delta as i32 as i64;
            }
        }
        let least = deltas[..n].iter().copied().fold(i64::MAX, i64::min);
        deltas[n..].fill(least);
        uleb(out, zigzag(least));
        let mut widths = [0u8; MINIBLOCKS];
        for (width, mini) in widths.iter_mut().zip(deltas.chunks_exact(MINIBLOCK)) {
            // (narrow differences are INT32's, so each less the least is its unsigned 32-bit difference)
            let any = mini
                .iter()
                .fold(0u64, |any, &d| any | d.wrapping_sub(least) as u64);
            *width = (64 - any.leading_zeros()) as u8;
        }
        out.extend_from_slice(&widths);
        for (&width, mini) in widths.iter().zip(deltas.chunks_exact(MINIBLOCK)) {
            bit_pack(mini.try_into().unwrap(), least, width as u32, out);
        }
    }
}

/// 32 differences less LEAST, of WIDTH bits each, packed from the least significant bit up: 4 * WIDTH bytes
/// appended to OUT, by a packer made for the width (its shifts constants).
fn bit_pack(deltas: &[i64; MINIBLOCK], least: i64, width: u32, out: &mut Vec<u8>) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                0 => {}
                $($w => pack::<$w>(deltas, least, out),)*
                _ => unreachable!("a width of more than 64 bits"),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
              33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64);
}

/// bit_pack for one WIDTH, W.
#[inline(always)]
fn pack<const W: u32>(deltas: &[i64; MINIBLOCK], least: i64, out: &mut Vec<u8>) {
    let bytes = 4 * W as usize;
    out.reserve(bytes);
    let at = out.len();
    // SAFETY: the room for BYTES more was reserved just now; each word is written within it (32 * W bits are
    // W / 2 whole words, and 4 bytes more when W is odd).
    unsafe {
        let base = out.as_mut_ptr().add(at);
        let (mut held, mut bits, mut word) = (0u64, 0u32, 0usize);
        macro_rules! one {
            ($i:expr) => {
                let value = deltas[$i].wrapping_sub(least) as u64;
                held |= value << bits;
                bits += W;
                if bits >= 64 {
                    std::ptr::write_unaligned(base.add(8 * word) as *mut u64, held.to_le());
                    word += 1;
                    bits -= 64;
                    // the value's bits that did not fit (none when it ended the word)
                    held = if bits == 0 { 0 } else { value >> (W - bits) };
                }
            };
        }
        macro_rules! all {
            ($($i:literal)*) => { $(one!($i);)* };
        }
        all!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
        if bits > 0 {
            std::ptr::write_unaligned(base.add(8 * word) as *mut u32, (held as u32).to_le());
        }
        out.set_len(at + bytes);
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

const I32: u8 = 5;
const BINARY: u8 = 8;
const STRUCT: u8 = 12;

/// Thrift's compact protocol, the fields Parquet's metadata needs: each struct's fields by id, ascending.
struct Thrift {
    out: Vec<u8>,
    last: Vec<i16>, // the last field id of each open struct
}

impl Thrift {
    fn new() -> Thrift {
        Thrift {
            out: Vec::new(),
            last: vec![0],
        }
    }

    fn field(&mut self, id: i16, kind: u8) {
        let last = self.last.last_mut().expect("a struct is open");
        let delta = id - *last;
        if (1..=15).contains(&delta) {
            self.out.push((delta as u8) << 4 | kind);
        } else {
            self.out.push(kind);
            uleb(&mut self.out, zigzag(id as i64));
        }
        *last = id;
    }

    fn bool(&mut self, id: i16, value: bool) {
        self.field(id, if value { 1 } else { 2 });
    }

    fn byte(&mut self, id: i16, value: i8) {
        self.field(id, 3);
        self.out.push(value as u8);
    }

    fn i16(&mut self, id: i16, value: i16) {
        self.field(id, 4);
        uleb(&mut self.out, zigzag(value as i64));
    }

    fn i32(&mut self, id: i16, value: i32) {
        self.field(id, I32);
        uleb(&mut self.out, zigzag(value as i64));
    }

    fn i64(&mut self, id: i16, value: i64) {
        self.field(id, 6);
        uleb(&mut self.out, zigzag(value));
    }

    fn binary(&mut self, id: i16, value: &[u8]) {
        self.field(id, BINARY);
        self.list_binary(value);
    }

    fn list(&mut self, id: i16, element: u8, size: usize) {
        self.field(id, 9);
        if size < 15 {
            self.out.push((size as u8) << 4 | element);
        } else {
            self.out.push(0xF0 | element);
            uleb(&mut self.out, size as u64);
        }
    }

    fn list_i32(&mut self, value: i32) {
        uleb(&mut self.out, zigzag(value as i64));
    }

    fn list_binary(&mut self, value: &[u8]) {
        uleb(&mut self.out, value.len() as u64);
        self.out.extend_from_slice(value);
    }

    /// A struct field ID begins.
    fn begin(&mut self, id: i16) {
        self.field(id, STRUCT);
        self.last.push(0);
    }

    /// A struct element of a list begins.
    fn element(&mut self) {
        self.last.push(0);
    }

    fn end(&mut self) {
        self.out.push(0);
        self.last.pop();
    }

    fn finish(mut self) -> Vec<u8> {
        self.out.push(0);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values of DELTA_BINARY_PACKED bytes, decoded bit by bit as the format defines them.
    struct Decoder<'a> {
        bytes: &'a [u8],
        at: usize,
    }

    impl Decoder<'_> {
        fn uleb(&mut self) -> u64 {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let b = self.bytes[self.at];
                self.at += 1;
                v |= ((b & 0x7f) as u64) << shift;
                shift += 7;
                if b < 0x80 {
                    return v;
                }
            }
        }

        fn zigzag(&mut self) -> i64 {
            let v = self.uleb();
            ((v >> 1) as i64) ^ -((v & 1) as i64)
        }

        fn values(&mut self, narrow: bool) -> Vec<i64> {
            let (block, minis, total) = (
                self.uleb() as usize,
                self.uleb() as usize,
                self.uleb() as usize,
            );
            let mut values = vec![self.zigzag()];
            values.truncate(total);
            while values.len() < total {
                let least = self.zigzag();
                let widths: Vec<usize> = self.bytes[self.at..self.at + minis]
                    .iter()
                    .map(|&w| w as usize)
                    .collect();
                self.at += minis;
                for width in widths {
                    if values.len() == total {
                        break;
                    }
                    for i in 0..block / minis {
                        let mut v = 0u64;
                        for bit in 0..width {
                            let pos = i * width + bit;
                            v |= (((self.bytes[self.at + pos / 8] >> (pos % 8)) & 1) as u64) << bit;
                        }
                        if values.len() < total {
                            let next = values
                                .last()
                                .unwrap()
                                .wrapping_add(least)
                                .wrapping_add(v as i64);
                            values.push(if narrow { next as i32 as i64 } else { next });
                        }
                    }
                    self.at += (block / minis) * width / 8;
                }
            }
            values
        }
    }

    fn decode(bytes: &[u8], narrow: bool) -> Vec<i64> {
        Decoder { bytes, at: 0 }.values(narrow)
    }

    #[test]
    fn packed_values_decode_to_themselves() {
        let cases: Vec<Vec<i64>> = vec![
            vec![],
            vec![7],
            (0..1000).collect(),
            (0..300).map(|i| (i * 7919) % 1013 - 500).collect(),
            vec![i64::MIN, i64::MAX, 0, -1, i64::MAX, i64::MIN],
            (0..129)
                .map(|i| if i % 2 == 0 { 1 << 40 } else { -3 })
                .collect(),
        ];
        for values in cases {
            let mut out = Vec::new();
            delta_binary_packed(&values, false, &mut out);
            assert_eq!(decode(&out, false), values);
        }
        let narrow = vec![
            i32::MIN as i64,
            i32::MAX as i64,
            0,
            -1,
            1985,
            2019,
            i32::MIN as i64,
        ];
        let mut out = Vec::new();
        delta_binary_packed(&narrow, true, &mut out);
        assert_eq!(decode(&out, true), narrow);
    }

    #[test]
    fn values_of_every_width_decode_to_themselves() {
        let mut next = crate::order::tests::numbers(1);
        // 64 random bits from three draws of 31
        let mut next = || (next() as u64) << 33 ^ (next() as u64) << 2 ^ next() as u64;
        for bits in 0..=64u32 {
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            // 300 values: two whole blocks and a short one, its last miniblock short too
            let values: Vec<i64> = (0..300).map(|_| (next() & mask) as i64).collect();
            let mut out = Vec::new();
            delta_binary_packed(&values, false, &mut out);
            assert_eq!(decode(&out, false), values, "{bits} bits");
            let narrow: Vec<i64> = values.iter().map(|&v| v as i32 as i64).collect();
            out.clear();
            delta_binary_packed(&narrow, true, &mut out);
            assert_eq!(decode(&out, true), narrow, "{bits} bits, narrow");
        }
    }

    #[test]
    fn definition_levels_are_runs_of_one_level() {
        let mut out = Vec::new();
        definition_levels(None, 300, &mut out);
        // 4 bytes of length, then one run: 300 << 1 as a varint (2 bytes), the level 1
        assert_eq!(out, [3, 0, 0, 0, 0xd8, 0x04, 1]);
        out.clear();
        definition_levels(Some(&[1, 1, 0, 0, 0, 1]), 6, &mut out);
        assert_eq!(out, [6, 0, 0, 0, 4, 1, 6, 0, 2, 1]);
        out.clear();
        definition_levels(None, 0, &mut out);
        assert_eq!(out, [0, 0, 0, 0]);
    }

    #[test]
    fn prefixes_of_ranges_count_no_byte_past_the_shorter_key() {
        let data = b"ababcabcdefghijabcdefghiXabc";
        let shared = |a: std::ops::Range<usize>, b: std::ops::Range<usize>| {
            let expected = common_prefix(&data[a.clone()], &data[b.clone()]);
            let found = shared_prefix(data, a, b);
            assert_eq!(found, expected);
            found
        };
        assert_eq!(shared(0..2, 2..5), 2); // "ab", "abc"
        assert_eq!(shared(2..5, 5..15), 3); // "abc", "abcdefghij"
        assert_eq!(shared(5..15, 15..25), 9); // the last bytes by bytes: no word left in the data
        assert_eq!(shared(15..25, 25..28), 3);
        assert_eq!(shared(0..0, 0..2), 0);
        assert_eq!(shared(0..2, 2..2), 0);
        // "ab", "abab": the words go on equal for two bytes past the shorter key
        let data = b"abababZ0123456789";
        assert_eq!(shared_prefix(data, 0..2, 2..6), 2);
    }

    #[test]
    fn prefixes_are_found_a_word_at_a_time() {
        assert_eq!(common_prefix(b"abcdefghij", b"abcdefghiX"), 9);
        assert_eq!(common_prefix(b"abcdefgh", b"abcdefgh"), 8);
        assert_eq!(common_prefix(b"abcdefgh", b"abcdefghi"), 8);
        assert_eq!(common_prefix(b"", b"a"), 0);
        assert_eq!(common_prefix(b"abcXefghij", b"abcdefghij"), 3);
    }
}
