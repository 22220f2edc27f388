//! How the cells' contents are kept: page data stored, copied out, erased
//! and (metadata-only mode) forgotten, and the codec of packed spare areas.

use super::{Data, Nand};
use crate::error::MemoryError;
use crate::geometry::{BlockId, Ppn};
use crate::spare::SpareCodec;

impl Nand {
    /// Metadata-only mode: the FTL will not read the data of `ppn` again (a
    /// metadata page no checkpoint it may fall back to names any more). The
    /// array drops it, as it never stores the data of pages programmed without
    /// any: a later read yields zeros. The spare area stays. Costs no time and
    /// counts no operation; a no-op in full-data mode, which stores everything.
    pub fn forget_data(&mut self, ppn: Ppn) {
        if let Data::Meta(m) = &mut self.data {
            m.remove(ppn);
        }
    }

    /// Installs the codec of the FTL's OOB record: in metadata-only mode,
    /// spare areas of its common form are stored packed from now on (see
    /// `spare.rs`); reads return the same bytes either way. Full-data mode
    /// stores every byte and takes only the record's CRC span, to remember
    /// ([`Nand::remembered_spare_crc`]). The codec's protocol bytes
    /// take that many bytes a page: an allocation the machine refuses is an
    /// error (the codec is then not installed).
    pub fn set_spare_codec(&mut self, codec: Option<SpareCodec>) -> Result<(), MemoryError> {
        self.spare.set_codec(codec)
    }

    /// The installed codec's protocol and flag byte widths (as installed:
    /// capped at [`crate::PackedSpare::PROTOCOL_MAX`] and [`SpareCodec::FLAGS_MAX`]),
    /// if the array packs spare areas: what [`Nand::program_fields`] needs.
    pub fn packed_widths(&self) -> Option<(usize, usize)> {
        self.spare.codec().map(|c| (c.protocol_bytes, c.flag_bytes))
    }

    /// Whether a read of `ppn` hands up stored data bytes: always with full
    /// data; in metadata-only mode only for a page programmed with its
    /// bytes (kept), every other page reading as zeros. A caller that needs
    /// only stored bytes (GC's copy) reads the others into an empty buffer:
    /// the same operation, time and bit errors, without filling a page of
    /// zeros it would not use (three quarters of a metadata-only random-write
    /// run's instructions).
    pub fn holds_data(&self, ppn: Ppn) -> bool {
        match &self.data {
            Data::Full(_) => true,
            Data::Meta(m) => m.contains(ppn),
        }
    }

    /// The CRC-32 of the data a read of `ppn` hands up, where the array
    /// remembers it: any page of a full-data array (`page_data.rs`).
    pub(super) fn remembered_data_crc(&self, ppn: Ppn) -> Option<u32> {
        self.remembered_data_crc_as(ppn, self.programs.get(ppn) != 0)
    }

    /// [`Nand::remembered_data_crc`] of a page the caller knows is
    /// `programmed` or not (a read looks it up once for all it asks).
    pub(super) fn remembered_data_crc_as(&self, ppn: Ppn, programmed: bool) -> Option<u32> {
        match &self.data {
            Data::Full(d) if programmed => Some(d.page_crc(ppn)),
            // An erased page reads as 0xFF (`copy_data_out`).
            Data::Full(d) => Some(d.erased_crc()),
            _ => None,
        }
    }

    /// The CRC-32 (IEEE, as `crc32fast` computes it) of the first `span`
    /// bytes of the spare area of `ppn` as the cells hold them (what a read
    /// that succeeds, or an inspection, hands up), where the array remembers
    /// it: a full-data array whose codec has that CRC span keeps it per page
    /// version (`page_data.rs`), as a controller's CRC engine would compute
    /// it once per program. Every mount decodes the record of every page it
    /// scans, checks and reads back; a crash set mounts after every cut.
    /// `None` elsewhere: the caller hashes the bytes it holds.
    pub fn remembered_spare_crc(&self, ppn: Ppn, span: usize) -> Option<u32> {
        self.spare.remembered_crc(ppn, span)
    }

    /// Whether the data a read of `ppn` (`programmed` or not) hands up when it decodes is all
    /// 0xFF, where the array can tell without copying it out (`None` in
    /// metadata-only mode, whose kept pages are stored as differences).
    pub(super) fn data_reads_erased(&self, ppn: Ppn, programmed: bool) -> Option<bool> {
        match &self.data {
            Data::Full(_) if !programmed => Some(true),
            Data::Full(d) => Some(d.reads_erased(ppn)),
            Data::Meta(_) => None,
        }
    }

    pub(super) fn copy_data_out(&self, ppn: Ppn, buf: &mut [u8]) {
        self.copy_data_out_as(ppn, self.programs.get(ppn) != 0, buf)
    }

    /// [`Nand::copy_data_out`] of a page the caller knows is `programmed` or not.
    pub(super) fn copy_data_out_as(&self, ppn: Ppn, programmed: bool, buf: &mut [u8]) {
        debug_assert_eq!(programmed, self.programs.get(ppn) != 0);
        match &self.data {
            // An erased page's bytes in the store are stale (erase does not touch
            // them, it is too costly): it reads as 0xFF.
            Data::Full(_) if !programmed => buf.fill(0xFF),
            Data::Full(d) => d.read(ppn, buf),
            Data::Meta(m) => {
                if !m.read(ppn, buf) {
                    buf.fill(if programmed { 0 } else { 0xFF });
                }
            }
        }
    }

    #[inline]
    pub(super) fn store_data(&mut self, ppn: Ppn, data: &[u8], like: Option<Ppn>) {
        match &mut self.data {
            Data::Full(d) => d.page_mut(ppn).copy_from_slice(data),
            Data::Meta(m) => {
                if !data.is_empty() {
                    m.insert(ppn, data, like);
                }
            }
        }
    }

    /// Every page of `block` erased, as `erase_page` of each in order does,
    /// once the spare store forgot the block's run (`Spare::block_erased`).
    /// An erase is a block's: what is the block's (whether it holds a kept
    /// page, its run, its program bits) is asked once, not page by page
    /// (which took 6% of a steady-state random-write run's instructions).
    pub(super) fn erase_block_pages(&mut self, block: BlockId) {
        let g = self.cfg.geometry;
        let pages = g.ppn(block, 0)..g.ppn(block, 0) + g.pages_per_block;
        self.spare.erase_block_pages(pages.clone(), &self.programs);
        if let Data::Meta(m) = &mut self.data {
            m.remove_block(pages.clone());
        }
        self.programs.clear(pages.clone());
        debug_assert!(pages.clone().all(|p| self.programs.get(p) == 0), "block {block} erased");
    }

    pub(super) fn erase_page(&mut self, ppn: Ppn) {
        if self.programs.get(ppn) == 0 {
            return;
        }
        self.programs.set(ppn, 0);
        self.spare.erase_page(ppn);
        // The data bytes are left as they are: `programs == 0` makes them read as
        // erased, and a program overwrites the whole page.
        if let Data::Meta(m) = &mut self.data {
            m.remove(ppn);
        }
    }
}
