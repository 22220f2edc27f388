//! What a protocol can plug into the framework without special cases in its
//! core, grouped by concern:
//!
//! - [`GcHooks`]: pages GC must keep or move, victims it must skip, blocks
//!   to erase before the next host program;
//! - [`PersistHooks`]: what the protocol writes through the framework (its
//!   root in every superblock, its section of every checkpoint, its log
//!   rings, its bytes of the pages' spare areas);
//! - [`RecoveryHooks`]: rebuilding the protocol's state, and the mappings it
//!   decides, from the NAND alone;
//! - [`EventHooks`]: what the framework tells the protocol as it happens
//!   (format, programs, erases).
//!
//! [`Hooks`] ties them with the protocol's name, its mapping table
//! ([`crate::Mapping`]) and its [`Capabilities`], declared once. Every method
//! has a neutral default, so `plain` writes four empty impls and its name.

use crate::error::Result;
use crate::log::LogSource;
use crate::mapping::Mapping;
use crate::oob::{Oob, SpareBytes, FLAG_BYTES, PROTOCOL_BYTES};
use crate::scan::ScannedPages;
use std::collections::BTreeMap;
use txftl_nand::{BlockId, Ppn};

/// An L2P update a protocol's recovery asks for, ordered among the pages rolled
/// forward by `seq` (the update happens "at" that sequence number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecoveredUpdate {
    pub seq: u64,
    pub lpn: u32,
    pub ppn: Ppn,
}

/// An intact data page recovery read, handed to the protocol
/// ([`RecoveryHooks::recover_scanned`], through [`ScannedPages`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScannedPage {
    pub ppn: Ppn,
    pub oob: Oob,
    /// The record came from the block's summary page (`summary.rs`), not
    /// from the page's own spare area: its flag bytes are those the page
    /// was programmed with, and a partial program may have cleared bits
    /// since. `ScannedPages::for_each` returns what reads the live ones
    /// (`LiveSpares::live_oob`).
    pub from_summary: bool,
}

/// A programmed page of a GC victim, as [`GcHooks::plan_victim`] sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VictimPage {
    pub ppn: Ppn,
    /// Its record as it reads now (flag bytes as partial programs left
    /// them), or `None`: torn, erased or unreadable, or not read at all (a
    /// protocol that plans from its DRAM: [`GcHooks::plan_reads_spares`]).
    pub oob: Option<Oob>,
    /// GC copies it: the L2P maps it, or the protocol keeps it
    /// ([`GcHooks::extra_live`]).
    pub live: bool,
}

/// What a protocol decides for a victim before the framework copies its
/// live pages and releases it ([`GcHooks::plan_victim`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VictimPlan {
    /// The bytes of a live page's copy, by the page copied. A live page not
    /// named here is copied with [`GcHooks::relocated_protocol_bytes`] and
    /// its flag bytes as they read.
    pub copies: BTreeMap<Ppn, SpareBytes>,
    /// Flag programs (the bits to clear) on pages outside the victim, issued
    /// before the copies; a page whose partial programs are spent is copied
    /// instead ([`GcHooks::flagged_copy_bytes`]). All are done before the
    /// checkpoint that releases the victim (a checkpoint starts once every
    /// flash operation is done), and before its erase if it is erased at once.
    pub flag_programs: Vec<(Ppn, [u8; FLAG_BYTES])>,
    /// Set by the framework: only asked what the plan would be (a mount
    /// releases a block with no live page at once if its plan programs
    /// nothing); the protocol records nothing of it.
    pub dry_run: bool,
}

/// A page's spare area read while a victim is planned: the pages the
/// victim's records point to (Flag Commit's links).
pub trait SpareProbe {
    /// The record of data page `ppn` as it reads now (an OOB-only read,
    /// charged on the device clock), or `None`: not programmed, torn,
    /// unreadable, or in a block no longer in use (free, or prefree: see
    /// [`SpareProbe::outlives_victim`]).
    fn read(&mut self, ppn: Ppn) -> Option<Oob>;
    /// Whether `ppn`'s block is still in use once the victim is released: open
    /// or full. A prefree block is released by the same checkpoint as the
    /// victim (every checkpoint releases every prefree block), so a flag on
    /// it outlives the victim by nothing.
    fn outlives_victim(&self, ppn: Ppn) -> bool;
}

/// What a protocol's hooks can do at all, declared once, so that the
/// framework's hot paths skip asking where the answer is always no.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// [`GcHooks::extra_live`] can say yes: GC asks it page by page.
    pub extra_live: bool,
    /// [`GcHooks::skip_victim`] can say yes: greedy GC scans every block
    /// instead of picking victims from its index.
    pub skips_victims: bool,
    /// Recovery reads the [`RecoveryHooks::zone_blocks`] and visits every
    /// data page it found ([`RecoveryHooks::recover_scanned`]).
    pub scans_pages: bool,
    /// The protocol's log holds every mapping made since the checkpoint
    /// that must survive ([`RecoveryHooks::recover`] returns them all; a GC
    /// move needs none, its source staying intact until the next checkpoint):
    /// recovery maps nothing from the spare areas of the pages programmed
    /// since, and reads of each block written since only what its state
    /// needs (its first page, its programmed prefix by binary search, its
    /// last page: `recovery/block_probe.rs`); nor does it seal because the
    /// protocol's updates or those blocks were found (Möbius: the ALA is
    /// read at every boot, no merge at boot).
    pub logs_mappings: bool,
    /// [`GcHooks::plan_victim`] plans each victim: the framework reads the
    /// spare area of every programmed page of the victim, dead ones too
    /// (charged), before it copies the live ones.
    pub plans_victims: bool,
}

impl Capabilities {
    /// None of them: the framework alone (`plain`).
    pub const NONE: Capabilities = Capabilities {
        extra_live: false,
        skips_victims: false,
        scans_pages: false,
        logs_mappings: false,
        plans_victims: false,
    };
}

/// A protocol on the framework.
pub trait Hooks: GcHooks + PersistHooks + RecoveryHooks + EventHooks {
    /// The mapping table: [`crate::Dense`] (persisted by checkpoints),
    /// [`crate::Unpersisted`] (rebuilt by the protocol at every mount), or
    /// a cached one.
    type Mapping: Mapping;

    const CAPABILITIES: Capabilities;

    /// Protocol name, as the CLI spells it and the superblock records it.
    fn name(&self) -> &'static str;

    /// A fresh, all-unmapped table of `logical_pages` entries, for tables
    /// whose pages hold `entries_per_page` (a cached table sizes its DRAM
    /// from the protocol's options here).
    fn mapping_table(&self, logical_pages: u32, _entries_per_page: u32) -> Result<Self::Mapping, crate::DeviceError> {
        Self::Mapping::unmapped(logical_pages)
    }

    /// Another logical page a data page may be mapped as, besides the one its
    /// OOB record names (SW-WAL: a WAL page remapped onto the database page
    /// its spare area names, `Ftl::remap_page`). Reads, GC and the checks
    /// accept a page mapped as either.
    fn alias_lpn(&self, _oob: &Oob) -> Option<u32> {
        None
    }

    /// The protocol's own invariants, given the L2P (logical -> physical, or
    /// `u32::MAX`) and the NAND to inspect.
    fn check(&self, _l2p: &[u32], _nand: &txftl_nand::Nand) -> Result<(), String> {
        Ok(())
    }
}

/// What GC must keep, move, skip or erase for the protocol.
pub trait GcHooks {
    /// A physical page GC must keep although the L2P does not point to it
    /// (X-FTL's uncommitted pages, NoLgn's old pages). Asked only with
    /// [`Capabilities::extra_live`].
    fn extra_live(&self, _ppn: Ppn) -> bool {
        false
    }

    /// Whether [`GcHooks::extra_live`] may say yes now (a protocol whose
    /// extra live pages come and go, such as Möbius's open dynamic
    /// transaction): while it says no, greedy GC picks its victims from the
    /// block table's index alone, as for a protocol without them.
    fn keeps_extra_pages(&self) -> bool {
        true
    }

    /// How many pages in `first..end` (one block's programmed pages) `extra_live`
    /// keeps. The default asks page by page; a protocol with an index answers faster.
    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        (first..end).filter(|&p| self.extra_live(p)).count() as u32
    }

    /// A block GC must not pick as a victim now (NoLgn's locked blocks,
    /// LightTx's zones). Asked only with [`Capabilities::skips_victims`].
    fn skip_victim(&self, _block: BlockId) -> bool {
        false
    }

    /// The protocol bytes a GC copy of a page carries. `mapped`: the L2P points
    /// to the page (it is committed data, not a protocol's extra live page).
    fn relocated_protocol_bytes(&self, _mapped: bool, oob: &Oob) -> [u8; PROTOCOL_BYTES] {
        oob.protocol
    }

    /// GC moved a page it kept for the protocol (`extra_live`) or a mapped page
    /// from `old` to `new` (Flag Commit moves its flags; X-FTL repoints entries).
    /// `oob`: the record `old` held; `new_erase_count`: the erase count of
    /// `new`'s block, which `new`'s record holds (a protocol that tells its
    /// pages from ones a later erase removed compares against it).
    fn on_relocate(&mut self, _old: Ppn, _new: Ppn, _oob: &Oob, _new_erase_count: u32) {}

    /// Before GC copies the live pages of `victim` and marks it prefree: sees
    /// every programmed page of it (`pages`, in page order, dead ones too),
    /// may read the spare areas of pages outside it (`probe`), and fills
    /// `plan`: each copy's bytes and flags, and flag programs on pages outside
    /// the victim (Flag Commit moves a commit flag to the page a reclaimed
    /// page links to). Called only with [`Capabilities::plans_victims`]; a
    /// victim stops counting for recovery at the checkpoint that releases it.
    fn plan_victim(&mut self, _victim: BlockId, _pages: &[VictimPage], _probe: &mut dyn SpareProbe, _plan: &mut VictimPlan) {}

    /// Whether planning reads the spare area of every programmed page of the
    /// victim (charged reads) before [`GcHooks::plan_victim`]; false: the
    /// protocol plans from what it keeps in DRAM (AFC: the aborted
    /// transactions' pages), every [`VictimPage::oob`] is `None`, and it
    /// may still read what it needs through the probe.
    fn plan_reads_spares(&self) -> bool {
        true
    }

    /// A flag program on `ppn` (record `oob`, clearing the bits of `clear`)
    /// found the page's partial programs spent: the bytes of the copy the
    /// framework programs instead (`Ftl::program_flags_or_copy`). By default
    /// the same protocol bytes, the flags cleared as asked.
    fn flagged_copy_bytes(&self, _ppn: Ppn, oob: &Oob, clear: [u8; FLAG_BYTES]) -> SpareBytes {
        let mut bytes = SpareBytes::of(oob);
        for (f, c) in bytes.flags.iter_mut().zip(clear) {
            *f &= !c;
        }
        bytes
    }

    /// A block whose pages must be gone from the flash before the next host
    /// page is programmed (TxFlash's SCC: an uncommitted version of a page
    /// must be erased before a newer version of it is written). The
    /// framework asks before every host program until the answer is `None`;
    /// for each block it moves the live pages out (mapped ones, and those
    /// `extra_live` keeps) to the GC stream, erases the block, and reports
    /// with [`GcHooks::erased_on_request`]. The block then waits, prefree, for
    /// the next checkpoint like any GC victim. A protocol queues its requests
    /// in its own state when it decides them, and answers them in order.
    fn erase_request(&mut self) -> Option<BlockId> {
        None
    }

    /// What the framework did for an [`GcHooks::erase_request`]: `erased`
    /// (false: the block was free, bad or metadata, so nothing was done, or it
    /// was retired after a failed program while its pages moved) after
    /// moving `moved_pages` live pages out of it (counted in `gc_copies` too).
    fn erased_on_request(&mut self, _block: BlockId, _erased: bool, _moved_pages: u64) {}
}

/// What the protocol writes through the framework.
pub trait PersistHooks {
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

    /// A checkpoint is durable: state it covers can be released.
    fn checkpoint_durable(&mut self) {}

    /// The GC victims this durable checkpoint releases to the free pool
    /// (before `checkpoint_durable`): what they hold stops counting for
    /// recovery now, although their erase comes later, when each is reused.
    fn blocks_released(&mut self, _blocks: &[BlockId]) {}

    /// A checkpoint starts no earlier than this (device clock): a protocol
    /// that maps pages while their programs are still in flight (a
    /// transaction acknowledged before its data is on flash) must not see
    /// their mappings persisted, nor its log cut short, before they are done.
    fn checkpoint_after_ns(&self) -> u64 {
        0
    }

    /// The protocol log rings it wants (see `log.rs`), in blocks (at least 3
    /// are reserved), given the geometry. The framework reserves them at format
    /// and names them in the superblock.
    fn protocol_rings(&self, _geo: &txftl_nand::Geometry) -> Vec<u32> {
        Vec::new()
    }

    /// Every data block ends with a summary page holding the OOB records of
    /// its other pages (TxFlash's summary pages, `summary.rs`), so that
    /// recovery reads one page of a block full at the checkpoint instead of
    /// every page's OOB. Asked at format (the logical capacity leaves the
    /// summary pages out) and at every program; a protocol records its
    /// answer in its root ([`PersistHooks::root`]) and gives the same one
    /// once `RecoveryHooks::recover` has read the root back, before any scan
    /// or program of the mount.
    fn summary_pages(&self) -> bool {
        false
    }

    /// How many leading protocol bytes of the OOB record the protocol sets on
    /// most of its data pages (its transaction id, counts, links...), at most
    /// `txftl_nand::PackedSpare::PROTOCOL_MAX`. A metadata-only array keeps
    /// that many bytes a page packed (a page with others set is kept whole):
    /// memory, not format, so the smallest width that covers the common pages.
    fn packed_protocol_bytes(&self) -> usize {
        0
    }

    /// How many of the OOB record's flag bytes (`oob.rs`: bytes 56..60,
    /// outside its CRC, cleared later by partial programs) the protocol
    /// programs on its data pages, at most [`crate::oob::FLAG_BYTES`]; the
    /// others stay 0xFF. A metadata-only array keeps that many bytes a page
    /// beside the packed fields, so a flagged page stays packed.
    fn flag_bytes(&self) -> usize {
        0
    }
}

/// Rebuilding the protocol's state, and the mappings it decides, at a mount.
pub trait RecoveryHooks {
    /// Recovery, after the checkpoint (sequence number `ckpt_seq`) is loaded and
    /// before the roll-forward is applied: rebuild the protocol's state from
    /// its root (as the superblock records it) and its log rings (read newest
    /// first, as far back as it needs), and return extra L2P updates.
    /// `fell_back`: recovery fell back to an older checkpoint than the newest,
    /// so updates the newest alone covered must be found again in the logs.
    /// `section`: the protocol's section of the checkpoint used.
    fn recover(
        &mut self,
        _ckpt_seq: u64,
        _root: &[u8],
        _section: &[u8],
        _fell_back: bool,
        _logs: &mut dyn LogSource,
    ) -> Result<Vec<RecoveredUpdate>> {
        Ok(Vec::new())
    }

    /// Recovery, after `recover`: blocks in use at the checkpoint whose pages
    /// written before it the protocol must read too (LightTx's Unavailable
    /// Zone: blocks holding pages of transactions still open at the
    /// checkpoint; SCC and BPCC: every block). The framework reads each from
    /// its first page to its write pointer at the checkpoint, in parallel
    /// across blocks, on the device clock. Asked only with
    /// [`Capabilities::scans_pages`].
    fn zone_blocks(&self) -> Vec<BlockId> {
        Vec::new()
    }

    /// Recovery, after the roll-forward scan and `recover`: `pages` visits
    /// every intact data page the roll-forward scan found (programmed after
    /// the checkpoint `ckpt_seq`) and every intact data page of the
    /// `zone_blocks` (programmed before it), in no order the protocol may rely
    /// on; returns L2P updates, as `recover` does. LightTx decides here which
    /// transactions committed; SCC and BPCC rebuild every mapping. Called
    /// only with [`Capabilities::scans_pages`].
    ///
    /// The pages are visited one at a time, read from the NAND as they are
    /// (`ScannedPages::for_each`), not handed over as one slice: a whole-device
    /// scan holds millions of pages, and each protocol keeps only what its
    /// decision needs of each (a few fields, not the decoded OOB record).
    /// The zone blocks' reads are charged to the device clock when visited.
    ///
    /// A page read from a block's summary page (`ScannedPage::from_summary`)
    /// carries its flag bytes as programmed; `for_each` returns
    /// [`crate::LiveSpares`], whose `live_oob` reads a chosen page's spare
    /// area as it is now (flag bits partial programs cleared since), charged
    /// on the device clock after the scan.
    fn recover_scanned(&mut self, _ckpt_seq: u64, _pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        Ok(Vec::new())
    }

    /// Recovery, after `recover_scanned`: commit records it found and
    /// rejected because their transaction misses pages (reported as
    /// `RecoveryReport::protocol_commits_rejected`).
    fn commits_rejected(&self) -> u64 {
        0
    }

    /// Recovery: is a page programmed after the checkpoint applied to the L2P
    /// as it is? (X-FTL: only non-transactional pages are.)
    fn roll_forward(&self, _oob: &Oob) -> bool {
        true
    }
}

/// What the framework tells the protocol as it happens.
pub trait EventHooks {
    /// Whether [`EventHooks::on_program`] does anything. A protocol whose
    /// `on_program` is the empty default says `false`; the FTL's own run of
    /// plain host writes then programs whole turns of the stripe without a
    /// record built per page for it (`ftl/run.rs`).
    const SEES_PROGRAMS: bool = true;

    /// Called once by `format`, with the logical capacity.
    fn on_format(&mut self, _logical_pages: u32) {}

    /// A data page was programmed (host or GC stream), before any housekeeping
    /// (GC, checkpoint) that follows it: a protocol that tracks where its
    /// pages lie (LightTx's zones) learns it before a checkpoint records them.
    /// `done_ns`: when the die finishes the program (device clock).
    fn on_program(&mut self, _ppn: Ppn, _oob: &Oob, _done_ns: u64) {}

    /// A flag program (`Ftl::program_flags`) on data page `ppn` was issued:
    /// the bits of `clear` read cleared once it is done (a power cut may
    /// tear it, and recovery reads what it left). Not called for a program
    /// that found the page's partial programs spent.
    fn on_flags_cleared(&mut self, _ppn: Ppn, _clear: [u8; FLAG_BYTES]) {}

    /// `block` was erased: whatever it held is gone from the NAND (a GC
    /// victim erased for reuse, an erase the protocol requested, a metadata
    /// ring entering a block that may have held data). Called only once the
    /// erase succeeded: a torn erase (power cut) or a failed one (the block
    /// goes bad) calls nothing, and a block found clean is not erased again.
    /// BPCC releases the pages it pinned for the aborted pages the block held.
    fn on_erase(&mut self, _block: BlockId) {}
}
