//! The Atomic-Write device: groups appended to the log, the commit's flag
//! page, and the write-back after it (see the module doc).

use super::format::{MapPage, PageFlag, TableTag};
use super::{AwHooks, Group, ENTRY};
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Device, DeviceError, DeviceStats, Ftl, Lpn, Mapping, Ppn, ProtocolCounters, Result, Tid, Writer};

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

    /// Refuses a write-back of `pages` pages larger than half the write-back
    /// ring: it could not be kept whole. The ring is
    /// the table a transaction fills, so the refusal is `TableFull` (the
    /// host hears "full", as SQLite's SQLITE_FULL, not a failed operation).
    fn check_ring_room(&self, pages: usize) -> Result<()> {
        let room = self.ftl.log_ring_blocks(0) as u32 / 2 * self.ftl.nand().geometry().pages_per_block;
        let capacity = room.min(u16::MAX as u32);
        if pages as u64 > capacity as u64 {
            return Err(DeviceError::TableFull { capacity });
        }
        Ok(())
    }

    /// The pages the write-back of the open group `g` would take (mapping-log
    /// pages, or L2P table pages).
    fn write_back_pages(&self, g: &Group) -> usize {
        let lpns = g.entries.keys().chain(g.cached.as_ref().map(|(lpn, _)| lpn));
        if self.ftl.hooks().map_log {
            let distinct: BTreeSet<Lpn> = lpns.copied().collect();
            distinct.len().div_ceil(MapPage::entries_per_page(self.ftl.page_size()))
        } else {
            let per_page = self.ftl.hooks().entries_per_page();
            lpns.map(|&lpn| lpn / per_page).collect::<BTreeSet<u32>>().len()
        }
    }

    /// Makes room in the write-back ring for `pages` pages: checkpoints
    /// first if the ring would erase a page written since the last
    /// checkpoint (a checkpoint makes them all unneeded).
    fn ring_room(&mut self, pages: usize) -> Result<()> {
        self.check_ring_room(pages)?;
        let entered = self.ftl.log_blocks_entered(0, pages as u32);
        if entered.iter().any(|b| self.ftl.hooks().needed.contains(b)) {
            self.ftl.checkpoint()?;
            self.ftl.hooks_mut().counts.write_back_checkpoints += 1;
        }
        Ok(())
    }

    /// Appends one page to the write-back ring, tagged; keeps its block
    /// from the ring's erases until the next checkpoint.
    fn append_needed(&mut self, data: &[u8], tag: &[u8; txftl_ftl::PROTOCOL_BYTES]) -> Result<()> {
        let (ppn, _) = self.ftl.append_log_tagged(0, data, tag)?;
        let b = self.ftl.block_of(ppn);
        self.ftl.hooks_mut().needed.insert(b);
        Ok(())
    }

    /// The default write-back: every L2P table page holding a logical page
    /// of `entries` (now in the L2P), whole, as the L2P holds it.
    fn write_back_tables(&mut self, entries: &BTreeMap<Lpn, Ppn>) -> Result<()> {
        let per_page = self.ftl.hooks().entries_per_page();
        let tables: BTreeSet<u32> = entries.keys().map(|&lpn| lpn / per_page).collect();
        self.ring_room(tables.len())?;
        let logical_pages = self.ftl.logical_pages();
        let mut page = vec![0u8; self.ftl.page_size() as usize];
        for (position, &t) in tables.iter().enumerate() {
            let first = t * per_page;
            let end = (first + per_page).min(logical_pages);
            // The table page as the L2P holds it (UNMAPPED where unmapped),
            // encoded from the table's own slice: a page's worth of lookups
            // per written page is the commit's hot path.
            self.ftl.mapping_table().entries().encode_page(first as usize..end as usize, &mut page);
            let tag = TableTag {
                table: t,
                position: position as u16,
                pages: tables.len() as u16,
            };
            self.append_needed(&page, &tag.encode())?;
            self.ftl.hooks_mut().counts.table_pages += 1;
        }
        Ok(())
    }

    /// The `map-log=1` write-back: the group's mappings appended to the
    /// mapping log, as commit `commit`.
    fn write_back_log(&mut self, commit: u32, entries: &BTreeMap<Lpn, Ppn>) -> Result<()> {
        let ps = self.ftl.page_size();
        let all: Vec<(u32, u32)> = entries.iter().map(|(&l, &p)| (l, p)).collect();
        let chunks: Vec<&[(u32, u32)]> = all.chunks(MapPage::entries_per_page(ps)).collect();
        self.ring_room(chunks.len())?;
        let mut buf = vec![0u8; ps as usize];
        for (position, chunk) in chunks.iter().enumerate() {
            MapPage {
                commit,
                position: position as u16,
                pages: chunks.len() as u16,
                entries: chunk.to_vec(),
            }
            .encode(&mut buf);
            self.append_needed(&buf, &[0; txftl_ftl::PROTOCOL_BYTES])?;
            self.ftl.hooks_mut().counts.map_log_pages += 1;
        }
        Ok(())
    }

    /// Appends the cached page of the open group; `last`: it ends the group.
    fn append_cached(&mut self, last: bool) -> Result<bool> {
        let hooks = self.ftl.hooks_mut();
        let canary = hooks.canary;
        let boundary_done = hooks.boundary_done_ns;
        let Some(g) = hooks.open.as_mut() else { return Ok(false) };
        let Some((lpn, data)) = g.cached.take() else { return Ok(false) };
        let flag = if canary { g.appended == 0 } else { last };
        let bytes = PageFlag::group(flag).encode();
        let earlier_done = g.done_ns.max(boundary_done);
        if last {
            // Recovery redoes a group whose flagged page is on flash: that
            // proves the group whole only if every earlier page was on flash
            // first (and the closing page of an aborted group before it).
            // Pages stripe over the dies, and a flag page issued at once can
            // finish before an earlier page on a busier die; a power cut
            // between the two would make part of an unacknowledged commit
            // visible (found by the crash harness's in-flight cuts).
            self.ftl.wait_until(earlier_done);
            self.ftl.program_unmapped_deferred(lpn, &data, &bytes)?;
        } else {
            self.ftl.program_unmapped(lpn, &data, &bytes)?;
        }
        Ok(true)
    }

    /// Closes an aborted group that has pages on flash with its cached page,
    /// flagged 1 and aborted, so that recovery does not take its pages for
    /// part of the next group. Counted as the protocol's write, not the host's.
    fn close_aborted(&mut self, mut g: Group) -> Result<()> {
        let Some((lpn, data)) = g.cached.take() else { return Ok(()) };
        if g.appended == 0 {
            return Ok(());
        }
        self.ftl.program_unmapped_deferred_by(Writer::Protocol, lpn, &data, &PageFlag::ABORT.encode())?;
        self.ftl.hooks_mut().counts.abort_pages += 1;
        self.ftl.housekeeping()
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
        let mut s = self.ftl.device_stats();
        let c = self.ftl.hooks().counts;
        s.protocol = ProtocolCounters::new(ENTRY.counters);
        s.protocol.add("aw_table_pages", c.table_pages);
        s.protocol.add("aw_map_log_pages", c.map_log_pages);
        s.protocol.add("aw_abort_pages", c.abort_pages);
        s.protocol.add("aw_write_back_checkpoints", c.write_back_checkpoints);
        s
    }
    fn reset_stats(&mut self) {
        self.ftl.hooks_mut().counts = Default::default();
        self.ftl.reset_device_stats()
    }

    fn begin(&mut self, tid: Tid) -> Result<u64> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        if let Some(g) = &self.ftl.hooks().open {
            return Err(if g.tid == tid {
                DeviceError::TransactionExists(tid)
            } else {
                DeviceError::IsolationUnsupported {
                    protocol: "atomic-write",
                    level: "concurrent transactions (it runs one at a time: strict isolation)",
                }
            });
        }
        let start = self.ftl.now();
        if self.ftl.hooks().needs_boundary {
            // The pages of the group a power cut left open are bounded by
            // nothing but a checkpoint: take one before the next group.
            self.ftl.checkpoint()?;
        }
        self.ftl.hooks_mut().open = Some(Group { tid, ..Group::default() });
        self.ftl.tx_begin(tid);
        Ok(self.ftl.now() - start)
    }

    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.group(tid)?;
        self.ftl.check_page(lpn, data)?;
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

    /// The flag page, then (once it is on flash) the L2P and the
    /// write-back; returns when the write-back is on flash.
    fn commit(&mut self, tid: Tid) -> Result<u64> {
        let pages = self.write_back_pages(self.group(tid)?);
        // Refused before the flag page, so the transaction stays open (the
        // host aborts it) rather than committed without its write-back.
        self.check_ring_room(pages)?;
        let start = self.ftl.now();
        if self.append_cached(true)? {
            let g = self.ftl.hooks_mut().open.take().expect("the open group");
            // The state machine: the flag page closed the group, every page
            // it maps is one of its own on flash.
            assert!(g.cached.is_none(), "commit of transaction {tid}: its flag page is still cached");
            debug_assert!(
                g.entries.values().all(|p| g.pages.contains(p)),
                "commit of transaction {tid}: a mapping to a page not of its group"
            );
            // Its done time includes the flag page's.
            self.ftl.wait_until(g.done_ns);
            for (&lpn, &ppn) in &g.entries {
                self.ftl.map_page(lpn, ppn)?;
            }
            let hooks = self.ftl.hooks_mut();
            let (commit, map_log) = (hooks.next_commit, hooks.map_log);
            assert_ne!(commit, 0, "commit numbers start at 1 (0: none)");
            hooks.next_commit = commit.wrapping_add(1).max(1);
            if map_log {
                self.write_back_log(commit, &g.entries)?;
            } else {
                self.write_back_tables(&g.entries)?;
            }
            self.ftl.housekeeping()?;
            self.ftl.nand().flush_image()?;
        } else {
            self.ftl.hooks_mut().open = None;
        }
        self.ftl.tx_commit(tid);
        Ok(self.ftl.now() - start)
    }

    fn abort(&mut self, tid: Tid) -> Result<u64> {
        self.group(tid)?;
        let start = self.ftl.now();
        let g = self.ftl.hooks_mut().open.take().expect("the open group");
        self.close_aborted(g)?;
        self.ftl.tx_abort(tid);
        Ok(self.ftl.now() - start)
    }
}

any_device_over_ftl!(AtomicWrite, ENTRY);

impl crate::DurableParts for AtomicWrite {}
