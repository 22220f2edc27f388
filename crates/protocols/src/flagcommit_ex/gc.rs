//! GC planning of a victim (`GcHooks::plan_victim`), per entry: a live
//! version's copy carries each entry with the flag its transaction's state
//! calls for (the rule's); the dead versions' entries are left to the
//! rule, which moves the flags their reclaim would take away.

use super::format::{clear_at, VersionMeta};
use super::{ExHooks, ExRule};
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{BlockId, SpareProbe, VictimPage, VictimPlan, FLAG_BYTES};
use txftl_nand::Ppn;

/// The victim's dead versions, as a rule plans them.
pub struct DeadPlan<'a> {
    pub victim: BlockId,
    /// (page, fields, sequence number).
    pub dead: &'a [(Ppn, VersionMeta, u64)],
    /// Transactions with an entry in a live version of the victim.
    pub live_xids: &'a BTreeSet<u32>,
}

/// Flag programs on pages outside the victim, one a page (the bits of
/// several entries of one page cleared by one partial program).
#[derive(Default)]
pub struct FlagPlan {
    programs: BTreeMap<Ppn, [u8; FLAG_BYTES]>,
}

impl FlagPlan {
    /// Clears `bits` of entry `index`'s flag on page `ppn`.
    pub fn add(&mut self, ppn: Ppn, index: usize, bits: u8) {
        let mask = self.programs.entry(ppn).or_insert([0; FLAG_BYTES]);
        mask[index] |= clear_at(index, bits)[index];
    }
}

/// Without the victim's spares read (`ExRule::PLAN_READS_SPARES` false),
/// only the pages holding an entry of a transaction in the table are read,
/// one by one (charged): the others' entries are all committed.
pub(super) fn plan<R: ExRule>(
    h: &mut ExHooks<R>,
    victim: BlockId,
    pages: &[VictimPage],
    probe: &mut dyn SpareProbe,
    plan: &mut VictimPlan,
) {
    let mut dead = Vec::new();
    let mut live_xids = BTreeSet::new();
    let first = h.geo.ppn(victim, 0);
    let in_table: BTreeSet<Ppn> = h.txs.pages_in(first, first + h.geo.pages_per_block).collect();
    for p in pages {
        let oob = match p.oob {
            Some(o) => o,
            None if !R::PLAN_READS_SPARES && in_table.contains(&p.ppn) => match probe.read(p.ppn) {
                Some(o) => o,
                None => continue,
            },
            None => continue,
        };
        let Some(meta) = VersionMeta::of(&oob) else { continue };
        if !p.live {
            dead.push((p.ppn, meta, oob.seq));
            continue;
        }
        live_xids.extend(meta.entries.iter().map(|e| e.xid));
        let mut copy = meta.clone();
        for e in copy.entries.iter_mut() {
            e.flag = h.copy_flag(e);
        }
        if copy != meta {
            plan.copies.insert(p.ppn, copy.bytes());
        }
    }
    let mut flags = FlagPlan::default();
    let ctx = DeadPlan {
        victim,
        dead: &dead,
        live_xids: &live_xids,
    };
    R::plan_dead(h, ctx, probe, &mut flags);
    plan.flag_programs.extend(flags.programs);
}
