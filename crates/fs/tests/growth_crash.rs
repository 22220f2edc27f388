//! Power cuts at every flash operation while two fragmented files change
//! their extent overflow chains:
//! - growth: both grow past a page of their chains; the journaled fsync
//!   (plain) and the two commits (X-FTL) rewrite the inode pages, the last
//!   overflow page of each chain (its next-page link) and a new one, and the
//!   bitmap;
//! - shrink: `a` is truncated below its inline extents (its overflow page is
//!   freed, durably: a truncate outside a transaction, or a committed one),
//!   then `b` grows into the freed pages, one at a time (a third file's page
//!   follows b's last), with the new overflow page of its chain among them.
//!
//! Every cut, in every torn variant, must leave each file exactly as last made
//! durable or exactly as the operation in flight made it (the operation of a
//! file done before the cut: as it made it), and a consistent file system
//! (`Fs::check`: every page allocated and owned once, no leak).

mod common;

use common::*;
use txftl_fs::{FileClass, Fs, FsError, FsMode};
use txftl_nand::{Nand, PowerCut, Torn};

/// Pages of each file made durable before the cut operations.
const OLD: u32 = 70;
/// Pages after growth.
const NEW: u32 = 90;
/// Pages of `a` after the shrink.
const SHRUNK: u32 = 10;
const SEED: u64 = 0x5eed;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Grow,
    Shrink,
}

impl Shape {
    /// (old, new) pages of `a` and of `b`.
    fn states(self) -> [(u32, u32); 2] {
        match self {
            Shape::Grow => [(OLD, NEW), (OLD, NEW)],
            Shape::Shrink => [(OLD, SHRUNK), (OLD, NEW)],
        }
    }
}

/// Op indices (since the mount) where the operation making each file's new
/// state durable begins and ends: before the start the file must be old,
/// from the end on new, in between either.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Marks {
    a: (u64, u64),
    b: (u64, u64),
}

fn ops(fs: &Fs) -> u64 {
    fs.device().nand().op_count()
}

/// Two files grown in turn, a page each, from `from` to `to`.
fn grow(fs: &mut Fs, txs: [Option<u32>; 2], from: u32, to: u32) -> Result<(), FsError> {
    let ps = fs.page_size();
    let (a, b) = (fs.lookup("a.db").unwrap(), fs.lookup("b.db").unwrap());
    for page in from..to {
        fs.write(txs[0], a, page as u64 * ps as u64, &page_bytes(ps, 1, page))?;
        fs.write(txs[1], b, page as u64 * ps as u64, &page_bytes(ps, 2, page))?;
    }
    Ok(())
}

/// The durable starting point: both files at `OLD` pages (70 extents each:
/// 16 in the inode, 54 in one overflow page of 60), on a powered-off array.
fn start(protocol: &str, mode: FsMode) -> Nand {
    let mut fs = Fs::format(medium_device(protocol), mode).unwrap();
    fs.create("a.db", FileClass::Database).unwrap();
    fs.create("b.db", FileClass::Database).unwrap();
    match mode {
        FsMode::Journaled => {
            grow(&mut fs, [None, None], 0, OLD).unwrap();
            let a = fs.lookup("a.db").unwrap();
            fs.fsync(None, a).unwrap();
        }
        FsMode::Transactional => {
            let (t, u) = (fs.begin().unwrap(), fs.begin().unwrap());
            grow(&mut fs, [Some(t), Some(u)], 0, OLD).unwrap();
            fs.commit(t).unwrap();
            fs.commit(u).unwrap();
        }
    }
    for name in ["a.db", "b.db"] {
        let ino = fs.lookup(name).unwrap();
        assert_eq!(fs.overflow_page_count(None, ino).unwrap(), 1);
    }
    // A page of a third file right after b's last: b cannot grow in place,
    // so after the shrink its new pages come from a's freed ones.
    let c = fs.create("c.db", FileClass::Database).unwrap();
    fs.write(None, c, 0, &page_bytes(fs.page_size(), 3, 0)).unwrap();
    fs.fsync(None, c).unwrap();
    let mut n = fs.into_device().into_nand();
    n.power_off();
    n
}

/// The operations under test, from a mount of the starting point.
fn scenario(fs: &mut Fs, shape: Shape, marks: &mut Marks) -> Result<(), FsError> {
    let ps = fs.page_size() as u64;
    let (a, b) = (fs.lookup("a.db").unwrap(), fs.lookup("b.db").unwrap());
    match (fs.mode(), shape) {
        // Both grow to NEW pages (a second overflow page each), one fsync.
        (FsMode::Journaled, Shape::Grow) => {
            grow(fs, [None, None], OLD, NEW)?;
            let start = ops(fs);
            fs.fsync(None, a)?;
            marks.a = (start, ops(fs));
            marks.b = marks.a;
        }
        // Both grow in their own transactions; a commits, then b.
        (FsMode::Transactional, Shape::Grow) => {
            let (ta, tb) = (fs.begin()?, fs.begin()?);
            grow(fs, [Some(ta), Some(tb)], OLD, NEW)?;
            let start = ops(fs);
            fs.commit(ta)?;
            marks.a = (start, ops(fs));
            fs.commit(tb)?;
            marks.b = (marks.a.1, ops(fs));
        }
        // a shrinks (durable when the truncate returns), then b grows into
        // a's freed pages and is fsynced.
        (FsMode::Journaled, Shape::Shrink) => {
            let start = ops(fs);
            fs.truncate(None, a, SHRUNK as u64 * ps)?;
            marks.a = (start, ops(fs));
            grow_one(fs, None, b, 2, OLD, NEW)?;
            let start = ops(fs);
            fs.fsync(None, b)?;
            marks.b = (start, ops(fs));
        }
        (FsMode::Transactional, Shape::Shrink) => {
            let ta = fs.begin()?;
            fs.truncate(Some(ta), a, SHRUNK as u64 * ps)?;
            let start = ops(fs);
            fs.commit(ta)?;
            marks.a = (start, ops(fs));
            let tb = fs.begin()?;
            grow_one(fs, Some(tb), b, 2, OLD, NEW)?;
            let start = ops(fs);
            fs.commit(tb)?;
            marks.b = (start, ops(fs));
        }
    }
    Ok(())
}

fn grow_one(fs: &mut Fs, tx: Option<u32>, ino: u32, seed: u32, from: u32, to: u32) -> Result<(), FsError> {
    let ps = fs.page_size();
    for page in from..to {
        fs.write(tx, ino, page as u64 * ps as u64, &page_bytes(ps, seed, page))?;
    }
    Ok(())
}

fn mount_fs(nand: Nand, protocol: &str, mode: FsMode) -> Fs {
    Fs::mount(remount_nand(nand, protocol), mode).unwrap()
}

/// Pages of `name` after recovery, checking they are one of its two states, whole.
fn state_of(fs: &mut Fs, name: &str, seed: u32, (old, new): (u32, u32), what: &str) -> u32 {
    let ino = fs.lookup(name).unwrap();
    let got = read_all(fs, None, ino);
    let ps = fs.page_size();
    for pages in [old, new] {
        if got == expected(ps, seed, pages) {
            return pages;
        }
    }
    panic!(
        "{what}: {name} is neither its {old} nor its {new} durable pages ({} bytes)",
        got.len()
    );
}

fn crash_every_op(protocol: &str, mode: FsMode, shape: Shape) {
    let start = start(protocol, mode);
    // Dry run: the operations of the scenario, and its marks.
    let mut fs = mount_fs(start.snapshot(), protocol, mode);
    let base = ops(&fs);
    fs.device_mut().nand_mut().set_op_log(true);
    let mut marks = Marks::default();
    scenario(&mut fs, shape, &mut marks).unwrap();
    let log = fs.device().nand().op_log().to_vec();
    let b = fs.lookup("b.db").unwrap();
    assert_eq!(
        fs.overflow_page_count(None, b).unwrap(),
        2,
        "{protocol} {shape:?}: b's chain grew a page"
    );
    assert!(
        fs.extent_count(None, b).unwrap() >= (NEW - 2) as usize,
        "{protocol} {shape:?}: b's new pages are extents of their own"
    );
    drop(fs);
    let mut points: Vec<(u64, Torn)> = Vec::new();
    for (i, kind) in log.iter().enumerate() {
        if kind.mutates() {
            points.extend(Torn::ALL.iter().map(|&t| (base + i as u64, t)));
        }
    }
    points.push((base + log.len() as u64, Torn::None)); // no cut: the whole scenario
    let in_commit = points
        .iter()
        .filter(|(at, _)| (marks.a.0..marks.a.1).contains(at) || (marks.b.0..marks.b.1).contains(at))
        .count();
    assert!(
        in_commit >= 10,
        "{protocol} {shape:?}: {in_commit} cut points inside the durable operations"
    );
    let [states_a, states_b] = shape.states();

    let mut outcomes = [[0u32; 2]; 2];
    for &(at, torn) in &points {
        let what = format!("{protocol} {shape:?}: cut at op {at} ({})", torn.name());
        let mut fs = mount_fs(start.snapshot(), protocol, mode);
        assert_eq!(ops(&fs), base, "{what}: the mount is deterministic");
        fs.device_mut().nand_mut().arm_power_cut(PowerCut {
            at_op: at,
            torn,
            seed: SEED,
        });
        let mut m = Marks::default();
        let finished = scenario(&mut fs, shape, &mut m).is_ok();
        assert_eq!(finished, at >= base + log.len() as u64, "{what}");
        let mut fs = mount_fs(fs.into_device().into_nand(), protocol, mode);
        fs.check().unwrap_or_else(|e| panic!("{what}: {e}"));
        let a = state_of(&mut fs, "a.db", 1, states_a, &what);
        let b = state_of(&mut fs, "b.db", 2, states_b, &what);
        if (mode, shape) == (FsMode::Journaled, Shape::Grow) {
            assert_eq!(a, b, "{what}: one journal transaction holds both files' metadata");
        }
        // What each file must be, from where the cut fell.
        for (name, got, (old, new), (start, end)) in [("a.db", a, states_a, marks.a), ("b.db", b, states_b, marks.b)] {
            if at < start {
                assert_eq!(got, old, "{what}: {name} before its operation (marks {marks:?})");
            } else if at >= end {
                assert_eq!(got, new, "{what}: {name} after its operation returned (marks {marks:?})");
            }
        }
        outcomes[0][(a == states_a.1) as usize] += 1;
        outcomes[1][(b == states_b.1) as usize] += 1;
        // The file system works on: both files grow again and survive a remount.
        let ps = fs.page_size();
        for (name, seed) in [("a.db", 1u32), ("b.db", 2)] {
            let ino = fs.lookup(name).unwrap();
            let pages = (fs.size(None, ino).unwrap() / ps as u64) as u32;
            fs.write(None, ino, pages as u64 * ps as u64, &page_bytes(ps, seed, pages)).unwrap();
            fs.fsync(None, ino).unwrap();
        }
        let fs = mount_fs(fs.into_device().into_nand(), protocol, mode);
        fs.check().unwrap_or_else(|e| panic!("{what}, after growing on: {e}"));
    }
    eprintln!(
        "{protocol} {shape:?}: {} cut points ({in_commit} inside the durable operations): a old/new {:?}, b old/new {:?}",
        points.len(),
        outcomes[0],
        outcomes[1]
    );
    for (name, o) in ["a.db", "b.db"].iter().zip(outcomes) {
        assert!(
            o[0] > 0 && o[1] > 0,
            "{protocol} {shape:?}: {name} was seen both old and new: {o:?}"
        );
    }
}

#[test]
fn a_cut_in_an_fsync_that_rewrites_overflow_pages_leaves_both_files_old_or_new() {
    crash_every_op("plain", FsMode::Journaled, Shape::Grow);
}

#[test]
fn a_cut_in_commits_that_rewrite_overflow_pages_leaves_each_transaction_whole_or_absent() {
    crash_every_op("xftl", FsMode::Transactional, Shape::Grow);
}

#[test]
fn a_cut_while_a_file_grows_into_pages_a_truncate_freed_journaled() {
    crash_every_op("plain", FsMode::Journaled, Shape::Shrink);
}

#[test]
fn a_cut_while_a_file_grows_into_pages_a_truncate_freed_transactional() {
    crash_every_op("xftl", FsMode::Transactional, Shape::Shrink);
}
