//! Power cuts at every flash operation while two fragmented files grow past a
//! page of their extent overflow chains: the journaled fsync (plain) and the
//! two commits (X-FTL) rewrite the inode pages, the last overflow page of each
//! chain (its next-page link) and a new one, and the bitmap. Every cut, in
//! every torn variant, must leave each file exactly as last made durable or
//! exactly as the operation in flight made it, and a consistent file system.

mod common;

use common::*;
use txftl_fs::{FileClass, Fs, FsError, FsMode};
use txftl_nand::{Nand, PowerCut, Torn};

/// Pages of each file made durable before the cut operations, and after them.
const OLD: u32 = 70;
const NEW: u32 = 90;
const SEED: u64 = 0x5eed;

/// Op indices (since the mount) where the operations under test begin and end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Marks {
    /// Journaled: the fsync; transactional: the commit of `a`.
    first_start: u64,
    first_end: u64,
    /// Transactional: the commit of `b` (it starts at `first_end`).
    second_end: u64,
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
    let mut n = fs.into_device().into_nand();
    n.power_off();
    n
}

/// The operations under test, from a mount of the starting point: both
/// files grow to `NEW` pages (a second overflow page each), then the
/// journaled fsync, or the commits of `a`'s and `b`'s transactions.
fn scenario(fs: &mut Fs, marks: &mut Marks) -> Result<(), FsError> {
    match fs.mode() {
        FsMode::Journaled => {
            grow(fs, [None, None], OLD, NEW)?;
            marks.first_start = ops(fs);
            let a = fs.lookup("a.db").unwrap();
            fs.fsync(None, a)?;
            marks.first_end = ops(fs);
        }
        FsMode::Transactional => {
            let (ta, tb) = (fs.begin()?, fs.begin()?);
            grow(fs, [Some(ta), Some(tb)], OLD, NEW)?;
            marks.first_start = ops(fs);
            fs.commit(ta)?;
            marks.first_end = ops(fs);
            fs.commit(tb)?;
            marks.second_end = ops(fs);
        }
    }
    Ok(())
}

fn mount_fs(nand: Nand, protocol: &str, mode: FsMode) -> Fs {
    Fs::mount(remount_nand(nand, protocol), mode).unwrap()
}

/// Pages of `name` after recovery, checking they are one of the two states, whole.
fn state_of(fs: &mut Fs, name: &str, seed: u32, what: &str) -> u32 {
    let ino = fs.lookup(name).unwrap();
    let got = read_all(fs, None, ino);
    let ps = fs.page_size();
    for pages in [OLD, NEW] {
        if got == expected(ps, seed, pages) {
            return pages;
        }
    }
    panic!(
        "{what}: {name} is neither its {OLD} nor its {NEW} durable pages ({} bytes)",
        got.len()
    );
}

fn crash_every_op(protocol: &str, mode: FsMode) {
    let start = start(protocol, mode);
    // Dry run: the operations of the scenario, and its marks.
    let mut fs = mount_fs(start.snapshot(), protocol, mode);
    let base = ops(&fs);
    fs.device_mut().nand_mut().set_op_log(true);
    let mut marks = Marks::default();
    scenario(&mut fs, &mut marks).unwrap();
    let log = fs.device().nand().op_log().to_vec();
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
        .filter(|(at, _)| (marks.first_start..marks.first_end.max(marks.second_end)).contains(at))
        .count();
    assert!(in_commit >= 10, "{protocol}: {in_commit} cut points inside the fsync or commits");

    let mut outcomes = [[0u32; 2]; 2];
    for &(at, torn) in &points {
        let what = format!("{protocol}: cut at op {at} ({})", torn.name());
        let mut fs = mount_fs(start.snapshot(), protocol, mode);
        assert_eq!(ops(&fs), base, "{what}: the mount is deterministic");
        fs.device_mut().nand_mut().arm_power_cut(PowerCut {
            at_op: at,
            torn,
            seed: SEED,
        });
        let mut m = Marks::default();
        let finished = scenario(&mut fs, &mut m).is_ok();
        assert_eq!(finished, at >= base + log.len() as u64, "{what}");
        let mut fs = mount_fs(fs.into_device().into_nand(), protocol, mode);
        fs.check().unwrap_or_else(|e| panic!("{what}: {e}"));
        let a = state_of(&mut fs, "a.db", 1, &what);
        let b = state_of(&mut fs, "b.db", 2, &what);
        // What each file must be, from where the cut fell.
        let (must_a, must_b) = match mode {
            FsMode::Journaled => {
                assert_eq!(a, b, "{what}: one journal transaction holds both files' metadata");
                let must = if at < marks.first_start {
                    Some(OLD)
                } else if at >= marks.first_end {
                    Some(NEW)
                } else {
                    None
                };
                (must, must)
            }
            FsMode::Transactional => {
                let must_a = if at < marks.first_start {
                    Some(OLD)
                } else if at >= marks.first_end {
                    Some(NEW)
                } else {
                    None
                };
                let must_b = if at < marks.first_end {
                    Some(OLD)
                } else if at >= marks.second_end {
                    Some(NEW)
                } else {
                    None
                };
                (must_a, must_b)
            }
        };
        for (name, got, must) in [("a.db", a, must_a), ("b.db", b, must_b)] {
            if let Some(must) = must {
                assert_eq!(got, must, "{what}: {name} (marks {marks:?})");
            }
        }
        outcomes[0][(a == NEW) as usize] += 1;
        outcomes[1][(b == NEW) as usize] += 1;
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
        "{protocol}: {} cut points ({in_commit} inside the fsync or commits): a old/new {:?}, b old/new {:?}",
        points.len(),
        outcomes[0],
        outcomes[1]
    );
    for (name, o) in ["a.db", "b.db"].iter().zip(outcomes) {
        assert!(o[0] > 0 && o[1] > 0, "{protocol}: {name} was seen both old and new: {o:?}");
    }
}

#[test]
fn a_cut_in_an_fsync_that_rewrites_overflow_pages_leaves_both_files_old_or_new() {
    crash_every_op("plain", FsMode::Journaled);
}

#[test]
fn a_cut_in_commits_that_rewrite_overflow_pages_leaves_each_transaction_whole_or_absent() {
    crash_every_op("xftl", FsMode::Transactional);
}
