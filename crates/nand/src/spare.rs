//! Where the array keeps the spare (OOB) area of every page.
//!
//! Full-data mode (and image files) keep every byte ([`Spare::Bytes`]).
//! Metadata-only mode keeps, per page, only what the FTL's OOB record holds
//! ([`Spare::Packed`]): the FTL installs a [`SpareCodec`] that turns a record
//! of its common form (a data page: logical page, sequence number, erase
//! count, one flag, and the first [`SpareCodec::protocol_bytes`] bytes the
//! device's protocol writes on its data pages) into [`PackedSpare`] fields and
//! back into the exact same bytes. The array stores the logical page in a
//! `u32` (its top bit the flag), the sequence number as a `u16` offset from a
//! base kept per block, the erase count once per block, and the protocol's
//! bytes as they are: 6 bytes a page (plus the protocol's, 4 to 32) instead
//! of the whole spare area. A block programmed in order with pages of one
//! pattern (logical page and sequence number each a fixed step from the
//! last, no flag, no protocol or flag bytes set: a sequential fill striped
//! over the units) keeps that pattern once per block, as a run, and its
//! pages' entries stay the kernel's zero pages: a preconditioning fill costs
//! no memory per page here. A codec may also name flag bytes
//! ([`SpareCodec::flag_bytes`]): bytes a partial program clears after the
//! program (commit flags), kept per page as they are beside the packed
//! fields, so a flagged page stays packed and no side map grows with flags.
//! Any other spare area (no codec, a metadata page, protocol bytes, a torn
//! program, a flipped byte, a sequence number too far from its block's base)
//! is kept whole in a side map, its trailing 0xFF bytes trimmed. Reads return
//! the same bytes either way, so torn variants, bit flips and the fault model
//! behave the same in both modes.

use crate::error::MemoryError;
use crate::geometry::{div, BlockId, Ppn};
use crate::memory;
use crate::page_data::PageData;
use std::borrow::Cow;
use std::collections::HashMap;

/// The fields of a spare area of the FTL's common form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PackedSpare {
    /// Below [`PackedSpare::LPN_LIMIT`].
    pub lpn: u32,
    pub seq: u64,
    pub erase_count: u32,
    pub flag: bool,
}

impl PackedSpare {
    /// Logical pages from here on are never packed (the top values mark
    /// erased pages, whole pages and erased pages inside a run; the top bit
    /// carries the flag).
    pub const LPN_LIMIT: u32 = (1 << 31) - 3;
    /// Protocol bytes a packed page may carry.
    pub const PROTOCOL_MAX: usize = 32;
}

/// A spare area of the FTL's common form, as a program hands it to the
/// array ([`crate::Nand::program_fields`]): the fields a metadata-only array
/// stores packed, and how to write the bytes they pack from. The bytes are
/// written only where something needs them (a store of bytes, a spare area
/// kept whole, a torn program, the redo log): a packed store of a page
/// needs none, and skips the record's encoding and CRC.
pub struct FieldsSpare<'a> {
    pub fields: PackedSpare,
    /// The page's protocol bytes, as wide as the codec keeps.
    pub protocol: &'a [u8],
    /// The page's flag bytes as the spare area holds them, as many as the
    /// codec keeps (at its `flags_at`).
    pub flags: &'a [u8],
    /// Writes the whole spare area (every byte of its slice), which the
    /// installed codec packs to `fields`, `protocol` and `flags`.
    pub encode: &'a dyn Fn(&mut [u8]),
}

impl FieldsSpare<'_> {
    /// The spare area's bytes, `len` of them.
    pub fn bytes(&self, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        (self.encode)(&mut b);
        b
    }
}

/// Turns spare areas of one common form into [`PackedSpare`] fields and back.
/// `pack` must return `Some` only if `unpack` of its result and of the
/// protocol bytes it wrote (its second argument, `protocol_bytes` long)
/// writes back exactly the bytes it was given (the whole spare area). The
/// protocol bytes live in a slice of their own, not in [`PackedSpare`], so
/// that a codec without them moves no more than the common fields.
#[derive(Clone, Copy, Debug)]
pub struct SpareCodec {
    pub pack: fn(&[u8], &mut [u8]) -> Option<PackedSpare>,
    pub unpack: fn(&PackedSpare, &[u8], &mut [u8]),
    /// Protocol bytes kept per page (at most [`PackedSpare::PROTOCOL_MAX`]):
    /// as many as the device's protocol sets on most of its data pages.
    pub protocol_bytes: usize,
    /// Flag bytes kept per page as they are (at most [`SpareCodec::FLAGS_MAX`]),
    /// at `flags_at` in the spare area: `pack` must ignore them and `unpack`
    /// leave them 0xFF; the store writes them back over what `unpack` wrote.
    pub flag_bytes: usize,
    pub flags_at: usize,
    /// The leading bytes of a spare area whose CRC-32 the FTL's record
    /// checks (0: none): a store of bytes remembers it per page version
    /// ([`Spare::remembered_crc`]).
    pub crc_span: usize,
}

impl SpareCodec {
    /// Flag bytes a packed page may carry.
    pub const FLAGS_MAX: usize = 4;
}

/// A packed spare area as a read hands it up in place of its bytes
/// ([`crate::Nand::read_fields`]): what the installed codec's `unpack`
/// writes the bytes from, so that its owner need not decode them again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadFields {
    pub fields: PackedSpare,
    /// The page's protocol bytes, as many as the codec keeps, then zeros.
    pub protocol: [u8; PackedSpare::PROTOCOL_MAX],
    /// The page's flag bytes as its spare area holds them, as many as the
    /// codec keeps, then 0xFF (erased, as `unpack` leaves them).
    pub flags: [u8; SpareCodec::FLAGS_MAX],
}

impl ReadFields {
    /// The spare area's bytes, as a read of bytes hands them up: `codec`'s
    /// `unpack` of the fields and protocol bytes, with the flag bytes laid
    /// over what it wrote.
    pub fn unpack(&self, codec: &SpareCodec, out: &mut [u8]) {
        (codec.unpack)(&self.fields, &self.protocol[..codec.protocol_bytes], out);
        out[codec.flags_at..codec.flags_at + codec.flag_bytes].copy_from_slice(&self.flags[..codec.flag_bytes]);
    }

    /// Zero fields, no protocol bytes, erased flag bytes.
    pub const EMPTY: ReadFields = ReadFields {
        fields: PackedSpare {
            lpn: 0,
            seq: 0,
            erase_count: 0,
            flag: false,
        },
        protocol: [0; PackedSpare::PROTOCOL_MAX],
        flags: [0xFF; SpareCodec::FLAGS_MAX],
    };
}

/// `Packed::lpn` of an erased page.
const ERASED: u32 = u32::MAX;
/// `Packed::lpn` of a page whose spare area is in the side map.
const WHOLE: u32 = u32::MAX - 1;
/// `Packed::lpn` of an erased page inside its block's run (where `ERASED`,
/// a zero entry, means "as the run says").
const ERASED_IN_RUN: u32 = u32::MAX - 2;
const FLAG: u32 = 1 << 31;
/// `Packed::seq_base` of a block with no packed page yet.
const UNSET: u64 = u64::MAX;

#[derive(Clone)]
pub(crate) enum Spare {
    /// Every byte of every page's spare area, a block's pages to a chunk
    /// that snapshots share until written (`page_data.rs`).
    Bytes(PageData),
    Packed(Box<Packed>),
}

#[derive(Clone)]
pub(crate) struct Packed {
    oob_size: usize,
    pages_per_block: u32,
    codec: Option<SpareCodec>,
    /// Per page: the logical page (top bit: the flag), or `ERASED` / `WHOLE`,
    /// stored inverted (`!value`) so that an erased page is a zero entry:
    /// the kernel's zeroed pages, which cost nothing until a page is
    /// programmed. Read and written through `lpn_of` and `set_lpn`.
    lpn: Vec<u32>,
    /// Per page: the sequence number minus its block's base.
    seq_off: Vec<u16>,
    /// Per block: the base of its pages' sequence numbers (`UNSET`: none
    /// packed since its last erase), and the erase count they record.
    seq_base: Vec<u64>,
    erase_count: Vec<u32>,
    /// Per page: the codec's `protocol_bytes` protocol bytes.
    protocol: Vec<u8>,
    /// Per page: the codec's `flag_bytes` flag bytes, stored inverted (an
    /// erased 0xFF is a zero byte, as `lpn`).
    flags: Vec<u8>,
    /// Per block: its run, the pages from its first on that read as a
    /// pattern (see [`Run`]); all zero (no run) from the kernel.
    run: Vec<Run>,
    /// Spare areas kept whole, trailing 0xFF bytes trimmed.
    whole: HashMap<Ppn, Box<[u8]>>,
}

/// Bytes per page a packed store holds (besides the side map).
pub(crate) const PACKED_BYTES_PER_PAGE: u64 = 4 + 2;
/// Bytes per block a packed store holds.
pub(crate) const PACKED_BYTES_PER_BLOCK: u64 = 8 + 4 + std::mem::size_of::<Run>() as u64;

/// A block's first `len` pages, programmed in order, each with the fields
/// page `i` of the run reads as: logical page `lpn + i * lpn_step`
/// (wrapping), sequence number `seq_base + i * seq_step`, the block's erase
/// count, no flag, zero protocol bytes and erased flag bytes. A page of the
/// run has a zero (`ERASED`) `lpn` entry; a page of the run written or
/// erased since has an entry of its own, which wins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Run {
    len: u32,
    lpn: u32,
    lpn_step: u32,
    seq_step: u32,
}

// SAFETY: four `u32`s; all zero is `Run::default()`, no run.
unsafe impl memory::Zeroable for Run {
    const ZERO: Self = Run {
        len: 0,
        lpn: 0,
        lpn_step: 0,
        seq_step: 0,
    };
}

impl Spare {
    /// Every spare area erased (all 0xFF), every byte stored.
    pub fn bytes(pages: usize, oob_size: usize, pages_per_block: u32, need: u64) -> Result<Spare, MemoryError> {
        Ok(Spare::Bytes(PageData::new(
            pages,
            oob_size,
            pages_per_block as usize,
            0xFF,
            0,
            need,
        )?))
    }

    /// Every spare area erased, packed (no codec yet: everything stays whole
    /// until one is installed).
    pub fn packed(pages: usize, blocks: usize, pages_per_block: u32, oob_size: usize, need: u64) -> Result<Spare, MemoryError> {
        Ok(Spare::Packed(Box::new(Packed {
            oob_size,
            pages_per_block,
            codec: None,
            // Sparse: a page has entries here only outside its block's run
            // (`Run`), so these stay on 4 KiB pages. A 2 MiB huge page
            // would be zeroed whole for the few entries of one broken run.
            lpn: memory::zeroed(pages, need)?,
            seq_off: memory::zeroed(pages, need)?,
            seq_base: memory::filled(blocks, UNSET, need)?,
            erase_count: memory::filled(blocks, 0, need)?,
            protocol: Vec::new(),
            flags: Vec::new(),
            run: memory::zeroed(blocks, need)?,
            whole: HashMap::new(),
        })))
    }

    /// Installs the codec of a packed store; a store of bytes takes only its
    /// CRC span, to remember. Pages packed with other widths of protocol or
    /// flag bytes are packed again (or kept whole), so they read the same;
    /// the per-page tables are allocated here.
    pub fn set_codec(&mut self, codec: Option<SpareCodec>) -> Result<(), MemoryError> {
        let p = match self {
            Spare::Packed(p) => p,
            Spare::Bytes(b) => {
                if let Some(c) = codec.filter(|c| c.crc_span > 0) {
                    b.set_memo(c.crc_span);
                }
                return Ok(());
            }
        };
        let width = codec.map_or(0, |c| c.protocol_bytes.min(PackedSpare::PROTOCOL_MAX));
        let flag_width = codec.map_or(0, |c| c.flag_bytes.min(SpareCodec::FLAGS_MAX));
        let codec = codec.map(|c| SpareCodec {
            protocol_bytes: width,
            flag_bytes: flag_width,
            ..c
        });
        assert!(
            codec.is_none_or(|c| c.flags_at + c.flag_bytes <= p.oob_size),
            "flag bytes outside the spare area"
        );
        // A codec of the same widths (a remount: the same FTL's codec again)
        // reads the packed fields as they are. Codecs are the FTL's record
        // format, one per build, so only the widths can differ.
        let widths = |c: Option<SpareCodec>| c.map(|c| (c.protocol_bytes, c.flag_bytes, c.flags_at));
        if widths(p.codec) == widths(codec) {
            p.codec = codec;
            return Ok(());
        }
        let pages = p.lpn.len();
        let table = memory::zeroed(pages * width, (pages * width) as u64)?;
        // Inverted: zero bytes are erased flags.
        let flag_table = memory::zeroed(pages * flag_width, (pages * flag_width) as u64)?;
        let mut again = Vec::new();
        // Without a codec no page is packed: nothing to look at.
        if p.codec.is_some() {
            let mut buf = vec![0u8; p.oob_size];
            for ppn in 0..pages as Ppn {
                if p.is_packed(ppn) {
                    p.read(ppn, &mut buf);
                    again.push((ppn, buf.clone()));
                }
            }
        }
        p.codec = codec;
        p.protocol = table;
        p.flags = flag_table;
        // Runs only where a block has packed pages: the rest of the run
        // table stays untouched (`run_len`).
        for b in 0..p.run.len() {
            if p.run_len(b) > 0 {
                p.run[b] = Run::default();
            }
        }
        p.seq_base.fill(UNSET);
        for (ppn, bytes) in again {
            p.set_lpn(ppn, ERASED);
            p.write(ppn, &bytes);
        }
        Ok(())
    }

    /// The spare area of `ppn` as its packed fields, where a packed store
    /// holds it packed (in its block's run or by its own entry); `None`
    /// elsewhere (erased, kept whole, a store of bytes). The bytes
    /// [`Spare::read`] hands up are the codec's `unpack` of these fields
    /// with the flag bytes laid over them.
    #[cfg(test)]
    pub fn read_fields(&self, ppn: Ppn) -> Option<ReadFields> {
        let mut out = ReadFields::EMPTY;
        self.read_fields_into(ppn, &mut out).then_some(out)
    }

    /// `read_fields` into `out` (written in place: a read's
    /// caller keeps it), returning whether the page is packed; `out` is
    /// then as `read_fields` would return it, and left unspecified otherwise.
    #[inline]
    pub fn read_fields_into(&self, ppn: Ppn, out: &mut ReadFields) -> bool {
        match self {
            Spare::Bytes(_) => false,
            Spare::Packed(p) => p.read_fields_into(ppn, out),
        }
    }

    /// The spare area of `ppn` (all 0xFF if erased).
    #[inline]
    pub fn read(&self, ppn: Ppn, out: &mut [u8]) {
        match self {
            Spare::Bytes(b) => b.read(ppn, out),
            Spare::Packed(p) => p.read(ppn, out),
        }
    }

    /// The spare area of `ppn` as a store of bytes holds it, without a copy
    /// (`None`: packed, or never written: [`Spare::read`] writes it out).
    #[inline]
    pub fn stored_bytes(&self, ppn: Ppn) -> Option<&[u8]> {
        match self {
            Spare::Bytes(b) => b.page(ppn),
            Spare::Packed(_) => None,
        }
    }

    /// The CRC-32 of the first `span` bytes of the spare area of `ppn`, where
    /// the store remembers it: a store of bytes given a codec of that CRC
    /// span (`None` elsewhere: the caller hashes the bytes it read).
    #[inline]
    pub fn remembered_crc(&self, ppn: Ppn, span: usize) -> Option<u32> {
        match self {
            Spare::Bytes(b) if span > 0 && b.memo() == span => Some(b.page_crc(ppn)),
            _ => None,
        }
    }

    /// The installed codec (a packed store's; none for bytes).
    pub fn codec(&self) -> Option<SpareCodec> {
        match self {
            Spare::Bytes(_) => None,
            Spare::Packed(p) => p.codec,
        }
    }

    /// [`Spare::write`] of the spare area `spare` describes, into an erased
    /// page (a program's: the array checked the page is erased).
    #[inline]
    pub fn write_fields(&mut self, ppn: Ppn, spare: &FieldsSpare) {
        match self {
            Spare::Bytes(b) => (spare.encode)(b.page_mut(ppn)),
            Spare::Packed(p) => p.write_fields(ppn, spare),
        }
    }

    /// Stores `bytes` as the spare area of `ppn`.
    #[inline]
    pub fn write(&mut self, ppn: Ppn, bytes: &[u8]) {
        match self {
            Spare::Bytes(b) => b.page_mut(ppn).copy_from_slice(bytes),
            Spare::Packed(p) => p.write(ppn, bytes),
        }
    }

    /// Would `fields` (with no protocol bytes and erased flag bytes) stored
    /// as page `index` of `block` extend its run, and so would the fields
    /// of each of its next `count - 1` pages, advancing by `lpn_step` and
    /// `seq_step`? Only a packed store's run can be extended (`Run`), from
    /// its third page on (its first two set the steps), and only with
    /// fields a page's own entry could hold (see `store`).
    pub fn continues_run(&self, block: BlockId, index: u32, count: u32, fields: &PackedSpare, lpn_step: u32, seq_step: u32) -> bool {
        let Spare::Packed(p) = self else { return false };
        let b = block as usize;
        let ppn = block * p.pages_per_block + index;
        let last = (index + count - 1) as u64;
        p.codec.is_some()
            && index >= 2
            && count > 0
            && p.run_len(b) == index
            && p.lpn_of(ppn) == ERASED
            && p.run[b].lpn_step == lpn_step
            && p.run[b].seq_step == seq_step
            && !fields.flag
            && *fields == p.run_fields(b, index)
            && fields.lpn as u64 + (count - 1) as u64 * (lpn_step as u64) < PackedSpare::LPN_LIMIT as u64
            && last * seq_step as u64 <= u16::MAX as u64
    }

    /// Stores pages `first..first + count` of `block` as the next pages of
    /// the block's run, which [`Spare::continues_run`] said the run's pages
    /// from `first` on extend: the same store as [`Spare::write_fields`] of
    /// the run's fields for each page, without looking at them again.
    pub fn append_to_run(&mut self, block: BlockId, first: u32, count: u32) {
        let Spare::Packed(p) = self else {
            unreachable!("only a packed store has runs")
        };
        let b = block as usize;
        assert!(
            p.run_len(b) == first && first >= 2,
            "page {first} of block {block} does not continue its run of {} pages",
            p.run_len(b)
        );
        // Erased pages past the run have no entry of their own (the array
        // checked they are erased): a check here would read, and so map,
        // the sparse entries a run exists to spare.
        debug_assert!(
            (first..first + count).all(|i| p.lpn_of(block * p.pages_per_block + i) == ERASED),
            "pages {first}..{} of block {block} have entries of their own",
            first + count
        );
        p.run[b].len += count;
    }

    /// The page's spare area reads erased again.
    pub fn erase_page(&mut self, ppn: Ppn) {
        match self {
            Spare::Bytes(b) => {
                if b.page(ppn).is_some_and(|p| !crate::is_erased(p)) {
                    b.page_mut(ppn).fill(0xFF);
                }
            }
            Spare::Packed(p) => p.erase_page(ppn),
        }
    }

    /// [`Spare::erase_page`] of each page of `pages` that `programs` counts
    /// programmed, in order: a block's, after [`Spare::block_erased`].
    pub(crate) fn erase_block_pages(&mut self, pages: std::ops::Range<Ppn>, programs: &crate::programs::Programs) {
        match self {
            Spare::Bytes(_) => {
                for ppn in pages.filter(|&p| programs.get(p) != 0) {
                    self.erase_page(ppn);
                }
            }
            Spare::Packed(p) => {
                let (b, _) = p.place(pages.start);
                // With the run gone, `mark_erased` is a zero entry.
                debug_assert_eq!(p.run_len(b), 0, "block {b}'s run is forgotten first");
                for ppn in pages.filter(|&ppn| programs.get(ppn) != 0) {
                    match p.lpn_of(ppn) {
                        ERASED => {}
                        WHOLE => {
                            p.whole.remove(&ppn);
                            p.set_lpn(ppn, ERASED);
                        }
                        _ => p.set_lpn(ppn, ERASED),
                    }
                }
            }
        }
    }

    /// A whole block is being erased: its packed pages' base and its run
    /// are free again. Called before its pages' `erase_page`, so those of
    /// its run are left untouched (still zero entries, no memory).
    pub fn block_erased(&mut self, block: BlockId) {
        if let Spare::Packed(p) = self {
            if p.run_len(block as usize) > 0 {
                p.run[block as usize] = Run::default();
            }
            p.seq_base[block as usize] = UNSET;
        }
    }

    /// Spare areas kept whole (packed store; 0 for bytes).
    #[cfg(test)]
    pub fn whole_count(&self) -> usize {
        match self {
            Spare::Bytes(_) => 0,
            Spare::Packed(p) => p.whole.len(),
        }
    }
}

impl Packed {
    #[inline]
    fn lpn_of(&self, ppn: Ppn) -> u32 {
        !self.lpn[ppn as usize]
    }

    #[inline]
    fn set_lpn(&mut self, ppn: Ppn, value: u32) {
        self.lpn[ppn as usize] = !value;
    }

    /// Page `ppn`'s index in its block, and the block.
    #[inline]
    fn place(&self, ppn: Ppn) -> (usize, u32) {
        let b = div(ppn, self.pages_per_block);
        (b as usize, ppn - b * self.pages_per_block)
    }

    /// The length of block `b`'s run. A block with a run has a sequence
    /// base, so a block without one is answered from `seq_base` (resident
    /// anyway): the run table is read, and so made resident, only for
    /// blocks with packed pages.
    #[inline]
    fn run_len(&self, b: usize) -> u32 {
        match self.seq_base[b] {
            UNSET => 0,
            _ => self.run[b].len,
        }
    }

    /// Does page `ppn` read as its block's run says?
    #[inline]
    fn in_run(&self, ppn: Ppn) -> bool {
        let (b, i) = self.place(ppn);
        i < self.run_len(b) && self.lpn_of(ppn) == ERASED
    }

    /// Is page `ppn` packed (in a run or by its own entry)?
    fn is_packed(&self, ppn: Ppn) -> bool {
        match self.lpn_of(ppn) {
            ERASED => self.in_run(ppn),
            WHOLE | ERASED_IN_RUN => false,
            _ => true,
        }
    }

    /// Marks `ppn` erased: a zero entry, or inside its block's run a marker
    /// (a zero entry there reads as the run). An entry already zero is not
    /// written, so pages never programmed stay the kernel's zero pages.
    fn mark_erased(&mut self, ppn: Ppn) {
        let (b, i) = self.place(ppn);
        if i < self.run_len(b) {
            self.set_lpn(ppn, ERASED_IN_RUN);
        } else if self.lpn_of(ppn) != ERASED {
            self.set_lpn(ppn, ERASED);
        }
    }

    /// The fields of page `i` of block `b`'s run.
    #[inline]
    fn run_fields(&self, b: usize, i: u32) -> PackedSpare {
        let r = self.run[b];
        PackedSpare {
            lpn: r.lpn.wrapping_add(i.wrapping_mul(r.lpn_step)),
            seq: self.seq_base[b] + i as u64 * r.seq_step as u64,
            erase_count: self.erase_count[b],
            flag: false,
        }
    }

    /// Extends block `b`'s run by page `i` (its next page, never written
    /// since the erase) if `fields` follow its pattern (the first two pages
    /// set it) and the page has no protocol or flag bytes set.
    fn extend_run(&mut self, b: usize, i: u32, fields: &PackedSpare, plain: bool) -> bool {
        debug_assert_ne!(self.seq_base[b], UNSET, "a run's block has a sequence base");
        let r = self.run[b];
        if !plain || fields.flag || i != r.len {
            return false;
        }
        let seq_step = fields.seq.wrapping_sub(self.seq_base[b]);
        let fits = match i {
            0 => seq_step == 0,
            1 => seq_step <= u32::MAX as u64,
            _ => *fields == self.run_fields(b, i),
        };
        if !fits {
            return false;
        }
        let run = &mut self.run[b];
        match i {
            0 => run.lpn = fields.lpn,
            1 => {
                run.lpn_step = fields.lpn.wrapping_sub(run.lpn);
                run.seq_step = seq_step as u32;
            }
            _ => {}
        }
        run.len += 1;
        debug_assert_eq!(self.run_fields(b, i), *fields);
        true
    }

    #[inline]
    fn read(&self, ppn: Ppn, out: &mut [u8]) {
        let mut fields = ReadFields::EMPTY;
        if self.read_fields_into(ppn, &mut fields) {
            fields.unpack(&self.codec.expect("a page is packed only with a codec"), out);
        } else if self.lpn_of(ppn) == WHOLE {
            let kept = &self.whole[&ppn];
            out[..kept.len()].copy_from_slice(kept);
            out[kept.len()..].fill(0xFF);
        } else {
            out.fill(0xFF);
        }
    }

    /// See `Spare::read_fields_into`: the packed pages, whose bytes `read`
    /// unpacks from these fields.
    #[inline]
    fn read_fields_into(&self, ppn: Ppn, out: &mut ReadFields) -> bool {
        match self.lpn_of(ppn) {
            ERASED if self.in_run(ppn) => {
                let (b, i) = self.place(ppn);
                *out = ReadFields {
                    fields: self.run_fields(b, i),
                    ..ReadFields::EMPTY
                };
            }
            ERASED | ERASED_IN_RUN | WHOLE => return false,
            v => {
                let b = div(ppn, self.pages_per_block) as usize;
                let codec = self.codec.expect("a page is packed only with a codec");
                out.fields = PackedSpare {
                    lpn: v & !FLAG,
                    flag: v & FLAG != 0,
                    seq: self.seq_base[b] + self.seq_off[ppn as usize] as u64,
                    erase_count: self.erase_count[b],
                };
                let (w, f) = (codec.protocol_bytes, codec.flag_bytes);
                out.protocol = [0; PackedSpare::PROTOCOL_MAX];
                out.protocol[..w].copy_from_slice(&self.protocol[ppn as usize * w..(ppn as usize + 1) * w]);
                out.flags = [0xFF; SpareCodec::FLAGS_MAX];
                for (o, &x) in out.flags[..f].iter_mut().zip(&self.flags[ppn as usize * f..(ppn as usize + 1) * f]) {
                    *o = !x;
                }
            }
        }
        true
    }

    #[inline]
    fn write(&mut self, ppn: Ppn, bytes: &[u8]) {
        let w = self.codec.map_or(0, |c| c.protocol_bytes);
        // The codec writes the page's protocol bytes here; they are copied
        // to the page's entry only if it is packed outside a run.
        let mut protocol = [0u8; PackedSpare::PROTOCOL_MAX];
        let fields = self.codec.and_then(|c| (c.pack)(bytes, &mut protocol[..w]));
        let (f, at) = self.codec.map_or((0, 0), |c| (c.flag_bytes, c.flags_at));
        debug_assert_eq!(bytes.len(), self.oob_size);
        self.store(ppn, false, fields, &protocol[..w], &bytes[at..at + f], || Cow::Borrowed(bytes));
    }

    /// [`Packed::write`] with the codec's answer known; the bytes are
    /// written only for a spare area kept whole.
    #[inline]
    fn write_fields(&mut self, ppn: Ppn, spare: &FieldsSpare) {
        debug_assert!(
            self.codec.is_some_and(|c| {
                let bytes = spare.bytes(self.oob_size);
                let mut p = [0u8; PackedSpare::PROTOCOL_MAX];
                (c.pack)(&bytes, &mut p[..c.protocol_bytes]) == Some(spare.fields)
                    && p[..c.protocol_bytes] == *spare.protocol
                    && bytes[c.flags_at..c.flags_at + c.flag_bytes] == *spare.flags
            }),
            "page {ppn}: the spare area does not pack to the fields given"
        );
        // Fields of other widths than the codec's are not this store's.
        if self
            .codec
            .is_none_or(|c| c.protocol_bytes != spare.protocol.len() || c.flag_bytes != spare.flags.len())
        {
            return self.write(ppn, &spare.bytes(self.oob_size));
        }
        let oob_size = self.oob_size;
        self.store(ppn, true, Some(spare.fields), spare.protocol, spare.flags, || {
            Cow::Owned(spare.bytes(oob_size))
        });
    }

    /// Stores the spare area of `ppn`, which the codec packs to `fields`,
    /// `protocol` and `flag_bytes` (or does not pack). `bytes` writes the
    /// whole spare area, asked only to keep it whole. `erased`: the page is
    /// erased (a program's store).
    #[inline]
    fn store<'b>(
        &mut self,
        ppn: Ppn,
        erased: bool,
        fields: Option<PackedSpare>,
        protocol: &[u8],
        flag_bytes: &[u8],
        bytes: impl FnOnce() -> Cow<'b, [u8]>,
    ) {
        let (b, i) = self.place(ppn);
        // An erased page at or past its block's run end has the entry
        // `ERASED` (`mark_erased`), never `WHOLE`: a program's store does
        // not read it there, so the first pages of a block's run leave the
        // sparse table's memory unmapped (a read maps the kernel's zero
        // page, one fault per 4 KiB of entries).
        let entry_erased = erased && i >= self.run_len(b);
        debug_assert!(!entry_erased || self.lpn_of(ppn) == ERASED, "erased page {ppn} has an entry");
        if !entry_erased && self.lpn_of(ppn) == WHOLE {
            self.whole.remove(&ppn);
        }
        let w = protocol.len();
        if let Some(fields) = fields {
            if self.seq_base[b] == UNSET {
                self.seq_base[b] = fields.seq;
                self.erase_count[b] = fields.erase_count;
            }
            let off = fields.seq.wrapping_sub(self.seq_base[b]);
            if fields.lpn < PackedSpare::LPN_LIMIT && off <= u16::MAX as u64 && fields.erase_count == self.erase_count[b] {
                let f = flag_bytes.len();
                let plain = protocol.iter().all(|&x| x == 0) && flag_bytes.iter().all(|&x| x == 0xFF);
                if (entry_erased || self.lpn_of(ppn) == ERASED) && self.extend_run(b, i, &fields, plain) {
                    return;
                }
                self.set_lpn(ppn, fields.lpn | if fields.flag { FLAG } else { 0 });
                self.seq_off[ppn as usize] = off as u16;
                self.protocol[ppn as usize * w..(ppn as usize + 1) * w].copy_from_slice(protocol);
                let stored = &mut self.flags[ppn as usize * f..(ppn as usize + 1) * f];
                for (s, &x) in stored.iter_mut().zip(flag_bytes) {
                    *s = !x;
                }
                return;
            }
        }
        let bytes = bytes();
        debug_assert_eq!(bytes.len(), self.oob_size);
        let kept = bytes.iter().rposition(|&x| x != 0xFF).map_or(0, |i| i + 1);
        if kept == 0 {
            self.mark_erased(ppn);
            return;
        }
        self.whole.insert(ppn, bytes[..kept].into());
        self.set_lpn(ppn, WHOLE);
    }

    fn erase_page(&mut self, ppn: Ppn) {
        if self.lpn_of(ppn) == WHOLE {
            self.whole.remove(&ppn);
        }
        self.mark_erased(ppn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy codec: lpn (u32), seq (u64), erase count (u32), flag (u8 0/1) in
    /// bytes 0..17, the rest 0xFF.
    fn pack(b: &[u8], _protocol: &mut [u8]) -> Option<PackedSpare> {
        if b[16] > 1 || b[17..].iter().any(|&x| x != 0xFF) {
            return None;
        }
        Some(PackedSpare {
            lpn: u32::from_le_bytes(b[0..4].try_into().unwrap()),
            seq: u64::from_le_bytes(b[4..12].try_into().unwrap()),
            erase_count: u32::from_le_bytes(b[12..16].try_into().unwrap()),
            flag: b[16] == 1,
        })
    }
    fn unpack(f: &PackedSpare, _protocol: &[u8], out: &mut [u8]) {
        out.fill(0xFF);
        out[0..4].copy_from_slice(&f.lpn.to_le_bytes());
        out[4..12].copy_from_slice(&f.seq.to_le_bytes());
        out[12..16].copy_from_slice(&f.erase_count.to_le_bytes());
        out[16] = f.flag as u8;
    }
    const CODEC: SpareCodec = SpareCodec {
        pack,
        unpack,
        protocol_bytes: 0,
        flag_bytes: 0,
        flags_at: 0,
        crc_span: 0,
    };

    fn record(lpn: u32, seq: u64, ec: u32, flag: bool) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        unpack(
            &PackedSpare {
                lpn,
                seq,
                erase_count: ec,
                flag,
            },
            &[],
            &mut b,
        );
        b
    }

    #[test]
    fn packed_pages_read_back_exactly_and_odd_ones_are_kept_whole() {
        let mut s = Spare::packed(32, 4, 8, 64, 0).unwrap();
        let mut out = vec![0u8; 64];
        // Without a codec everything is kept whole.
        s.write(0, &record(1, 10, 0, false));
        assert_eq!(s.whole_count(), 1);
        s.set_codec(Some(CODEC)).unwrap();
        let cases = [
            (1, record(5, 100, 3, false)),
            (2, record(6, 101, 3, true)),
            (3, record(7, 100 + 70_000, 3, false)), // too far from the base
            (4, record(8, 102, 4, false)),          // another erase count
            (5, record(u32::MAX - 1, 103, 3, false)),
            (6, {
                let mut b = record(9, 104, 3, false);
                b[40] = 0; // not the common form
                b
            }),
            (9, record(1, 50, 1, false)), // block 1: its own base
        ];
        for (ppn, bytes) in &cases {
            s.write(*ppn, bytes);
        }
        assert_eq!(s.whole_count(), 5, "pages 0, 3, 4, 5, 6");
        s.read(0, &mut out);
        assert_eq!(out, record(1, 10, 0, false));
        for (ppn, bytes) in &cases {
            s.read(*ppn, &mut out);
            assert_eq!(&out, bytes, "page {ppn}");
        }
        // Another codec (a remount): the packed pages are packed again and
        // read the same.
        s.set_codec(Some(SpareCodec {
            protocol_bytes: 2,
            ..CODEC
        }))
        .unwrap();
        assert_eq!(s.whole_count(), 5);
        for (ppn, bytes) in &cases {
            s.read(*ppn, &mut out);
            assert_eq!(&out, bytes, "page {ppn} under the new codec");
        }
        s.read(7, &mut out);
        assert!(out.iter().all(|&b| b == 0xFF));
        // Rewriting a whole page with the common form packs it.
        s.write(6, &record(9, 104, 3, false));
        assert_eq!(s.whole_count(), 4);
        for p in 0..8 {
            s.erase_page(p);
        }
        s.block_erased(0);
        assert_eq!(s.whole_count(), 0);
        s.read(1, &mut out);
        assert!(out.iter().all(|&b| b == 0xFF));
        // A new cycle takes a new base.
        s.write(1, &record(5, 900_000, 4, false));
        s.read(1, &mut out);
        assert_eq!(out, record(5, 900_000, 4, false));
        assert_eq!(s.whole_count(), 0);
    }

    /// Flag bytes ride beside the packed fields: a page whose flags a partial
    /// program cleared stays packed and reads back exactly.
    #[test]
    fn flag_bytes_are_kept_per_page_beside_packed_fields() {
        // The toy codec checks bytes 17.. are 0xFF; flags at 20..22 sit there,
        // so it must ignore them: a codec that packs with them as 0xFF.
        fn pack_ignoring_flags(b: &[u8], p: &mut [u8]) -> Option<PackedSpare> {
            let mut copy = b.to_vec();
            copy[20..22].fill(0xFF);
            pack(&copy, p)
        }
        let codec = SpareCodec {
            pack: pack_ignoring_flags,
            flag_bytes: 2,
            flags_at: 20,
            crc_span: 0,
            ..CODEC
        };
        let mut s = Spare::packed(32, 4, 8, 64, 0).unwrap();
        s.set_codec(Some(codec)).unwrap();
        let mut out = vec![0u8; 64];
        let mut r = record(5, 100, 3, false);
        s.write(9, &r);
        s.read(9, &mut out);
        assert_eq!(out, r);
        r[20] = 0x7F; // a flag bit cleared
        r[21] = 0x00;
        s.write(9, &r);
        assert_eq!(s.whole_count(), 0, "a flagged page stays packed");
        s.read(9, &mut out);
        assert_eq!(out, r);
        // Its neighbour's flags are its own.
        s.write(10, &record(6, 101, 3, false));
        s.read(10, &mut out);
        assert_eq!(out[20..22], [0xFF, 0xFF]);
    }

    /// A block written in order with a fixed step in logical page and
    /// sequence number keeps one run and no per-page entry; pages that break
    /// the pattern, rewrites, partial programs and erases inside the run read
    /// back exactly.
    #[test]
    fn runs_read_back_and_take_no_entries() {
        let mut s = Spare::packed(32, 4, 8, 64, 0).unwrap();
        s.set_codec(Some(CODEC)).unwrap();
        let entries = |s: &Spare| match s {
            Spare::Packed(p) => p.lpn.iter().filter(|&&x| x != 0).count(),
            Spare::Bytes(_) => unreachable!(),
        };
        let mut out = vec![0u8; 64];
        for i in 0..8u32 {
            s.write(i, &record(100 + 4 * i, 1_000 + 3 * i as u64, 2, false));
        }
        assert_eq!(entries(&s), 0, "a whole block in one run");
        for i in 0..8u32 {
            s.read(i, &mut out);
            assert_eq!(out, record(100 + 4 * i, 1_000 + 3 * i as u64, 2, false));
        }
        // Block 1: the pattern breaks at page 3; pages after it have entries.
        for i in 0..6u32 {
            let lpn = if i == 3 { 7 } else { 50 + i };
            s.write(8 + i, &record(lpn, 10 + i as u64, 2, false));
        }
        assert_eq!(entries(&s), 3, "pages 3, 4 and 5 of block 1");
        // A page of the run rewritten (a partial program) and one erased.
        s.write(2, &record(108, 1_006, 2, true));
        s.erase_page(5);
        s.read(2, &mut out);
        assert_eq!(out, record(108, 1_006, 2, true));
        s.read(5, &mut out);
        assert!(out.iter().all(|&b| b == 0xFF), "erased inside the run");
        s.read(6, &mut out);
        assert_eq!(out, record(124, 1_018, 2, false), "the run goes on past it");
        s.write(5, &[0xFF; 64]);
        s.read(5, &mut out);
        assert!(out.iter().all(|&b| b == 0xFF), "written erased inside the run");
        // Erasing the block forgets the run without touching its entries.
        s.block_erased(0);
        for p in 0..8 {
            s.erase_page(p);
        }
        for p in 0..8 {
            s.read(p, &mut out);
            assert!(out.iter().all(|&b| b == 0xFF), "page {p} after the erase");
        }
        assert_eq!(entries(&s), 3, "block 0's entries are all zero again");
    }

    /// The packed store against the bytes store over random operations:
    /// mostly in-order programs of patterned records (runs), with records
    /// off the pattern, flagged and odd ones, rewrites, page and block erases
    /// and codec changes; every page reads the same after each. The bytes
    /// store remembers its records' CRCs: each one it hands up is the hash
    /// of what the page reads, in the store and in a snapshot taken before
    /// the last writes.
    #[test]
    fn packed_store_reads_as_the_bytes_store_under_random_operations() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (pages, ppb) = (64u32, 16u32);
        let mut packed = Spare::packed(pages as usize, 4, ppb, 64, 0).unwrap();
        packed.set_codec(Some(CODEC)).unwrap();
        let mut bytes = Spare::bytes(pages as usize, 64, ppb, 0).unwrap();
        const SPAN: usize = 40;
        bytes.set_codec(Some(SpareCodec { crc_span: SPAN, ..CODEC })).unwrap();
        let mut snapshot = bytes.clone();
        let mut next = [0u32; 4];
        let (mut a, mut b) = (vec![0u8; 64], vec![0u8; 64]);
        let mut all_programmed = crate::programs::Programs::bits(pages as usize, 0).unwrap();
        for ppn in 0..pages {
            all_programmed.set(ppn, 1);
        }
        let mut as_fields = 0;
        for step in 0..20_000 {
            let block = rng.gen_range(0..4u32);
            let roll = rng.gen_range(0..100);
            if roll < 70 && next[block as usize] < ppb {
                let i = next[block as usize];
                next[block as usize] += 1;
                let off = rng.gen_range(0..20) == 0;
                let lpn = if off { rng.gen_range(0..1000) } else { 10 * block + 5 * i };
                let seq = 500 * block as u64 + if off { rng.gen_range(0..100) } else { 2 * i as u64 };
                let mut r = record(lpn, seq, 1, rng.gen_range(0..30) == 0);
                if rng.gen_range(0..40) == 0 {
                    r[30] = 0;
                }
                let ppn = block * ppb + i;
                packed.write(ppn, &r);
                bytes.write(ppn, &r);
            } else if roll < 80 {
                let ppn = rng.gen_range(0..pages);
                let mut r = vec![0u8; 64];
                bytes.read(ppn, &mut r);
                r[rng.gen_range(0..64)] &= rng.gen::<u8>();
                packed.write(ppn, &r);
                bytes.write(ppn, &r);
            } else if roll < 85 {
                let ppn = rng.gen_range(0..pages);
                packed.erase_page(ppn);
                bytes.erase_page(ppn);
            } else if roll < 90 {
                packed.block_erased(block);
                let pages = block * ppb..(block + 1) * ppb;
                // The array's erase: only the pages it counts programmed
                // (here every one) are erased, at once.
                packed.erase_block_pages(pages.clone(), &all_programmed);
                for p in pages {
                    bytes.erase_page(p);
                }
                next[block as usize] = 0;
            } else if roll == 99 {
                let width = rng.gen_range(0..3);
                packed
                    .set_codec(Some(SpareCodec {
                        protocol_bytes: width,
                        ..CODEC
                    }))
                    .unwrap();
            }
            for ppn in 0..pages {
                packed.read(ppn, &mut a);
                bytes.read(ppn, &mut b);
                assert_eq!(a, b, "page {ppn} after step {step}");
                // A packed page's fields unpack to its bytes; only a packed
                // store hands them up.
                assert_eq!(bytes.read_fields(ppn), None);
                if let Some(f) = packed.read_fields(ppn) {
                    let codec = packed.codec().unwrap();
                    let mut unpacked = vec![0u8; 64];
                    f.unpack(&codec, &mut unpacked);
                    assert_eq!(unpacked, b, "page {ppn}'s fields after step {step}");
                    assert!(f.protocol[codec.protocol_bytes..].iter().all(|&x| x == 0));
                    as_fields += 1;
                } else {
                    let p = match &packed {
                        Spare::Packed(p) => p,
                        Spare::Bytes(_) => unreachable!(),
                    };
                    assert!(!p.is_packed(ppn), "page {ppn} is packed but has no fields after step {step}");
                }
                assert_eq!(
                    bytes.remembered_crc(ppn, SPAN),
                    Some(crc32fast::hash(&b[..SPAN])),
                    "page {ppn} after step {step}"
                );
                assert_eq!(bytes.remembered_crc(ppn, SPAN - 1), None, "another span is not remembered");
                snapshot.read(ppn, &mut a);
                assert_eq!(
                    snapshot.remembered_crc(ppn, SPAN),
                    Some(crc32fast::hash(&a[..SPAN])),
                    "snapshot page {ppn}"
                );
            }
            if step % 50 == 0 {
                snapshot = bytes.clone();
            }
        }
        assert!(as_fields > 100_000, "{as_fields} pages read as fields");
    }
}
