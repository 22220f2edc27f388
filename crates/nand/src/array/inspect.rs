//! Inspection, for checkers and tests. Costs no time, counts no operation,
//! ignores power. An FTL must never use these: recovery reads through `read`.

use super::{Data, Nand};
use crate::geometry::{BlockId, Ppn};

impl Nand {
    pub fn inspect_oob(&self, ppn: Ppn) -> Vec<u8> {
        let mut oob = vec![0u8; self.cfg.geometry.oob_size as usize];
        self.spare.read(ppn, &mut oob);
        oob
    }
    pub fn inspect_data(&self, ppn: Ppn) -> Vec<u8> {
        let mut buf = vec![0u8; self.cfg.geometry.page_size as usize];
        self.inspect_data_into(ppn, &mut buf);
        buf
    }
    /// The spare area of `ppn` as [`Nand::inspect_oob`] hands it up,
    /// borrowed from the array where it is stored as bytes, else written
    /// into `scratch` (`oob_size` bytes): the invariant check decodes the
    /// record of every mapped page after every recovery of a crash set, and
    /// perf put about 2% of such a set's time on copying each out.
    #[inline]
    pub fn inspect_oob_ref<'a>(&'a self, ppn: Ppn, scratch: &'a mut [u8]) -> &'a [u8] {
        match self.spare.stored_bytes(ppn) {
            Some(bytes) => bytes,
            None => {
                self.spare.read(ppn, scratch);
                scratch
            }
        }
    }
    /// [`Nand::inspect_data`] into `buf` (`page_size` bytes).
    pub fn inspect_data_into(&self, ppn: Ppn, buf: &mut [u8]) {
        self.copy_data_out(ppn, buf);
    }
    /// The CRC-32 (IEEE, as `crc32fast` computes it) of what
    /// [`Nand::inspect_data`] returns. A full-data array remembers a
    /// programmed page's (`page_data.rs`), so a checker that looks at every
    /// mapped page after every recovery computes each one once per version.
    pub fn inspect_data_crc(&self, ppn: Ppn) -> u32 {
        self.remembered_data_crc(ppn)
            .unwrap_or_else(|| crc32fast::hash(&self.inspect_data(ppn)))
    }
    pub fn inspect_programs(&self, ppn: Ppn) -> u8 {
        self.programs.get(ppn)
    }
    /// The physical wear of a block (the FTL keeps its own, possibly lagging, count).
    pub fn inspect_erase_count(&self, block: BlockId) -> u32 {
        self.erase_counts[block as usize]
    }
    pub fn inspect_bad(&self, block: BlockId) -> bool {
        self.bad[block as usize]
    }
    /// Metadata-only mode: how many pages' data the array holds (the FTL's
    /// metadata pages it has not erased or forgotten); 0 in full-data mode.
    pub fn inspect_stored_data_pages(&self) -> usize {
        match &self.data {
            Data::Meta(m) => m.len(),
            Data::Full(_) => 0,
        }
    }
    /// Metadata-only mode: the bytes of page data the array holds (each
    /// page kept whole or as a patch against a shared whole page, `kept.rs`:
    /// every shared page counted once); 0 in full-data mode.
    pub fn inspect_stored_data_bytes(&self) -> u64 {
        match &self.data {
            Data::Meta(m) => m.bytes(),
            Data::Full(_) => 0,
        }
    }

    /// Would reading the data of `ppn` fail ECC at every retry level? For
    /// checkers that must tell a reported loss from a bug. No operation, no time.
    pub fn inspect_unreadable(&self, ppn: Ppn) -> bool {
        let Some(model) = self.faults else { return false };
        if self.programs.get(ppn) == 0 {
            return false;
        }
        let g = self.cfg.geometry;
        (0..=model.read_retries).all(|level| {
            !model
                .decode(self.page_key(ppn), g.page_size, g.oob_size, self.cfg.endurance, level)
                .ok()
        })
    }
}
