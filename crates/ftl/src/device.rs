//! The device interface every protocol offers the host, and the counters it reports.
//!
//! Every operation returns its simulated latency in nanoseconds on the device clock.

use crate::counters::Row;
use crate::error::{DeviceError, Result};
use crate::extensions::{Call, DynamicTx, Extension, RecordTx, Remap, StaticTx, TxEnd};
use serde::Serialize;

/// Logical page number.
pub type Lpn = u32;
/// Transaction id, handed out by the host (the file system, as in X-FTL).
pub type Tid = u32;

#[derive(Clone, Copy, Debug, Serialize)]
pub struct DeviceInfo {
    pub protocol: &'static str,
    pub logical_pages: u32,
    pub page_size: u32,
}

crate::counters::device_stats! {
    Host {
        host_reads: Row::One("reads"),
        host_writes: Row::One("writes"),
        host_trims: Row::One("trims"),
        host_flushes: Row::One("flushes"),
    }
    Flash {
        /// Flash page reads (data and OOB-only), any cause.
        flash_reads: Row::One("reads"),
        flash_programs: Row::One("programs"),
        flash_partial_programs: Row::One("partial programs"),
        flash_erases: Row::One("erases"),
    }
    Ftl {
        /// GC victims reclaimed.
        gc_runs: Row::One("GC runs (victims)"),
        /// Valid pages GC copied.
        gc_copies: Row::One("GC page copies"),
        /// Of which pages the protocol kept live although the L2P does not map
        /// them (X-FTL's uncommitted pages).
        gc_protocol_copies: Row::Unlisted,
        /// Greedy GC choices the protocol's skipped victims changed (NoLgn's
        /// locked blocks, LightTx's zones): the block greedy would have taken was
        /// kept back, and the victim taken instead has more live pages; and
        /// those extra pages, summed (copied because of the skips: NoLgn Fig. 9's
        /// "additional pages").
        gc_victims_skipped: Row::PairIfNonzero("GC choices changed by the protocol's skips / extra pages copied"),
        gc_skip_extra_copies: Row::Second,
        /// Victims chosen by static wear leveling (counted in gc_runs too).
        wear_level_runs: Row::One("wear-leveling moves"),
        /// Blocks a stream opened on another parallel unit because its own
        /// unit had no free block (GC picks victims across the whole device,
        /// so free blocks can gather on some units): two of the stream's
        /// slots then share one die while another idles. The host stream
        /// hands such a unit's turn to the next unit that can program and
        /// borrows only when every free block of the unit it opens fails
        /// its erase; the GC stream borrows.
        blocks_borrowed: Row::Unlisted,
        /// Mapping checkpoints written, and their pages (table pages and records).
        checkpoints: Row::One("checkpoints"),
        map_writes: Row::One("map page writes"),
        /// Of `map_writes`: L2P table pages (mapping persistence proper, LightTx
        /// Fig. 9's; zero for a protocol whose checkpoints persist no L2P,
        /// `Mapping::PERSISTED`), block-table pages, and record pages (the
        /// directory and the protocol's section). The three add up to `map_writes`.
        map_l2p_writes: Row::One("  of which L2P table pages (mapping persistence)"),
        map_block_writes: Row::One("  of which block-table pages"),
        map_record_writes: Row::One("  of which checkpoint records"),
        /// Table pages a checkpoint wrote again unchanged, to move them out of the
        /// ring blocks the next checkpoints enter (counted in map_writes too).
        map_moves: Row::One("  of which table pages moved ahead of the ring"),
        /// L2P table pages read back into DRAM on a cached table's miss (a
        /// table kept whole in DRAM reads none).
        map_reads: Row::Unlisted,
        /// Table pages a checkpoint left where an earlier one wrote them, named
        /// again by its directory (unchanged since): the writes an incremental
        /// checkpoint saves.
        map_pages_kept: Row::Unlisted,
        superblock_writes: Row::One("superblock writes"),
        /// Flag programs the framework answered "NOP spent" (`Ftl::program_flags`):
        /// the page's partial programs were used up, or unknown after a mount,
        /// and the protocol copied it with its flag instead.
        flag_nop_spent: Row::Unlisted,
        /// Flag programs GC planning issued on pages outside its victims
        /// (`GcHooks::plan_victim`: Flag Commit's flags moved before a page
        /// is reclaimed), copies for a spent NOP included.
        gc_flag_programs: Row::Unlisted,
        /// Spare reads GC planning issued: every programmed page of each
        /// victim, and the pages outside it the protocol probed.
        gc_plan_reads: Row::Unlisted,
        /// Summary pages written (the last page of each data block filled, when
        /// the protocol asks for them: `summary.rs`); counted in `flash_programs`.
        summary_pages_written: Row::Unlisted,
        /// Pages a protocol writes for its own metadata (X-L2P tables, commit records...).
        protocol_meta_writes: Row::One("protocol metadata writes (its log pages)"),
        /// Protocol records written while some transaction was still open, so its
        /// uncommitted state reached the flash (X-FTL: tables with active entries;
        /// LightTx: checkpoints whose zone metadata lists an Unavailable Zone).
        protocol_records_with_open_tx: Row::Unlisted,
        /// Protocol log pages rewritten unchanged to move them out of blocks their
        /// ring was about to erase (counted in protocol_meta_writes too).
        protocol_log_moves: Row::Unlisted,
        /// Worn metadata ring blocks traded for fresh blocks of the data pool, so
        /// the metadata areas share the wear.
        ring_swaps: Row::Unlisted,
        bad_blocks: Row::One("bad blocks"),
    }
    Faults {
        /// Flash faults (with a fault model on the NAND): bit errors ECC
        /// corrected, reads repeated at a shifted read level, reads that stayed
        /// uncorrectable after every retry level, programs that failed their status
        /// (their block is retired), and blocks retired after a failed program.
        corrected_bits: Row::One("bit errors corrected by ECC"),
        read_retries: Row::One("read retries"),
        uncorrectable_reads: Row::One("reads uncorrectable after every retry"),
        program_failures: Row::Pair("failed programs / blocks retired"),
        retired_blocks: Row::Second,
        /// Pages whose data is lost to bit errors: host reads refused with
        /// `DataLost`, and pages GC had to copy without their data.
        lost_page_reads: Row::Pair("pages lost: reads refused / GC copies"),
        lost_page_copies: Row::Second,
    }
    Transactions {
        /// Transactions committed and aborted (transactional protocols), as
        /// the protocol reports them to the framework ([`crate::Ftl::tx_commit`]).
        commits: Row::Pair("commits / aborts"),
        aborts: Row::Second,
    }
    Time {
        /// Simulated time spent, ns (device clock).
        sim_time_ns: Row::Unlisted,
        /// Die time of every flash operation, ns (`NandStats::busy_ns`): the
        /// flash's work, whatever overlapped.
        flash_busy_ns: Row::Unlisted,
        /// Of which GC's: the die time of the operations GC issued (its
        /// planning's spare reads and flag programs, its copies' reads and
        /// programs, a checkpoint it had to take, and every erase of a
        /// reclaimed block, a protocol's erase requests included).
        gc_busy_ns: Row::Unlisted,
    }
}

impl DeviceStats {
    /// Flash programs per host page written.
    pub fn write_amplification(&self) -> f64 {
        if self.host_writes == 0 {
            return 0.0;
        }
        (self.flash_programs + self.flash_partial_programs) as f64 / self.host_writes as f64
    }
    pub fn flash_ops(&self) -> u64 {
        self.flash_reads + self.flash_programs + self.flash_partial_programs + self.flash_erases
    }
}

/// What one mount's recovery read and wrote, and how long it took on the device clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RecoveryReport {
    pub superblock_reads: u64,
    pub checkpoint_pages_read: u64,
    /// Pages of protocol records read (X-FTL: the X-L2P table).
    pub protocol_pages_read: u64,
    /// L2P updates the protocol's recovery applied (X-FTL: committed entries).
    pub protocol_updates_applied: u64,
    /// Device time spent reading the protocol's records (X-FTL: loading the
    /// X-L2P table) and the blocks it asked to scan (LightTx: its Unavailable Zone).
    pub protocol_read_ns: u64,
    /// Blocks in use at the checkpoint, and their pages, read because the
    /// protocol asked (`RecoveryHooks::zone_blocks`; LightTx's Unavailable Zone).
    pub protocol_blocks_scanned: u64,
    pub protocol_pages_scanned: u64,
    /// Of those blocks: the summary pages read (`summary.rs`; each counted
    /// in `protocol_pages_scanned` too), and the blocks whose summary page
    /// was not trusted (torn, missing, not older than the checkpoint,
    /// unreadable), read page by page instead.
    pub summary_pages_read: u64,
    pub summary_fallbacks: u64,
    /// Spare areas the scan read for the pages a trusted summary marks
    /// "read its spare" (a record with no compact form: `summary.rs`; each
    /// counted in `protocol_pages_scanned` too).
    pub summary_spare_reads: u64,
    /// Spare areas the protocol's recovery reread after its scan, to see
    /// flag bytes as they are now (`LiveSpares::live_oob`).
    pub spare_rereads: u64,
    /// Commit records the protocol's recovery found but rejected, their
    /// transaction missing pages (LightTx: a commit page whose TxCnt is above
    /// the pages found). A cut at an instant makes them: a transaction's last
    /// page programmed while an earlier one was torn or lost.
    pub protocol_commits_rejected: u64,
    /// Device time spent on the superblock search and the checkpoint read.
    pub load_ns: u64,
    /// Device time spent on the roll-forward scan.
    pub scan_ns: u64,
    /// Device time spent writing the sealing checkpoint.
    pub seal_ns: u64,
    pub blocks_scanned: u64,
    pub pages_scanned: u64,
    pub pages_rolled_forward: u64,
    pub torn_pages_found: u64,
    /// Pages the scan could not decode after every read retry (fault model):
    /// with an intact spare area they are kept as the newest version of their
    /// page and read back as lost; without one they are counted here only.
    pub unreadable_pages: u64,
    /// Of which pages whose OOB record is intact but whose data fails its checksum.
    pub torn_data_intact_oob: u64,
    /// Corrupted checkpoints recovery skipped to fall back to an older intact
    /// one (0: the newest was intact).
    pub checkpoints_skipped: u64,
    /// After a fallback: protocol records written since the checkpoint used that
    /// the ring has overwritten since (what they alone held is lost).
    pub protocol_records_unreadable: u64,
    /// After a fallback: mappings of the older checkpoint whose page was reused.
    pub mappings_dropped: u64,
    /// After a fallback: the superblock history reaches back to the checkpoint
    /// used, so every protocol record written since it was found (if false, a
    /// protocol's commits covered only by the lost checkpoint may be missing).
    pub fallback_history_complete: bool,
    /// Recovery wrote a sealing checkpoint (it found something to fold in, and
    /// the mount is not read-only).
    pub sealed: bool,
    pub flash_reads: u64,
    pub flash_programs: u64,
    pub flash_erases: u64,
    pub time_ns: u64,
}

/// The block device interface, plus the transactional one (X-FTL style) whose
/// operations a protocol without transactions refuses with a typed error.
pub trait Device {
    fn info(&self) -> DeviceInfo;
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64>;
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64>;
    /// Makes every earlier write and trim durable.
    fn flush(&mut self) -> Result<u64>;
    fn trim(&mut self, lpn: Lpn) -> Result<u64>;
    fn stats(&self) -> DeviceStats;
    fn reset_stats(&mut self);
    /// The device clock, ns.
    fn now_ns(&self) -> u64;
    /// The instant on the device clock by which every commit that has
    /// returned is durable. A device that returns a commit only once it is
    /// durable: now. Möbius with `async-commit=1` returns at the inode (its
    /// A-SWRITE) while the pages still program, so a power cut between the
    /// two loses an acknowledged transaction, whole (the crash harness's
    /// model takes such a commit as maybe absent until this instant).
    fn commit_durable_ns(&self) -> u64 {
        self.now_ns()
    }
    /// Submits the next operation at `at_ns` on the device clock (the
    /// concurrent host, `txftl-host`). Another client's operation may have
    /// moved the clock past `at_ns`: the operation still starts at `at_ns`,
    /// and queues behind whatever keeps its die or channel busy then, so
    /// operations of different clients overlap wherever the units are free.
    /// Its returned latency counts from `at_ns`. The host submits in
    /// non-decreasing `at_ns` order, never before the last `reset_stats`.
    fn set_clock(&mut self, at_ns: u64);

    /// Plain writes without data (a metadata-only device) of the logical
    /// pages `lpns`, in order, each submitted as [`Device::set_clock`] then
    /// [`Device::write`] submit it: the first at `first_at_ns`, each next
    /// one at what `next_at` answers when given the completion of the one
    /// before (the device clock after it, and not before its submission).
    /// `next_at` is called after every write, the last one's included.
    /// The same calls as the host's one by one, without its bookkeeping and
    /// a dynamic call per page: the host sends a fill this way. On an
    /// error, the logical page whose write failed is returned with it.
    fn write_run(
        &mut self,
        lpns: std::ops::Range<Lpn>,
        first_at_ns: u64,
        next_at: &mut dyn FnMut(u64) -> u64,
    ) -> std::result::Result<(), (Lpn, DeviceError)> {
        let mut at = first_at_ns;
        for lpn in lpns {
            self.set_clock(at);
            self.write(lpn, &[]).map_err(|e| (lpn, e))?;
            at = next_at(self.now_ns().max(at));
        }
        Ok(())
    }

    fn begin(&mut self, _tid: Tid) -> Result<u64> {
        Err(self.unsupported("begin"))
    }
    fn write_tx(&mut self, _tid: Tid, _lpn: Lpn, _data: &[u8]) -> Result<u64> {
        Err(self.unsupported("transactional write"))
    }
    fn read_tx(&mut self, _tid: Tid, _lpn: Lpn, _buf: &mut [u8]) -> Result<u64> {
        Err(self.unsupported("transactional read"))
    }
    fn commit(&mut self, _tid: Tid) -> Result<u64> {
        Err(self.unsupported("commit"))
    }
    fn abort(&mut self, _tid: Tid) -> Result<u64> {
        Err(self.unsupported("abort"))
    }
    /// Issues an extension call (`crate::extensions`): the one method
    /// through which the host sends every call beyond the base and
    /// transactional ones, and the one a device wrapper forwards (with
    /// [`Device::offers`]). A call the device does not offer is a typed
    /// refusal (`DeviceError::Unsupported`).
    fn call(&mut self, call: Call<'_>) -> Result<u64> {
        call.dispatch(self)
    }
    /// Möbius's static transactions, if the protocol offers them (see
    /// [`crate::extensions`]; [`crate::extensions::require`] for the typed
    /// refusal). The protocol's side of [`Device::call`]: the host calls
    /// `call`, which a wrapper forwards.
    fn static_tx_calls(&mut self) -> Option<&mut dyn StaticTx> {
        None
    }
    /// Möbius's dynamic transaction, if the protocol offers it.
    fn dynamic_tx_calls(&mut self) -> Option<&mut dyn DynamicTx> {
        None
    }
    /// NoLgn's end-flagged write, if the protocol offers it.
    fn tx_end_calls(&mut self) -> Option<&mut dyn TxEnd> {
        None
    }
    /// SW-WAL's remap, if the protocol offers it.
    fn remap_calls(&mut self) -> Option<&mut dyn Remap> {
        None
    }
    /// Flag Commit's record-level pending records, if the protocol offers them.
    fn record_tx_calls(&mut self) -> Option<&mut dyn RecordTx> {
        None
    }
    /// Whether the device offers the extension `ext` (a wrapper forwards it
    /// with [`Device::call`]).
    fn offers(&mut self, ext: Extension) -> bool {
        match ext {
            Extension::StaticTx => self.static_tx_calls().is_some(),
            Extension::DynamicTx => self.dynamic_tx_calls().is_some(),
            Extension::TxEnd => self.tx_end_calls().is_some(),
            Extension::Remap => self.remap_calls().is_some(),
            Extension::RecordTx => self.record_tx_calls().is_some(),
        }
    }
    fn unsupported(&self, what: &'static str) -> DeviceError {
        DeviceError::Unsupported {
            protocol: self.info().protocol,
            what,
        }
    }
}
