//! Atomic-Write (Ouyang, Nellans, Wipfel, Flynn, Panda; HPCA 2011), the
//! baseline LightTx measures against (LightTx §II-C, §IV): a log-structured
//! FTL whose atomic groups end in a page flagged 1, with the mapping table
//! written back after every commit, and strict isolation only.
//!
//! - One transaction at a time: `begin` while another is open is refused
//!   (`DeviceError::IsolationUnsupported`). The host must serialise them.
//! - `write_tx(t, p)`: the page is appended to the log; the last page written
//!   waits in DRAM for the next command, because only then is it known whether
//!   it ends the group. Another write of t appends it with flag 0.
//! - `commit(t)`: once every earlier page of t is on flash, the last page is
//!   appended with flag 1 (the commit point; `format.rs`: the flags alone mark
//!   the groups, in the order of the pages' sequence numbers). When it is on
//!   flash, t's pages go into the L2P and the mapping table is written back
//!   (LightTx §II-C: "the FTL mapping table is written back to the flash
//!   device after each transaction commit"): every L2P table page holding a
//!   page t wrote, whole, to the protocol's log ring. The commit returns when
//!   they are on flash. With `map-log=1` the write-back is instead one
//!   mapping-log page per commit for a group that fits (t's mappings only).
//!   Before the ring would erase a block holding a page written since the
//!   last checkpoint, the FTL checkpoints.
//! - `abort(t)`: the last page is dropped if t appended nothing else;
//!   otherwise it is appended as the group's closing page, flagged 1 and
//!   aborted, so that the group's pages are not taken for part of the next.
//! - Recovery (`recovery.rs`): the checkpoint, then the newest version of
//!   each table page written back since it, and, for the one group whose
//!   flag page may be on flash without its whole write-back, the group pages
//!   between its flag and the previous one: the pages rolled forward (and,
//!   when a group was open at the checkpoint and no write-back is whole
//!   since, the blocks that group had appended to). Pages of no group are
//!   rolled forward as on `plain`.
//!
//! Non-transactional writes go to the L2P at once (pages of no group).
//! The canary `atomic-w-canary` flags the first page of each group instead
//! of the last: a cut inside a group then finds it "committed" with part of its pages.

mod device;
mod entry;
mod format;
mod recovery;

pub use device::AtomicWrite;
pub use entry::ENTRY;
pub use format::{LogPosition, MapPage, PageFlag, TableTag};

use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{
    BlockId, DeviceError, Hooks, LogSource, Lpn, Oob, Ppn, RecoveredUpdate, Result, ScannedPages, Tid, PROTOCOL_BYTES,
};
use txftl_ftl::{Capabilities, Dense, EventHooks, GcHooks, PersistHooks, RecoveryHooks};
use txftl_nand::{Geometry, Nand};

/// The open group.
#[derive(Clone, Debug, Default)]
struct Group {
    tid: Tid,
    /// Logical page -> its newest page in the log.
    entries: BTreeMap<Lpn, Ppn>,
    /// The pages of `entries` (the newest version of each logical page), and
    /// the blocks holding any page appended for the group.
    pages: BTreeSet<Ppn>,
    blocks: BTreeSet<BlockId>,
    /// Sequence number of its first page (0: none yet).
    first_seq: u64,
    done_ns: u64,
    /// Pages appended so far (the canary flags the first).
    appended: u32,
    cached: Option<(Lpn, Vec<u8>)>,
}

/// Counters of the protocol's own writes (the entry's `counters`).
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    table_pages: u64,
    map_log_pages: u64,
    abort_pages: u64,
    write_back_checkpoints: u64,
}

#[derive(Clone, Debug)]
pub struct AwHooks {
    canary: bool,
    geo: Geometry,
    /// The write-back: the mapping log (`map-log=1`) instead of table pages.
    map_log: bool,
    /// The variant a mount was asked for (None: take the recorded one).
    map_log_asked: Option<bool>,
    open: Option<Group>,
    next_commit: u32,
    /// Recovery: the group open at the checkpoint (its first page's sequence
    /// number and its blocks), and whether its blocks are read.
    open_at_checkpoint: (u64, Vec<BlockId>),
    read_open_group: bool,
    /// Recovery: group pages after this sequence number may belong to a
    /// committed group whose write-back is not whole.
    redo_floor: u64,
    /// Recovery found the checkpoint's open group without an end: its pages
    /// are bounded by a checkpoint before the next group may commit (the
    /// checkpoint's record of it would otherwise fold them into the next).
    needs_boundary: bool,
    /// Ring blocks holding pages written since the last checkpoint
    /// (recovery needs them: the ring must not erase them).
    needed: BTreeSet<BlockId>,
    /// When the closing page of the last aborted group is done: the next
    /// flag page waits for it (a flag page on flash before it would fold the
    /// aborted pages into its group).
    boundary_done_ns: u64,
    counts: Counts,
}

impl AwHooks {
    /// `map_log`: the variant asked for (None at a mount: as formatted).
    pub fn new(geo: &Geometry, canary: bool, map_log: Option<bool>) -> AwHooks {
        AwHooks {
            canary,
            geo: *geo,
            map_log: map_log.unwrap_or(false),
            map_log_asked: map_log,
            open: None,
            next_commit: 1,
            open_at_checkpoint: (0, Vec::new()),
            read_open_group: false,
            redo_floor: 0,
            needs_boundary: false,
            needed: BTreeSet::new(),
            boundary_done_ns: 0,
            counts: Counts::default(),
        }
    }

    fn position(&self) -> LogPosition {
        let open = self.open.as_ref().filter(|g| g.first_seq != 0);
        LogPosition {
            next_commit: self.next_commit,
            open_first_seq: open.map_or(0, |g| g.first_seq),
            open_group_blocks: open.map(|g| g.blocks.iter().copied().collect()).unwrap_or_default(),
        }
    }

    /// L2P entries per table page (the framework's checkpoint layout).
    fn entries_per_page(&self) -> u32 {
        self.geo.page_size / 4
    }
}

impl Hooks for AwHooks {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities {
        extra_live: true,
        scans_pages: true,
        ..Capabilities::NONE
    };

    fn name(&self) -> &'static str {
        if self.canary {
            "atomic-w-canary"
        } else {
            "atomic-write"
        }
    }

    fn check(&self, l2p: &[u32], _nand: &Nand) -> std::result::Result<(), String> {
        if let Some(g) = &self.open {
            for (&lpn, &ppn) in &g.entries {
                if l2p.get(lpn as usize) == Some(&ppn) {
                    return Err(format!("open group of transaction {}: its page of lpn {lpn} is already in the L2P", g.tid));
                }
            }
        }
        Ok(())
    }
}

impl GcHooks for AwHooks {
    /// The open group's pages: the log cleaner moves them like valid pages.
    fn extra_live(&self, ppn: Ppn) -> bool {
        self.open.as_ref().is_some_and(|g| g.pages.contains(&ppn))
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.open.as_ref().map_or(0, |g| g.pages.range(first..end).count() as u32)
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, _oob: &Oob, _new_erase_count: u32) {
        let Some(g) = self.open.as_mut().filter(|g| g.pages.contains(&old)) else {
            return;
        };
        g.pages.remove(&old);
        g.pages.insert(new);
        g.blocks.insert(self.geo.block_of(new));
        for p in g.entries.values_mut().filter(|p| **p == old) {
            *p = new;
        }
    }

    /// A copy of committed data belongs to no group; a copy of the open
    /// group's page stays in its group, flag 0 (it is not the group's end).
    fn relocated_protocol_bytes(&self, mapped: bool, _oob: &Oob) -> [u8; PROTOCOL_BYTES] {
        if mapped {
            PageFlag::NONE.encode()
        } else {
            PageFlag::group(false).encode()
        }
    }
}

impl PersistHooks for AwHooks {
    /// The flag, group and aborted bytes (`format.rs`).
    fn packed_protocol_bytes(&self) -> usize {
        3
    }

    fn root_len_max(&self) -> usize {
        1
    }

    /// The write-back variant, fixed at format (`format.rs`).
    fn root(&self) -> Vec<u8> {
        format::encode_root(self.map_log)
    }

    fn checkpoint_section_max(&self) -> usize {
        LogPosition::len_max(self.geo.block_count())
    }

    /// The write-back ring: 4 blocks (the FTL checkpoints before it would
    /// enter a block holding pages written since the last checkpoint).
    fn protocol_rings(&self, _geo: &Geometry) -> Vec<u32> {
        vec![4]
    }

    fn checkpoint_durable(&mut self) {
        self.needed.clear();
        self.needs_boundary = false;
    }

    fn checkpoint_section(&self) -> Vec<u8> {
        self.position().encode()
    }
}

impl RecoveryHooks for AwHooks {
    /// Reads the write-back ring since the checkpoint (`recovery.rs`) and
    /// decides which pages the flags must redo.
    fn recover(
        &mut self,
        ckpt_seq: u64,
        root: &[u8],
        section: &[u8],
        _fell_back: bool,
        logs: &mut dyn LogSource,
    ) -> Result<Vec<RecoveredUpdate>> {
        let map_log = format::decode_root(root)?;
        if let Some(asked) = self.map_log_asked.filter(|&a| a != map_log) {
            return Err(DeviceError::Config(format!(
                "the device was formatted with map-log={}, not {}: Atomic-Write's write-back is fixed at format",
                map_log as u8, asked as u8
            )));
        }
        let pos = LogPosition::decode(section)?;
        *self = AwHooks::new(&self.geo, self.canary, Some(map_log));
        let ring = if map_log {
            recovery::read_map_log(ckpt_seq, logs)?
        } else {
            let per_page = self.entries_per_page();
            recovery::read_tables(ckpt_seq, per_page, self.geo.page_count().div_ceil(per_page), logs)?
        };
        self.next_commit = pos.next_commit.max(ring.max_commit.saturating_add(1));
        // A whole write-back after the checkpoint ends every group before
        // it, the one open at the checkpoint included: the flags are needed
        // after it only, and the open group's blocks not at all.
        self.read_open_group = ring.written_back.is_none() && pos.open_first_seq != 0 && !pos.open_group_blocks.is_empty();
        self.redo_floor = match ring.written_back {
            Some(seq) => seq,
            None if self.read_open_group => pos.open_first_seq - 1,
            None => ckpt_seq,
        };
        self.open_at_checkpoint = (pos.open_first_seq, pos.open_group_blocks);
        Ok(ring.updates)
    }

    fn zone_blocks(&self) -> Vec<BlockId> {
        if self.read_open_group {
            self.open_at_checkpoint.1.clone()
        } else {
            Vec::new()
        }
    }

    /// The group whose flag page is after the newest whole write-back, if
    /// any, redone at its flag page (`recovery::redo_last_group`).
    fn recover_scanned(&mut self, ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        // Pages written since the checkpoint, and those of the group open
        // at it when its blocks are read: few.
        let pages = pages.collect()?;
        let redo = recovery::redo_last_group(&pages, self.redo_floor, ckpt_seq);
        self.needs_boundary = self.read_open_group && !redo.ended_after_checkpoint;
        self.open_at_checkpoint = (0, Vec::new());
        self.read_open_group = false;
        Ok(redo.updates)
    }

    /// Pages of no group are applied as they are; group pages only through
    /// a write-back or a flag.
    fn roll_forward(&self, oob: &Oob) -> bool {
        !PageFlag::of(oob).group
    }
}

impl EventHooks for AwHooks {
    fn on_program(&mut self, ppn: Ppn, oob: &Oob, done_ns: u64) {
        let flag = PageFlag::of(oob);
        if flag.aborted {
            self.boundary_done_ns = self.boundary_done_ns.max(done_ns);
            return;
        }
        let Some(g) = self.open.as_mut().filter(|_| flag.group && !oob.relocated) else {
            return;
        };
        // Only the newest version of each page is kept live (GC moves it):
        // a GC copy of an older one would be newer in the log than the
        // version that replaced it.
        if let Some(older) = g.entries.insert(oob.lpn, ppn) {
            let kept = g.pages.remove(&older);
            debug_assert!(kept, "lpn {}: its older page {older} was not the group's", oob.lpn);
        }
        debug_assert!(g.first_seq == 0 || oob.seq > g.first_seq, "a group's pages are programmed in sequence order");
        if g.first_seq == 0 {
            g.first_seq = oob.seq;
        }
        g.pages.insert(ppn);
        g.blocks.insert(self.geo.block_of(ppn));
        g.done_ns = g.done_ns.max(done_ns);
        g.appended += 1;
    }
}
