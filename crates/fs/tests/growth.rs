//! Files that grow past the 16 extents of their inode (extent overflow pages),
//! in both metadata modes, concurrent X-FTL transactions growing fragmented
//! files, and a large file.

mod common;

use common::*;
use txftl_fs::{FileClass, FormatOptions, Fs, FsMode, EXTENTS_INLINE};

/// Two files grown a page at a time in turn: their pages interleave, so each
/// page of each is an extent of its own.
fn grow_interleaved(fs: &mut Fs, files: &[(u32, u32, Option<u32>)], from: u32, to: u32) {
    let ps = fs.page_size();
    for page in from..to {
        for &(ino, seed, tx) in files {
            fs.write(tx, ino, page as u64 * ps as u64, &page_bytes(ps, seed, page)).unwrap();
        }
    }
}

#[test]
fn a_file_grows_past_16_extents_and_reads_back_after_a_remount() {
    for (protocol, mode) in MODES {
        let mut fs = Fs::format(small_device(protocol), mode).unwrap();
        let ps = fs.page_size();
        let free0 = fs.check().unwrap().free_pages;
        let a = fs.create("a.db", FileClass::Database).unwrap();
        let b = fs.create("b.db", FileClass::Database).unwrap();
        // 130 extents each: 16 in the inode, 114 in two overflow pages of 60 (512-byte pages).
        let pages = 130;
        grow_interleaved(&mut fs, &[(a, 1, None), (b, 2, None)], 0, pages / 2);
        fs.fsync(None, a).unwrap();
        grow_interleaved(&mut fs, &[(a, 1, None), (b, 2, None)], pages / 2, pages);
        fs.fsync(None, b).unwrap();
        for ino in [a, b] {
            assert!(fs.extent_count(None, ino).unwrap() >= pages as usize - 1, "{protocol}: interleaved");
            assert_eq!(fs.overflow_page_count(None, ino).unwrap(), 2, "{protocol}");
        }
        let mut fs = cut_and_mount(fs, protocol, mode);
        let report = fs.check().unwrap();
        assert_eq!(
            (report.files, report.data_pages, report.overflow_pages),
            (2, 2 * pages, 4),
            "{protocol}"
        );
        for (name, seed) in [("a.db", 1), ("b.db", 2)] {
            let ino = fs.lookup(name).unwrap();
            assert!(fs.extent_count(None, ino).unwrap() > EXTENTS_INLINE);
            assert_eq!(read_all(&mut fs, None, ino), expected(ps, seed, pages), "{protocol}: {name}");
        }
        // Shrinking below the inline extents gives the overflow pages back.
        let (a, b) = (fs.lookup("a.db").unwrap(), fs.lookup("b.db").unwrap());
        fs.truncate(None, a, 10 * ps as u64).unwrap();
        assert_eq!(fs.overflow_page_count(None, a).unwrap(), 0);
        fs.truncate(None, b, 100 * ps as u64 + 7).unwrap();
        assert_eq!(
            fs.overflow_page_count(None, b).unwrap(),
            2,
            "{protocol}: 101 pages, about 101 extents"
        );
        let mut fs = cut_and_mount(fs, protocol, mode);
        let report = fs.check().unwrap();
        assert_eq!((report.data_pages, report.overflow_pages), (10 + 101, 2), "{protocol}");
        let a = fs.lookup("a.db").unwrap();
        assert_eq!(read_all(&mut fs, None, a), expected(ps, 1, 10), "{protocol}");
        let b = fs.lookup("b.db").unwrap();
        let mut want = expected(ps, 2, 101);
        want.truncate(100 * ps + 7);
        assert_eq!(read_all(&mut fs, None, b), want, "{protocol}");
        // Deleting both gives every page back.
        fs.delete("a.db").unwrap();
        fs.delete("b.db").unwrap();
        let fs = cut_and_mount(fs, protocol, mode);
        assert_eq!(fs.check().unwrap().free_pages, free0, "{protocol}: no page leaked");
    }
}

/// Two transactions open at once, each growing its own fragmented file past
/// 16 extents (their data and overflow pages interleave on the device): each
/// keeps exactly its own extents, whichever commits or aborts, in memory and
/// after a power cut; an aborted one's pages (data and overflow) are free again.
#[test]
fn concurrent_transactions_grow_two_fragmented_files() {
    for case in ["both commit", "a commits", "b commits"] {
        let mut fs = Fs::format(medium_device("xftl"), FsMode::Transactional).unwrap();
        let ps = fs.page_size();
        let a = fs.create("a.db", FileClass::Database).unwrap();
        let b = fs.create("b.db", FileClass::Database).unwrap();
        // A committed start of 20 pages each (already past 16 extents).
        let t = fs.begin().unwrap();
        let u = fs.begin().unwrap();
        grow_interleaved(&mut fs, &[(a, 1, Some(t)), (b, 2, Some(u))], 0, 20);
        fs.commit(t).unwrap();
        fs.commit(u).unwrap();
        let free_before = fs.check().unwrap().free_pages;
        let ta = fs.begin().unwrap();
        let tb = fs.begin().unwrap();
        grow_interleaved(&mut fs, &[(a, 1, Some(ta)), (b, 2, Some(tb))], 20, 90);
        assert_eq!(fs.overflow_page_count(Some(ta), a).unwrap(), 2, "{case}");
        assert_eq!(
            fs.overflow_page_count(None, a).unwrap(),
            1,
            "{case}: others see the committed chain"
        );
        assert_eq!(read_all(&mut fs, Some(tb), b), expected(ps, 2, 90), "{case}");
        assert_eq!(
            read_all(&mut fs, Some(ta), b),
            expected(ps, 2, 20),
            "{case}: A sees B's committed file"
        );
        let (commit_a, commit_b) = match case {
            "both commit" => (true, true),
            "a commits" => (true, false),
            _ => (false, true),
        };
        for (tid, commit) in [(tb, commit_b), (ta, commit_a)] {
            if commit {
                fs.commit(tid).unwrap();
            } else {
                fs.abort(tid).unwrap();
            }
        }
        let report = fs.check().unwrap();
        let grown = |c: bool| if c { 70 } else { 0 };
        assert_eq!(
            report.data_pages,
            40 + grown(commit_a) + grown(commit_b),
            "{case}: committed pages allocated, aborted ones free"
        );
        let overflow_grown = |c: bool| if c { 1 } else { 0 };
        assert_eq!(
            report.free_pages,
            free_before - grown(commit_a) - grown(commit_b) - overflow_grown(commit_a) - overflow_grown(commit_b),
            "{case}: an aborted transaction's data and overflow pages are free again"
        );
        let mut fs = cut_and_mount(fs, "xftl", FsMode::Transactional);
        let after = fs.check().unwrap();
        assert_eq!(after, report, "{case}: the same state after a power cut");
        for (name, seed, committed) in [("a.db", 1, commit_a), ("b.db", 2, commit_b)] {
            let ino = fs.lookup(name).unwrap();
            let pages = if committed { 90 } else { 20 };
            assert_eq!(read_all(&mut fs, None, ino), expected(ps, seed, pages), "{case}: {name}");
            assert!(fs.extent_count(None, ino).unwrap() > EXTENTS_INLINE, "{case}: {name}");
        }
        // Both files grow on afterwards, interleaved, and stay whole.
        let (a, b) = (fs.lookup("a.db").unwrap(), fs.lookup("b.db").unwrap());
        let pa = (fs.size(None, a).unwrap() / ps as u64) as u32;
        let pb = (fs.size(None, b).unwrap() / ps as u64) as u32;
        let ta = fs.begin().unwrap();
        let tb = fs.begin().unwrap();
        for i in 0..30 {
            fs.write(Some(ta), a, (pa + i) as u64 * ps as u64, &page_bytes(ps, 1, pa + i))
                .unwrap();
            fs.write(Some(tb), b, (pb + i) as u64 * ps as u64, &page_bytes(ps, 2, pb + i))
                .unwrap();
        }
        fs.commit(ta).unwrap();
        fs.commit(tb).unwrap();
        let mut fs = cut_and_mount(fs, "xftl", FsMode::Transactional);
        fs.check().unwrap();
        for (name, seed, pages) in [("a.db", 1, pa + 30), ("b.db", 2, pb + 30)] {
            let ino = fs.lookup(name).unwrap();
            assert_eq!(read_all(&mut fs, None, ino), expected(ps, seed, pages), "{case}: {name} grown on");
        }
    }
}

/// A transaction that grows a fragmented file and truncates it again keeps
/// the pages it dropped until it ends, so another transaction cannot take a
/// page the first one's commit still writes.
#[test]
fn pages_a_transaction_allocates_and_drops_stay_its_own_until_it_ends() {
    let mut fs = Fs::format(medium_device("xftl"), FsMode::Transactional).unwrap();
    let ps = fs.page_size();
    let a = fs.create("a.db", FileClass::Database).unwrap();
    let b = fs.create("b.db", FileClass::Database).unwrap();
    let c = fs.create("c.db", FileClass::Database).unwrap();
    let ta = fs.begin().unwrap();
    let tb = fs.begin().unwrap();
    grow_interleaved(&mut fs, &[(a, 1, Some(ta)), (b, 2, Some(tb))], 0, 80);
    fs.truncate(Some(ta), a, 5 * ps as u64).unwrap();
    // A third transaction grows c: it must not get a's dropped pages.
    let tc = fs.begin().unwrap();
    grow_interleaved(&mut fs, &[(c, 3, Some(tc))], 0, 100);
    fs.commit(tc).unwrap();
    fs.commit(ta).unwrap();
    fs.commit(tb).unwrap();
    let mut fs = cut_and_mount(fs, "xftl", FsMode::Transactional);
    let report = fs.check().unwrap();
    assert_eq!(report.data_pages, 5 + 80 + 100);
    for (name, seed, pages) in [("a.db", 1, 5), ("b.db", 2, 80), ("c.db", 3, 100)] {
        let ino = fs.lookup(name).unwrap();
        assert_eq!(read_all(&mut fs, None, ino), expected(ps, seed, pages), "{name}");
    }
}

/// Non-transactional growth that touches more metadata pages than one
/// journal transaction holds commits early, between page allocations, and a
/// power cut before the fsync leaves a consistent file system.
#[test]
fn long_growth_without_fsync_commits_early_and_stays_consistent() {
    for (protocol, mode) in MODES {
        // 64 inodes: a journal of 33 page images.
        let opts = FormatOptions { inode_count: Some(64) };
        let mut fs = Fs::format_with(device_on(protocol, nand(128, 8, 512)), mode, opts).unwrap();
        let capacity = fs.layout().journal_images();
        let ps = fs.page_size();
        let files: Vec<u32> = (0..12).map(|i| fs.create(&format!("f{i}"), FileClass::Database).unwrap()).collect();
        let spec: Vec<(u32, u32, Option<u32>)> = files.iter().map(|&f| (f, f, None)).collect();
        let before = fs.stats();
        grow_interleaved(&mut fs, &spec, 0, 100);
        let during = fs.stats();
        assert!(
            during.metadata_page_writes > before.metadata_page_writes,
            "{protocol}: 12 files of 100 extents (24 overflow pages, 7 inode pages, a bitmap page) \
             in a journal of {capacity}: early commits"
        );
        let mut fs = cut_and_mount(fs, protocol, mode);
        fs.check().unwrap();
        for &f in &files {
            // Whatever became durable early is whole: a prefix of the pages, never garbage.
            let got = read_all(&mut fs, None, f);
            assert!(got.len() <= 100 * ps, "{protocol}");
            assert_eq!(got, expected(ps, f, 100)[..got.len()], "{protocol}: file {f}");
        }
    }
}

/// A file of tens of thousands of pages (hundreds of extents: another file
/// grows between its runs) on a larger device, written, read back after a
/// remount, truncated and deleted.
#[test]
fn a_large_file_is_written_and_read_back() {
    for (protocol, mode) in MODES {
        // 2 dies x 512 blocks x 64 pages of 512 bytes: 65,536 physical pages.
        let mut fs = Fs::format(device_on(protocol, nand(512, 64, 512)), mode).unwrap();
        let ps = fs.page_size();
        let l = fs.layout();
        assert!(l.inode_count > 4096, "{protocol}: the inode table grows with the device: {l:?}");
        let big = fs.create("big", FileClass::Other).unwrap();
        let small = fs.create("small", FileClass::Other).unwrap();
        let pages = 30_000u32;
        let run = 64;
        let mut small_pages = 0;
        for first in (0..pages).step_by(run as usize) {
            let n = run.min(pages - first);
            let data: Vec<u8> = (first..first + n).flat_map(|p| page_bytes(ps, 7, p)).collect();
            fs.write(None, big, first as u64 * ps as u64, &data).unwrap();
            fs.write(None, small, small_pages * ps as u64, &page_bytes(ps, 8, small_pages as u32))
                .unwrap();
            small_pages += 1;
        }
        fs.fsync(None, big).unwrap();
        let extents = fs.extent_count(None, big).unwrap();
        assert!(extents >= (pages / run) as usize, "{protocol}: {extents} extents");
        let mut fs = cut_and_mount(fs, protocol, mode);
        let report = fs.check().unwrap();
        assert_eq!(report.data_pages, pages + small_pages as u32, "{protocol}");
        let big = fs.lookup("big").unwrap();
        assert_eq!(fs.extent_count(None, big).unwrap(), extents);
        assert_eq!(fs.size(None, big).unwrap(), pages as u64 * ps as u64);
        let mut buf = vec![0u8; run as usize * ps];
        for first in (0..pages).step_by(run as usize) {
            let n = run.min(pages - first) as usize;
            assert_eq!(fs.read(None, big, first as u64 * ps as u64, &mut buf[..n * ps]).unwrap(), n * ps);
            for (i, chunk) in buf[..n * ps].chunks(ps).enumerate() {
                assert_eq!(
                    chunk,
                    &page_bytes(ps, 7, first + i as u32)[..],
                    "{protocol}: page {}",
                    first + i as u32
                );
            }
        }
        fs.truncate(None, big, 1000 * ps as u64).unwrap();
        fs.delete("small").unwrap();
        let fs = cut_and_mount(fs, protocol, mode);
        let report = fs.check().unwrap();
        assert_eq!(report.data_pages, 1000, "{protocol}");
        assert_eq!(report.free_pages + 1000 + report.overflow_pages, l.data_pages, "{protocol}");
    }
}
