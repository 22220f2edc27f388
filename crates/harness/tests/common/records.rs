//! A record-level crash enumerator for the extended Flag Commit protocols
//! (`cfc-ex`, `afc-ex`; `RecordTx`), for `crash_flagcommit_ex.rs`.
//!
//! The host: `HOT` logical pages of `SLOTS` records (u64) each, written
//! through with `write_records` by up to `MAX_OPEN` transactions at once
//! (strict 2PL on records, at most max_c transactions pending on a page),
//! and plain writes to the other pages (the device filled ~90% first) so
//! that GC runs. A page image holds, per slot, its value and the entry
//! (index into the write's `pending`) it is pending for, if any; an abort
//! restores the before-values in the host's page only, so a reader finds
//! an aborted slot's committed value in an older version until the page is
//! written again.
//!
//! The run is walked once; at each host operation the device and host are
//! forked (`AnyDevice::fork`, `Clone`) and, for every mutating flash
//! operation the operation issues and every torn variant, the fork is cut
//! there, remounted and checked: the transaction whose commit was in flight
//! is committed in doubt at a seeded half of the points (else expected
//! aborted), every hot slot reads its last committed value, a commit that
//! returned is never in doubt; then a plain write settles the mount and the
//! pages are read again. Every `RECOVERY_CUT_EVERY`th point also cuts its
//! recovery at every mutating operation (every torn variant) and checks the
//! same after a second mount.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use txftl_ftl::{DeviceError, EntryStatus, Lpn, RecordVersion, Tid};
use txftl_harness::DeviceSpec;
use txftl_nand::{FlashOp, Nand, PowerCut, Torn};
use txftl_protocols::AnyDevice;

/// Hot logical pages (0..HOT), written by records.
pub const HOT: u32 = 6;
/// Records a hot page holds.
pub const SLOTS: usize = 16;
/// Transactions open at once, at most.
pub const MAX_OPEN: usize = 4;
/// The device's `max-c`.
pub const MAX_C: usize = 3;
/// One point in this many also has its recovery cut.
pub const RECOVERY_CUT_EVERY: u64 = 8;
const MAGIC: u32 = 0x5245_4353;
const COLD_MAGIC: u32 = 0x434f_4c44;
const NO_ENTRY: u8 = 0xFF;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    value: u64,
    pending: Option<Tid>,
}

#[derive(Clone, Debug)]
struct OpenTx {
    /// Before-values of the records it wrote.
    before: BTreeMap<(Lpn, usize), u64>,
    writes_left: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Open,
    Committed,
    Aborted,
}

/// A host operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    Begin(Tid),
    Write(Tid, Lpn, usize),
    Commit(Tid),
    Abort(Tid),
    Cold(Lpn),
    Read(Lpn, Option<Tid>),
}

/// The host: its pages, transactions and what is committed.
#[derive(Clone)]
pub struct Host {
    rng: ChaCha8Rng,
    page_size: usize,
    logical: u32,
    pages: Vec<[Slot; SLOTS]>,
    committed: Vec<[u64; SLOTS]>,
    open: BTreeMap<Tid, OpenTx>,
    fate: BTreeMap<Tid, Fate>,
    xids: BTreeMap<Tid, u32>,
    next_tid: Tid,
    next_value: u64,
    cold_stamp: u64,
}

fn initial(lpn: Lpn, slot: usize) -> u64 {
    lpn as u64 * 1000 + slot as u64
}

fn image(lpn: Lpn, slots: &[Slot; SLOTS], order: &[Tid], page_size: usize) -> Vec<u8> {
    let mut d = vec![0u8; page_size];
    d[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    d[4..8].copy_from_slice(&lpn.to_le_bytes());
    for (i, s) in slots.iter().enumerate() {
        let at = 16 + 16 * i;
        d[at..at + 8].copy_from_slice(&s.value.to_le_bytes());
        d[at + 8] = match s.pending {
            Some(t) => order.iter().position(|&o| o == t).expect("a pending tid is listed") as u8,
            None => NO_ENTRY,
        };
    }
    d
}

/// Each slot's value: from the newest version where it is not pending, or
/// pending for a committed entry (or `reader`'s own open one).
fn merge(lpn: Lpn, versions: &[RecordVersion], reader: Option<Tid>) -> Result<[u64; SLOTS], String> {
    let mut out = [None; SLOTS];
    for v in versions {
        let d = &v.data;
        if u32::from_le_bytes(d[0..4].try_into().unwrap()) != MAGIC || u32::from_le_bytes(d[4..8].try_into().unwrap()) != lpn {
            return Err(format!("lpn {lpn}: version {} is not a record page of it", v.version));
        }
        for (s, o) in out.iter_mut().enumerate() {
            if o.is_some() {
                continue;
            }
            let at = 16 + 16 * s;
            let value = u64::from_le_bytes(d[at..at + 8].try_into().unwrap());
            let counts = match d[at + 8] {
                NO_ENTRY => true,
                e => match v.entries.get(e as usize) {
                    None => {
                        return Err(format!(
                            "lpn {lpn}: version {} slot {s} names entry {e} of {:?}",
                            v.version, v.entries
                        ))
                    }
                    Some(EntryStatus::Committed) => true,
                    Some(EntryStatus::Open(t)) => Some(*t) == reader,
                    Some(_) => false,
                },
            };
            if counts {
                *o = Some(value);
            }
        }
    }
    let mut vals = [0; SLOTS];
    for (s, o) in out.iter().enumerate() {
        vals[s] = o.ok_or_else(|| format!("lpn {lpn} slot {s}: no version holds a value a reader may see"))?;
    }
    Ok(vals)
}

fn read_page(dev: &mut dyn AnyDevice, lpn: Lpn, reader: Option<Tid>) -> Result<[u64; SLOTS], String> {
    let mut out = Vec::new();
    dev.record_tx_calls()
        .expect("record calls")
        .read_versions(lpn, &mut out)
        .map_err(|e| format!("read_versions({lpn}): {e}"))?;
    merge(lpn, &out, reader)
}

fn cold_page(lpn: Lpn, stamp: u64, page_size: usize) -> Vec<u8> {
    let mut d = vec![0u8; page_size];
    d[0..4].copy_from_slice(&COLD_MAGIC.to_le_bytes());
    d[4..8].copy_from_slice(&lpn.to_le_bytes());
    d[8..16].copy_from_slice(&stamp.to_le_bytes());
    d
}

/// What a host operation ended in.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    Done,
    Cut,
}

fn cut_or(e: DeviceError, what: String) -> Result<Step, String> {
    match e {
        DeviceError::PowerLoss => Ok(Step::Cut),
        e => Err(format!("{what}: {e}")),
    }
}

impl Host {
    /// A fresh device set up: the hot pages written, the cold ones filled to ~90%.
    pub fn setup(spec: &DeviceSpec, seed: u64) -> (Box<dyn AnyDevice>, Host) {
        let mut dev = spec.fresh().expect("format");
        let info = dev.info();
        let page_size = info.page_size as usize;
        let mut host = Host {
            rng: ChaCha8Rng::seed_from_u64(seed),
            page_size,
            logical: info.logical_pages,
            pages: Vec::new(),
            committed: Vec::new(),
            open: BTreeMap::new(),
            fate: BTreeMap::new(),
            xids: BTreeMap::new(),
            next_tid: 1,
            next_value: 1_000_000,
            cold_stamp: 0,
        };
        for lpn in 0..HOT {
            let slots: [Slot; SLOTS] = std::array::from_fn(|s| Slot {
                value: initial(lpn, s),
                pending: None,
            });
            dev.write(lpn, &image(lpn, &slots, &[], page_size)).expect("hot page");
            host.committed.push(std::array::from_fn(|s| initial(lpn, s)));
            host.pages.push(slots);
        }
        for lpn in HOT..host.logical * 9 / 10 {
            host.cold_stamp += 1;
            dev.write(lpn, &cold_page(lpn, host.cold_stamp, page_size)).expect("fill");
        }
        (dev, host)
    }

    /// Open transactions with a record pending on `lpn`.
    fn pending_on(&self, lpn: Lpn) -> BTreeSet<Tid> {
        self.pages[lpn as usize].iter().filter_map(|s| s.pending).collect()
    }

    /// A record `tid` may write: not pending for another, its page under max_c.
    fn pick_record(&mut self, tid: Tid) -> Option<(Lpn, usize)> {
        for _ in 0..12 {
            let lpn = self.rng.gen_range(0..HOT);
            let slot = self.rng.gen_range(0..SLOTS);
            let s = self.pages[lpn as usize][slot];
            let mut on = self.pending_on(lpn);
            on.insert(tid);
            if s.pending.is_none_or(|t| t == tid) && on.len() <= MAX_C {
                return Some((lpn, slot));
            }
        }
        None
    }

    /// The next host operation.
    pub fn choose(&mut self) -> Act {
        let p = self.rng.gen_range(0..100);
        if self.open.is_empty() || (self.open.len() < MAX_OPEN && p < 12) {
            let t = self.next_tid;
            self.next_tid += 1;
            return Act::Begin(t);
        }
        if p < 30 {
            return Act::Cold(self.rng.gen_range(HOT..self.logical));
        }
        if p < 36 {
            let lpn = self.rng.gen_range(0..HOT);
            let reader = if self.rng.gen_bool(0.5) {
                let open: Vec<Tid> = self.open.keys().copied().collect();
                Some(open[self.rng.gen_range(0..open.len())])
            } else {
                None
            };
            return Act::Read(lpn, reader);
        }
        let open: Vec<Tid> = self.open.keys().copied().collect();
        let tid = open[self.rng.gen_range(0..open.len())];
        if self.open[&tid].writes_left > 0 {
            if let Some((lpn, slot)) = self.pick_record(tid) {
                return Act::Write(tid, lpn, slot);
            }
        }
        if self.rng.gen_range(0..100) < 15 {
            Act::Abort(tid)
        } else {
            Act::Commit(tid)
        }
    }

    /// `tid`'s records: (lpn, slot, its value).
    fn tx_values(&self, tid: Tid) -> Vec<(Lpn, usize, u64)> {
        let mut v = Vec::new();
        for (lpn, page) in self.pages.iter().enumerate() {
            for (s, slot) in page.iter().enumerate() {
                if slot.pending == Some(tid) {
                    v.push((lpn as Lpn, s, slot.value));
                }
            }
        }
        v
    }

    /// Issues `act` on `dev`.
    pub fn apply(&mut self, dev: &mut dyn AnyDevice, act: Act) -> Result<Step, String> {
        match act {
            Act::Begin(t) => {
                if let Err(e) = dev.begin(t) {
                    return cut_or(e, format!("begin({t})"));
                }
                let xid = dev.record_tx_calls().expect("record calls").xid_of(t).map_err(|e| e.to_string())?;
                let writes_left = self.rng.gen_range(1..=5);
                self.open.insert(
                    t,
                    OpenTx {
                        before: BTreeMap::new(),
                        writes_left,
                    },
                );
                self.fate.insert(t, Fate::Open);
                self.xids.insert(t, xid);
            }
            Act::Write(t, lpn, slot) => {
                let value = self.next_value;
                self.next_value += 1;
                let s = &mut self.pages[lpn as usize][slot];
                let tx = self.open.get_mut(&t).expect("open");
                tx.writes_left -= 1;
                tx.before.entry((lpn, slot)).or_insert(s.value);
                *s = Slot { value, pending: Some(t) };
                let order: Vec<Tid> = self.pending_on(lpn).into_iter().collect();
                let data = image(lpn, &self.pages[lpn as usize], &order, self.page_size);
                if let Err(e) = dev.record_tx_calls().expect("record calls").write_records(lpn, &data, &order) {
                    return cut_or(e, format!("write_records({lpn}, {order:?})"));
                }
            }
            Act::Commit(t) => {
                if let Err(e) = dev.commit(t) {
                    return cut_or(e, format!("commit({t})"));
                }
                for (lpn, s, value) in self.tx_values(t) {
                    self.committed[lpn as usize][s] = value;
                    self.pages[lpn as usize][s].pending = None;
                }
                self.open.remove(&t);
                self.fate.insert(t, Fate::Committed);
            }
            Act::Abort(t) => {
                if let Err(e) = dev.abort(t) {
                    return cut_or(e, format!("abort({t})"));
                }
                let tx = self.open.remove(&t).expect("open");
                for ((lpn, s), before) in tx.before {
                    self.pages[lpn as usize][s] = Slot {
                        value: before,
                        pending: None,
                    };
                }
                self.fate.insert(t, Fate::Aborted);
            }
            Act::Cold(lpn) => {
                self.cold_stamp += 1;
                if let Err(e) = dev.write(lpn, &cold_page(lpn, self.cold_stamp, self.page_size)) {
                    return cut_or(e, format!("write({lpn})"));
                }
            }
            Act::Read(lpn, reader) => {
                let got = read_page(dev, lpn, reader)?;
                let want: [u64; SLOTS] = std::array::from_fn(|s| {
                    let slot = self.pages[lpn as usize][s];
                    match slot.pending {
                        Some(t) if Some(t) == reader => slot.value,
                        _ => self.committed[lpn as usize][s],
                    }
                });
                if got != want {
                    return Err(format!("live read of lpn {lpn} as {reader:?}: got {got:?}, want {want:?}"));
                }
            }
        }
        Ok(Step::Done)
    }
}

/// What the enumeration found.
#[derive(Debug, Default)]
pub struct Report {
    pub host_ops: u64,
    pub points: u64,
    pub recovery_points: u64,
    pub violations: Vec<String>,
    pub in_doubt_committed: u64,
    pub in_flight_aborted: u64,
    pub nop_spent_after_mount: u64,
    /// Torn variants cut at a partial program.
    pub partial_torn: BTreeSet<Torn>,
    pub stats: Option<txftl_ftl::DeviceStats>,
    /// Transactions the uncut run committed and aborted.
    pub commits: u64,
    pub aborts: u64,
}

/// How a point's check resolved the commit in flight.
#[derive(Default)]
struct Checked {
    in_doubt_committed: bool,
    in_flight_aborted: bool,
    nop_spent: u64,
}

fn mount(spec: &DeviceSpec, mut nand: Nand) -> Result<Box<dyn AnyDevice>, String> {
    nand.power_off();
    nand.power_on();
    let dev = txftl_protocols::mount(&spec.protocol, nand, spec.ftl.clone(), &spec.opts).map_err(|e| format!("recovery failed: {e}"))?;
    dev.check_invariants()
        .map_err(|e| format!("invariant broken after recovery: {e}"))?;
    Ok(dev)
}

fn check_pages(dev: &mut dyn AnyDevice, expected: &[[u64; SLOTS]], when: &str) -> Result<(), String> {
    for (lpn, want) in expected.iter().enumerate() {
        let got = read_page(dev, lpn as Lpn, None)?;
        if got != *want {
            let diff: Vec<String> = (0..SLOTS)
                .filter(|&s| got[s] != want[s])
                .map(|s| format!("slot {s} reads {} want {}", got[s], want[s]))
                .collect();
            return Err(format!("{when}: lpn {lpn}: {}", diff.join(", ")));
        }
    }
    Ok(())
}

/// Checks the mounted `dev` against `host` as it stood at the cut.
fn check(dev: &mut dyn AnyDevice, host: &Host, act: Act, resolve: bool) -> Result<Checked, String> {
    let mut out = Checked::default();
    let nop_before = dev.stats().flag_nop_spent;
    let in_doubt = dev.record_tx_calls().expect("record calls").in_doubt();
    let by_xid: BTreeMap<u32, Tid> = host.xids.iter().map(|(&t, &x)| (x, t)).collect();
    let in_flight = match act {
        Act::Commit(t) => Some(t),
        _ => None,
    };
    for x in &in_doubt {
        match by_xid.get(x) {
            None => return Err(format!("XID {x} in doubt names no transaction the host began")),
            Some(t) if host.fate[t] == Fate::Committed => {
                return Err(format!("XID {x} (tid {t}) in doubt, but its commit returned"));
            }
            Some(_) => {}
        }
    }
    let mut expected = host.committed.clone();
    if let Some(t) = in_flight {
        let x = host.xids[&t];
        let committed = if in_doubt.contains(&x) {
            if resolve {
                dev.record_tx_calls()
                    .expect("record calls")
                    .commit_in_doubt(x)
                    .map_err(|e| format!("commit_in_doubt({x}): {e}"))?;
                dev.check_invariants()
                    .map_err(|e| format!("invariant broken after commit_in_doubt: {e}"))?;
                out.in_doubt_committed = true;
                true
            } else {
                out.in_flight_aborted = true;
                false
            }
        } else {
            // Not in doubt: recovery found its flags complete.
            true
        };
        if committed {
            for (lpn, s, value) in host.tx_values(t) {
                expected[lpn as usize][s] = value;
            }
        }
    }
    out.nop_spent = dev.stats().flag_nop_spent - nop_before;
    check_pages(dev, &expected, "after recovery")?;
    // The first write settles the mount: the rest in doubt are aborted.
    let lpn = dev.info().logical_pages - 1;
    dev.write(lpn, &cold_page(lpn, u64::MAX, dev.info().page_size as usize))
        .map_err(|e| format!("settling write: {e}"))?;
    dev.check_invariants()
        .map_err(|e| format!("invariant broken after the settling write: {e}"))?;
    let left = dev.record_tx_calls().expect("record calls").in_doubt();
    if !left.is_empty() {
        return Err(format!("in doubt after the settling write: {left:?}"));
    }
    check_pages(dev, &expected, "after the settling write")?;
    Ok(out)
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
}

/// Mounts `nand` (cut at the point) and checks it; a panic is a violation.
fn mount_and_check(spec: &DeviceSpec, nand: Nand, host: &Host, act: Act, resolve: bool) -> Result<Checked, String> {
    catch_unwind(AssertUnwindSafe(|| {
        let mut dev = mount(spec, nand)?;
        check(&mut *dev, host, act, resolve)
    }))
    .unwrap_or_else(|p| Err(format!("panicked: {}", panic_text(p))))
}

/// Cuts the recovery of `nand` at each of its mutating operations, every
/// torn variant, then mounts again and checks.
fn recovery_cuts(spec: &DeviceSpec, nand: &Nand, host: &Host, act: Act, resolve: bool, label: &str, report: &mut Report) {
    let mut base = nand.snapshot();
    base.power_off();
    base.power_on();
    let mut dry = base.snapshot();
    dry.set_op_log(true);
    let ops = match txftl_protocols::mount(&spec.protocol, dry, spec.ftl.clone(), &spec.opts) {
        Ok(d) => d.nand().mutating_ops(),
        Err(_) => return, // the uncut check reports it
    };
    for at in ops {
        for torn in Torn::ALL {
            let mut n = base.snapshot();
            n.arm_power_cut(PowerCut { at_op: at, torn, seed: at });
            let n = match txftl_protocols::mount_or_return(&spec.protocol, n, spec.ftl.clone(), &spec.opts) {
                Ok(d) => d.into_nand(),
                Err((_, n)) => *n,
            };
            report.recovery_points += 1;
            if let Err(e) = mount_and_check(spec, n, host, act, resolve) {
                report
                    .violations
                    .push(format!("{label}, recovery cut at its op {at} ({}): {e}", torn.name()));
            }
        }
    }
}

/// Walks the run of `host_ops` host operations from `seed` on `spec`,
/// cutting every mutating flash operation with every torn variant.
pub fn enumerate(spec: &DeviceSpec, seed: u64, host_ops: u64) -> Report {
    walk(spec, seed, host_ops, false)
}

/// [`enumerate`] up to its first violation (a canary's test): the violation.
pub fn first_violation(spec: &DeviceSpec, seed: u64, host_ops: u64) -> Option<String> {
    walk(spec, seed, host_ops, true).violations.into_iter().next()
}

/// [`enumerate`]; `first`: return at the first violation.
fn walk(spec: &DeviceSpec, seed: u64, host_ops: u64, first: bool) -> Report {
    let (mut dev, mut host) = Host::setup(spec, seed);
    dev.reset_stats();
    dev.nand_mut().set_op_log(true);
    let log_base = dev.nand().op_count();
    let mut report = Report::default();
    let mut point = 0u64;
    for i in 0..host_ops {
        let act = host.choose();
        let (fork, before) = (dev.fork().expect("the device forks"), host.clone());
        let start = dev.nand().op_count();
        match host.apply(&mut *dev, act) {
            Ok(Step::Done) => {}
            other => panic!("seed {seed}: uncut run, host op {i} ({act:?}): {other:?}"),
        }
        dev.check_invariants()
            .unwrap_or_else(|e| panic!("seed {seed}: invariant broken on the live device after host op {i} ({act:?}): {e}"));
        let end = dev.nand().op_count();
        let log = dev.nand().op_log();
        for k in start..end {
            let kind = log[(k - log_base) as usize];
            if !kind.mutates() {
                continue;
            }
            for torn in Torn::ALL {
                if first && !report.violations.is_empty() {
                    return report;
                }
                let mut f = fork.fork().expect("the device forks");
                f.nand_mut().set_op_log(false);
                f.nand_mut().arm_power_cut(PowerCut { at_op: k, torn, seed: k });
                let mut h = before.clone();
                let label = format!(
                    "seed {seed}, host op {i} ({act:?}), cut at flash op {k} ({kind:?}, torn {})",
                    torn.name()
                );
                let stepped = catch_unwind(AssertUnwindSafe(|| h.apply(&mut *f, act)));
                match stepped {
                    Ok(Ok(Step::Cut)) => {}
                    Ok(Ok(Step::Done)) => panic!("{label}: the cut was not reached"),
                    Ok(Err(e)) => {
                        report.violations.push(format!("{label}: {e}"));
                        continue;
                    }
                    Err(p) => {
                        report.violations.push(format!("{label}: panicked: {}", panic_text(p)));
                        continue;
                    }
                }
                if kind == FlashOp::PartialProgram {
                    report.partial_torn.insert(torn);
                }
                let resolve = ChaCha8Rng::seed_from_u64(seed ^ (point << 8) ^ 0x5eed).gen_bool(0.5);
                let nand = f.into_nand();
                report.points += 1;
                match mount_and_check(spec, nand.snapshot(), &h, act, resolve) {
                    Ok(c) => {
                        report.in_doubt_committed += c.in_doubt_committed as u64;
                        report.in_flight_aborted += c.in_flight_aborted as u64;
                        report.nop_spent_after_mount += c.nop_spent;
                    }
                    Err(e) => report
                        .violations
                        .push(format!("{label} (in-flight commit resolved: {resolve}): {e}")),
                }
                if point.is_multiple_of(RECOVERY_CUT_EVERY) {
                    recovery_cuts(spec, &nand, &h, act, resolve, &label, &mut report);
                }
                point += 1;
            }
        }
    }
    report.host_ops = host_ops;
    report.commits = host.fate.values().filter(|&&f| f == Fate::Committed).count() as u64;
    report.aborts = host.fate.values().filter(|&&f| f == Fate::Aborted).count() as u64;
    report.stats = Some(dev.stats());
    // The point after the whole run, nothing torn.
    let nand = dev.into_nand();
    report.points += 1;
    if let Err(e) = mount_and_check(spec, nand, &host, Act::Cold(HOT), false) {
        report.violations.push(format!("seed {seed}, after the whole run: {e}"));
    }
    report
}
