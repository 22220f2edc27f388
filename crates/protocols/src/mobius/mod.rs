//! Möbius (Hu, Jiang, Tian, Zhao, Wang; ICDCS 2017): transactions whose
//! commit record, the atom inode, lists where every page of the transaction
//! lies and is written before the data, with the transaction's commit
//! recorded as a flag in a later inode, on DFTL's demand-paged mapping table;
//! and a dynamic transaction chained through its pages' spare areas (§III-D,
//! `dynamic.rs`). What is built so far: static and dynamic transactions and
//! their recovery.
//!
//! - `swrite(uuid, pages)` (and `begin/write_tx/commit`, which buffer a
//!   transaction's pages in device DRAM and send them as one static
//!   transaction at commit): every page's physical address is reserved from
//!   the host stream (`Ftl::reserve_host_pages`), the atom inode (the
//!   pages' logical and physical addresses, the transaction id, and the
//!   commit flags of up to 8 earlier transactions) is appended to the atom
//!   log area (ALA, the protocol's log ring 0), then the data pages are
//!   programmed where reserved, each with the transaction id in its spare
//!   area. The mappings go into DRAM as the pages are issued (a read queues
//!   behind their programs: it never sees a transaction in part); S-SWRITE
//!   returns when its pages and every earlier transaction's are done,
//!   A-SWRITE once the inode is. Static transactions run concurrently: the
//!   next one's inode and pages queue behind the last one's pages in
//!   flight. A transaction's commit flag is written in the first inode
//!   issued after its pages and every earlier one's are all done (a
//!   flags-only inode at a flush if none follows); the inode that is the
//!   last of its S_max window waits for them (`device.rs`, `take_flags`),
//!   and a checkpoint waits for every transaction in flight
//!   (`checkpoint_after_ns`). Recovery keeps commits in their order
//!   (`recovery.rs`, `decide`).
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
//! - The dynamic transaction (`dynamic.rs`): a head record in the head
//!   list (ring 1), its pages chained by their spare areas, the REAR's
//!   pointing back to the HEAD, then an inode; recovery walks the newest
//!   head record's chain when no inode decided it (`recovery.rs`).
//!
//! Writes outside transactions are logged at flushes only (unflushed ones
//! may be lost, as the block contract allows), not in head-list chains;
//! small transactions are not merged into one inode (docs/protocols/
//! mobius.md says why).
//!
//! The canary `mobius-canary` takes an inode no later one flags as committed
//! without reading its pages, and the last chain's intact prefix as
//! committed without checking that it closes: a cut between a static
//! transaction's inode and its last data page, or inside a chain, then shows
//! part of the transaction.

mod device;
mod dynamic;
mod entry;
mod format;
mod host_tx;
mod recovery;

pub use device::Mobius;
pub use entry::ENTRY;
pub use format::{ChainPage, HeadRecord, Inode, InodeKind, Root, TxPage};

use dynamic::OpenChain;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use txftl_ftl::{
    BlockId, Cached, Capabilities, DeviceError, EventHooks, Eviction, GcHooks, Hooks, LogSource, Lpn, Oob, PersistHooks, Ppn,
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
    dynamic_inodes: u64,
    /// Inodes holding a part of a transaction's items (kinds 6 and 7).
    part_inodes: u64,
    head_records: u64,
    chain_pages_read: u64,
    chains_closed_found: u64,
    /// Inodes that waited for an earlier transaction's pages, whose flag
    /// they were the last allowed to carry (S_max).
    smax_stalls: u64,
    /// Most static transactions in flight at once (inode written, pages
    /// not all done).
    in_flight_peak: u64,
}

/// A static transaction whose inode is on flash and whose pages may not
/// all be: no inode flags it before they are.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    tx: u32,
    /// Its inode's place in the active ALA (0: the first after the
    /// checkpoint).
    index: u32,
    /// When its last page is done (device clock).
    done_ns: u64,
}

/// Inodes one active ALA may hold in a ring of `ala_blocks` blocks of
/// `pages_per_block` pages: the ring keeps two (the fallback checkpoint's
/// too) and a block to spare.
pub(crate) fn active_ala_room(ala_blocks: u32, pages_per_block: u32) -> u32 {
    (ala_blocks.saturating_sub(2) / 2).max(1) * pages_per_block
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
    /// Percent of host transactions (`begin`..`commit`) run as dynamic ones.
    pub dynamic_pct: u32,
    /// A host commit of a static transaction returns at its inode (A-SWRITE).
    pub async_commit: bool,
}

/// What a mount was asked for of the settings fixed at format (None: take
/// the recorded one; one asked for must match it).
#[derive(Clone, Copy, Debug, Default)]
pub struct Asked {
    pub s_max: Option<u8>,
    pub ala_blocks: Option<u32>,
    pub items_max: Option<u16>,
}

#[derive(Clone, Debug)]
pub struct MobiusHooks {
    canary: bool,
    geo: Geometry,
    set: Settings,
    asked: Asked,
    next_tx: u32,
    /// Transactions whose pages are all on flash and whose flag no inode
    /// carries yet, by their inode's place in the active ALA (the oldest
    /// first: the one whose S_max window closes first).
    pending_flags: BTreeMap<u32, u32>,
    /// The mount queued more marks than one inode carries (`write_walked`
    /// writes them all first).
    mount_marks: bool,
    /// Static transactions in flight, in the order of their inodes.
    in_flight: VecDeque<InFlight>,
    /// Inodes since the last checkpoint.
    active_inodes: u32,
    /// ALA blocks holding inodes since the last checkpoint, and since the
    /// one before it (recovery's fallback reads those): the ring must not
    /// erase them.
    needed_cur: BTreeSet<BlockId>,
    needed_prev: BTreeSet<BlockId>,
    /// When the transaction pages programmed since the protocol last reset
    /// it are done (device clock): one transaction's.
    tx_done_ns: u64,
    /// The dynamic transaction open: its pages are on flash, unmapped, and
    /// kept by GC (`extra_live`) until its REAR or abort.
    chain: Option<OpenChain>,
    /// The dynamic transaction the last recovery found committed by its
    /// closed chain alone: its inode is written before anything else (a
    /// later head record would make recovery stop reading its chain; a
    /// later write of one of its pages must be logged after it), unless a
    /// checkpoint persists its mappings first. Empty: none.
    walked: Vec<Inode>,
    /// Checkpoints made durable since the device was built or mounted (a
    /// transaction's inodes must not have one between them: `append_parts`).
    checkpoints: u64,
    /// The logical pages whose mapping a write outside transactions (no
    /// inode logs it yet) or a trim changed since the last checkpoint, each
    /// with the page a recovery maps it to: the one the checkpoint or an
    /// inode of the active ALA last recorded (None: unmapped). An inode
    /// logging the page, a transaction writing it, or a checkpoint makes the
    /// change durable and drops it from here. `durable_state` reports these
    /// pages (`DurableParts for Mobius`); they stay intact until the next
    /// checkpoint (GC frees a block only then).
    undurable: BTreeMap<Lpn, Option<Ppn>>,
    /// The write outside transactions under way (`Mobius::write`): its
    /// logical page and the page it mapped before, followed through GC's
    /// moves (a checkpoint inside the write, before its program, persists
    /// the copy and may free the source's block). Its program enters it in
    /// `undurable`; a checkpoint after the program, inside the write,
    /// persists the new mapping and clears it again.
    writing: Option<(Lpn, Option<Ppn>)>,
    counts: Counts,
}

impl MobiusHooks {
    pub fn new(geo: &Geometry, set: Settings, asked: Asked, canary: bool) -> MobiusHooks {
        MobiusHooks {
            canary,
            geo: *geo,
            set,
            asked,
            next_tx: 1,
            pending_flags: BTreeMap::new(),
            mount_marks: false,
            in_flight: VecDeque::new(),
            active_inodes: 0,
            needed_cur: BTreeSet::new(),
            needed_prev: BTreeSet::new(),
            tx_done_ns: 0,
            chain: None,
            walked: Vec::new(),
            checkpoints: 0,
            undurable: BTreeMap::new(),
            writing: None,
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

    /// When every static transaction issued is on flash (device clock): a
    /// transaction leaves `in_flight` only once its pages are done, so the
    /// ones that left are in the past.
    fn in_flight_done_ns(&self) -> u64 {
        self.in_flight.iter().map(|f| f.done_ns).max().unwrap_or(0)
    }

    /// Whether the ALA ring must not erase `block`.
    fn needed(&self, block: BlockId) -> bool {
        self.needed_cur.contains(&block) || self.needed_prev.contains(&block)
    }
}

impl Hooks for MobiusHooks {
    type Mapping = Cached;
    /// Every mapping made since the checkpoint is in the ALA (or in the
    /// last head-list chain): recovery reads them and nothing of the data
    /// pages' spare areas but their blocks' state. An open dynamic
    /// transaction's pages are unmapped until its REAR: GC keeps them.
    const CAPABILITIES: Capabilities = Capabilities {
        logs_mappings: true,
        extra_live: true,
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
    /// A page of the open dynamic transaction.
    fn extra_live(&self, ppn: Ppn) -> bool {
        self.chain.as_ref().is_some_and(|c| c.holds(ppn))
    }

    fn keeps_extra_pages(&self) -> bool {
        self.chain.is_some()
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.chain.as_ref().map_or(0, |c| c.count_in(first, end))
    }

    /// A copy belongs to no transaction (its chain's pointers name the
    /// source, intact until the next checkpoint; the dynamic inode names
    /// the copy).
    fn relocated_protocol_bytes(&self, _mapped: bool, _oob: &Oob) -> [u8; PROTOCOL_BYTES] {
        [0; PROTOCOL_BYTES]
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, _oob: &Oob, _new_erase_count: u32) {
        if let Some(c) = &mut self.chain {
            c.moved(old, new);
        }
        if let Some((_, from)) = &mut self.writing {
            if *from == Some(old) {
                *from = Some(new);
            }
        }
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
        format::SECTION_LEN
    }

    fn checkpoint_section(&self) -> Vec<u8> {
        // A chain whose pages GC moved is not walkable after this
        // checkpoint: it releases the moved pages' blocks, where the chain's
        // links still point. It is not named, so a recovery that does not
        // find its inodes aborts it (its REAR has not returned) rather than
        // walk into blocks that are free.
        let walkable = self.chain.as_ref().filter(|c| !c.moved_any());
        format::Section {
            next_tx: self.next_tx,
            open_chain: walkable.map_or(0, |c| c.tx),
        }
        .encode()
    }

    /// The active ALA starts empty: the checkpoint holds every committed
    /// transaction's mappings, and no flag is needed for them any more.
    fn checkpoint_durable(&mut self) {
        self.needed_prev = std::mem::take(&mut self.needed_cur);
        self.active_inodes = 0;
        self.pending_flags.clear();
        // Done before the checkpoint began (`checkpoint_after_ns`).
        self.in_flight.clear();
        self.walked.clear();
        // It persists the whole L2P.
        self.undurable.clear();
        self.checkpoints += 1;
    }

    /// A checkpoint persists the mappings of every transaction issued and
    /// ends the active ALA: their pages must be done first (an A-SWRITE's
    /// may not be), or a power cut after it would find a transaction mapped
    /// in part, or unflagged before the checkpoint and so not read at all.
    fn checkpoint_after_ns(&self) -> u64 {
        self.in_flight_done_ns()
    }

    /// Ring 0 is the ALA; ring 1 the head list (only its newest record
    /// is ever read).
    fn protocol_rings(&self, _geo: &Geometry) -> Vec<u32> {
        vec![self.set.ala_blocks, HEAD_LIST_BLOCKS]
    }

    fn packed_protocol_bytes(&self) -> usize {
        format::PAGE_TAG_BYTES
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
        let Asked {
            s_max,
            ala_blocks: ala,
            items_max,
        } = self.asked;
        if s_max.is_some_and(|v| v != recorded.s_max)
            || ala.is_some_and(|v| v != recorded.ala_blocks)
            || items_max.is_some_and(|v| v != recorded.items_max)
        {
            return Err(DeviceError::ProtocolOption(format!(
                "the device was formatted with s-max={}, ala-blocks={} and items-max={}, fixed at format: {} asked",
                recorded.s_max,
                recorded.ala_blocks,
                recorded.items_max,
                [
                    s_max.map(|v| format!("s-max={v}")),
                    ala.map(|v| format!("ala-blocks={v}")),
                    items_max.map(|v| format!("items-max={v}")),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(", ")
            )));
        }
        self.set.s_max = recorded.s_max;
        self.set.items_max = recorded.items_max;
        self.set.ala_blocks = recorded.ala_blocks;
        let section = format::Section::decode(section)?;
        let found = recovery::read_active_ala(ckpt_seq, logs)?;
        let mut decided = recovery::decide(&found, self.set.s_max, !self.canary, logs)?;
        let walk = recovery::Walk {
            ckpt_seq,
            open_chain: section.open_chain,
            pages_max: self.geo.page_count(),
            closed_only: !self.canary,
        };
        let chain = walk.last_chain(&found, logs)?;
        *self = MobiusHooks::new(&self.geo, self.set, self.asked, self.canary);
        self.next_tx = section.next_tx.max(found.max_tx.max(chain.max_tx).saturating_add(1));
        self.active_inodes = found.inodes.len() as u32;
        self.needed_cur = found.inodes.iter().map(|i| self.geo.block_of(i.ppn)).collect();
        self.counts.verified_pages = decided.verified_pages;
        self.counts.aborted_found = decided.aborted;
        self.counts.chain_pages_read = chain.pages_read;
        self.counts.chains_closed_found = chain.closed as u64;
        self.walked = chain.inodes(self.set.s_max, self.set.items_max as u32);
        // The verified transactions' flags and the aborted ones' void marks
        // go into the next inodes, oldest first: a later mount must not find
        // the first unflagged and too old, nor take the second for earlier
        // transactions lost.
        self.pending_flags = decided.marks.iter().copied().collect();
        self.mount_marks = decided.marks.len() > format::FLAGS_MAX;
        decided.updates.extend(chain.updates);
        Ok(decided.updates)
    }
}

/// Blocks of the head list (ring 1): one record per dynamic transaction,
/// of which recovery reads the newest.
const HEAD_LIST_BLOCKS: u32 = 4;

impl EventHooks for MobiusHooks {
    /// A transaction's page (static or dynamic): S-SWRITE returns once the
    /// last is done.
    fn on_program(&mut self, _ppn: Ppn, oob: &Oob, done_ns: u64) {
        if oob.protocol[0] != 0 {
            self.tx_done_ns = self.tx_done_ns.max(done_ns);
        } else if !oob.relocated {
            // The page of the write outside transactions under way (GC's
            // copies are relocated), mapped right after: a recovery maps
            // the page before (what a checkpoint inside the write, before
            // this program, persisted), unless an earlier change not
            // durable yet left an older one there.
            if let Some((lpn, from)) = self.writing.take_if(|(l, _)| *l == oob.lpn) {
                self.undurable.entry(lpn).or_insert(from);
            }
        }
    }
}
