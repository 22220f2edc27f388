//! Tunables of the FTL framework.

use serde::{Deserialize, Serialize};

/// Over-provisioning when none is given, percent.
pub const DEFAULT_OVERPROVISION_PCT: u32 = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcPolicy {
    /// Victim with the fewest valid pages.
    Greedy,
    /// Victim maximising (1 - u) * age / 2u (Kawaguchi et al.'s cost-benefit).
    CostBenefit,
}

impl GcPolicy {
    pub fn parse(s: &str) -> Option<GcPolicy> {
        match s {
            "greedy" => Some(GcPolicy::Greedy),
            "cost-benefit" => Some(GcPolicy::CostBenefit),
            _ => None,
        }
    }

    /// The name [`GcPolicy::parse`] takes.
    pub fn name(self) -> &'static str {
        match self {
            GcPolicy::Greedy => "greedy",
            GcPolicy::CostBenefit => "cost-benefit",
        }
    }
}

/// Deliberately broken behaviours, for proving that the crash harness catches bugs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Canary {
    /// Reuse GC victims at once instead of after the next checkpoint: recovery,
    /// which only scans blocks that were free at the checkpoint, then misses data
    /// written into a reused block.
    ReuseBeforeCheckpoint,
    /// GC copies a page ECC could not correct as if it were intact, instead of
    /// marking the copy lost: the host later reads corrupted data as good.
    IgnoreUncorrectable,
    /// A cached mapping table lets a table page that changed since the last
    /// checkpoint leave its DRAM without writing it out: its changes are
    /// lost, and the page's stale flash copy is read back next time.
    DropChangedTablePage,
    /// A checkpoint records the allocation window's ready blocks as free:
    /// recovery, which reads no free block under a window, misses what was
    /// written into them after it (LightTx's pre-allocated Available blocks).
    UnrecordedWindow,
    /// Recovery trusts a block's summary page without checking its CRCs or
    /// that it was written before the checkpoint (`summary.rs`): a summary
    /// torn by a cut is believed, and the pages its lost records named are
    /// missed.
    TrustUncheckedSummary,
}

#[derive(Clone, Debug, Serialize)]
pub struct FtlConfig {
    /// Share of the data pool hidden from the host, percent (over-provisioning).
    /// None: [`DEFAULT_OVERPROVISION_PCT`], raised to the minimum the geometry
    /// needs for GC if that is larger (small arrays such as `tiny` need more).
    /// A value given below that minimum is refused.
    pub overprovision_pct: Option<u32>,
    pub gc_policy: GcPolicy,
    /// GC starts when free + prefree blocks fall to this many (0: derive 5% of the pool, at least 3).
    pub gc_low_blocks: u32,
    /// GC stops when free + prefree blocks reach this many (0: derive low + 2% of the pool, at least +2).
    pub gc_high_blocks: u32,
    /// A mapping checkpoint after this many page programs since the last one
    /// (0: derive 8 blocks' worth per parallel unit, or 8 per table page if
    /// that is longer, so map writes stay a bounded share on large devices).
    /// Bounds the roll-forward scan.
    pub checkpoint_every_pages: u64,
    /// Also checkpoint at every flush (write barrier) that follows programs:
    /// the mapping table written at each barrier, as the OpenSSD firmware
    /// under the X-FTL paper does (its sec. 6.3.4). Off: a flush is made
    /// durable by roll-forward over the OOB, and checkpoints come by
    /// `checkpoint_every_pages`. For measuring what that costs (`reproduce xftl`).
    pub checkpoint_at_flush: bool,
    /// Every checkpoint writes the whole L2P table, each page whether it
    /// changed or not (a page with no mapping stays unwritten, as always),
    /// as the OpenSSD Jasmine board's public greedy firmware writes its whole
    /// page map at a flush. With `checkpoint_at_flush`, the board's flush
    /// policy; off, only the pages that changed. For `reproduce xftl`'s
    /// variant.
    pub checkpoint_whole_map: bool,
    /// Blocks per stripe of the checkpoint ring (`area.rs`): the ring is
    /// entered that many blocks at a time, each on its own die, and a
    /// checkpoint's pages are dealt over them, so their programs (and
    /// recovery's reads) overlap. 0: the most dies, up to 8, for which the
    /// ring stays within 1/32 of the blocks (1 on small arrays such as
    /// `tiny`). More than the array's dies is refused.
    pub checkpoint_stripe: u32,
    /// Static wear leveling: relocate the coldest block when the erase-count spread exceeds this.
    pub wear_spread_max: u32,
    /// The allocation window, blocks (0: none). Each checkpoint sets this many
    /// free blocks ready (it records them so) and the host stream allocates
    /// only from them until the next checkpoint, which the host stream takes
    /// when they are used up; the GC stream takes from them first. Recovery
    /// then reads the ready blocks and the open ones, and no block the
    /// checkpoint records free (LightTx's Available Zone, sec. III-C: the
    /// blocks used for allocation, pre-allocated free ones included).
    pub alloc_window_blocks: u32,
    pub canary: Option<Canary>,
    /// Mount without writing anything: recovery rebuilds the DRAM state from the
    /// NAND but does not seal it with a checkpoint, and every write, trim,
    /// commit and checkpoint is refused with `DeviceError::ReadOnly`. For
    /// commands that only look (`info`, `get`): they must not wear the device.
    pub read_only: bool,
}

impl Default for FtlConfig {
    fn default() -> Self {
        FtlConfig {
            overprovision_pct: None,
            gc_policy: GcPolicy::Greedy,
            gc_low_blocks: 0,
            gc_high_blocks: 0,
            checkpoint_every_pages: 0,
            checkpoint_at_flush: false,
            checkpoint_whole_map: false,
            checkpoint_stripe: 0,
            wear_spread_max: 64,
            alloc_window_blocks: 0,
            canary: None,
            read_only: false,
        }
    }
}
