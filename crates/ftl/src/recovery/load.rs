//! Steps 1 and 2 of the mount (the module doc): the newest intact
//! superblock, the checkpoint it names (or an older intact one), and the
//! DRAM tables loaded from it.

use super::Mounted;
use crate::area::{Extent, LogArea};
use crate::checkpoint::{decode_block_page, BlockRecord, Checkpoint, DirEntry, Record, RecordState, TableLayout, UNMAPPED};
use crate::device::RecoveryReport;
use crate::error::{DeviceError, Result};
use crate::ftl::{superblock_blocks, Ftl};
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use crate::oob::{Oob, OobState, PageKind};
use crate::superblock::Superblock;
use crate::tables::Tables;
use std::collections::BTreeSet;
use txftl_nand::BlockId;

/// A checkpoint recovery loaded, the superblock naming it, and the
/// superblock history if it fell back to an older one than the newest.
type Loaded<M> = (Checkpoint<M>, Superblock, Option<Vec<Superblock>>);

impl<H: Hooks> Ftl<H> {
    /// Finds the newest intact superblock. Returns it with its ring index.
    pub(super) fn find_superblock(&mut self, report: &mut RecoveryReport, at_ns: &mut u64) -> Result<(Superblock, usize)> {
        let mut best: Option<(Superblock, usize)> = None;
        let mut format_1 = false;
        let reads_before = self.nand.stats().reads;
        let mut buf = vec![0u8; self.geo.page_size as usize];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        for (index, block) in superblock_blocks(&self.geo).into_iter().enumerate() {
            let programmed = self.programmed_prefix(block, 0, at_ns)?;
            for page in (0..programmed).rev() {
                let found = self.superblock_at((block, page, programmed), (&mut buf, &mut oob), at_ns)?;
                format_1 |= superblock_page(&oob, &buf).is_some() && Superblock::is_format_1(&buf);
                if let Some(sb) = found {
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

    /// Reads page `page` of superblock block `block` (`programmed` pages
    /// programmed) into `first` and its spare area into `oob`, on the clock;
    /// if it is the first page of a superblock copy, the copy, if it is
    /// whole: each later page of it an intact superblock page with its
    /// index and the first page's sequence number.
    fn superblock_at(
        &mut self,
        (block, page, programmed): (BlockId, u32, u32),
        (first, oob): (&mut [u8], &mut [u8]),
        at_ns: &mut u64,
    ) -> Result<Option<Superblock>> {
        *at_ns = self.recovery_read(self.geo.ppn(block, page), *at_ns, true, first, oob)?;
        let Some((0, seq)) = superblock_page(oob, first) else {
            return Ok(None);
        };
        let Some(pages) = Superblock::copy_pages(first) else {
            return Ok(None);
        };
        if pages == 1 {
            return Ok(Superblock::decode(first));
        }
        if page as usize + pages > programmed as usize {
            return Ok(None);
        }
        let mut bytes = first.to_vec();
        let mut buf = vec![0u8; self.geo.page_size as usize];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        for i in 1..pages as u32 {
            *at_ns = self.recovery_read(self.geo.ppn(block, page + i), *at_ns, true, &mut buf, &mut oob)?;
            if superblock_page(&oob, &buf) != Some((i, seq)) {
                return Ok(None);
            }
            bytes.extend_from_slice(&buf);
        }
        Ok(Superblock::decode(&bytes))
    }

    /// Reads a record (the checkpoint, or a protocol record) from a ring: every
    /// page must carry an intact OOB record of `kind`, its page index and `seq`,
    /// and the whole record must match `crc`. Pages are issued together.
    #[allow(clippy::too_many_arguments)]
    fn read_record(
        &mut self,
        (blocks, stripe): (&[BlockId], u32),
        extent: Extent,
        kind: PageKind,
        seq: u64,
        bytes_len: u32,
        crc: u32,
        at_ns: &mut u64,
    ) -> Result<Vec<u8>> {
        let area = LogArea::new(blocks.to_vec(), stripe, self.geo.pages_per_block);
        if extent.pages == 0 || extent.index >= area.stripes() || extent.page >= area.stripe_pages(self.geo.pages_per_block) {
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
            (&sb.ckpt_ring, sb.ckpt_stripe),
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
    fn read_checkpoint(
        &mut self,
        sb: &Superblock,
        ring: &[BlockId],
        report: &mut RecoveryReport,
        at_ns: &mut u64,
    ) -> Result<Checkpoint<H::Mapping>> {
        let record = self.read_ckpt_record(sb, report, at_ns)?;
        let geo = self.geo;
        let layout = TableLayout::new(sb.logical_pages, geo.block_count(), geo.page_size);
        let mut l2p = self.hooks.mapping_table(layout.logical_pages, layout.entries_per_page)?;
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
            if t < layout.map_pages() && !<H::Mapping as Mapping>::PERSISTED {
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
                l2p.entries_mut().decode_page(layout.lpns_of(t), &buf);
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
            window: record.window,
        })
    }

    /// Every intact superblock in the two superblock blocks, newest first (for
    /// falling back to an older checkpoint).
    fn superblock_history(&mut self, report: &mut RecoveryReport, at_ns: &mut u64) -> Result<Vec<Superblock>> {
        let mut all = Vec::new();
        let mut buf = vec![0u8; self.geo.page_size as usize];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        let reads_before = self.nand.stats().reads;
        for block in superblock_blocks(&self.geo) {
            let programmed = self.programmed_prefix(block, 0, at_ns)?;
            for page in 0..programmed {
                if let Some(sb) = self.superblock_at((block, page, programmed), (&mut buf, &mut oob), at_ns)? {
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
    pub(super) fn load_checkpoint(&mut self, sb: &Superblock, report: &mut RecoveryReport, at_ns: &mut u64) -> Result<Loaded<H::Mapping>> {
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

    /// Refuses a superblock this array or this protocol cannot mount: another
    /// geometry, another protocol, or tables too large for the host's memory.
    pub(super) fn check_superblock(&self, sb: &Superblock) -> Result<()> {
        let geo = self.geo;
        if sb.block_count != geo.block_count() || sb.pages_per_block != geo.pages_per_block || sb.page_size != geo.page_size {
            return Err(DeviceError::Corrupted("superblock geometry does not match the array".into()));
        }
        if sb.protocol != self.hooks.name() {
            return Err(DeviceError::Config(format!(
                "the device was formatted for protocol `{}`, not `{}`",
                sb.protocol,
                self.hooks.name()
            )));
        }
        // The tables this device needs must fit before they are loaded.
        let ppb = geo.pages_per_block as u64;
        let ring_pages: Vec<u64> = std::iter::once(sb.ckpt_ring.len() as u64 * ppb)
            .chain(sb.protocol_rings.iter().map(|r| r.blocks.len() as u64 * ppb))
            .collect();
        let data_mode = self.nand.config().data_mode;
        let section_max = self.hooks.checkpoint_section_max();
        let packed = crate::memory::PackedBytes::of(&self.hooks);
        crate::memory::check(
            crate::memory::FtlMemory::estimate(&geo, sb.logical_pages, data_mode, &ring_pages, section_max, packed).total(),
        )
    }

    /// The directory of the checkpoint before `ck_sb`'s, if it is to stay the
    /// fallback (see the comment inside).
    pub(super) fn read_prev_directory(
        &mut self,
        ck_sb: &Superblock,
        fallback: bool,
        report: &mut RecoveryReport,
        at_ns: &mut u64,
    ) -> Result<Option<Vec<DirEntry>>> {
        // The checkpoint before the one used stays the fallback until the
        // next one is durable: its table pages must stay where they are, so
        // the ring must know them (its record only; if it cannot be read, it
        // is no fallback anyway). After a fallback, the corrupted newer one
        // is of no use and the one used is the fallback of the sealing one.
        if !fallback && ck_sb.prev_ckpt.seq > 0 {
            let prev_sb = Superblock {
                ckpt_seq: ck_sb.prev_ckpt.seq,
                ckpt: ck_sb.prev_ckpt.extent,
                ckpt_bytes: ck_sb.prev_ckpt.bytes,
                ckpt_crc: ck_sb.prev_ckpt.crc,
                ..ck_sb.clone()
            };
            match self.read_ckpt_record(&prev_sb, report, at_ns) {
                Ok(r) => Ok(Some(r.directory)),
                Err(DeviceError::Corrupted(_)) => Ok(None),
                Err(e) => Err(e),
            }
        } else {
            Ok(None)
        }
    }

    /// Installs the checkpoint `m` loaded as the DRAM state: the erase counts
    /// it recorded, the derived sizes, the L2P (taken out of it) and the
    /// table pages (its directory, taken too, and `prev_dir`).
    pub(super) fn install_checkpoint(&mut self, m: &mut Mounted<H::Mapping>, prev_dir: Option<Vec<DirEntry>>) -> Result<()> {
        let geo = self.geo;
        let (sb, ck) = (&m.sb, &mut m.ck);
        let ring_blocks: usize = sb.ckpt_ring.len() + sb.protocol_rings.iter().map(|r| r.blocks.len()).sum::<usize>();
        let pool_blocks = geo.block_count().saturating_sub(2 + ring_blocks as u32);
        self.derived = Self::derive(&geo, &self.cfg, pool_blocks, Some(sb.logical_pages))?;
        // Without L2P persistence (`Mapping::PERSISTED`) the checkpoint
        // names no L2P page: the L2P starts empty, and the protocol's scan
        // (`recover_scanned`) maps every logical page.
        self.l2p = std::mem::replace(&mut ck.l2p, H::Mapping::unmapped(0)?);
        let layout = TableLayout::new(sb.logical_pages, geo.block_count(), geo.page_size);
        self.tables = Tables::new(
            layout,
            &geo,
            self.hooks.checkpoint_section_max(),
            sb.ckpt_ring.len(),
            sb.ckpt_stripe,
            <H::Mapping as Mapping>::CACHED,
        );
        self.tables.loaded(std::mem::take(&mut ck.directory), prev_dir, ck.blocks.clone());
        self.tables.rebuild_holder(&sb.ckpt_ring, sb.ckpt_stripe, &geo);
        Ok(())
    }
}

/// The blocks the superblock's rings own (the superblock blocks included).
pub(super) fn ring_owned(geo: &txftl_nand::Geometry, sb: &Superblock) -> BTreeSet<BlockId> {
    superblock_blocks(geo)
        .into_iter()
        .chain(sb.ckpt_ring.iter().copied())
        .chain(sb.protocol_rings.iter().flat_map(|r| r.blocks.iter().copied()))
        .collect()
}

/// A superblock page's index within its copy and its sequence number, if
/// the page is intact and of kind superblock.
fn superblock_page(oob: &[u8], data: &[u8]) -> Option<(u32, u64)> {
    match Oob::decode(oob) {
        OobState::Valid(o) if o.kind == PageKind::Superblock && o.data_matches(data) => Some((o.lpn, o.seq)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::ftl::superblock_blocks;
    use crate::test_hooks::Bare;
    use crate::{DeviceError, Ftl, FtlConfig};
    use std::collections::BTreeMap;
    use std::ops::Range;
    use txftl_nand::{DataMode, Nand, PowerCut, Torn, ViolationPolicy};

    /// `tiny`'s two dies with 3,000 blocks each: a checkpoint ring of about
    /// 300 blocks, so a superblock copy takes three 512-byte pages, and an
    /// 8-page superblock block holds two copies and leaves two pages erased.
    fn long_ring_nand() -> Nand {
        let mut p = txftl_nand::preset("tiny").unwrap();
        p.geometry.blocks_per_plane = 3_000;
        Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
    }

    /// The pages of the copy at page 0 of the first superblock block.
    fn copy_pages(nand: &mut Nand) -> Option<usize> {
        let geo = *nand.geometry();
        let mut data = vec![0u8; geo.page_size as usize];
        let mut oob = vec![0u8; geo.oob_size as usize];
        let ppn = geo.ppn(superblock_blocks(&geo)[0], 0);
        nand.read(ppn, nand.all_idle_ns(), Some(&mut data), &mut oob).unwrap();
        crate::superblock::Superblock::copy_pages(&data)
    }

    /// What [`rounds`] did: the device (or the array, after a power loss),
    /// the writes sealed by a completed checkpoint (logical page, value),
    /// and the operations of each checkpoint.
    struct Rounds {
        end: Result<Ftl<Bare>, Nand>,
        sealed: Vec<(u32, u8)>,
        checkpoints: Vec<Range<u64>>,
    }

    /// Four rounds of 12 writes, each sealed by a checkpoint: five copies
    /// with the format's, so the first superblock block is filled, the
    /// second entered, filled, and the first erased and entered again.
    fn rounds(nand: Nand) -> Rounds {
        let mut f = Ftl::format(nand, FtlConfig::default(), Bare).unwrap();
        let ps = f.page_size() as usize;
        let (mut sealed, mut pending, mut checkpoints) = (Vec::new(), Vec::new(), Vec::new());
        let lost = |f: Ftl<Bare>, sealed, checkpoints| Rounds {
            end: Err(f.into_nand()),
            sealed,
            checkpoints,
        };
        for round in 0..4u8 {
            for i in 0..12u32 {
                let lpn = (u32::from(round) * 7 + i * 13) % f.logical_pages();
                match f.write_page(lpn, &vec![round + 1; ps]) {
                    Ok(_) => pending.push((lpn, round + 1)),
                    Err(DeviceError::PowerLoss) => return lost(f, sealed, checkpoints),
                    Err(e) => panic!("write {lpn}: {e}"),
                }
            }
            let before = f.nand().op_count();
            match f.checkpoint() {
                Ok(()) => sealed.append(&mut pending),
                Err(DeviceError::PowerLoss) => return lost(f, sealed, checkpoints),
                Err(e) => panic!("checkpoint {round}: {e}"),
            }
            checkpoints.push(before..f.nand().op_count());
        }
        Rounds {
            end: Ok(f),
            sealed,
            checkpoints,
        }
    }

    #[test]
    fn a_superblock_of_three_pages_survives_a_cut_at_every_operation_of_a_checkpoint() {
        let uncut = rounds(long_ring_nand());
        let mut nand = uncut.end.ok().expect("no cut armed").into_nand();
        assert_eq!(copy_pages(&mut nand), Some(3), "the ring makes a three-page copy");
        let geo = *nand.geometry();
        let mut oob = vec![0u8; geo.oob_size as usize];
        let tail = geo.ppn(superblock_blocks(&geo)[1], 6);
        nand.read(tail, nand.all_idle_ns(), None, &mut oob).unwrap();
        assert!(
            oob.iter().all(|&b| b == 0xFF),
            "a copy never straddles two blocks: the tail stays erased"
        );
        let mut cuts = 0;
        for at_op in uncut.checkpoints.into_iter().flatten() {
            for torn in Torn::ALL {
                let mut nand = long_ring_nand();
                nand.arm_power_cut(PowerCut { at_op, torn, seed: at_op });
                let cut = rounds(nand);
                let mut nand = cut.end.err().unwrap_or_else(|| panic!("no cut at operation {at_op}"));
                nand.power_on();
                let mut f =
                    Ftl::mount(nand, FtlConfig::default(), Bare).unwrap_or_else(|e| panic!("mount after a cut at {at_op} ({torn:?}): {e}"));
                f.check_invariants().unwrap();
                let mut buf = vec![0u8; f.page_size() as usize];
                for (lpn, value) in cut.sealed.into_iter().collect::<BTreeMap<_, _>>() {
                    f.read_page(lpn, &mut buf).unwrap();
                    assert!(buf.iter().all(|&b| b == value), "lpn {lpn} after a cut at {at_op} ({torn:?})");
                }
                cuts += 1;
            }
        }
        assert!(cuts >= 5 * 4 * 3, "{cuts} cuts: every page of every copy, every torn variant");
    }

    #[test]
    fn a_superblock_longer_than_a_block_is_refused_at_format() {
        let mut p = txftl_nand::preset("tiny").unwrap();
        p.geometry.blocks_per_plane = 12_000;
        let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).unwrap();
        match Ftl::format(nand, FtlConfig::default(), Bare) {
            Err(DeviceError::Config(why)) => assert!(why.contains("a superblock block holds 8"), "{why}"),
            other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
        }
    }
}
