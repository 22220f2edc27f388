//! The protocol's part of the mount: its logs read back (`RecoveryHooks::recover`)
//! and, for a protocol that asks for it, its scan of the blocks in use
//! (`RecoveryHooks::recover_scanned`).

use super::{Found, Mounted};
use crate::checkpoint::{Checkpoint, RecordState};
use crate::device::RecoveryReport;
use crate::error::{DeviceError, Result};
use crate::ftl::Ftl;
use crate::hooks::{Hooks, RecoveredUpdate};
use crate::log::LogReader;
use crate::scan::{ScanOutcome, ScannedPages};
use std::collections::BTreeSet;
use txftl_nand::BlockId;

/// What the protocol's recovery hands back.
pub(super) struct ProtocolRecovery {
    /// Mappings the protocol rebuilt, from its logs and its scan.
    pub updates: Vec<RecoveredUpdate>,
    /// Largest sequence number on any page of the protocol's rings.
    pub log_max_seq: u64,
    /// Per ring: the ring index of its newest block.
    pub log_newest: Vec<Option<usize>>,
}

impl<H: Hooks> Ftl<H> {
    /// The blocks the protocol names (`RecoveryHooks::zone_blocks`: blocks in use at
    /// the checkpoint), ascending, each with its write pointer at the
    /// checkpoint: what its scan (`ScannedPages`) reads, from the first page
    /// to that write pointer. Ring blocks and blocks not in use are left out.
    fn zone_block_extents(&self, ck: &Checkpoint<H::Mapping>, ring_owned: &BTreeSet<BlockId>) -> Result<Vec<(BlockId, u32)>> {
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

    /// The protocol rebuilds its state and may add updates of its own; the
    /// roll-forward pages it vetoes are left unmapped. Reads from `*at_ns`,
    /// which ends when the protocol's last read completed.
    pub(super) fn recover_protocol(
        &mut self,
        m: &Mounted<H::Mapping>,
        found: &[Found],
        report: &mut RecoveryReport,
        at_ns: &mut u64,
    ) -> Result<ProtocolRecovery> {
        let geo = self.geo;
        let (sb, ck) = (&m.sb, &m.ck);
        let ring_lists: Vec<Vec<BlockId>> = sb.protocol_rings.iter().map(|r| r.blocks.clone()).collect();
        let mut logs = LogReader::new(&mut self.nand, geo, &ring_lists, *at_ns)?;
        let mut updates = self.hooks.recover(ck.seq, &sb.root, &ck.protocol, m.fallback, &mut logs)?;
        let (log_max_seq, log_newest) = (logs.max_seq, std::mem::take(&mut logs.newest_index));
        report.protocol_pages_read = logs.pages_read;
        *at_ns = logs.t;
        if H::CAPABILITIES.scans_pages {
            // The protocol visits the pages as they are read (`ScannedPages`):
            // it keeps what it needs of each, not every decoded OOB at once.
            let blocks = self.zone_block_extents(ck, &m.ring_owned)?;
            let mut outcome = ScanOutcome {
                done_ns: *at_ns,
                ..ScanOutcome::default()
            };
            let pages = ScannedPages {
                nand: &mut self.nand,
                geo,
                ckpt_seq: ck.seq,
                rolled_forward: found,
                blocks,
                at_ns: *at_ns,
                report,
                outcome: &mut outcome,
                summaries: crate::summary::SummaryRead::of(self.hooks.summary_pages(), self.cfg.canary),
            };
            let scanned = self.hooks.recover_scanned(ck.seq, pages);
            report.protocol_commits_rejected = self.hooks.commits_rejected();
            self.counters.uncorrectable_reads += outcome.uncorrectable_reads;
            self.failed |= outcome.nand_failed;
            *at_ns = outcome.done_ns;
            updates.extend(scanned?);
        }
        Ok(ProtocolRecovery {
            updates,
            log_max_seq,
            log_newest,
        })
    }
}
