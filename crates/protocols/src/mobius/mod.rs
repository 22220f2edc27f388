//! Möbius (Hu, Jiang, Tian, Zhao, Wang; ICDCS 2017): transactions whose
//! commit record, the atom inode, lists where every page of the transaction
//! lies and is written before the data, with the transaction's commit
//! recorded as a flag in a later inode, on DFTL's demand-paged mapping table.
//! What is built so far: static transactions (§III-C) and their recovery.
//!
//! - `swrite(uuid, pages)` (and `begin/write_tx/commit`, which buffer a
//!   transaction's pages in device DRAM and send them as one static
//!   transaction at commit): every page's physical address is reserved from
//!   the host stream (`Ftl::reserve_host_pages`), the atom inode (the
//!   pages' logical and physical addresses, the transaction id, and the
//!   commit flags of up to 8 earlier transactions) is appended to the atom
//!   log area (ALA, the protocol's log ring 0), then the data pages are
//!   programmed where reserved, each with the transaction id in its spare
//!   area. When every page is on flash the mappings go into DRAM (readers
//!   never see a transaction in part) and S-SWRITE returns; A-SWRITE returns
//!   once the inode is on flash. The transaction's commit flag is written in
//!   the next inode (a flags-only inode at a flush if none follows).
//! - The mapping table is DFTL's cached one (`dftl`) with the Resident
//!   Area (§III-F): a changed translation page leaves the cache unwritten,
//!   its changed entries kept in DRAM (`Eviction::Resident`).
//! - Merge (§III-F): when the inodes since the last checkpoint (the active
//!   ALA) reach `active-ala` pages, a checkpoint writes the changed
//!   translation pages and the active ALA starts empty. The ALA ring keeps
//!   every inode since the checkpoint before the last one (the fallback's);
//!   a checkpoint comes first when the ring would erase one
//!   (`mobius_ring_merges`).
//! - Writes outside transactions (`write`) are programmed as on `dftl`;
//!   their mappings are logged in an inode of their own at the next flush
//!   (or when an inode's items fill), with any pending flags: durable from
//!   then on, as the block contract asks.
//! - Recovery (`recovery.rs`) reads the ALA, not the data: the framework
//!   probes each block written since the checkpoint for its state only
//!   (`Capabilities::logs_mappings`), and the ALA since the checkpoint is
//!   read newest first. A transaction another inode flags is committed; one
//!   not flagged among the newest `s-max` inodes is read and verified (every
//!   page it lists is intact and carries its id); an older one not flagged
//!   is aborted (its flag would have been written within S_max). Committed
//!   transactions' and logged writes' items go into the L2P in ALA order. A
//!   GC move since the checkpoint needs no log: its source block is not
//!   erased before the next checkpoint. Nothing is merged at boot: the ALA
//!   keeps the items until the next merge.
//!
//! Not yet built (issue 22's plan): dynamic transactions and the head list
//! (writes outside transactions are logged at flushes only: unflushed ones
//! may be lost, as the block contract allows); concurrent static
//! transactions in flight, SREAD's wait, abort edges and the merging of
//! small transactions.
//!
//! The canary `mobius-canary` takes an inode no later one flags as committed
//! without reading its pages: a cut between a transaction's inode and its
//! last data page then shows part of the transaction.

mod device;
mod entry;
mod format;
mod recovery;

pub use device::Mobius;
pub use entry::ENTRY;
pub use format::{Inode, InodeKind, Root, TxPage};

use std::collections::{BTreeSet, VecDeque};
use txftl_ftl::{
    BlockId, Cached, Capabilities, DeviceError, EventHooks, Eviction, GcHooks, Hooks, LogSource, Oob, PersistHooks, Ppn,
    RecoveredUpdate, RecoveryHooks, Result, PROTOCOL_BYTES,
};
use txftl_nand::Geometry;

/// Counts of the protocol's own work (the entry's counters).
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    inodes: u64,
    flag_only_inodes: u64,
    normal_inodes: u64,
    flags: u64,
    merges: u64,
    ring_merges: u64,
    retries: u64,
    verified_pages: u64,
    aborted_found: u64,
}

/// Settings fixed at format (the root records the first two).
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub s_max: u8,
    pub items_max: u16,
    /// Inodes the active ALA holds before a merge.
    pub active_max: u32,
    /// Blocks of the ALA ring.
    pub ala_blocks: u32,
    /// Translation pages the device's DRAM caches.
    pub cmt_pages: u32,
}

#[derive(Clone, Debug)]
pub struct MobiusHooks {
    canary: bool,
    geo: Geometry,
    set: Settings,
    /// What a mount was asked for of the settings fixed at format (S_max,
    /// ALA blocks; None: take the recorded one).
    asked: (Option<u8>, Option<u32>),
    next_tx: u32,
    /// Transactions committed whose flag no inode carries yet, oldest first.
    pending_flags: VecDeque<u32>,
    /// Inodes since the last checkpoint.
    active_inodes: u32,
    /// ALA blocks holding inodes since the last checkpoint, and since the
    /// one before it (recovery's fallback reads those): the ring must not
    /// erase them.
    needed_cur: BTreeSet<BlockId>,
    needed_prev: BTreeSet<BlockId>,
    /// When the last transaction page programmed is done (device clock).
    last_done_ns: u64,
    counts: Counts,
}

impl MobiusHooks {
    pub fn new(geo: &Geometry, set: Settings, asked: (Option<u8>, Option<u32>), canary: bool) -> MobiusHooks {
        MobiusHooks {
            canary,
            geo: *geo,
            set,
            asked,
            next_tx: 1,
            pending_flags: VecDeque::new(),
            active_inodes: 0,
            needed_cur: BTreeSet::new(),
            needed_prev: BTreeSet::new(),
            last_done_ns: 0,
            counts: Counts::default(),
        }
    }

    fn root(&self) -> Root {
        Root {
            s_max: self.set.s_max,
            items_max: self.set.items_max,
            ala_blocks: self.set.ala_blocks,
        }
    }

    /// Whether the ALA ring must not erase `block`.
    fn needed(&self, block: BlockId) -> bool {
        self.needed_cur.contains(&block) || self.needed_prev.contains(&block)
    }
}

impl Hooks for MobiusHooks {
    type Mapping = Cached;
    /// Every mapping made since the checkpoint is in the ALA: recovery reads
    /// it and nothing of the data pages' spare areas but their blocks' state.
    const CAPABILITIES: Capabilities = Capabilities {
        logs_mappings: true,
        ..Capabilities::NONE
    };

    fn name(&self) -> &'static str {
        if self.canary {
            "mobius-canary"
        } else {
            "mobius"
        }
    }

    /// DFTL's table with the Resident Area: a changed translation page
    /// leaves the cache unwritten, its changed entries kept in DRAM; the
    /// active ALA (and, for writes outside transactions, the roll-forward)
    /// holds those changes until the merge writes the page.
    fn mapping_table(&self, logical_pages: u32, entries_per_page: u32) -> Result<Cached, DeviceError> {
        Ok(Cached::new(logical_pages, entries_per_page, self.set.cmt_pages)?.with_eviction(Eviction::Resident))
    }
}

impl GcHooks for MobiusHooks {
    /// GC copies only mapped pages (committed data): a copy belongs to no
    /// transaction, and is rolled forward as it is.
    fn relocated_protocol_bytes(&self, _mapped: bool, _oob: &Oob) -> [u8; PROTOCOL_BYTES] {
        [0; PROTOCOL_BYTES]
    }
}

impl PersistHooks for MobiusHooks {
    fn root_len_max(&self) -> usize {
        format::ROOT_LEN
    }

    fn root(&self) -> Vec<u8> {
        MobiusHooks::root(self).encode()
    }

    fn checkpoint_section_max(&self) -> usize {
        4
    }

    fn checkpoint_section(&self) -> Vec<u8> {
        format::encode_section(self.next_tx)
    }

    /// The active ALA starts empty: the checkpoint holds every committed
    /// transaction's mappings, and no flag is needed for them any more.
    fn checkpoint_durable(&mut self) {
        self.needed_prev = std::mem::take(&mut self.needed_cur);
        self.active_inodes = 0;
        self.pending_flags.clear();
    }

    fn protocol_rings(&self, _geo: &Geometry) -> Vec<u32> {
        vec![self.set.ala_blocks]
    }

    fn packed_protocol_bytes(&self) -> usize {
        format::TX_PAGE_BYTES
    }
}

impl RecoveryHooks for MobiusHooks {
    fn recover(
        &mut self,
        ckpt_seq: u64,
        root: &[u8],
        section: &[u8],
        _fell_back: bool,
        logs: &mut dyn LogSource,
    ) -> Result<Vec<RecoveredUpdate>> {
        let recorded = Root::decode(root)?;
        let (s_max, ala) = self.asked;
        if s_max.is_some_and(|v| v != recorded.s_max) || ala.is_some_and(|v| v != recorded.ala_blocks) {
            return Err(DeviceError::ProtocolOption(format!(
                "the device was formatted with s-max={} and ala-blocks={}, fixed at format: {} asked",
                recorded.s_max,
                recorded.ala_blocks,
                [s_max.map(|v| format!("s-max={v}")), ala.map(|v| format!("ala-blocks={v}"))]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        self.set.s_max = recorded.s_max;
        self.set.items_max = recorded.items_max;
        self.set.ala_blocks = recorded.ala_blocks;
        let next_tx = format::decode_section(section)?;
        let found = recovery::read_active_ala(ckpt_seq, logs)?;
        let decided = recovery::decide(&found, self.set.s_max, !self.canary, logs)?;
        *self = MobiusHooks::new(&self.geo, self.set, self.asked, self.canary);
        self.next_tx = next_tx.max(found.max_tx.saturating_add(1));
        self.active_inodes = found.inodes.len() as u32;
        self.needed_cur = found.inodes.iter().map(|i| self.geo.block_of(i.ppn)).collect();
        self.counts.verified_pages = decided.verified_pages;
        self.counts.aborted_found = decided.aborted;
        Ok(decided.updates)
    }
}

impl EventHooks for MobiusHooks {
    /// A transaction's page: S-SWRITE returns once the last is done.
    fn on_program(&mut self, _ppn: Ppn, oob: &Oob, done_ns: u64) {
        if TxPage::decode(&oob.protocol).is_some() {
            self.last_done_ns = self.last_done_ns.max(done_ns);
        }
    }
}
