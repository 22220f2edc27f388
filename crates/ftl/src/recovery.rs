//! Mount: rebuild every piece of DRAM state from the NAND alone.
//!
//! 1. Superblock: in each of the two superblock blocks, binary-search the last
//!    programmed page, then read back to the newest intact copy; the copy with
//!    the larger sequence number wins (a torn superblock falls back to the older).
//! 2. Checkpoint: read the record it names (each page's OOB, the whole
//!    record's CRC), then every table page its directory names (OOB, data CRC,
//!    the CRC the directory records), and decode the L2P and block table from
//!    them; also read the previous checkpoint's record, whose table pages the
//!    ring must keep until the next checkpoint is durable. If the newest checkpoint is
//!    corrupted (a flipped byte), fall back to the newest intact one that an
//!    older superblock still names, and roll forward from it over *every*
//!    block (blocks GC freed after it may have been reused since), taking the
//!    protocol's records written since it from the superblock history, then
//!    keep only mappings whose page's OOB still names their logical page.
//!    What the lost checkpoint alone made durable (trims) may come back.
//!    A protocol whose checkpoints persist no L2P (`Hooks::persists_l2p`)
//!    finds it empty here: its scan of every block in use (`zone_blocks`,
//!    `recover_scanned`, after step 3) rebuilds every mapping.
//! 3. Roll forward: only blocks that were free or open at the checkpoint can hold
//!    pages programmed after it (GC victims stay prefree until a checkpoint).
//!    Scan those from the checkpoint's write pointer; every intact data page with
//!    a sequence number above the checkpoint's is applied in sequence order.
//!    Torn pages fail their CRC and are skipped.
//! 4. Rebuild the reverse map, valid counts and free pool; close every partly
//!    written block (its erased tail is wasted until GC, never reprogrammed: the
//!    first page that reads as erased may hold a torn program). For the same
//!    reason the metadata rings resume in a fresh block.
//! 5. Seal: write a fresh checkpoint, so the next mount rolls nothing forward and
//!    the blocks found empty become free. A cut here is harmless: the previous
//!    superblock still names the previous checkpoint, and rolling forward again
//!    reaches the same state.
//!
//! Reads are timed on the device clock: checkpoint pages are issued together
//! (dies and channels overlap them), and the scans of different blocks run in
//! parallel while each block is read page after page.

use crate::area::{Extent, LogArea};
use crate::blocks::BlockState;
use crate::checkpoint::{decode_block_page, decode_map_page, BlockRecord, Checkpoint, Record, RecordState, TableLayout, UNMAPPED};
use crate::config::FtlConfig;
use crate::device::RecoveryReport;
use crate::ecc::{read_retrying, Unreadable};
use crate::error::{DeviceError, Result};
use crate::ftl::{superblock_blocks, Ftl, RecordLoc};
use crate::hooks::Hooks;
use crate::log::LogReader;
use crate::oob::{Oob, OobState, PageKind};
use crate::scan::{ScanOutcome, ScannedPages};
use crate::superblock::Superblock;
use crate::tables::Tables;
use txftl_nand::{BlockId, DataMode, Nand, Ppn};

/// What the roll-forward scan found in one block.
#[derive(Clone, Copy, Debug)]
struct Scanned {
    block: BlockId,
    write_ptr: u32,
    /// Something was programmed after the checkpoint (intact or torn).
    written: bool,
    /// Page 0 is an intact page older than the checkpoint: the block was not
    /// erased since (it still holds what the checkpoint describes).
    first_page_old: bool,
}

/// A page found by the roll-forward scan.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pub seq: u64,
    pub ppn: Ppn,
    pub oob: Oob,
}

impl<H: Hooks> Ftl<H> {
    /// Reads a page (data and OOB) at `at_ns`; returns the completion time. A
    /// page ECC cannot correct (after read retry) leaves corrupted bytes that
    /// fail every check, as a torn page does: see `recovery_read_ecc` for the
    /// one reader that must tell the two apart.
    fn recovery_read(&mut self, ppn: Ppn, at_ns: u64, data: bool, buf: &mut [u8], oob: &mut [u8]) -> Result<u64> {
        Ok(self.recovery_read_ecc(ppn, at_ns, data, buf, oob)?.0)
    }

    /// `recovery_read`, saying whether the page was unreadable.
    fn recovery_read_ecc(&mut self, ppn: Ppn, at_ns: u64, data: bool, buf: &mut [u8], oob: &mut [u8]) -> Result<(u64, Option<Unreadable>)> {
        let data = if data { Some(buf) } else { None };
        match read_retrying(&mut self.nand, ppn, at_ns, data, oob) {
            Ok(Ok(done)) => Ok((done, None)),
            Ok(Err(u)) => {
                self.counters.uncorrectable_reads += 1;
                Ok((u.done_ns, Some(u)))
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Is the page programmed at all (data or OOB not all 0xFF)? Full read.
    fn is_programmed(&mut self, ppn: Ppn, at_ns: &mut u64) -> Result<bool> {
        let mut buf = vec![0u8; self.geo.page_size as usize];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        *at_ns = self.recovery_read(ppn, *at_ns, true, &mut buf, &mut oob)?;
        Ok(buf.iter().chain(oob.iter()).any(|&b| b != 0xFF))
    }

    /// Number of programmed pages at the start of `block` from `from` on
    /// (pages are programmed in order, so they form a prefix): binary search.
    fn programmed_prefix(&mut self, block: BlockId, from: u32, at_ns: &mut u64) -> Result<u32> {
        let (mut lo, mut hi) = (from, self.geo.pages_per_block);
        // Invariant: pages < lo are programmed, pages >= hi are erased.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.is_programmed(self.geo.ppn(block, mid), at_ns)? {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Finds the newest intact superblock. Returns it with its ring index.
    fn find_superblock(&mut self, report: &mut RecoveryReport, at_ns: &mut u64) -> Result<(Superblock, usize)> {
        let mut best: Option<(Superblock, usize)> = None;
        let mut format_1 = false;
        let reads_before = self.nand.stats().reads;
        for (index, block) in superblock_blocks(&self.geo).into_iter().enumerate() {
            let programmed = self.programmed_prefix(block, 0, at_ns)?;
            let mut buf = vec![0u8; self.geo.page_size as usize];
            let mut oob = vec![0u8; self.geo.oob_size as usize];
            for page in (0..programmed).rev() {
                *at_ns = self.recovery_read(self.geo.ppn(block, page), *at_ns, true, &mut buf, &mut oob)?;
                let intact = matches!(Oob::decode(&oob), OobState::Valid(o) if o.kind == PageKind::Superblock && o.data_matches(&buf));
                format_1 |= intact && Superblock::is_format_1(&buf);
                if let Some(sb) = intact.then(|| Superblock::decode(&buf)).flatten() {
                    if best.as_ref().is_none_or(|(b, _)| sb.sb_seq > b.sb_seq) {
                        best = Some((sb, index));
                    }
                    break;
                }
            }
        }
        report.superblock_reads = self.nand.stats().reads - reads_before;
        match best {
            Some(found) => Ok(found),
            None if format_1 => Err(DeviceError::Config(
                "the device was formatted with on-flash format 1 (whole checkpoints); this txftl reads format 2 (incremental checkpoints): format it again".into(),
            )),
            None => Err(DeviceError::NotFormatted),
        }
    }

    /// Reads a record (the checkpoint, or a protocol record) from a ring: every
    /// page must carry an intact OOB record of `kind`, its page index and `seq`,
    /// and the whole record must match `crc`. Pages are issued together.
    #[allow(clippy::too_many_arguments)]
    fn read_record(
        &mut self,
        blocks: &[BlockId],
        extent: Extent,
        kind: PageKind,
        seq: u64,
        bytes_len: u32,
        crc: u32,
        at_ns: &mut u64,
    ) -> Result<Vec<u8>> {
        let area = LogArea {
            blocks: blocks.to_vec(),
            head_index: 0,
            head_page: 0,
        };
        if extent.pages == 0 || extent.index >= blocks.len() || extent.page >= self.geo.pages_per_block {
            return Err(DeviceError::Corrupted(format!(
                "superblock names an impossible {kind} record: ring index {}, page {}, {} pages",
                extent.index, extent.page, extent.pages
            )));
        }
        let ps = self.geo.page_size as usize;
        let mut bytes = Vec::with_capacity(extent.pages as usize * ps);
        let mut buf = vec![0u8; ps];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        let issue = *at_ns;
        for (i, ppn) in extent.ppns(&area, self.geo.pages_per_block).into_iter().enumerate() {
            let done = self.recovery_read(ppn, issue, true, &mut buf, &mut oob)?;
            *at_ns = (*at_ns).max(done);
            match Oob::decode(&oob) {
                OobState::Valid(o) if o.kind == kind && o.lpn == i as u32 && o.seq == seq && o.data_matches(&buf) => {}
                other => {
                    return Err(DeviceError::Corrupted(format!(
                        "{kind} page {i} at physical page {ppn} is not intact: found {other}"
                    )))
                }
            }
            bytes.extend_from_slice(&buf);
        }
        bytes.truncate(bytes_len as usize);
        if crc32fast::hash(&bytes) != crc {
            return Err(DeviceError::Corrupted(format!("{kind} record fails its checksum")));
        }
        Ok(bytes)
    }

    /// Reads the record of the checkpoint `sb` names and checks its CRCs.
    fn read_ckpt_record(&mut self, sb: &Superblock, report: &mut RecoveryReport, at_ns: &mut u64) -> Result<Record> {
        let bytes = self.read_record(
            &sb.ckpt_ring,
            sb.ckpt,
            PageKind::Checkpoint,
            sb.ckpt_seq,
            sb.ckpt_bytes,
            sb.ckpt_crc,
            at_ns,
        )?;
        report.checkpoint_pages_read += sb.ckpt.pages as u64;
        let record = Record::decode(&bytes).map_err(DeviceError::Corrupted)?;
        let layout = TableLayout::new(sb.logical_pages, self.geo.block_count(), self.geo.page_size);
        let shape = (record.logical_pages, record.block_count, record.map_pages, record.block_pages);
        if record.seq != sb.ckpt_seq || shape != (layout.logical_pages, layout.block_count, layout.map_pages(), layout.block_pages()) {
            return Err(DeviceError::Corrupted("checkpoint record does not match its superblock".into()));
        }
        Ok(record)
    }

    /// Reads the checkpoint the superblock names: its record, then every table
    /// page its directory names (issued together: they lie on the ring's
    /// blocks, on different dies), checking every CRC. Table pages must lie in
    /// a block of `ring`, the checkpoint ring as the newest superblock names
    /// it (the only blocks whose reuse the ring controls).
    fn read_checkpoint(&mut self, sb: &Superblock, ring: &[BlockId], report: &mut RecoveryReport, at_ns: &mut u64) -> Result<Checkpoint> {
        let record = self.read_ckpt_record(sb, report, at_ns)?;
        let geo = self.geo;
        let layout = TableLayout::new(sb.logical_pages, geo.block_count(), geo.page_size);
        let mut l2p = crate::memory::filled(layout.logical_pages as usize, UNMAPPED)?;
        let none = BlockRecord {
            erase_count: 0,
            write_ptr: 0,
            state: RecordState::Bad,
        };
        let mut blocks = vec![none; geo.block_count() as usize];
        let mut buf = vec![0u8; geo.page_size as usize];
        let mut oob = vec![0u8; geo.oob_size as usize];
        let issue = *at_ns;
        for (t, e) in record.directory.iter().enumerate() {
            let t = t as u32;
            if e.ppn == UNMAPPED {
                if t >= layout.map_pages() {
                    return Err(DeviceError::Corrupted(format!("checkpoint names no block-table page {t}")));
                }
                continue;
            }
            if t < layout.map_pages() && !H::persists_l2p() {
                return Err(DeviceError::Corrupted(format!(
                    "checkpoint names L2P page {t}, but protocol `{}` keeps no mapping table",
                    sb.protocol
                )));
            }
            if e.ppn >= geo.page_count() || !ring.contains(&geo.block_of(e.ppn)) {
                return Err(DeviceError::Corrupted(format!(
                    "checkpoint names physical page {} for table page {t}, outside its ring",
                    e.ppn
                )));
            }
            let done = self.recovery_read(e.ppn, issue, true, &mut buf, &mut oob)?;
            *at_ns = (*at_ns).max(done);
            report.checkpoint_pages_read += 1;
            match Oob::decode(&oob) {
                OobState::Valid(o)
                    if o.kind == PageKind::Map
                        && o.lpn == t
                        && o.seq <= record.seq
                        && o.data_matches(&buf)
                        && crc32fast::hash(&buf) == e.crc => {}
                other => {
                    return Err(DeviceError::Corrupted(format!(
                        "table page {t} at physical page {} is not intact: found {other}",
                        e.ppn
                    )))
                }
            }
            if t < layout.map_pages() {
                decode_map_page(&buf, &mut l2p[layout.lpns_of(t)]);
            } else {
                let r = layout.blocks_of(t);
                decode_block_page(&buf, r.start, &mut blocks[r]).map_err(DeviceError::Corrupted)?;
            }
        }
        Ok(Checkpoint {
            seq: record.seq,
            l2p,
            blocks,
            directory: record.directory,
            protocol: record.protocol,
        })
    }

    /// Scans one block that was free or open at the checkpoint, from page `start`
    /// (`was_free`: it was in the free pool, so a stale page 0 means "unused since").
    /// Returns the pages programmed after the checkpoint (intact ones in
    /// `found`), what the block holds, and when the scan finished.
    fn scan_block(
        &mut self,
        (block, start, was_free): (BlockId, u32, bool),
        ckpt_seq: u64,
        found: &mut Vec<Found>,
        report: &mut RecoveryReport,
        at_ns: u64,
    ) -> Result<(Scanned, u64)> {
        let full_reads = self.nand.config().data_mode == DataMode::Full;
        let mut buf = vec![0u8; self.geo.page_size as usize];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        let mut t = at_ns;
        let mut write_ptr = start;
        let mut written = false;
        let mut first_page_old = false;
        report.blocks_scanned += 1;
        for page in start..self.geo.pages_per_block {
            let ppn = self.geo.ppn(block, page);
            let (done, unreadable) = self.recovery_read_ecc(ppn, t, full_reads, &mut buf, &mut oob)?;
            t = done;
            report.pages_scanned += 1;
            if unreadable.is_some_and(|u| u.oob) {
                // Not even the spare area decodes: whose page it was is unknown.
                // Counted; the page reads as garbage below.
                report.unreadable_pages += 1;
            }
            match Oob::decode(&oob) {
                OobState::Valid(o) if o.seq > ckpt_seq => {
                    write_ptr = page + 1;
                    written = true;
                    // An intact OOB records the block's erase count, even over torn data.
                    let count = &mut self.blocks.erase_count[block as usize];
                    *count = (*count).max(o.erase_count);
                    if unreadable.is_some() && o.relocated {
                        // A GC copy (torn, or decayed) whose source still holds
                        // the same data: GC sources are not erased before the
                        // next checkpoint, and the scan only sees pages written
                        // since the last one. Skip it; the source stays mapped.
                        report.unreadable_pages += 1;
                        continue;
                    }
                    if unreadable.is_some() {
                        // The spare area decoded but the data did not: the page
                        // was written (an intact OOB), its data is lost to bit
                        // errors. It stays the newest version (reads report the
                        // loss) rather than letting an older one come back.
                        report.unreadable_pages += 1;
                        found.push(Found { seq: o.seq, ppn, oob: o });
                        continue;
                    }
                    if full_reads && !o.data_matches(&buf) {
                        report.torn_pages_found += 1;
                        report.torn_data_intact_oob += 1;
                        continue;
                    }
                    found.push(Found { seq: o.seq, ppn, oob: o });
                }
                OobState::Valid(_) => {
                    // Older than the checkpoint: a free block never reused since
                    // (page 0), or the stale remains of a torn erase.
                    if !(was_free && page == 0) {
                        report.torn_pages_found += 1;
                        write_ptr = page + 1;
                        continue;
                    }
                    first_page_old = true;
                    break;
                }
                OobState::Erased => {
                    // The OOB may be erased over a torn data area: look at the data.
                    let programmed = if full_reads {
                        buf.iter().any(|&b| b != 0xFF)
                    } else {
                        let mut at = t;
                        let p = self.is_programmed(ppn, &mut at)?;
                        t = at;
                        p
                    };
                    if !programmed {
                        break;
                    }
                    report.torn_pages_found += 1;
                    write_ptr = page + 1;
                }
                OobState::Garbage => {
                    report.torn_pages_found += 1;
                    if was_free && page == 0 {
                        // A torn erase, or a torn first program: nothing after it is valid.
                        break;
                    }
                    write_ptr = page + 1;
                }
            }
        }
        let scanned = Scanned {
            block,
            write_ptr,
            written,
            first_page_old,
        };
        Ok((scanned, t))
    }

    /// The blocks the protocol names (`Hooks::zone_blocks`: blocks in use at
    /// the checkpoint), ascending, each with its write pointer at the
    /// checkpoint: what its scan (`ScannedPages`) reads, from the first page
    /// to that write pointer. Ring blocks and blocks not in use are left out.
    fn zone_block_extents(&self, ck: &Checkpoint, ring_owned: &std::collections::BTreeSet<BlockId>) -> Result<Vec<(BlockId, u32)>> {
        let mut blocks = self.hooks.zone_blocks();
        blocks.sort_unstable();
        blocks.dedup();
        let mut extents = Vec::with_capacity(blocks.len());
        for block in blocks {
            let Some(rec) = ck.blocks.get(block as usize) else {
                return Err(DeviceError::Corrupted(format!(
                    "the checkpoint's protocol section names block {block}, beyond the array"
                )));
            };
            match rec.state {
                RecordState::Used | RecordState::Open if !ring_owned.contains(&block) => {
                    extents.push((block, (rec.write_ptr as u32).min(self.geo.pages_per_block)));
                }
                _ => {}
            }
        }
        Ok(extents)
    }

    /// Every intact superblock in the two superblock blocks, newest first (for
    /// falling back to an older checkpoint).
    fn superblock_history(&mut self, report: &mut RecoveryReport, at_ns: &mut u64) -> Result<Vec<Superblock>> {
        let mut all = Vec::new();
        let mut buf = vec![0u8; self.geo.page_size as usize];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        let reads_before = self.nand.stats().reads;
        for block in superblock_blocks(&self.geo) {
            for page in 0..self.programmed_prefix(block, 0, at_ns)? {
                *at_ns = self.recovery_read(self.geo.ppn(block, page), *at_ns, true, &mut buf, &mut oob)?;
                let intact = matches!(Oob::decode(&oob), OobState::Valid(o) if o.kind == PageKind::Superblock && o.data_matches(&buf));
                if let Some(sb) = intact.then(|| Superblock::decode(&buf)).flatten() {
                    all.push(sb);
                }
            }
        }
        report.superblock_reads += self.nand.stats().reads - reads_before;
        all.sort_by_key(|sb| std::cmp::Reverse(sb.sb_seq));
        Ok(all)
    }

    /// The newest intact checkpoint: the one `sb` names, or, if that one is
    /// corrupted, the newest older one a superblock in the history still names.
    /// Returns it, the superblock naming it, and the history if it fell back.
    fn load_checkpoint(
        &mut self,
        sb: &Superblock,
        report: &mut RecoveryReport,
        at_ns: &mut u64,
    ) -> Result<(Checkpoint, Superblock, Option<Vec<Superblock>>)> {
        let ring = sb.ckpt_ring.clone();
        let why = match self.read_checkpoint(sb, &ring, report, at_ns) {
            Ok(ck) => return Ok((ck, sb.clone(), None)),
            Err(DeviceError::Corrupted(why)) => why,
            Err(e) => return Err(e),
        };
        report.checkpoints_skipped = 1;
        let history = self.superblock_history(report, at_ns)?;
        let mut tried = vec![sb.ckpt_seq];
        // The previous checkpoint every superblock names first, then the ones
        // older superblocks name.
        let prev = &sb.prev_ckpt;
        let named_prev = (prev.seq > 0 && prev.extent.pages > 0).then(|| Superblock {
            ckpt_seq: prev.seq,
            ckpt: prev.extent,
            ckpt_bytes: prev.bytes,
            ckpt_crc: prev.crc,
            ..sb.clone()
        });
        for older in named_prev.iter().chain(&history) {
            if tried.contains(&older.ckpt_seq) || older.ckpt_seq > sb.ckpt_seq {
                continue;
            }
            tried.push(older.ckpt_seq);
            match self.read_checkpoint(older, &ring, report, at_ns) {
                Ok(ck) => {
                    // The superblocks left form a contiguous suffix of all those
                    // written: if the oldest predates the checkpoint used, every
                    // protocol record written since it is named in the history.
                    report.fallback_history_complete = history.last().is_some_and(|h| h.ckpt_seq <= ck.seq);
                    let older = older.clone();
                    return Ok((ck, older, Some(history)));
                }
                Err(DeviceError::Corrupted(_)) => report.checkpoints_skipped += 1,
                Err(e) => return Err(e),
            }
        }
        Err(DeviceError::Corrupted(format!(
            "the newest checkpoint is corrupted ({why}) and no older intact checkpoint is left to fall back to"
        )))
    }

    /// After a fallback to an older checkpoint: a mapping whose page no longer
    /// holds an intact data page of its logical page (the block was reclaimed
    /// and reused since) is dropped. The OOB reads are issued together.
    fn drop_stale_mappings(&mut self, report: &mut RecoveryReport, at_ns: u64) -> Result<u64> {
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        let mut t = at_ns;
        for lpn in 0..self.l2p.len() {
            let ppn = self.l2p[lpn];
            if ppn == UNMAPPED {
                continue;
            }
            let holds = ppn < self.geo.page_count() && {
                t = t.max(self.recovery_read(ppn, at_ns, false, &mut [], &mut oob)?);
                matches!(Oob::decode(&oob), OobState::Valid(o) if o.kind == PageKind::Data && o.lpn == lpn as u32)
            };
            if !holds {
                self.l2p[lpn] = UNMAPPED;
                self.tables.mark_lpn(lpn as u32);
                report.mappings_dropped += 1;
            }
        }
        Ok(t)
    }

    /// Mounts a formatted array: recovery from the NAND alone (see the module doc).
    pub fn mount(nand: Nand, cfg: FtlConfig, hooks: H) -> Result<Ftl<H>> {
        Self::mount_or_return(nand, cfg, hooks).map_err(|(e, _)| e)
    }

    /// Like [`Ftl::mount`], but a failed mount hands the NAND back (with whatever
    /// the failed attempt did to it), so a cut during recovery can be followed by
    /// another recovery.
    pub fn mount_or_return(nand: Nand, cfg: FtlConfig, hooks: H) -> std::result::Result<Ftl<H>, (DeviceError, Box<Nand>)> {
        let mut ftl = Ftl::empty(nand, cfg, hooks)?;
        match ftl.recover() {
            Ok(()) => Ok(ftl),
            Err(e) => Err((e, Box::new(ftl.into_nand()))),
        }
    }

    fn recover(&mut self) -> Result<()> {
        let ftl = self;
        let geo = ftl.geo;
        geo.validate()?;
        if !ftl.nand.is_powered() {
            return Err(DeviceError::PowerLoss);
        }
        let stats_before = ftl.nand.stats();
        let start_ns = ftl.nand.all_idle_ns();
        let mut t = start_ns;
        let mut report = RecoveryReport::default();

        let (sb, sb_index) = ftl.find_superblock(&mut report, &mut t)?;
        if sb.block_count != geo.block_count() || sb.pages_per_block != geo.pages_per_block || sb.page_size != geo.page_size {
            return Err(DeviceError::Corrupted("superblock geometry does not match the array".into()));
        }
        if sb.protocol != ftl.hooks.name() {
            return Err(DeviceError::Config(format!(
                "the device was formatted for protocol `{}`, not `{}`",
                sb.protocol,
                ftl.hooks.name()
            )));
        }
        // The tables this device needs must fit before they are loaded.
        let ppb = geo.pages_per_block as u64;
        let ring_pages: Vec<u64> = std::iter::once(sb.ckpt_ring.len() as u64 * ppb)
            .chain(sb.protocol_rings.iter().map(|r| r.blocks.len() as u64 * ppb))
            .collect();
        let data_mode = ftl.nand.config().data_mode;
        let section_max = ftl.hooks.checkpoint_section_max();
        let packed = ftl.hooks.packed_protocol_bytes();
        crate::memory::check(
            crate::memory::FtlMemory::estimate(&geo, sb.logical_pages, data_mode, &ring_pages, section_max, packed).total(),
        )?;
        let (mut ck, ck_sb, history) = ftl.load_checkpoint(&sb, &mut report, &mut t)?;
        let fallback = history.is_some();
        // The checkpoint before the one used stays the fallback until the
        // next one is durable: its table pages must stay where they are, so
        // the ring must know them (its record only; if it cannot be read, it
        // is no fallback anyway). After a fallback, the corrupted newer one
        // is of no use and the one used is the fallback of the sealing one.
        let prev_dir = if !fallback && ck_sb.prev_ckpt.seq > 0 {
            let prev_sb = Superblock {
                ckpt_seq: ck_sb.prev_ckpt.seq,
                ckpt: ck_sb.prev_ckpt.extent,
                ckpt_bytes: ck_sb.prev_ckpt.bytes,
                ckpt_crc: ck_sb.prev_ckpt.crc,
                ..ck_sb.clone()
            };
            match ftl.read_ckpt_record(&prev_sb, &mut report, &mut t) {
                Ok(r) => Some(r.directory),
                Err(DeviceError::Corrupted(_)) => None,
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        report.load_ns = t - start_ns;
        ftl.ckpt_erase_counts = ck.blocks.iter().map(|r| r.erase_count).collect();
        let ring_blocks: usize = sb.ckpt_ring.len() + sb.protocol_rings.iter().map(|r| r.blocks.len()).sum::<usize>();
        let pool_blocks = geo.block_count().saturating_sub(2 + ring_blocks as u32);
        ftl.derived = Self::derive(&geo, &ftl.cfg, pool_blocks, Some(sb.logical_pages))?;
        // Without L2P persistence (`Hooks::persists_l2p`) the checkpoint
        // names no L2P page: the L2P starts empty, and the protocol's scan
        // (`recover_scanned`) maps every logical page.
        ftl.l2p = std::mem::take(&mut ck.l2p);
        let layout = TableLayout::new(sb.logical_pages, geo.block_count(), geo.page_size);
        ftl.tables = Tables::new(layout, &geo, ftl.hooks.checkpoint_section_max(), sb.ckpt_ring.len());
        ftl.tables.loaded(std::mem::take(&mut ck.directory), prev_dir, ck.blocks.clone());
        ftl.tables.rebuild_holder(&sb.ckpt_ring, &geo);

        // The rings as the superblock names them own their blocks; a block the
        // checkpoint recorded as metadata that no ring names any more was
        // swapped out of a ring for wear: it is reclaimable once a checkpoint
        // says so (prefree at the end, with no valid pages).
        let ring_owned: std::collections::BTreeSet<BlockId> = superblock_blocks(&geo)
            .into_iter()
            .chain(sb.ckpt_ring.iter().copied())
            .chain(sb.protocol_rings.iter().flat_map(|r| r.blocks.iter().copied()))
            .collect();
        // Roll forward over blocks free or open at the checkpoint, in parallel
        // (a ring's blocks hold no data, even one swapped in since).
        let mut found = Vec::new();
        let scan_start = t;
        let mut scanned: Vec<Scanned> = Vec::new();
        for (b, rec) in ck.blocks.iter().enumerate() {
            let b = b as BlockId;
            ftl.blocks.erase_count[b as usize] = rec.erase_count;
            if ring_owned.contains(&b) {
                continue;
            }
            let (start, was_free) = match rec.state {
                RecordState::Free => (0, true),
                RecordState::Open => (rec.write_ptr as u32, false),
                // After a fallback, a block in use at the checkpoint may have been
                // reclaimed and reused since: a page 0 newer than the checkpoint says so.
                RecordState::Used if fallback => (0, true),
                _ => continue,
            };
            let (found_here, done) = ftl.scan_block((b, start, was_free), ck.seq, &mut found, &mut report, scan_start)?;
            t = t.max(done);
            scanned.push(found_here);
        }
        report.scan_ns = t - scan_start;
        // Metadata ring blocks are erased as their ring enters them, after the
        // checkpoint recorded their count: the OOB of their pages has the count
        // they were programmed at (every page of one erase cycle records the
        // same). The first page normally tells; if it is not intact (a block
        // never entered, or a torn erase that left older pages behind), the
        // first intact page does. Blocks are read in parallel, each in order.
        // Blocks the checkpoint recorded as metadata but no ring names any more
        // (swapped out for wear since) were ring blocks too, possibly erased
        // after the checkpoint.
        let swapped_out = ck
            .blocks
            .iter()
            .enumerate()
            .filter(|(b, r)| r.state == RecordState::Meta && !ring_owned.contains(&(*b as BlockId)))
            .map(|(b, _)| b as BlockId);
        let meta_blocks: Vec<BlockId> = ring_owned
            .iter()
            .copied()
            .chain(swapped_out)
            .filter(|&b| b < geo.block_count())
            .collect();
        let mut oob = vec![0u8; geo.oob_size as usize];
        let issue = t;
        for b in meta_blocks {
            let mut at = issue;
            for page in 0..geo.pages_per_block {
                at = ftl.recovery_read(geo.ppn(b, page), at, false, &mut [], &mut oob)?;
                if let OobState::Valid(o) = Oob::decode(&oob) {
                    let count = &mut ftl.blocks.erase_count[b as usize];
                    *count = (*count).max(o.erase_count);
                    break;
                }
            }
            t = t.max(at);
        }
        // The protocol rebuilds its state and may add updates of its own; the
        // roll-forward pages it vetoes are left unmapped.
        let protocol_start = t;
        let ring_lists: Vec<Vec<BlockId>> = sb.protocol_rings.iter().map(|r| r.blocks.clone()).collect();
        let mut logs = LogReader::new(&mut ftl.nand, geo, &ring_lists, t)?;
        let mut updates = ftl.hooks.recover(ck.seq, &sb.root, &ck.protocol, fallback, &mut logs)?;
        let (log_max_seq, log_newest) = (logs.max_seq, std::mem::take(&mut logs.newest_index));
        report.protocol_pages_read = logs.pages_read;
        t = logs.t;
        if H::wants_scanned_pages() {
            // The protocol visits the pages as they are read (`ScannedPages`):
            // it keeps what it needs of each, not every decoded OOB at once.
            let blocks = ftl.zone_block_extents(&ck, &ring_owned)?;
            let mut outcome = ScanOutcome {
                done_ns: t,
                ..ScanOutcome::default()
            };
            let pages = ScannedPages {
                nand: &mut ftl.nand,
                geo,
                ckpt_seq: ck.seq,
                rolled_forward: &found,
                blocks,
                at_ns: t,
                report: &mut report,
                outcome: &mut outcome,
            };
            let scanned = ftl.hooks.recover_scanned(ck.seq, pages);
            ftl.counters.uncorrectable_reads += outcome.uncorrectable_reads;
            ftl.failed |= outcome.nand_failed;
            t = outcome.done_ns;
            updates.extend(scanned?);
        }
        report.protocol_read_ns = t - protocol_start;
        // The newest superblock's checkpoint may be newer than the one used, and
        // new programs must follow every page of the protocol's logs.
        let mut max_seq = ck.seq.max(sb.ckpt_seq).max(log_max_seq);
        let mut apply: Vec<(u64, u32, Ppn)> = Vec::with_capacity(found.len() + updates.len());
        for f in &found {
            max_seq = max_seq.max(f.seq);
            if f.oob.kind == PageKind::Data && f.oob.lpn < ftl.derived.logical_pages && ftl.hooks.roll_forward(&f.oob) {
                apply.push((f.seq, f.oob.lpn, f.ppn));
                report.pages_rolled_forward += 1;
            }
        }
        for u in updates {
            if u.lpn < ftl.derived.logical_pages && u.ppn < geo.page_count() {
                apply.push((u.seq, u.lpn, u.ppn));
                report.protocol_updates_applied += 1;
            }
        }
        let apply_empty = apply.is_empty();
        apply.sort_by_key(|&(seq, _, _)| seq);
        for (_, lpn, ppn) in apply {
            ftl.l2p[lpn as usize] = ppn;
            ftl.tables.mark_lpn(lpn);
        }
        if fallback {
            t = ftl.drop_stale_mappings(&mut report, t)?;
        }

        // Block table, reverse map, valid counts.
        for (b, rec) in ck.blocks.iter().enumerate() {
            let (state, wp) = match rec.state {
                RecordState::Bad => (BlockState::Bad, 0),
                RecordState::Meta => (BlockState::Meta, 0),
                RecordState::Used => (BlockState::Full, rec.write_ptr as u32),
                RecordState::Free | RecordState::Open => (BlockState::Free, 0), // fixed below
            };
            ftl.blocks.state[b] = state;
            ftl.blocks.write_ptr[b] = wp;
        }
        for (b, rec) in ck.blocks.iter().enumerate() {
            if ring_owned.contains(&(b as BlockId)) {
                ftl.blocks.state[b] = BlockState::Meta;
            } else if rec.state == RecordState::Meta {
                ftl.blocks.state[b] = BlockState::Full;
                ftl.blocks.write_ptr[b] = geo.pages_per_block;
            }
        }
        for sc in &scanned {
            let b = sc.block as usize;
            if ring_owned.contains(&sc.block) {
                continue;
            }
            let was = ck.blocks[b].state;
            if sc.written || was == RecordState::Open {
                ftl.blocks.state[b] = BlockState::Full;
                ftl.blocks.write_ptr[b] = sc.write_ptr;
            } else if was == RecordState::Used && !sc.first_page_old {
                // Reclaimed and erased after the checkpoint (fallback only).
                ftl.blocks.state[b] = BlockState::Free;
                ftl.blocks.write_ptr[b] = 0;
            }
        }
        for (lpn, &ppn) in ftl.l2p.iter().enumerate() {
            if ppn == UNMAPPED {
                continue;
            }
            if ppn >= geo.page_count() || ftl.mapped.get(ppn) {
                return Err(DeviceError::Corrupted(format!(
                    "logical page {lpn} maps to invalid or shared physical page {ppn}"
                )));
            }
            ftl.mapped.set(ppn, true);
            ftl.blocks.valid[geo.block_of(ppn) as usize] += 1;
        }
        for b in 0..geo.block_count() {
            match ftl.blocks.state[b as usize] {
                BlockState::Free => ftl.blocks.set_free(b),
                BlockState::Full => {
                    ftl.blocks.last_seq[b as usize] = ck.seq;
                    // Not only mapped pages are live: pages the protocol
                    // keeps (BPCC's pinned straddlers, rebuilt by the
                    // protocol's recovery above) must not go with a block
                    // reclaimed for holding no mapped page.
                    if ftl.live_pages(b) == 0 {
                        ftl.blocks.set_prefree(b);
                    }
                }
                _ => {}
            }
        }
        ftl.blocks.rebuild_index();
        ftl.seq = max_seq + 1;

        // Metadata rings: the next appends go to a fresh block. The page after the
        // last programmed one may hold a torn program that reads as erased (all
        // 0xFF), so it must never be programmed: entering the next block erases it.
        // The same reason closes every partly written data block above.
        ftl.sb_seq = sb.sb_seq;
        ftl.sb_area = LogArea {
            blocks: superblock_blocks(&geo).to_vec(),
            head_index: sb_index,
            head_page: geo.pages_per_block,
        };
        ftl.prev_ckpt = RecordLoc {
            seq: ck_sb.prev_ckpt.seq,
            extent: ck_sb.prev_ckpt.extent,
            bytes: ck_sb.prev_ckpt.bytes,
            crc: ck_sb.prev_ckpt.crc,
        };
        ftl.ckpt = RecordLoc {
            seq: ck_sb.ckpt_seq,
            extent: ck_sb.ckpt,
            bytes: ck_sb.ckpt_bytes,
            crc: ck_sb.ckpt_crc,
        };
        let ppb = geo.pages_per_block;
        // The checkpoint used stays protected until the sealing one is durable.
        let last = ck_sb.ckpt.page + ck_sb.ckpt.pages - 1;
        let last_index = (ck_sb.ckpt.index + (last / ppb) as usize) % sb.ckpt_ring.len();
        ftl.ckpt_area = LogArea {
            blocks: sb.ckpt_ring.clone(),
            head_index: last_index,
            head_page: ppb,
        };
        for (r, newest) in sb.protocol_rings.iter().zip(log_newest) {
            // Appends resume in a fresh block after the newest one.
            ftl.proto_rings.push(LogArea {
                blocks: r.blocks.clone(),
                head_index: newest.unwrap_or(r.blocks.len() - 1),
                head_page: ppb,
            });
        }

        // Seal, if recovery found anything to fold in: pages programmed after the
        // checkpoint (intact or torn), or protocol updates (which a protocol may
        // not write again, so a later record could drop them). A mount that
        // found nothing writes nothing, and a read-only mount never does.
        ftl.now_ns = t;
        let found_anything =
            fallback || !found.is_empty() || !apply_empty || report.torn_pages_found > 0 || scanned.iter().any(|s| s.written);
        if found_anything && !ftl.cfg.read_only {
            ftl.checkpoint()?;
        }
        report.sealed = found_anything && !ftl.cfg.read_only;
        report.seal_ns = ftl.now_ns - t;
        let n = ftl.nand.stats();
        report.flash_reads = (n.reads + n.oob_reads) - (stats_before.reads + stats_before.oob_reads);
        report.flash_programs = n.programs - stats_before.programs;
        report.flash_erases = n.erases - stats_before.erases;
        report.time_ns = ftl.now_ns - start_ns;
        ftl.recovery = Some(report);
        ftl.reset_device_stats();
        Ok(())
    }
}
