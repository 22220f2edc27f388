//! Step 3's end (the module doc): the pages rolled forward and the
//! protocol's updates applied to the L2P in sequence order, and, after a
//! fallback, the mappings the fallback made stale dropped.

use super::{Found, Mounted};
use crate::checkpoint::UNMAPPED;
use crate::device::RecoveryReport;
use crate::error::Result;
use crate::ftl::Ftl;
use crate::hooks::{Hooks, RecoveredUpdate};
use crate::mapping::Mapping;
use crate::oob::{Oob, OobState, PageKind};
use txftl_nand::Ppn;

impl<H: Hooks> Ftl<H> {
    /// Applies the intact data pages the roll-forward found (those the
    /// protocol does not veto) and the protocol's updates, in sequence order.
    /// Returns the largest sequence number recovery saw, and whether nothing
    /// was applied.
    pub(super) fn apply_updates(
        &mut self,
        m: &Mounted<H::Mapping>,
        found: &[Found],
        updates: Vec<RecoveredUpdate>,
        log_max_seq: u64,
        report: &mut RecoveryReport,
    ) -> (u64, bool) {
        let geo = self.geo;
        let (sb, ck) = (&m.sb, &m.ck);
        // The newest superblock's checkpoint may be newer than the one used, and
        // new programs must follow every page of the protocol's logs.
        let mut max_seq = ck.seq.max(sb.ckpt_seq).max(log_max_seq);
        let mut apply: Vec<(u64, u32, Ppn)> = Vec::with_capacity(found.len() + updates.len());
        for f in found {
            max_seq = max_seq.max(f.seq);
            if f.oob.kind == PageKind::Data && f.oob.lpn < self.derived.logical_pages && self.hooks.roll_forward(&f.oob) {
                apply.push((f.seq, f.oob.lpn, f.ppn));
                report.pages_rolled_forward += 1;
            }
        }
        for u in updates {
            // UNMAPPED: the protocol takes the page back to unmapped (NoLgn
            // rolling back a transaction that wrote a page no one had).
            if u.lpn < self.derived.logical_pages && (u.ppn < geo.page_count() || u.ppn == UNMAPPED) {
                apply.push((u.seq, u.lpn, u.ppn));
                report.protocol_updates_applied += 1;
            }
        }
        let apply_empty = apply.is_empty();
        apply.sort_by_key(|&(seq, _, _)| seq);
        for (_, lpn, ppn) in apply {
            self.l2p.set(lpn, ppn);
            self.tables.mark_lpn(lpn);
        }
        (max_seq, apply_empty)
    }

    /// After a fallback to an older checkpoint: a mapping whose page no longer
    /// holds an intact data page of its logical page (the block was reclaimed
    /// and reused since) is dropped. The OOB reads are issued together.
    pub(super) fn drop_stale_mappings(&mut self, report: &mut RecoveryReport, at_ns: u64) -> Result<u64> {
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        let mut t = at_ns;
        for lpn in 0..self.l2p.len() as usize {
            let ppn = self.l2p.get(lpn as u32);
            if ppn == UNMAPPED {
                continue;
            }
            let holds = ppn < self.geo.page_count() && {
                t = t.max(self.recovery_read(ppn, at_ns, false, &mut [], &mut oob)?);
                // Through its alias only if its own logical page does not
                // map it (one owner a page).
                matches!(Oob::decode(&oob), OobState::Valid(o)
                    if self.holds(&o, lpn as u32)
                        && (o.lpn == lpn as u32 || o.lpn >= self.l2p.len() || self.l2p.get(o.lpn) != ppn))
            };
            if !holds {
                self.l2p.set(lpn as u32, UNMAPPED);
                self.tables.mark_lpn(lpn as u32);
                report.mappings_dropped += 1;
            }
        }
        Ok(t)
    }
}
