//! NoLgn-FTL (Yin, Du, Fan, Noh; J. Systems Architecture 2025): transactions
//! with no log at all, the old version of each page kept valid in place
//! until commit.
//!
//! - `write_tx(t, p)` (§3.3): the L2P's page of p is t's old version: t's
//!   first write of p records (t, new, old) in the P2P table in device DRAM
//!   (`p2p.rs`) and pins the old page (its block is locked: GC skips it).
//!   The new page is programmed with t's id and the old PPN in its OOB
//!   (`format.rs`); from then on the L2P points to it. A second write of p
//!   by t keeps the first old version and kills the page between.
//! - The end flag (§3.2) marks a transaction's last page. With the
//!   [`txftl_ftl::extensions::TxEnd`] call (`write_end`) the host names it,
//!   the device programs it with the flag at once, and `commit` programs
//!   nothing (the paper's commit). A host that only calls `write_tx` and
//!   `commit` (the harness, the file system) gets the same pages: the device
//!   holds each transaction's newest page in DRAM until its next write (then
//!   programmed without the flag) or its commit (with it); that one program
//!   is counted as `nolgn_commit_programs`. Either way the end-flagged page
//!   is programmed only once every earlier page of the transaction is done
//!   on its die: no count in the OOB says how many pages a transaction has,
//!   so the flag must never reach the flash before them.
//! - `commit(t)`: its old pages are unpinned (garbage now) and its entries
//!   leave the table. `abort(t)`: each page goes back to its old version in
//!   the L2P (unmapped if it had none); nothing is programmed.
//! - GC (§3.4): locked blocks are skipped (the framework counts the greedy
//!   choices the skips changed and the pages they added, Fig. 9's
//!   "additional pages"). A copy of an open transaction's page keeps its tag;
//!   a copy of committed data is plain data. Old versions move only off a
//!   block retired after a failed program; the P2P follows them.
//! - Reads: a page an open transaction wrote reads as its old version for
//!   anyone but that transaction (writes to it are refused: isolation is
//!   strict or no-page-conflict, as for SCC).
//! - Recovery (§3.5; `recovery.rs`): bounded by the framework's checkpoints
//!   (the paper's option (a)); `full-scan=1` also reads every page of the
//!   device, as the paper's option (b) does, for its cost. The P2P table is
//!   bounded (`p2p-entries`, the paper's 10,000 by default): a write that
//!   needs an entry of a full table is refused with `TableFull`.
//!
//! The canary `nolgn-canary` has the paper's one lock bit per block: the first
//! transaction with an old page in a block to end unlocks it, though another
//! open transaction may still have its old page there; GC then moves that
//! page, and the P2P (like the new page's OOB) still names the original,
//! erased at the next reuse.

mod device;
mod entry;
mod format;
mod p2p;
mod recovery;

pub use device::NoLgn;
pub use entry::ENTRY;
pub use format::{OpenAtCheckpoint, PageTag, Section, NO_PAGE};
pub use recovery::{resolve, Resolved};

use p2p::P2p;
use txftl_ftl::{BlockId, Capabilities, Dense, EventHooks, GcHooks, Hooks, LogSource, Oob, PersistHooks, Ppn, RecoveredUpdate, RecoveryHooks};
use txftl_ftl::{Result, ScannedPages, PROTOCOL_BYTES};
use txftl_nand::{Geometry, Nand};

/// Counts since the last `reset_stats` (peaks in `P2p`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub commit_programs: u64,
    pub end_writes: u64,
    pub rollback_pages: u64,
    pub old_pages_moved: u64,
    pub gc_open_copies: u64,
    pub recovered_commits: u64,
    pub recovered_rollbacks: u64,
    pub scan_unended: u64,
    /// Checkpoints whose section recorded an open transaction's entries.
    pub sections_with_open_tx: u64,
}

/// NoLgn's state inside the framework.
#[derive(Clone, Debug)]
pub struct NHooks {
    geo: Geometry,
    canary: bool,
    full_scan: bool,
    p2p: P2p,
    next_tx_id: u32,
    counts: Counts,
    /// The section of the checkpoint recovery loaded, until the scan decides.
    recovered_section: Section,
}

impl NHooks {
    pub fn new(geo: &Geometry, p2p_entries: u32, full_scan: bool, canary: bool) -> NHooks {
        NHooks {
            geo: *geo,
            canary,
            full_scan,
            p2p: P2p::new(geo, p2p_entries, canary),
            next_tx_id: 1,
            counts: Counts::default(),
            recovered_section: Section::default(),
        }
    }

    fn section(&self) -> Section {
        Section {
            next_tx_id: self.next_tx_id,
            open: self
                .p2p
                .iter()
                .map(|(_, t)| OpenAtCheckpoint {
                    tx_id: t.tx_id,
                    ended: t.ended,
                    // A page still held back changed nothing on flash.
                    entries: t.entries.iter().filter(|(_, e)| e.new != NO_PAGE).map(|(&lpn, e)| (lpn, e.old)).collect(),
                })
                .filter(|t| !t.entries.is_empty())
                .collect(),
        }
    }
}

impl Hooks for NHooks {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities {
        extra_live: true,
        skips_victims: true,
        scans_pages: true,
        ..Capabilities::NONE
    };

    fn name(&self) -> &'static str {
        if self.canary {
            "nolgn-canary"
        } else {
            "nolgn"
        }
    }

    /// Every open transaction's programmed pages are what the L2P names, and
    /// every old version it pinned still holds its logical page.
    fn check(&self, l2p: &[u32], nand: &Nand) -> std::result::Result<(), String> {
        for (tid, t) in self.p2p.iter() {
            for (&lpn, e) in &t.entries {
                // Held back: nothing on flash yet, the L2P still names the old.
                if e.new == NO_PAGE {
                    continue;
                }
                if l2p.get(lpn as usize) != Some(&e.new) {
                    return Err(format!("transaction {tid}: lpn {lpn}'s new page {} is not what the L2P names", e.new));
                }
                if e.old == NO_PAGE {
                    continue;
                }
                match Oob::decode(&nand.inspect_oob(e.old)) {
                    txftl_ftl::oob::OobState::Valid(o) if o.lpn == lpn => {}
                    other => {
                        return Err(format!(
                            "transaction {tid}: the old version of lpn {lpn} at page {} is gone (its OOB: {other:?})",
                            e.old
                        ))
                    }
                }
            }
        }
        Ok(())
    }
}

impl GcHooks for NHooks {
    /// Old versions pinned for a rollback.
    fn extra_live(&self, ppn: Ppn) -> bool {
        self.p2p.is_pinned(ppn)
    }

    fn keeps_extra_pages(&self) -> bool {
        self.p2p.has_pinned()
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.p2p.pinned_in(first, end)
    }

    fn skip_victim(&self, block: BlockId) -> bool {
        self.p2p.locks.is_locked(block)
    }

    /// An open transaction's page keeps its tag; committed data moves as plain
    /// data (§3.4); an old version (unmapped, kept live) is marked as one.
    fn relocated_protocol_bytes(&self, mapped: bool, oob: &Oob) -> [u8; PROTOCOL_BYTES] {
        let tag = PageTag::of(oob);
        if !mapped {
            return PageTag {
                old_copy: true,
                ..PageTag::PLAIN
            }
            .encode();
        }
        if tag.is_tx() && self.p2p.is_open_tx_id(tag.tx_id) {
            return oob.protocol;
        }
        // A source whose spare area ECC lost (the framework rebuilt a bare
        // record): an open transaction's page of the LPN keeps its tag all
        // the same, from the P2P.
        if let Some((tx_id, old_ppn)) = self.p2p.tag_of_new(oob.lpn) {
            return PageTag {
                tx_id,
                old_ppn,
                ..PageTag::PLAIN
            }
            .encode();
        }
        PageTag::PLAIN.encode()
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, _oob: &Oob, _new_erase_count: u32) {
        match self.p2p.relocated(old, new, !self.canary) {
            p2p::Moved::NewPage => self.counts.gc_open_copies += 1,
            p2p::Moved::OldPage => self.counts.old_pages_moved += 1,
            p2p::Moved::Other => {}
        }
    }
}

impl PersistHooks for NHooks {
    /// The tag's 8 bytes.
    fn packed_protocol_bytes(&self) -> usize {
        8
    }

    /// No two open transactions write one page, so the table never holds
    /// more entries than there are pages.
    fn checkpoint_section_max(&self) -> usize {
        Section::len_max(self.p2p.capacity.min(self.geo.page_count()))
    }

    fn checkpoint_section(&self) -> Vec<u8> {
        self.section().encode()
    }

    /// The section just made durable recorded what is open now (nothing is
    /// programmed between the two).
    fn checkpoint_durable(&mut self) {
        if self.p2p.iter().any(|(_, t)| t.entries.values().any(|e| e.new != NO_PAGE)) {
            self.counts.sections_with_open_tx += 1;
        }
    }
}

impl RecoveryHooks for NHooks {
    fn recover(&mut self, _ckpt_seq: u64, _root: &[u8], section: &[u8], _fell_back: bool, _logs: &mut dyn LogSource) -> Result<Vec<RecoveredUpdate>> {
        let s = Section::decode(section)?;
        *self = NHooks::new(&self.geo, self.p2p.capacity, self.full_scan, self.canary);
        self.next_tx_id = s.next_tx_id.max(1);
        self.recovered_section = s;
        Ok(Vec::new())
    }

    /// `full-scan=1`: every block, as the paper's full scan reads the device.
    fn zone_blocks(&self) -> Vec<BlockId> {
        if self.full_scan {
            crate::cycle::all_blocks(&self.geo)
        } else {
            Vec::new()
        }
    }

    fn recover_scanned(&mut self, ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        let section = std::mem::take(&mut self.recovered_section);
        let mut since = Vec::new();
        let mut unended = std::collections::BTreeMap::<u32, bool>::new();
        pages.for_each(|p| {
            let tag = PageTag::of(&p.oob);
            if p.oob.seq > ckpt_seq {
                since.push(*p);
            } else if tag.is_tx() {
                // The paper's rule, on pages older than the checkpoint: a
                // transaction with no end flag found would be rolled back.
                *unended.entry(tag.tx_id).or_insert(true) &= !tag.end;
            }
        })?;
        let open: std::collections::BTreeSet<u32> = section.open.iter().map(|o| o.tx_id).collect();
        self.counts.scan_unended = unended.iter().filter(|(id, &u)| u && !open.contains(id)).count() as u64;
        let r = resolve(ckpt_seq, &section, &since);
        let max_seen = r.max_tx_id.max(unended.keys().next_back().copied().unwrap_or(0));
        self.next_tx_id = self.next_tx_id.max(max_seen.saturating_add(1));
        self.counts.recovered_commits = r.committed as u64;
        self.counts.recovered_rollbacks = r.rolled_back as u64;
        self.counts.rollback_pages = r.rollback_pages as u64;
        Ok(r.updates)
    }

    /// Pages outside transactions, and committed pages' GC copies (plain
    /// data); never a transaction's page or a moved old version.
    fn roll_forward(&self, oob: &Oob) -> bool {
        let tag = PageTag::of(oob);
        tag.tx_id == 0 && !tag.old_copy
    }
}

impl EventHooks for NHooks {
    fn on_program(&mut self, ppn: Ppn, oob: &Oob, done_ns: u64) {
        let tag = PageTag::of(oob);
        if tag.is_tx() && !oob.relocated {
            self.p2p.programmed(tag.tx_id, oob.lpn, ppn, done_ns);
        }
    }
}
