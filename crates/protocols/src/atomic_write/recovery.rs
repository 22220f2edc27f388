//! Atomic-Write's recovery, after the framework loaded the checkpoint:
//!
//! 1. the log ring since the checkpoint, newest first (`read_tables`, or
//!    `read_map_log` for `map-log=1`): the newest version of each L2P table
//!    page written back (or every whole commit of the mapping log), applied
//!    at its own sequence number (an entry it leaves unmapped, a trim, keeps
//!    its newest mapping in an older version), and the newest whole
//!    write-back;
//! 2. the flags of the data pages programmed after that write-back
//!    (`redo_last_group`): a group whose flag-1 page is there committed, but
//!    a cut may have come before its write-back was whole, so its pages are
//!    redone at its flag page. Only the groups after the newest whole
//!    write-back can be missing one, and one group at most (the device runs
//!    one at a time and acknowledges a commit after its write-back).
//!
//! Every table page version is a snapshot of the L2P taken after a flag page
//! was on flash, so it holds committed mappings only, and applying it at its
//! sequence number agrees with the pages rolled forward around it.

use super::format::{MapPage, PageFlag, TableTag};
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::checkpoint::{decode_map_page, UNMAPPED};
use txftl_ftl::{LogSource, Lpn, Ppn, RecoveredUpdate, Result, ScannedPage};

/// What the log ring since the checkpoint gave.
#[derive(Debug, Default)]
pub(super) struct RingRead {
    pub updates: Vec<RecoveredUpdate>,
    /// Sequence number of the last page of the newest whole write-back.
    pub written_back: Option<u64>,
    /// The largest commit number of the mapping log (0: none).
    pub max_commit: u32,
}

/// The table pages written back since checkpoint `ckpt_seq`: the newest
/// version of each (`entries_per_page` entries, table pages below
/// `map_pages_max`), applied at its sequence number; and the newest
/// write-back whose pages are all there (read newest first, a whole one is
/// its positions from last to 0 in a row).
///
/// A logical page the newest version leaves unmapped was trimmed since (or
/// never mapped): a trim is durable at a flush only (through a checkpoint),
/// so its newest mapping in an older version since the checkpoint stands,
/// as it would on `plain`; without it, the checkpoint's older mapping would
/// come back in place of a newer committed one.
pub(super) fn read_tables(ckpt_seq: u64, entries_per_page: u32, map_pages_max: u32, logs: &mut dyn LogSource) -> Result<RingRead> {
    let mut out = RingRead::default();
    // Table page -> its entries still unmapped in every version read so far.
    let mut holes: BTreeMap<u32, Vec<bool>> = BTreeMap::new();
    // The write-back being read: position of the page just read, its page count.
    let mut run: Option<(u16, u16)> = None;
    let mut run_seq = 0;
    let mut entries = vec![UNMAPPED; entries_per_page as usize];
    while let Some(p) = logs.prev_page(0)? {
        if p.seq < ckpt_seq {
            break;
        }
        let Some(tag) = TableTag::decode(&p.tag, map_pages_max) else {
            run = None;
            continue;
        };
        run = match run {
            Some((pos, pages)) if tag.pages == pages && tag.position + 1 == pos => Some((tag.position, pages)),
            _ if tag.position + 1 == tag.pages => {
                run_seq = p.seq;
                Some((tag.position, tag.pages))
            }
            _ => None,
        };
        if run.is_some_and(|(pos, _)| pos == 0) && out.written_back.is_none() {
            out.written_back = Some(run_seq);
        }
        decode_map_page(&p.bytes, &mut entries);
        let hole = holes.entry(tag.table).or_insert_with(|| vec![true; entries_per_page as usize]);
        let first = tag.table * entries_per_page;
        for (i, &ppn) in entries.iter().enumerate() {
            if ppn != UNMAPPED && hole[i] {
                hole[i] = false;
                out.updates.push(RecoveredUpdate {
                    seq: p.seq,
                    lpn: first + i as u32,
                    ppn,
                });
            }
        }
    }
    Ok(out)
}

/// The mapping log since checkpoint `ckpt_seq`: every whole commit's
/// entries, at the sequence number of its last mapping page.
pub(super) fn read_map_log(ckpt_seq: u64, logs: &mut dyn LogSource) -> Result<RingRead> {
    // commit -> (pages expected, positions found, seq of its last page, entries)
    type Found = (u16, BTreeSet<u16>, u64, Vec<(u32, u32)>);
    let mut commits: BTreeMap<u32, Found> = BTreeMap::new();
    let mut out = RingRead::default();
    while let Some(p) = logs.prev_page(0)? {
        if p.seq < ckpt_seq {
            break;
        }
        let Some(m) = MapPage::decode(&p.bytes) else { continue };
        out.max_commit = out.max_commit.max(m.commit);
        let c = commits.entry(m.commit).or_insert((m.pages, BTreeSet::new(), 0, Vec::new()));
        c.1.insert(m.position);
        c.2 = c.2.max(p.seq);
        c.3.extend(m.entries);
    }
    for (pages, found, seq, entries) in commits.into_values() {
        if found.len() == pages as usize {
            out.written_back = out.written_back.max(Some(seq));
            out.updates
                .extend(entries.into_iter().map(|(lpn, ppn)| RecoveredUpdate { seq, lpn, ppn }));
        }
    }
    Ok(out)
}

/// What the flags of the scanned data pages gave.
#[derive(Debug, Default)]
pub(super) struct Redo {
    /// The newest committed group after `floor`, its pages at its flag page.
    pub updates: Vec<RecoveredUpdate>,
    /// A group ended (committed or aborted) after the checkpoint.
    pub ended_after_checkpoint: bool,
}

/// The group whose flag-1 page is the newest after `floor` (every group page
/// with a smaller sequence number belongs to a group whose write-back is
/// whole, or to none that committed): its pages are the group pages after
/// the previous flag-1 page (or `floor`), and the newest copy of each
/// logical page is redone at the flag page's sequence number.
pub(super) fn redo_last_group(pages: &[ScannedPage], floor: u64, ckpt_seq: u64) -> Redo {
    let flag = |p: &ScannedPage| PageFlag::of(&p.oob);
    let ended_after_checkpoint = pages.iter().any(|p| p.oob.seq > ckpt_seq && flag(p).ends_group());
    let Some(commit) = pages
        .iter()
        .filter(|p| p.oob.seq > floor && flag(p).commits())
        .map(|p| p.oob.seq)
        .max()
    else {
        return Redo {
            updates: Vec::new(),
            ended_after_checkpoint,
        };
    };
    let start = pages
        .iter()
        .filter(|p| p.oob.seq > floor && p.oob.seq < commit && flag(p).ends_group())
        .map(|p| p.oob.seq)
        .max()
        .unwrap_or(floor);
    assert!(start < commit, "the redone group starts at {start}, not before its flag page {commit}");
    debug_assert!(floor <= start, "the redone group starts at {start}, before the floor {floor}");
    let mut newest: BTreeMap<Lpn, (u64, Ppn)> = BTreeMap::new();
    for p in pages.iter().filter(|p| p.oob.seq > start && p.oob.seq <= commit && flag(p).group) {
        let e = newest.entry(p.oob.lpn).or_insert((p.oob.seq, p.ppn));
        if p.oob.seq > e.0 {
            *e = (p.oob.seq, p.ppn);
        }
    }
    Redo {
        updates: newest
            .into_iter()
            .map(|(lpn, (_, ppn))| RecoveredUpdate { seq: commit, lpn, ppn })
            .collect(),
        ended_after_checkpoint,
    }
}
