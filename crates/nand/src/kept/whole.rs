//! How [`KeptPages`](super::KeptPages) holds a page kept whole: raw,
//! packed to the width of its widest word, as a stride with exceptions, or
//! (a page kept with no hint, a host's data) LZ4-compressed.
//! The checkpoint table pages of a large device are most of what a
//! metadata-only array keeps (at 2 TiB the newest version of every L2P page
//! is about one more copy of the L2P, a gigabyte), and a table page of a
//! device filled in order follows a stride: the fill stripes consecutive
//! logical pages over the units, so entry i+k (k the units) is entry i's
//! physical page plus one, within a block. Such a page takes tens of bytes.

use super::{push_varint, read_varint, WORD};

/// A page kept whole: as a stride (below) when it follows one, else its
/// 4-byte words packed into fewer bits when they all fit (a table page's
/// entries are physical page numbers, 26 bits at 512 GiB with 8 KiB pages:
/// the newest version of every L2P page, about one copy of the L2P, then
/// takes 26/32 of it), else its bytes as they are.
///
/// Packed format: u32 LE page length in bytes (a multiple of 4), u8 width
/// W (1..=28), then the words' W-bit codes, the first in the lowest bits of
/// the first byte, 8 zero bytes at the end (the reader loads whole 4-byte
/// words, and may load one past the last code). Code 2^W - 1 is the word 0xFFFF_FFFF (an unmapped entry, the
/// 0xFF fill after a table's last entry); any other code is the word.
///
/// LZ4 format (a page programmed with no hint of a page it supersedes: a
/// host's data, which a metadata-only array keeps for the host pages of a
/// reproduction, `reproduce nolgn`'s databases): u32 LE page length, then
/// the page as one LZ4 block (the block format of the LZ4 specification,
/// no frame, no checksum). Kept only where that takes at most 3/4 of the
/// page ([`LZ4_SHARE_MAX`]); sqlite-bench's values are db_bench's, built
/// to compress to half.
#[derive(Clone)]
pub(super) enum WholePage {
    Raw(Box<[u8]>),
    Packed(Box<[u8]>),
    Strided(Box<[u8]>),
    Lz4(Box<[u8]>),
}

/// An LZ4 form is kept only when it takes at most this share of the page
/// (numerator over 4): a page that compresses less is read raw, without
/// a decompression at every read.
const LZ4_SHARE_MAX: usize = 3;
const LZ4_HEADER: usize = 4;

impl Default for WholePage {
    fn default() -> Self {
        WholePage::Raw(Box::default())
    }
}

/// Packing is for arrays that keep many pages (large devices, where the
/// kept table pages are hundreds of MiB): it costs work at every program
/// and read of a whole page, which a small device's frequent checkpoints
/// would pay for a few MiB (on `jasmine`, 1 GiB, the random-write `run`
/// keeps about a hundred pages; with every page packed it took 24% more
/// instructions). Pages kept whole while fewer are held stay raw until
/// their next version.
pub(super) const PACK_FROM_PAGES: usize = 4096;

/// Widths above this save less than an eighth: such pages stay raw.
const PACK_WIDTH_MAX: u32 = 28;
const PACK_HEADER: usize = 5;

impl WholePage {
    /// `data` kept whole, packed if `pack_it` and it packs; `reuse`, a page
    /// no longer needed, lends its allocation when `data` stays raw and has
    /// its size.
    pub(super) fn new(data: &[u8], reuse: WholePage, pack_it: bool) -> WholePage {
        if pack_it {
            if let Some(s) = stride_pack(data, data.len() / STRIDE_SHARE_MAX) {
                return WholePage::Strided(s);
            }
            if let Some(p) = pack(data) {
                return WholePage::Packed(p);
            }
        }
        match reuse {
            WholePage::Raw(mut b) if b.len() == data.len() => {
                b.copy_from_slice(data);
                WholePage::Raw(b)
            }
            _ => WholePage::Raw(data.into()),
        }
    }

    /// [`WholePage::new`] of a page kept with no hint (a host's data, not
    /// a version of a table page): when packing is asked for and neither
    /// the stride nor the word packing applies, LZ4-compressed where that
    /// takes at most 3/4 of the page. A table page's versions come with a
    /// hint and are not tried: at 8 TiB their entries are 30-bit page
    /// numbers in random order, which LZ4 would try and reject at every
    /// checkpoint.
    pub(super) fn new_unhinted(data: &[u8], pack_it: bool) -> WholePage {
        match WholePage::new(data, WholePage::default(), pack_it) {
            WholePage::Raw(raw) if pack_it => lz4_pack(&raw).map_or(WholePage::Raw(raw), WholePage::Lz4),
            other => other,
        }
    }

    /// The page's bytes: its own when raw, else unpacked into `buf`.
    pub(super) fn bytes<'a>(&'a self, buf: &'a mut Vec<u8>) -> &'a [u8] {
        match self {
            WholePage::Raw(b) => b,
            WholePage::Packed(p) | WholePage::Strided(p) | WholePage::Lz4(p) => {
                buf.resize(packed_len(p), 0);
                self.read(buf);
                buf
            }
        }
    }

    pub(super) fn read(&self, out: &mut [u8]) {
        match self {
            WholePage::Raw(b) => out.copy_from_slice(b),
            WholePage::Packed(p) => unpack(p, out),
            WholePage::Strided(s) => stride_unpack(s, out),
            WholePage::Lz4(z) => lz4_unpack(z, out),
        }
    }

    pub(super) fn stored_len(&self) -> usize {
        match self {
            WholePage::Raw(b) | WholePage::Packed(b) | WholePage::Strided(b) | WholePage::Lz4(b) => b.len(),
        }
    }
}

/// `data` in the LZ4 form (format at [`WholePage`]), or `None` if that
/// takes more than [`LZ4_SHARE_MAX`] quarters of it (or its length does
/// not fit the u32 field).
fn lz4_pack(data: &[u8]) -> Option<Box<[u8]>> {
    let len = u32::try_from(data.len()).ok()?;
    let limit = data.len() * LZ4_SHARE_MAX / 4;
    let mut out = vec![0u8; LZ4_HEADER + lz4_flex::block::get_maximum_output_size(data.len())];
    out[..LZ4_HEADER].copy_from_slice(&len.to_le_bytes());
    let n = lz4_flex::block::compress_into(data, &mut out[LZ4_HEADER..]).ok()?;
    (LZ4_HEADER + n <= limit).then(|| {
        out.truncate(LZ4_HEADER + n);
        out.into_boxed_slice()
    })
}

/// Writes the page `z` holds in the LZ4 form into `out` (its length).
fn lz4_unpack(z: &[u8], out: &mut [u8]) {
    debug_assert_eq!(out.len(), packed_len(z));
    let n = lz4_flex::block::decompress_into(&z[LZ4_HEADER..], out).expect("a kept LZ4 block decompresses");
    assert_eq!(n, out.len(), "a kept LZ4 block holds its whole page");
}

/// The page's 4-byte words, or `None` if its size is not whole words or
/// does not fit the forms' u32 length field.
fn words_of(data: &[u8]) -> Option<&[[u8; WORD]]> {
    let (words, rest) = data.as_chunks::<WORD>();
    (rest.is_empty() && data.len() <= u32::MAX as usize).then_some(words)
}

/// `data` packed (format at [`WholePage`]), or `None` if its words need
/// more than [`PACK_WIDTH_MAX`] bits or its size is not whole words.
fn pack(data: &[u8]) -> Option<Box<[u8]>> {
    let words = words_of(data)?;
    let max = words
        .iter()
        .map(|w| u32::from_le_bytes(*w))
        .fold(0, |m, w| if w == u32::MAX { m } else { m.max(w) });
    // The widest code is the unmapped word's, so the largest other word
    // must stay below it.
    let width = u64::BITS - (max as u64 + 1).leading_zeros();
    if width > PACK_WIDTH_MAX {
        return None;
    }
    let ones = (1u64 << width) - 1;
    let mut out = vec![0u8; PACK_HEADER + (words.len() * width as usize).div_ceil(8) + 8];
    out[0..4].copy_from_slice(&(data.len() as u32).to_le_bytes());
    out[4] = width as u8;
    let (mut acc, mut bits, mut at) = (0u64, 0u32, PACK_HEADER);
    for w in words {
        let w = u32::from_le_bytes(*w);
        let code = if w == u32::MAX { ones } else { w as u64 };
        acc |= code << bits;
        bits += width;
        if bits >= 32 {
            out[at..at + 4].copy_from_slice(&(acc as u32).to_le_bytes());
            at += 4;
            acc >>= 32;
            bits -= 32;
        }
    }
    out[at..at + 4].copy_from_slice(&(acc as u32).to_le_bytes());
    Some(out.into_boxed_slice())
}

fn packed_len(p: &[u8]) -> usize {
    u32::from_le_bytes(p[0..4].try_into().expect("4 bytes")) as usize
}

/// Writes the page `p` packs into `out` (its length).
fn unpack(p: &[u8], out: &mut [u8]) {
    debug_assert_eq!(out.len(), packed_len(p));
    let width = p[4] as u32;
    let ones = (1u64 << width) - 1;
    let (src, _) = p[PACK_HEADER..].as_chunks::<4>();
    let (mut acc, mut bits, mut at) = (0u64, 0u32, 0usize);
    for o in out.as_chunks_mut::<WORD>().0 {
        if bits < width {
            acc |= (u32::from_le_bytes(src[at]) as u64) << bits;
            at += 1;
            bits += 32;
        }
        let code = acc & ones;
        acc >>= width;
        bits -= width;
        *o = if code == ones { u32::MAX } else { code as u32 }.to_le_bytes();
    }
}

/// A page is kept strided only when that takes at most 1/this of its size
/// (else it is packed): a strided page's exceptions cost 5-6 bytes each,
/// and past this share packing is about as small and reads faster.
const STRIDE_SHARE_MAX: usize = 4;
/// The longest stride looked for, in words: 64 units (channels x dies x
/// planes) and fewer.
const STRIDE_MAX: usize = 64;
const STRIDE_HEADER: usize = 9;
/// Words a stride is judged on: two rows of the widest stripe, so that a
/// stride of one word (a row's units' pages may step evenly) breaks more
/// often than the stripe's own.
const STRIDE_WINDOW: usize = 2 * STRIDE_MAX;
/// Words of the window a stride may break and still be taken.
const STRIDE_WINDOW_MISSES: usize = STRIDE_WINDOW / 8;

/// The word a stride predicts after `prev`: `prev + step`, except that an
/// unmapped entry (0xFFFF_FFFF) predicts another (a table's unmapped tail).
#[inline]
fn predict(prev: u32, step: u32) -> u32 {
    if prev == u32::MAX {
        u32::MAX
    } else {
        prev.wrapping_add(step)
    }
}

/// The stride `(k, step)` the page's words follow best: of the `k` up to
/// [`STRIDE_MAX`], the one whose `step` (from word 0 to word k) the fewest
/// of the first [`STRIDE_WINDOW`] words break, at most
/// [`STRIDE_WINDOW_MISSES`] of them (a page of one unit's fill changes
/// block every 128 words; a wrong `k` breaks at every stripe row). A guess
/// from a window; [`stride_pack`] then counts what does not follow it.
fn find_stride(words: &[[u8; WORD]]) -> Option<(usize, u32)> {
    let w = |i: usize| u32::from_le_bytes(words[i]);
    let n = words.len();
    // (k, step, misses) of the best stride so far.
    let mut best: Option<(usize, u32, usize)> = None;
    for k in 1..=STRIDE_MAX.min(n.saturating_sub(1)) {
        let step = w(k).wrapping_sub(w(0));
        let allowed = best.map_or(STRIDE_WINDOW_MISSES, |(_, _, m)| m - 1);
        let mut misses = 0;
        for i in 0..STRIDE_WINDOW.min(n - k) {
            misses += (w(i + k) != predict(w(i), step)) as usize;
            if misses > allowed {
                break;
            }
        }
        if misses <= allowed {
            best = Some((k, step, misses));
            if misses == 0 {
                break;
            }
        }
    }
    best.map(|(k, step, _)| (k, step))
}

/// `data` as a stride with exceptions, or `None` if its words follow no
/// stride, its size is not whole words or the form would take more than
/// `limit` bytes.
///
/// Strided format:
///
/// ```text
/// u32 LE       page length in bytes (a multiple of 4)
/// u8           k: the stride in words (1..=64)
/// u32 LE       step
/// [u32 LE; k]  the first k words
/// then, until the end, the exceptions in order:
///   varint     gap: words from the one after the previous exception (word
///              k for the first) to this one
///   u32 LE     the word
/// ```
///
/// Every other word i >= k is `predict(word[i - k], step)`: word i-k plus
/// the step, or unmapped after an unmapped word. Varints are LEB128, as in
/// the patches.
fn stride_pack(data: &[u8], limit: usize) -> Option<Box<[u8]>> {
    let words = words_of(data)?;
    let (k, step) = find_stride(words)?;
    let mut out = Vec::with_capacity(STRIDE_HEADER + WORD * k + 32);
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.push(k as u8);
    out.extend_from_slice(&step.to_le_bytes());
    words[..k].iter().for_each(|w| out.extend_from_slice(w));
    // The word after the previous exception.
    let mut next = k;
    for i in k..words.len() {
        if u32::from_le_bytes(words[i]) != predict(u32::from_le_bytes(words[i - k]), step) {
            push_varint(&mut out, i - next);
            out.extend_from_slice(&words[i]);
            next = i + 1;
            if out.len() > limit {
                return None;
            }
        }
    }
    (out.len() <= limit).then(|| out.into_boxed_slice())
}

/// Writes the page `s` holds strided into `out` (its length).
fn stride_unpack(s: &[u8], out: &mut [u8]) {
    debug_assert_eq!(out.len(), packed_len(s));
    let k = s[4] as usize;
    let step = u32::from_le_bytes(s[5..9].try_into().expect("4 bytes"));
    let words = out.as_chunks_mut::<WORD>().0;
    let n = words.len();
    let mut src = &s[STRIDE_HEADER..];
    for w in &mut words[..k] {
        *w = src[..WORD].try_into().expect("a word");
        src = &src[WORD..];
    }
    let mut i = k;
    while i < n {
        let exception = match src.is_empty() {
            true => n,
            false => i + read_varint(&mut src),
        };
        while i < exception {
            words[i] = predict(u32::from_le_bytes(words[i - k]), step).to_le_bytes();
            i += 1;
        }
        if i < n {
            words[i] = src[..WORD].try_into().expect("a word");
            src = &src[WORD..];
            i += 1;
        }
    }
    debug_assert!(src.is_empty(), "a strided page's exceptions end at its end");
}

#[cfg(test)]
mod tests {
    use super::super::tests::table_page;
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Whole pages pack to the width of their largest word, the unmapped
    /// word (0xFFFF_FFFF) as the all-ones code, and unpack byte for byte:
    /// random table pages of several widths, run-shaped ones, pages partly
    /// or wholly unmapped, a word just below the all-ones code; pages whose
    /// words need more than 28 bits, or not whole words, stay raw.
    #[test]
    fn whole_pages_pack_to_their_widest_word_and_unpack_exactly() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let roundtrip = |data: &[u8]| -> Option<usize> {
            let p = pack(data)?;
            let mut out = vec![0u8; data.len()];
            unpack(&p, &mut out);
            assert_eq!(out, data);
            assert_eq!(packed_len(&p), data.len());
            Some(p.len())
        };
        for width in [1u32, 7, 8, 17, 26, 28] {
            for shape in 0..4 {
                let mut entries: Vec<u32> = (0..2048).map(|_| rng.gen_range(0..1u64 << width) as u32).collect();
                match shape {
                    0 => {}
                    1 => {
                        let first = rng.gen_range(0..1u32 << width.min(20));
                        for (i, e) in entries.iter_mut().enumerate().take(700) {
                            *e = (first + i as u32) & ((1u64 << width) - 2) as u32;
                        }
                    }
                    2 => entries[rng.gen_range(0..2048)..].fill(u32::MAX),
                    _ => entries.fill(u32::MAX),
                }
                let max = entries.iter().copied().filter(|&e| e != u32::MAX).max().unwrap_or(0);
                let need = 32 - (max as u64 + 1).leading_zeros().saturating_sub(32);
                let len = roundtrip(&table_page(&entries));
                match need <= PACK_WIDTH_MAX {
                    true => assert_eq!(
                        len,
                        Some(PACK_HEADER + (2048 * need as usize).div_ceil(8) + 8),
                        "width {width} shape {shape}"
                    ),
                    false => assert_eq!(len, None),
                }
            }
        }
        // The largest word a width holds besides the all-ones code.
        let mut entries = vec![0u32; 2048];
        entries[5] = (1 << 26) - 2;
        entries[6] = u32::MAX;
        assert_eq!(roundtrip(&table_page(&entries)), Some(PACK_HEADER + 2048 * 26 / 8 + 8));
        entries[7] = (1 << 26) - 1; // now 27 bits
        assert_eq!(roundtrip(&table_page(&entries)), Some(PACK_HEADER + 2048 * 27 / 8 + 8));
        entries[8] = 1 << 28; // 29 bits: raw
        assert_eq!(roundtrip(&table_page(&entries)), None);
        assert_eq!(roundtrip(&[0u8; 7]), None);
    }

    /// A sequentially filled table page: 2,048 entries striped over `units`
    /// units, each unit's entries consecutive pages of one block of 128
    /// pages from `first`, a new block after every 128 pages a unit.
    fn striped(units: u32, first: u32) -> Vec<u32> {
        (0..2048u32)
            .map(|i| {
                let (unit, nth) = (i % units, first + i / units);
                (unit << 20) + (nth / 128) * 4096 + nth % 128
            })
            .collect()
    }

    fn strided_roundtrip(entries: &[u32]) -> Option<usize> {
        let data = table_page(entries);
        let s = stride_pack(&data, usize::MAX)?;
        let mut out = vec![0u8; data.len()];
        stride_unpack(&s, &mut out);
        assert_eq!(out, data);
        Some(s.len())
    }

    /// Pages that follow a stride keep its words once and the words that
    /// break it as exceptions, and read back byte for byte: striped fills
    /// over 1-64 units, block changes, unmapped tails and whole unmapped
    /// pages, alternating words (a step of 0), scattered changed entries;
    /// pages following no stride in their first words are refused, as are
    /// pages over the limit or not whole words.
    #[test]
    fn strided_pages_keep_their_stride_and_exceptions_and_read_back_exactly() {
        // Striped over 8 units from a block's start: the 8 units change
        // block at word 1,024, 1,016 words after word 8 (a 2-byte gap), the
        // other 7 right after each other (1-byte gaps).
        assert_eq!(
            strided_roundtrip(&striped(8, 0)),
            Some(STRIDE_HEADER + 8 * 4 + (2 + 4) + 7 * (1 + 4))
        );
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        for units in [1u32, 2, 3, 8, 16, 64] {
            let first = rng.gen_range(0..1000);
            let mut entries = striped(units, first);
            let clean = strided_roundtrip(&entries).expect("a stride");
            // Each block change breaks the stride once per unit.
            assert!(clean < 2048, "{units} units: {clean} bytes");
            for _ in 0..20 {
                entries[rng.gen_range(STRIDE_WINDOW + units as usize..2048)] = rng.gen_range(0..1 << 26);
            }
            let at = rng.gen_range(STRIDE_WINDOW + units as usize..2048);
            entries[at..].fill(u32::MAX);
            strided_roundtrip(&entries).expect("still a stride");
        }
        assert_eq!(strided_roundtrip(&[u32::MAX; 2048]), Some(STRIDE_HEADER + 4));
        let alternating: Vec<u32> = (0..2048).map(|i| if i % 2 == 0 { 0 } else { 262_144 }).collect();
        assert_eq!(strided_roundtrip(&alternating), Some(STRIDE_HEADER + 8));
        // The last word an exception: the gap reaches it, the end follows.
        let mut entries = striped(4, 0);
        entries[2047] = 5;
        strided_roundtrip(&entries).expect("a stride");
        let random: Vec<u32> = (0..2048).map(|_| rng.gen()).collect();
        assert_eq!(strided_roundtrip(&random), None);
        let data = table_page(&striped(8, 0));
        assert!(stride_pack(&data, 40).is_none(), "over the limit");
        assert!(stride_pack(&data[..8191], usize::MAX).is_none());
    }

    /// The name of the form a page is kept in.
    fn form(page: &WholePage) -> &'static str {
        match page {
            WholePage::Raw(_) => "raw",
            WholePage::Packed(_) => "packed",
            WholePage::Strided(_) => "strided",
            WholePage::Lz4(_) => "lz4",
        }
    }

    /// A page is kept strided only when packing is asked for and the stride
    /// takes at most a quarter of it; otherwise packed, otherwise raw.
    #[test]
    fn whole_pages_take_the_smallest_form_that_applies() {
        let strided = table_page(&striped(8, 0));
        let kind = |data: &[u8], pack_it: bool| form(&WholePage::new(data, WholePage::default(), pack_it));
        assert_eq!(kind(&strided, false), "raw");
        assert_eq!(kind(&strided, true), "strided");
        let mut rng = ChaCha8Rng::seed_from_u64(23);
        let mut broken = striped(8, 0);
        // 400 exceptions of 5-6 bytes: over a quarter of 8 KiB.
        for e in broken.iter_mut().skip(17).step_by(5).take(400) {
            *e = rng.gen_range(0..1 << 26);
        }
        assert_eq!(kind(&table_page(&broken), true), "packed");
        let wide: Vec<u8> = (0..8192).map(|_| rng.gen()).collect();
        assert_eq!(kind(&wide, true), "raw");
        for data in [&strided, &table_page(&broken), &wide] {
            let page = WholePage::new(data, WholePage::default(), true);
            let mut out = vec![0u8; data.len()];
            page.read(&mut out);
            assert_eq!(&out, data);
            let mut buf = Vec::new();
            assert_eq!(page.bytes(&mut buf), &data[..]);
        }
    }

    /// A page kept with no hint is LZ4-compressed when that saves a quarter
    /// and neither the stride nor the word packing applies, and reads back
    /// byte for byte: db_bench's values (50 random bytes written twice per
    /// 100) compress to about half; random bytes, and any page while
    /// packing is not asked for, stay raw; a strided table page stays
    /// strided; a hinted page ([`WholePage::new`]) is never compressed.
    #[test]
    fn unhinted_pages_compress_where_lz4_saves_a_quarter() {
        let mut rng = ChaCha8Rng::seed_from_u64(29);
        let mut db_bench = vec![0u8; 4096];
        for piece in db_bench.chunks_mut(100) {
            let half: Vec<u8> = (0..50).map(|_| rng.gen_range(b' '..=b'~')).collect();
            for (i, b) in piece.iter_mut().enumerate() {
                *b = half[i % 50];
            }
        }
        let random: Vec<u8> = (0..4096).map(|_| rng.gen()).collect();
        let strided = table_page(&striped(8, 0));
        let cases: [(&[u8], bool, &str); 5] = [
            (&db_bench, true, "lz4"),
            (&db_bench, false, "raw"),
            (&random, true, "raw"),
            (&strided, true, "strided"),
            (&strided, false, "raw"),
        ];
        for (data, pack_it, want) in cases {
            let page = WholePage::new_unhinted(data, pack_it);
            assert_eq!(form(&page), want, "{} bytes, pack_it {pack_it}", data.len());
            let mut out = vec![0u8; data.len()];
            page.read(&mut out);
            assert_eq!(out, data);
            let mut buf = Vec::new();
            assert_eq!(page.bytes(&mut buf), data);
        }
        let page = WholePage::new_unhinted(&db_bench, true);
        assert!(
            page.stored_len() <= 4096 * 3 / 4,
            "db_bench's page kept in {} bytes",
            page.stored_len()
        );
        assert_eq!(form(&WholePage::new(&db_bench, WholePage::default(), true)), "raw");
    }
}
