//! The reference model of the crash contract (DESIGN.md), for block and
//! transactional operations alike.
//!
//! After a power cut and recovery, each logical page must hold a value the
//! model allows:
//! - the value it had when the last flush or commit covering it returned, or
//! - a value a later write, trim or commit made visible (or may have, if it was
//!   in flight at the cut);
//!
//! never a torn page, never an older value, never a value of a transaction that
//! aborted or had not committed. A commit in flight at the cut is all or
//! nothing: checked separately with [`TxModel::atomic_violation`]. So is a
//! commit that returned before it was durable (Möbius's A-SWRITE returns at
//! its inode, its pages still programming: `Device::commit_durable_ns`): it
//! is visible to reads from its return, and may be absent after a cut
//! before it was durable (the paper's "false positive"), whole or not at
//! all ([`TxModel::committed_not_durable`]). While the
//! device is up, a read returns the latest visible value, and a transactional
//! read returns the transaction's own write if it made one.
//!
//! A remap (`Op::Remap(from, to)`, SW-WAL) moves `from`'s value to `to`
//! (`from` then reads as unwritten) at once for reads, and durably at the
//! next flush, all of a flush's remaps together: a cut before that flush
//! shows none of them, a cut in it all or none
//! ([`TxModel::remap_violation`]). The page a remappable write produces
//! names its target (what it becomes), so the model keeps which versions
//! name another page ([`TxModel::page_named`]).

use std::collections::BTreeMap;

/// A page's value in the model: the version of the write that produced it, or
/// `None` for never written / trimmed.
pub type Value = Option<u64>;

#[derive(Clone, Debug)]
pub struct TxModel {
    /// False: the model records nothing (`untracked`).
    tracked: bool,
    durable: Vec<Value>,
    latest: Vec<Value>,
    /// Values made visible (or maybe, if in flight) since the page's durable value.
    since_durable: BTreeMap<u32, Vec<Value>>,
    /// Open transactions: their latest write of each page.
    open: BTreeMap<u32, BTreeMap<u32, u64>>,
    /// Commits whose outcome a cut leaves open, each all or nothing: the one
    /// in flight at the cut, and those that returned before they were durable.
    uncertain: Vec<Uncertain>,
    /// Versions written by a remappable write -> the page they name.
    named: BTreeMap<u64, u32>,
    /// Remaps since the last flush, neither page written since: (from, to, version).
    remaps: Vec<(u32, u32, u64)>,
    /// A flush was in flight at the cut: `remaps` may show, all or none.
    remaps_in_flight: bool,
}

/// A commit that may or may not survive the cut, whole.
#[derive(Clone, Debug)]
struct Uncertain {
    /// The transaction (an end-flagged one's is settled by its commit).
    tid: u32,
    /// Its writes: page -> version.
    writes: BTreeMap<u32, u64>,
    /// It returned to the host (acknowledged, not durable yet); else in flight.
    acknowledged: bool,
    /// Its pages written again since (by anything): their recovered value
    /// says nothing of whether this commit survived.
    retouched: std::collections::BTreeSet<u32>,
}

impl Uncertain {
    /// Its writes (page, version) no later write touched: the evidence of
    /// whether it survived.
    fn kept(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.writes
            .iter()
            .filter(|(l, _)| !self.retouched.contains(l))
            .map(|(&l, &v)| (l, v))
    }

    /// Found whole: each page no later write touched shows its version
    /// (and one at least does).
    fn whole(&self, value_of: &impl Fn(u32) -> Value) -> bool {
        let mut kept = self.kept().peekable();
        kept.peek().is_some() && kept.all(|(l, v)| value_of(l) == Some(v))
    }

    /// Found lost: no page shows its version, and a page no later write
    /// touched shows another value.
    fn lost(&self, value_of: &impl Fn(u32) -> Value) -> bool {
        self.writes.iter().all(|(&l, &v)| value_of(l) != Some(v)) && self.kept().next().is_some()
    }
}

impl TxModel {
    pub fn new(logical_pages: u32) -> TxModel {
        TxModel {
            tracked: true,
            durable: vec![None; logical_pages as usize],
            latest: vec![None; logical_pages as usize],
            since_durable: BTreeMap::new(),
            open: BTreeMap::new(),
            uncertain: Vec::new(),
            named: BTreeMap::new(),
            remaps: Vec::new(),
            remaps_in_flight: false,
        }
    }

    /// The model of a device that recovered to `values` (one per logical
    /// page): each is durable, no transaction is open. A run that goes on
    /// after a cut and recovery starts from what the recovery returned.
    pub fn recovered(values: &[Value]) -> TxModel {
        TxModel {
            durable: values.to_vec(),
            latest: values.to_vec(),
            ..TxModel::new(0)
        }
    }

    /// Does the model record what it is told (not [`TxModel::untracked`])?
    pub fn tracked(&self) -> bool {
        self.tracked
    }

    /// A model that records nothing, for runs whose reads cannot be checked
    /// (metadata-only data): it costs no memory per logical page (32 bytes
    /// each otherwise), and every query answers "never written".
    pub fn untracked() -> TxModel {
        TxModel {
            tracked: false,
            ..TxModel::new(0)
        }
    }

    /// The model after a cut and recovery to `values` ([`TxModel::recovered`]),
    /// still knowing which versions name another page.
    pub fn recovered_after(&self, values: &[Value]) -> TxModel {
        TxModel {
            named: self.named.clone(),
            ..TxModel::recovered(values)
        }
    }

    /// A write or trim that may have reached the device (acknowledged or in flight).
    pub fn candidate(&mut self, lpn: u32, value: Value) {
        if self.tracked {
            self.retouch(lpn);
            self.since_durable.entry(lpn).or_default().push(value);
            // A remap of the page before the flush is applied first (the
            // device's rule): durable with any checkpoint from now on.
            if let Some(i) = self.remaps.iter().position(|&(f, _, _)| f == lpn) {
                let (_, to, v) = self.remaps.remove(i);
                self.since_durable.entry(to).or_default().push(Some(v));
            }
            // One onto it is dropped, and its source trimmed.
            if let Some(i) = self.remaps.iter().position(|&(_, t, _)| t == lpn) {
                let (from, _, _) = self.remaps.remove(i);
                self.since_durable.entry(from).or_default().push(None);
            }
            self.remaps.retain(|&(f, t, _)| f != lpn && t != lpn);
        }
    }

    /// A remappable write of `version` to `lpn` names page `target`.
    pub fn names(&mut self, version: u64, target: u32) {
        if self.tracked {
            self.named.insert(version, target);
        }
    }

    /// The page a page holding `version` at `lpn` must name: `lpn`, or the
    /// target of the remappable write that produced it.
    pub fn page_named(&self, lpn: u32, version: u64) -> u32 {
        self.named.get(&version).copied().unwrap_or(lpn)
    }

    /// A remap of `from` onto `to` returned: `to` reads `from`'s value and
    /// `from` reads unwritten, durably from the next flush on.
    pub fn remapped(&mut self, from: u32, to: u32) {
        if !self.tracked {
            return;
        }
        let value = self.latest(from);
        // A remap onto `to` before the flush replaces the earlier one.
        self.remaps.retain(|&(_, t, _)| t != to);
        self.latest[to as usize] = value;
        self.latest[from as usize] = None;
        if let Some(v) = value {
            self.remaps.push((from, to, v));
        }
    }

    /// A flush was in flight at the cut: the remaps since the last one may
    /// be durable, all together.
    pub fn flush_in_flight(&mut self) {
        for (from, to, v) in self.remaps.clone() {
            self.since_durable.entry(to).or_default().push(Some(v));
            self.since_durable.entry(from).or_default().push(None);
        }
        self.remaps_in_flight = true;
    }

    /// `Some(message)` if the remaps since the last flush show after a cut
    /// in part (`value_of(lpn)`: the recovered value); with no flush in
    /// flight, the allowed values already say that none shows.
    pub fn remap_violation(&self, value_of: impl Fn(u32) -> Value) -> Option<String> {
        let shown = |&&(from, to, v): &&(u32, u32, u64)| value_of(to) == Some(v) && value_of(from).is_none();
        let n = self.remaps.iter().filter(shown).count();
        (n > 0 && n < self.remaps.len()).then(|| {
            let (from, to, _) = self.remaps.iter().find(|r| !shown(r)).expect("one not shown");
            format!(
                "{n} of the {} remaps the flush in flight applies show, not the one of lpn {from} onto lpn {to}",
                self.remaps.len()
            )
        })
    }

    /// A write or trim that returned.
    pub fn acknowledged(&mut self, lpn: u32, value: Value) {
        if !self.tracked {
            return;
        }
        self.candidate(lpn, value);
        self.latest[lpn as usize] = value;
    }

    /// A flush returned: everything visible before it is durable.
    pub fn flushed(&mut self) {
        for (from, to, _) in std::mem::take(&mut self.remaps) {
            self.since_durable.entry(from).or_default();
            self.since_durable.entry(to).or_default();
        }
        for (lpn, _) in std::mem::take(&mut self.since_durable) {
            self.durable[lpn as usize] = self.latest[lpn as usize];
        }
        // Commits that returned before they were durable are durable now.
        self.uncertain.retain(|u| !u.acknowledged);
        // An end-flagged transaction not committed yet stays all or nothing.
        for u in &self.uncertain {
            for (lpn, v) in u.kept() {
                self.since_durable.entry(lpn).or_default().push(Some(v));
            }
        }
    }

    pub fn begun(&mut self, tid: u32) {
        if self.tracked {
            self.open.insert(tid, BTreeMap::new());
        }
    }

    pub fn tx_written(&mut self, tid: u32, lpn: u32, version: u64) {
        if self.tracked {
            self.open.entry(tid).or_default().insert(lpn, version);
        }
    }

    /// A transaction's end-flagged last write (`Op::WriteEnd`, NoLgn)
    /// returned or was in flight at the cut: its end may be on flash, and
    /// recovery then commits it. Until its commit returns, a cut shows all
    /// of its writes or none.
    pub fn end_written(&mut self, tid: u32) {
        let writes = self.open.get(&tid).cloned().unwrap_or_default();
        self.hold(tid, writes, false);
    }

    /// A commit returned: the transaction's writes are visible and durable.
    pub fn committed(&mut self, tid: u32) {
        // An end-flagged transaction's outcome is settled.
        self.uncertain.retain(|u| u.tid != tid);
        for (lpn, v) in self.open.remove(&tid).unwrap_or_default() {
            self.retouch(lpn);
            self.latest[lpn as usize] = Some(v);
            self.durable[lpn as usize] = Some(v);
            self.since_durable.remove(&lpn);
        }
    }

    /// A commit in flight at the cut: its writes may be visible, all or none.
    pub fn commit_in_flight(&mut self, tid: u32) {
        let writes = self.open.remove(&tid).unwrap_or_default();
        self.hold(tid, writes, false);
    }

    /// A commit returned, but is durable only at an instant after the cut:
    /// its writes are visible to reads now, and after the cut all of them or
    /// none (until a flush returns: then they are durable like any other).
    pub fn committed_not_durable(&mut self, tid: u32) {
        let writes = self.open.remove(&tid).unwrap_or_default();
        self.hold(tid, writes, true);
    }

    /// Transaction `tid`'s `writes` become a commit a cut leaves open, all
    /// or nothing (replacing any earlier one of `tid`): visible to reads
    /// now if `acknowledged`, else only maybe.
    fn hold(&mut self, tid: u32, writes: BTreeMap<u32, u64>, acknowledged: bool) {
        for (&lpn, &v) in &writes {
            match acknowledged {
                true => self.acknowledged(lpn, Some(v)),
                false => self.candidate(lpn, Some(v)),
            }
        }
        if self.tracked {
            self.uncertain.retain(|u| u.tid != tid);
            self.uncertain.push(Uncertain {
                tid,
                writes,
                acknowledged,
                retouched: Default::default(),
            });
        }
    }

    /// `lpn` is written again: the commits a cut leaves open that wrote it
    /// can no longer be told from its value.
    fn retouch(&mut self, lpn: u32) {
        for u in self.uncertain.iter_mut().filter(|u| u.writes.contains_key(&lpn)) {
            u.retouched.insert(lpn);
        }
    }

    /// Commits that returned before they were durable, and of them those
    /// none of whose writes show after recovery (`value_of(lpn)`): the
    /// acknowledged commits the cut took back.
    pub fn acknowledged_not_durable(&self, value_of: impl Fn(u32) -> Value) -> (u64, u64) {
        let acked = self.uncertain.iter().filter(|u| u.acknowledged && !u.writes.is_empty());
        let lost = acked.clone().filter(|u| u.writes.iter().all(|(&l, &v)| value_of(l) != Some(v)));
        (acked.count() as u64, lost.count() as u64)
    }

    /// `Some(message)` if a commit acknowledged before it was durable is
    /// found whole after the cut while an earlier one is found lost: such
    /// commits come back in the order they were acknowledged (Möbius's
    /// recovery keeps a prefix of them; a later commit may depend on an
    /// earlier one the host saw return). Pages written again since a commit
    /// are no evidence either way.
    pub fn order_violation(&self, value_of: impl Fn(u32) -> Value) -> Option<String> {
        let acked: Vec<&Uncertain> = self.uncertain.iter().filter(|u| u.acknowledged).collect();
        let first_lost = acked.iter().position(|u| u.lost(&value_of))?;
        let later = acked[first_lost + 1..].iter().position(|u| u.whole(&value_of))?;
        let pages = |u: &Uncertain| u.writes.keys().copied().collect::<Vec<_>>();
        Some(format!(
            "commits acknowledged before they were durable came back out of order: the {} (pages {:?}) is whole, the earlier {} (pages {:?}) lost",
            ordinal(first_lost + later + 2),
            pages(acked[first_lost + later + 1]),
            ordinal(first_lost + 1),
            pages(acked[first_lost])
        ))
    }

    /// An abort (returned or not): nothing of the transaction is ever visible.
    pub fn aborted(&mut self, tid: u32) {
        self.open.remove(&tid);
    }

    pub fn latest(&self, lpn: u32) -> Value {
        self.latest.get(lpn as usize).copied().flatten()
    }

    /// What a transactional read must return.
    pub fn tx_read(&self, tid: u32, lpn: u32) -> Value {
        self.open.get(&tid).and_then(|w| w.get(&lpn)).copied().or(self.latest(lpn))
    }

    /// Values a page may hold after a cut.
    pub fn allowed(&self, lpn: u32) -> Vec<Value> {
        let mut v = vec![self.durable.get(lpn as usize).copied().flatten()];
        if let Some(more) = self.since_durable.get(&lpn) {
            v.extend(more.iter().copied());
        }
        v
    }

    /// The version the newest uncertain commit writing `lpn` wrote there, if any.
    pub fn in_flight_version(&self, lpn: u32) -> Value {
        self.uncertain.iter().rev().find_map(|u| u.writes.get(&lpn).copied())
    }

    /// For the commits a cut leaves open: `Some(message)` if some but not all
    /// of one's pages show its writes. `value_of(lpn)` is the page's recovered value.
    pub fn atomic_violation(&self, value_of: impl Fn(u32) -> Value) -> Option<String> {
        self.uncertain.iter().find_map(|u| {
            // A page written again since is no evidence either way.
            let kept: Vec<(u32, u64)> = u.kept().collect();
            let shown: Vec<u32> = kept.iter().filter(|&&(lpn, v)| value_of(lpn) == Some(v)).map(|&(l, _)| l).collect();
            (!shown.is_empty() && shown.len() != kept.len()).then(|| {
                format!(
                    "the commit {} is partly visible: pages {shown:?} of {:?}",
                    if u.acknowledged {
                        "acknowledged before it was durable"
                    } else {
                        "in flight"
                    },
                    u.writes.keys().collect::<Vec<_>>()
                )
            })
        })
    }
}

/// "1st", "2nd", ... (of the commits acknowledged before durable since the last flush).
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untracked_model_records_nothing() {
        let mut m = TxModel::untracked();
        m.acknowledged(5, Some(1));
        m.begun(1);
        m.tx_written(1, 7, 2);
        m.committed(1);
        m.flushed();
        assert_eq!((m.latest(5), m.tx_read(1, 7)), (None, None));
        assert_eq!(m.allowed(5), vec![None]);
        let mut t = TxModel::new(10);
        t.acknowledged(5, Some(1));
        assert_eq!(t.latest(5), Some(1));
    }

    /// A commit that returned before it was durable is visible at once, and
    /// after a cut may be absent or present, whole, never in part.
    #[test]
    fn a_commit_acknowledged_before_durable_is_all_or_nothing() {
        let mut m = TxModel::new(10);
        m.begun(1);
        m.tx_written(1, 2, 7);
        m.tx_written(1, 3, 8);
        m.committed_not_durable(1);
        assert_eq!(m.latest(2), Some(7), "visible from its return");
        assert_eq!(m.allowed(2), vec![None, Some(7)]);
        let shown = |all: bool| {
            move |lpn: u32| {
                if all || lpn == 2 {
                    [None, None, Some(7), Some(8)][lpn as usize]
                } else {
                    None
                }
            }
        };
        assert_eq!(m.atomic_violation(shown(true)), None);
        assert_eq!(m.atomic_violation(|_| None), None);
        assert!(m.atomic_violation(shown(false)).is_some_and(|s| s.contains("acknowledged before")));
        assert_eq!(m.acknowledged_not_durable(|_| None), (1, 1));
        assert_eq!(m.acknowledged_not_durable(shown(true)), (1, 0));
        // A flush that returns makes it durable like any other write.
        m.flushed();
        assert_eq!(m.allowed(2), vec![Some(7)]);
        assert_eq!(m.acknowledged_not_durable(|_| None), (0, 0));
    }

    /// Commits acknowledged before they were durable come back in order: a
    /// later one whole with an earlier one lost is a violation; pages
    /// written again since are no evidence.
    #[test]
    fn commits_acknowledged_before_durable_come_back_in_order() {
        let mut m = TxModel::new(10);
        for (tid, lpn, v) in [(1, 1, 11), (2, 2, 12), (3, 3, 13)] {
            m.begun(tid);
            m.tx_written(tid, lpn, v);
            m.committed_not_durable(tid);
        }
        let shows = |which: [bool; 3]| {
            move |lpn: u32| {
                (1..=3)
                    .contains(&lpn)
                    .then_some(10 + lpn as u64)
                    .filter(|_| which[lpn as usize - 1])
            }
        };
        assert_eq!(m.order_violation(shows([true, true, true])), None);
        assert_eq!(m.order_violation(shows([true, true, false])), None, "a prefix");
        assert_eq!(m.order_violation(shows([false, false, false])), None);
        let v = m.order_violation(shows([true, false, true])).expect("the 3rd without the 2nd");
        assert!(v.contains("the 3rd (pages [3]) is whole, the earlier 2nd (pages [2]) lost"), "{v}");
        // Page 2 written again: the 2nd commit's survival cannot be told.
        m.acknowledged(2, Some(20));
        assert_eq!(m.order_violation(shows([true, false, true])), None);
    }

    /// Remaps show at once, are durable at the flush, all of a flush's
    /// together: none after a cut before it; all or none after one in it.
    #[test]
    fn remaps_are_durable_together_at_the_flush() {
        let mut m = TxModel::new(10);
        m.acknowledged(1, Some(5));
        m.acknowledged(8, Some(6));
        m.acknowledged(9, Some(7));
        m.names(6, 1);
        m.names(7, 2);
        m.flushed();
        m.remapped(8, 1);
        m.remapped(9, 2);
        assert_eq!((m.latest(1), m.latest(8)), (Some(6), None));
        assert_eq!((m.page_named(8, 6), m.page_named(1, 5)), (1, 1));
        // A cut before the flush: none shows.
        assert_eq!((m.allowed(1), m.allowed(8)), (vec![Some(5)], vec![Some(6)]));
        let values = |shown: &[u32]| {
            let shown = shown.to_vec();
            move |lpn: u32| match lpn {
                1 | 8 if shown.contains(&1) => [None, Some(6)][(lpn == 1) as usize],
                2 | 9 if shown.contains(&2) => [None, Some(7)][(lpn == 2) as usize],
                1 => Some(5),
                8 => Some(6),
                9 => Some(7),
                _ => None,
            }
        };
        let mut cut = m.clone();
        cut.flush_in_flight();
        assert_eq!(cut.allowed(1), vec![Some(5), Some(6)]);
        assert_eq!(cut.remap_violation(values(&[])), None);
        assert_eq!(cut.remap_violation(values(&[1, 2])), None);
        assert!(cut.remap_violation(values(&[1])).is_some_and(|s| s.contains("1 of the 2")));
        // A write to the moved page applies its remap first.
        let mut w = m.clone();
        w.acknowledged(8, Some(9));
        assert_eq!(w.allowed(1), vec![Some(5), Some(6)]);
        m.flushed();
        assert_eq!((m.allowed(1), m.allowed(8)), (vec![Some(6)], vec![None]));
    }
}
