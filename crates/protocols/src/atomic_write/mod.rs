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
//! - `commit(t)`: the last page is appended with flag 1 (the commit point);
//!   when every page of t is done on its die, t's pages go into the L2P and
//!   their mappings are written back: appended to the mapping log, one page
//!   per commit for a group that fits (`format.rs`), the protocol's
//!   characteristic cost (`protocol_meta_writes` per commit). LightTx puts it
//!   at 3.70% of the writes of a trace of 27.2 pages per transaction: about
//!   one page per commit. Before the log ring would erase a block holding a
//!   mapping page written since the last checkpoint, the FTL checkpoints.
//! - `abort(t)`: the last page is dropped; the pages already appended stay in
//!   the log as a group without its flag, which recovery discards.
//! - Recovery: the checkpoint, then the mapping log's pages since it (each
//!   whole group redone at its last mapping page), and the data log after it
//!   (the framework's roll-forward) with, if a group was open at the
//!   checkpoint, the blocks it had appended to (`format.rs`): a group whose
//!   flagged page is there is redone at the flag's position (a cut between
//!   the flag and the mapping page leaves only the flag).
//!
//! Non-transactional writes go to the L2P at once (group id 0), as on `plain`.
//! The canary `atomic-w-canary` flags the first page of each group instead
//! of the last: a cut inside a group then finds it "committed" with part of its pages.

mod entry;
mod format;

pub use entry::ENTRY;
pub use format::{LogPosition, MapPage, PageFlag};

use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{
    BlockId, Device, DeviceError, DeviceStats, Ftl, Hooks, LogSource, Lpn, Oob, Ppn, RecoveredUpdate, Result, ScannedPages, Tid,
    PROTOCOL_BYTES,
};
use txftl_ftl::{Capabilities, Dense, EventHooks, GcHooks, PersistHooks, RecoveryHooks};
use txftl_nand::{Geometry, Nand};

/// The open group.
#[derive(Clone, Debug, Default)]
struct Group {
    tid: Tid,
    id: u32,
    /// Logical page -> its newest page in the log.
    entries: BTreeMap<Lpn, Ppn>,
    /// The pages of `entries` (the newest version of each logical page), and
    /// the blocks holding any page appended for the group.
    pages: BTreeSet<Ppn>,
    blocks: BTreeSet<BlockId>,
    done_ns: u64,
    /// Pages appended so far (the canary flags the first).
    appended: u32,
    cached: Option<(Lpn, Vec<u8>)>,
}

#[derive(Clone, Debug)]
pub struct AwHooks {
    canary: bool,
    geo: Geometry,
    open: Option<Group>,
    next_group: u32,
    open_at_checkpoint: Vec<BlockId>,
    /// Mapping-log blocks holding pages written since the last checkpoint
    /// (recovery needs them: the ring must not erase them).
    needed: BTreeSet<BlockId>,
}

impl AwHooks {
    pub fn new(geo: &Geometry, canary: bool) -> AwHooks {
        AwHooks {
            canary,
            geo: *geo,
            open: None,
            next_group: 1,
            open_at_checkpoint: Vec::new(),
            needed: BTreeSet::new(),
        }
    }

    fn position(&self) -> LogPosition {
        LogPosition {
            next_group: self.next_group,
            open_group_blocks: self.open.as_ref().map(|g| g.blocks.iter().copied().collect()).unwrap_or_default(),
        }
    }
}

impl Hooks for AwHooks {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities {
        extra_live: true,
        skips_victims: false,
        scans_pages: true,
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
                    return Err(format!("open group {}: its page of lpn {lpn} is already in the L2P", g.id));
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

    fn relocated_protocol_bytes(&self, mapped: bool, oob: &Oob) -> [u8; PROTOCOL_BYTES] {
        let flag = PageFlag::of(oob);
        if mapped {
            PageFlag::default().encode()
        } else {
            PageFlag {
                group: flag.group,
                last: false,
            }
            .encode()
        }
    }
}

impl PersistHooks for AwHooks {
    /// A copy of committed data is plain data (group 0); a copy of the open
    /// group's page stays in its group, flag 0.
    /// The group id and the commit flag (`format.rs`).
    fn packed_protocol_bytes(&self) -> usize {
        5
    }

    fn checkpoint_section_max(&self) -> usize {
        LogPosition::len_max(self.geo.block_count())
    }

    /// The mapping log: a ring of 4 blocks (the FTL checkpoints before it
    /// would enter a block holding pages written since the last checkpoint).
    fn protocol_rings(&self, _geo: &Geometry) -> Vec<u32> {
        vec![4]
    }

    fn checkpoint_durable(&mut self) {
        self.needed.clear();
    }

    fn checkpoint_section(&self) -> Vec<u8> {
        self.position().encode()
    }
}

impl RecoveryHooks for AwHooks {
    /// Redoes every whole group of the mapping log written since the
    /// checkpoint, at the sequence number of its last mapping page.
    fn recover(
        &mut self,
        ckpt_seq: u64,
        _root: &[u8],
        section: &[u8],
        _fell_back: bool,
        logs: &mut dyn LogSource,
    ) -> Result<Vec<RecoveredUpdate>> {
        let pos = LogPosition::decode(section)?;
        *self = AwHooks::new(&self.geo, self.canary);
        self.next_group = pos.next_group;
        self.open_at_checkpoint = pos.open_group_blocks;
        // group -> (pages expected, positions found, seq of its last page, entries)
        type Found = (u16, BTreeSet<u16>, u64, Vec<(u32, u32)>);
        let mut groups: BTreeMap<u32, Found> = BTreeMap::new();
        while let Some(p) = logs.prev_page(0)? {
            if p.seq < ckpt_seq {
                break;
            }
            let Some(m) = MapPage::decode(&p.bytes) else { continue };
            self.next_group = self.next_group.max(m.group.saturating_add(1));
            let g = groups.entry(m.group).or_insert((m.pages, BTreeSet::new(), 0, Vec::new()));
            g.1.insert(m.position);
            g.2 = g.2.max(p.seq);
            g.3.extend(m.entries);
        }
        let mut updates = Vec::new();
        for (pages, found, seq, entries) in groups.into_values() {
            if found.len() == pages as usize {
                updates.extend(entries.into_iter().map(|(lpn, ppn)| RecoveredUpdate { seq, lpn, ppn }));
            }
        }
        Ok(updates)
    }

    fn zone_blocks(&self) -> Vec<BlockId> {
        self.open_at_checkpoint.clone()
    }

    /// A group is committed iff its flagged page is in the log after the
    /// checkpoint; its pages are redone at the flag's sequence number (the
    /// newest copy of each logical page).
    fn recover_scanned(&mut self, ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        // Pages written since the checkpoint and those of the groups open at
        // it (`zone_blocks`): few.
        let pages = pages.collect()?;
        let mut flagged: BTreeMap<u32, u64> = BTreeMap::new();
        let mut max_group = 0;
        for p in &pages {
            let f = PageFlag::of(&p.oob);
            max_group = max_group.max(f.group);
            if f.group != 0 && f.last && p.oob.seq > ckpt_seq {
                flagged.insert(f.group, p.oob.seq);
            }
        }
        self.next_group = self.next_group.max(max_group.saturating_add(1));
        self.open_at_checkpoint.clear();
        let mut newest: BTreeMap<(u32, Lpn), (u64, Ppn)> = BTreeMap::new();
        for p in &pages {
            let f = PageFlag::of(&p.oob);
            if flagged.contains_key(&f.group) {
                let e = newest.entry((f.group, p.oob.lpn)).or_insert((p.oob.seq, p.ppn));
                if p.oob.seq > e.0 {
                    *e = (p.oob.seq, p.ppn);
                }
            }
        }
        Ok(newest
            .into_iter()
            .map(|((group, lpn), (_, ppn))| RecoveredUpdate {
                seq: flagged[&group],
                lpn,
                ppn,
            })
            .collect())
    }

    fn roll_forward(&self, oob: &Oob) -> bool {
        PageFlag::of(oob).group == 0
    }
}

impl EventHooks for AwHooks {
    fn on_program(&mut self, ppn: Ppn, oob: &Oob, done_ns: u64) {
        let flag = PageFlag::of(oob);
        let Some(g) = self
            .open
            .as_mut()
            .filter(|g| flag.group == g.id && flag.group != 0 && !oob.relocated)
        else {
            return;
        };
        // Only the newest version of each page is kept live (GC moves it):
        // a GC copy of an older one would be newer in the log than the
        // version that replaced it.
        if let Some(older) = g.entries.insert(oob.lpn, ppn) {
            g.pages.remove(&older);
        }
        g.pages.insert(ppn);
        g.blocks.insert(self.geo.block_of(ppn));
        g.done_ns = g.done_ns.max(done_ns);
        g.appended += 1;
    }
}

/// The Atomic-Write device.
#[derive(Clone)]
pub struct AtomicWrite {
    ftl: Ftl<AwHooks>,
}

impl AtomicWrite {
    pub fn new(ftl: Ftl<AwHooks>) -> AtomicWrite {
        AtomicWrite { ftl }
    }

    fn group(&self, tid: Tid) -> Result<&Group> {
        self.ftl
            .hooks()
            .open
            .as_ref()
            .filter(|g| g.tid == tid)
            .ok_or(DeviceError::UnknownTransaction(tid))
    }

    /// Appends a committed group's mappings to the mapping log.
    fn write_back(&mut self, group: u32, entries: &BTreeMap<Lpn, Ppn>) -> Result<()> {
        let ps = self.ftl.page_size();
        let per_page = MapPage::entries_per_page(ps);
        let all: Vec<(u32, u32)> = entries.iter().map(|(&l, &p)| (l, p)).collect();
        let chunks: Vec<&[(u32, u32)]> = all.chunks(per_page).collect();
        let pages = chunks.len() as u32;
        let room = self.ftl.log_ring_blocks(0) as u32 / 2 * self.ftl.nand().geometry().pages_per_block;
        if pages > room.min(u16::MAX as u32) {
            return Err(DeviceError::Config(format!(
                "a group of {} pages needs more mapping pages than Atomic-Write's mapping log holds",
                all.len()
            )));
        }
        // The ring must not erase a mapping page recovery needs: a checkpoint
        // makes them all unneeded.
        let entered = self.ftl.log_blocks_entered(0, pages);
        if entered.iter().any(|b| self.ftl.hooks().needed.contains(b)) {
            self.ftl.checkpoint()?;
        }
        let mut buf = vec![0u8; ps as usize];
        for (position, chunk) in chunks.iter().enumerate() {
            MapPage {
                group,
                position: position as u16,
                pages: pages as u16,
                entries: chunk.to_vec(),
            }
            .encode(&mut buf);
            let (ppn, _) = self.ftl.append_log(0, &buf)?;
            let b = self.ftl.block_of(ppn);
            self.ftl.hooks_mut().needed.insert(b);
        }
        Ok(())
    }

    /// Appends the cached page of the open group; `last`: it ends the group.
    fn append_cached(&mut self, last: bool) -> Result<bool> {
        let hooks = self.ftl.hooks_mut();
        let canary = hooks.canary;
        let Some(g) = hooks.open.as_mut() else { return Ok(false) };
        let Some((lpn, data)) = g.cached.take() else { return Ok(false) };
        let flag = if canary { g.appended == 0 } else { last };
        let bytes = PageFlag { group: g.id, last: flag }.encode();
        let earlier_done = g.done_ns;
        if last {
            // Recovery redoes a group whose flagged page is on flash: that
            // proves the group whole only if every earlier page was on flash
            // first. Pages stripe over the dies, and a flag page issued at
            // once can finish before an earlier page on a busier die; a power
            // cut between the two would make part of an unacknowledged
            // commit visible (found by the crash harness's in-flight cuts).
            self.ftl.wait_until(earlier_done);
            self.ftl.program_unmapped_deferred(lpn, &data, &bytes)?;
        } else {
            self.ftl.program_unmapped(lpn, &data, &bytes)?;
        }
        Ok(true)
    }
}

impl Device for AtomicWrite {
    device_basics_over_ftl!();
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.ftl.write_page(lpn, data)
    }
    fn flush(&mut self) -> Result<u64> {
        self.ftl.flush_all()
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        self.ftl.trim_page(lpn)
    }
    fn stats(&self) -> DeviceStats {
        self.ftl.device_stats()
    }
    fn reset_stats(&mut self) {
        self.ftl.reset_device_stats()
    }

    fn begin(&mut self, tid: Tid) -> Result<u64> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        let hooks = self.ftl.hooks_mut();
        if let Some(g) = &hooks.open {
            return Err(if g.tid == tid {
                DeviceError::TransactionExists(tid)
            } else {
                DeviceError::IsolationUnsupported {
                    protocol: "atomic-write",
                    level: "concurrent transactions (it runs one at a time: strict isolation)",
                }
            });
        }
        let id = hooks.next_group;
        hooks.next_group = id
            .checked_add(1)
            .ok_or(DeviceError::WornOut("Atomic-Write group ids are used up".into()))?;
        hooks.open = Some(Group {
            tid,
            id,
            ..Group::default()
        });
        Ok(0)
    }

    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.group(tid)?;
        if lpn >= self.ftl.logical_pages() {
            return Err(DeviceError::OutOfRange {
                lpn: lpn as u64,
                logical_pages: self.ftl.logical_pages(),
            });
        }
        let want = self.ftl.page_size() as usize;
        if !(data.len() == want || (data.is_empty() && self.ftl.nand().config().data_mode == txftl_nand::DataMode::MetaOnly)) {
            return Err(DeviceError::BufferSize { got: data.len(), want });
        }
        let start = self.ftl.now();
        self.append_cached(false)?;
        if let Some(g) = self.ftl.hooks_mut().open.as_mut() {
            g.cached = Some((lpn, data.to_vec()));
        }
        Ok(self.ftl.now() - start)
    }

    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        let g = self.group(tid)?;
        if let Some((l, data)) = &g.cached {
            if *l == lpn && buf.len() == data.len() {
                buf.copy_from_slice(data);
                self.ftl.counters_mut().host_reads += 1;
                return Ok(0);
            }
        }
        match g.entries.get(&lpn).copied() {
            Some(ppn) => self.ftl.read_physical(lpn, ppn, buf),
            None => self.ftl.read_page(lpn, buf),
        }
    }

    fn commit(&mut self, tid: Tid) -> Result<u64> {
        self.group(tid)?;
        let start = self.ftl.now();
        if self.append_cached(true)? {
            let g = self.ftl.hooks_mut().open.take().expect("the open group");
            self.ftl.wait_until(g.done_ns);
            for (&lpn, &ppn) in &g.entries {
                self.ftl.map_page(lpn, ppn)?;
            }
            self.write_back(g.id, &g.entries)?;
            self.ftl.housekeeping()?;
            self.ftl.nand().flush_image()?;
        } else {
            self.ftl.hooks_mut().open = None;
        }
        self.ftl.counters_mut().commits += 1;
        Ok(self.ftl.now() - start)
    }

    fn abort(&mut self, tid: Tid) -> Result<u64> {
        self.group(tid)?;
        self.ftl.hooks_mut().open = None;
        self.ftl.counters_mut().aborts += 1;
        Ok(0)
    }
}

any_device_over_ftl!(AtomicWrite, ENTRY);
