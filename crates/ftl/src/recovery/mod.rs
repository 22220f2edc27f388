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
//!    A protocol whose checkpoints persist no L2P (an `Unpersisted` mapping)
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
//!
//! Where the steps live: [`read`] holds the timed reads they share; [`load`]
//! steps 1 and 2; [`roll_forward`] the scan of step 3 (and the ring blocks'
//! erase counts); [`protocol`] the protocol's own recovery; [`apply`] the
//! end of step 3; [`block_table`] and [`rings`] step 4; `recover` below runs
//! them in order, and `seal` is step 5.

mod apply;
mod block_probe;
mod block_table;
mod load;
mod probe;
mod protocol;
mod read;
mod rings;
mod roll_forward;

use crate::checkpoint::Checkpoint;
use crate::config::FtlConfig;
use crate::device::RecoveryReport;
use crate::error::{DeviceError, Result};
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use crate::superblock::Superblock;
pub use probe::formatted_protocol;
use protocol::ProtocolRecovery;
pub(crate) use roll_forward::Found;
use roll_forward::Scanned;
use std::collections::BTreeSet;
use txftl_nand::{BlockId, Nand, NandStats};

/// What the mount loaded and every later step reads: the newest superblock,
/// the checkpoint used and the superblock naming it.
struct Mounted<M> {
    /// The newest intact superblock, and its index among the superblock blocks.
    sb: Superblock,
    sb_index: usize,
    /// The checkpoint used (its L2P and directory taken out once installed).
    ck: Checkpoint<M>,
    /// The superblock naming `ck`: `sb`, or an older one after a fallback.
    ck_sb: Superblock,
    /// The newest checkpoint was corrupted and an older one is used.
    fallback: bool,
    /// The blocks the rings `sb` names own (the superblock blocks included).
    ring_owned: BTreeSet<BlockId>,
}

impl<H: Hooks> Ftl<H> {
    /// Mounts a formatted array: recovery from the NAND alone (see the module doc).
    pub fn mount(nand: Nand, cfg: FtlConfig, hooks: H) -> Result<Ftl<H>> {
        Self::mount_or_return(nand, cfg, hooks).map_err(|(e, _)| e)
    }

    /// Like [`Ftl::mount`], but a failed mount hands the NAND back (with whatever
    /// the failed attempt did to it), so a cut during recovery can be followed by
    /// another recovery.
    pub fn mount_or_return(nand: Nand, cfg: FtlConfig, hooks: H) -> std::result::Result<Ftl<H>, (DeviceError, Box<Nand>)> {
        let mut ftl = Ftl::empty(nand, cfg, hooks)?;
        // Recovery closes every open block: the GC stream starts with none.
        ftl.gc_stripe_lost = true;
        match ftl.recover() {
            Ok(()) => Ok(ftl),
            Err(e) => Err((e, Box::new(ftl.into_nand()))),
        }
    }

    /// Rebuilds the DRAM state from the NAND, step by step as the module doc
    /// tells, each step timed on the device clock from where the previous one
    /// ended; records what it did in a [`RecoveryReport`].
    fn recover(&mut self) -> Result<()> {
        let geo = self.geo;
        geo.validate()?;
        if !self.nand.is_powered() {
            return Err(DeviceError::PowerLoss);
        }
        let stats_before = self.nand.stats();
        let start_ns = self.nand.all_idle_ns();
        let mut t = start_ns;
        let mut report = RecoveryReport::default();

        let (sb, sb_index) = self.find_superblock(&mut report, &mut t)?;
        self.check_superblock(&sb)?;
        let (ck, ck_sb, history) = self.load_checkpoint(&sb, &mut report, &mut t)?;
        let fallback = history.is_some();
        let prev_dir = self.read_prev_directory(&ck_sb, fallback, &mut report, &mut t)?;
        report.load_ns = t - start_ns;
        // The rings as the superblock names them own their blocks; a block the
        // checkpoint recorded as metadata that no ring names any more was
        // swapped out of a ring for wear: it is reclaimable once a checkpoint
        // says so (prefree at the end, with no valid pages).
        let mut m = Mounted {
            ring_owned: load::ring_owned(&geo, &sb),
            sb,
            sb_index,
            ck,
            ck_sb,
            fallback,
        };
        self.install_checkpoint(&mut m, prev_dir)?;

        let scan_start = t;
        let (found, scanned) = self.roll_forward(&m, &mut report, &mut t)?;
        report.scan_ns = t - scan_start;
        t = self.ring_erase_counts(&m, t)?;
        let protocol_start = t;
        let ProtocolRecovery {
            updates,
            log_max_seq,
            log_newest,
        } = self.recover_protocol(&m, &found, &mut report, &mut t)?;
        report.protocol_read_ns = t - protocol_start;
        let (max_seq, apply_empty) = self.apply_updates(&m, &found, updates, log_max_seq, &mut report);
        let max_seq = scanned.iter().map(|s| s.newest_seq).fold(max_seq, u64::max);
        if fallback {
            t = self.drop_stale_mappings(&mut report, t)?;
        }

        self.rebuild_block_table(&m, &scanned)?;
        self.seq = max_seq + 1;
        self.resume_rings(&m, log_newest);

        // Seal, if recovery found anything to fold in: pages programmed after the
        // checkpoint (intact or torn), or protocol updates (which a protocol may
        // not write again, so a later record could drop them). A mount that
        // found nothing writes nothing, and a read-only mount never does.
        // A protocol that logs its mappings reads them again at every mount
        // (its log keeps them until the next checkpoint): what it found is
        // no reason to seal.
        let logged = H::CAPABILITIES.logs_mappings;
        let found_anything = fallback
            || !found.is_empty()
            || report.torn_pages_found > 0
            || (!logged && (!apply_empty || scanned.iter().any(|s| s.written)));
        self.seal(found_anything, report, (start_ns, t), stats_before)
    }

    /// Step 5 (the module doc): writes the sealing checkpoint at `t` if
    /// `found_anything` (and the mount may write), then completes the report
    /// (times from `start_ns`, flash operations since `stats_before`) and
    /// keeps it.
    fn seal(&mut self, found_anything: bool, mut report: RecoveryReport, (start_ns, t): (u64, u64), stats_before: NandStats) -> Result<()> {
        self.now_ns = t;
        if found_anything && !self.cfg.read_only {
            self.checkpoint()?;
        }
        report.sealed = found_anything && !self.cfg.read_only;
        report.seal_ns = self.now_ns - t;
        let n = self.nand.stats();
        report.flash_reads = (n.reads + n.oob_reads) - (stats_before.reads + stats_before.oob_reads);
        report.flash_programs = n.programs - stats_before.programs;
        report.flash_erases = n.erases - stats_before.erases;
        report.time_ns = self.now_ns - start_ns;
        self.recovery = Some(report);
        self.reset_device_stats();
        Ok(())
    }
}
