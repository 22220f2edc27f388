//! What a protocol can plug into the framework without special cases in its core.
//!
//! Every method has a neutral default, so `plain` implements only `name`.

use crate::oob::Oob;
use txftl_nand::{BlockId, Ppn};

pub trait Hooks {
    /// Protocol name, as the CLI spells it and the superblock records it.
    fn name(&self) -> &'static str;

    /// A physical page GC must keep although the L2P does not point to it
    /// (X-FTL's uncommitted pages, NoLgn's old pages).
    fn extra_live(&self, _ppn: Ppn) -> bool {
        false
    }

    /// Whether `extra_live` can ever say yes; lets GC skip asking page by page.
    fn has_extra_live() -> bool
    where
        Self: Sized,
    {
        false
    }

    /// A block GC must not pick as a victim now (NoLgn's locked blocks,
    /// LightTx's zones).
    fn skip_victim(&self, _block: BlockId) -> bool {
        false
    }

    /// GC moved a page it kept for the protocol (`extra_live`) or a mapped page
    /// from `old` to `new` (Flag Commit moves its flags; X-FTL repoints entries).
    fn on_relocate(&mut self, _old: Ppn, _new: Ppn, _oob: &Oob) {}

    /// Largest protocol root kept in the superblock, bytes (sizes the superblock).
    fn root_len_max(&self) -> usize {
        0
    }

    /// The protocol's root pointer, recorded in every superblock.
    fn root(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Largest protocol section appended to each checkpoint, bytes.
    fn checkpoint_section_max(&self) -> usize {
        0
    }

    /// The protocol's section of the next checkpoint.
    fn checkpoint_section(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Called once by `format`, with the logical capacity.
    fn on_format(&mut self, _logical_pages: u32) {}
}
