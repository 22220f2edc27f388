//! `FsyncPolicy::OneTransaction`: an fsync sends the file's pages and the
//! metadata naming them in one device transaction, so a power cut at any
//! flash operation of it (every torn variant) leaves the file wholly as the
//! last fsync left it or wholly as this one makes it, even where it
//! overwrites pages in place. The ordered policy does not promise that (a
//! cut among its plain writes leaves old and new pages mixed), and the test
//! checks it sees such a cut there, so it can tell the two apart.

mod common;

use common::*;
use txftl_fs::{FileClass, Fs, FsError, FsMode, FsyncPolicy};
use txftl_ftl::FtlConfig;
use txftl_nand::{Nand, PowerCut, Torn};
use txftl_protocols::ProtocolOptions;

const OLD: u32 = 12;
const NEW: u32 = 20;
const SEED: u64 = 0xf5c;

fn ops(fs: &Fs) -> u64 {
    fs.device().nand().op_count()
}

/// Writes pages `0..pages` of `f` with `page_bytes(seed)`.
fn write_pages(fs: &mut Fs, seed: u32, pages: u32) -> Result<(), FsError> {
    let ino = fs.lookup("f").unwrap();
    let ps = fs.page_size();
    for p in 0..pages {
        fs.write(None, ino, p as u64 * ps as u64, &page_bytes(ps, seed, p))?;
    }
    Ok(())
}

/// `f` at OLD pages of seed 1, durable, on a powered-off array.
fn start(protocol: &str, policy: FsyncPolicy) -> Nand {
    let mut fs = Fs::format(medium_device(protocol), FsMode::Transactional).unwrap();
    fs.set_fsync_policy(policy).unwrap();
    let ino = fs.create("f", FileClass::Other).unwrap();
    write_pages(&mut fs, 1, OLD).unwrap();
    fs.fsync(None, ino).unwrap();
    let mut n = fs.into_device().into_nand();
    n.power_off();
    n
}

fn mount_fs(nand: Nand, protocol: &str, policy: FsyncPolicy) -> Fs {
    let mut fs = Fs::mount(remount_nand(nand, protocol), FsMode::Transactional).unwrap();
    fs.set_fsync_policy(policy).unwrap();
    fs
}

/// Every page of `f` rewritten and the file grown, then one fsync.
fn scenario(fs: &mut Fs) -> Result<(), FsError> {
    write_pages(fs, 2, NEW)?;
    let ino = fs.lookup("f").unwrap();
    fs.fsync(None, ino)
}

/// Cuts at every mutating flash operation of the scenario (every torn
/// variant); returns (cuts, cuts that left `f` neither old nor new).
fn cut_everywhere(protocol: &str, policy: FsyncPolicy) -> (usize, usize) {
    let start = start(protocol, policy);
    let mut fs = mount_fs(start.snapshot(), protocol, policy);
    let base = ops(&fs);
    let commits = fs.stats().tx_commits;
    fs.device_mut().nand_mut().set_op_log(true);
    scenario(&mut fs).unwrap();
    let log = fs.device().nand().op_log().to_vec();
    if policy == FsyncPolicy::OneTransaction {
        assert_eq!(fs.stats().tx_commits - commits, 1, "{protocol}: one device transaction per fsync");
        assert_eq!(fs.stats().one_tx_fallbacks, 0);
    }
    drop(fs);
    let ps = 512;
    let (old, new) = (expected(ps, 1, OLD), expected(ps, 2, NEW));
    let (mut cuts, mut mixed) = (0, 0);
    for (i, kind) in log.iter().enumerate() {
        if !kind.mutates() {
            continue;
        }
        for &torn in Torn::ALL.iter() {
            let at = base + i as u64;
            let what = format!("{protocol} {policy:?}: cut at op {at} ({})", torn.name());
            let mut fs = mount_fs(start.snapshot(), protocol, policy);
            fs.device_mut().nand_mut().arm_power_cut(PowerCut {
                at_op: at,
                torn,
                seed: SEED,
            });
            assert!(scenario(&mut fs).is_err(), "{what}: the cut stops the fsync");
            let mut fs = mount_fs(fs.into_device().into_nand(), protocol, policy);
            fs.check().unwrap_or_else(|e| panic!("{what}: {e}"));
            let ino = fs.lookup("f").unwrap();
            let got = read_all(&mut fs, None, ino);
            cuts += 1;
            if got != old && got != new {
                mixed += 1;
                if policy == FsyncPolicy::OneTransaction {
                    panic!("{what}: f is neither its old {OLD} nor its new {NEW} pages ({} bytes)", got.len());
                }
            }
        }
    }
    eprintln!("{protocol} {policy:?}: {cuts} cuts, {mixed} left old and new pages mixed");
    (cuts, mixed)
}

#[test]
fn a_cut_in_a_one_transaction_fsync_leaves_the_file_old_or_new_on_mobius() {
    let (cuts, _) = cut_everywhere("mobius", FsyncPolicy::OneTransaction);
    assert!(cuts >= 50, "{cuts} cuts");
}

#[test]
fn a_cut_in_a_one_transaction_fsync_leaves_the_file_old_or_new_on_xftl() {
    let (cuts, _) = cut_everywhere("xftl", FsyncPolicy::OneTransaction);
    assert!(cuts >= 50, "{cuts} cuts");
}

/// On `nolgn` the fsync's last page goes with the end flag (`write_end`):
/// its commit programs nothing.
#[test]
fn a_cut_in_a_one_transaction_fsync_leaves_the_file_old_or_new_on_nolgn() {
    let (cuts, _) = cut_everywhere("nolgn", FsyncPolicy::OneTransaction);
    assert!(cuts >= 50, "{cuts} cuts");
    let mut fs = mount_fs(start("nolgn", FsyncPolicy::OneTransaction), "nolgn", FsyncPolicy::OneTransaction);
    scenario(&mut fs).unwrap();
    let p = fs.device().stats().protocol;
    assert_eq!(p.get("nolgn_commit_programs"), 0);
    assert!(p.get("nolgn_end_writes") >= 1, "{p:?}");
}

#[test]
fn the_ordered_fsync_can_leave_old_and_new_pages_mixed() {
    let (cuts, mixed) = cut_everywhere("mobius", FsyncPolicy::Ordered);
    assert!(
        mixed > 0,
        "no cut of {cuts} mixed old and new pages: the test could not tell the policies apart"
    );
}

/// A Möbius inode on 512-byte pages holds 52 mappings: 60 pages and their
/// metadata take a transaction of several inodes (parts, then the inode
/// binding them), one device transaction still.
#[test]
fn an_fsync_larger_than_an_inode_is_one_transaction_on_mobius() {
    let mut fs = Fs::format(medium_device("mobius"), FsMode::Transactional).unwrap();
    fs.set_fsync_policy(FsyncPolicy::OneTransaction).unwrap();
    let ino = fs.create("f", FileClass::Other).unwrap();
    write_pages(&mut fs, 2, 60).unwrap();
    fs.fsync(None, ino).unwrap();
    assert_eq!(fs.stats().one_tx_fallbacks, 0);
    assert!(fs.device().stats().protocol.get("mobius_part_inodes") > 0);
    assert_eq!(fs.dirty_pages(), 0);
    let mut fs = cut_and_mount(fs, "mobius", FsMode::Transactional);
    let ino = fs.lookup("f").unwrap();
    assert_eq!(read_all(&mut fs, None, ino), expected(512, 2, 60));
}

/// Möbius formatted with one item an inode and an ALA of 4 blocks holds at
/// most 8 pages a transaction (the inodes of one active ALA's room): 60
/// pages go the ordered way.
#[test]
fn an_fsync_the_device_transaction_cannot_hold_goes_the_ordered_way() {
    let opts = ProtocolOptions::new().with("items-max", 1).with("ala-blocks", 4);
    let dev = txftl_protocols::format("mobius", nand(128, 8, 512), FtlConfig::default(), &opts).unwrap();
    let mut fs = Fs::format(dev, FsMode::Transactional).unwrap();
    fs.set_fsync_policy(FsyncPolicy::OneTransaction).unwrap();
    let ino = fs.create("f", FileClass::Other).unwrap();
    write_pages(&mut fs, 2, 60).unwrap();
    fs.fsync(None, ino).unwrap();
    assert_eq!(fs.stats().one_tx_fallbacks, 1);
    assert_eq!(fs.dirty_pages(), 0);
    let mut fs = cut_and_mount(fs, "mobius", FsMode::Transactional);
    let ino = fs.lookup("f").unwrap();
    assert_eq!(read_all(&mut fs, None, ino), expected(512, 2, 60));
}

#[test]
fn one_transaction_needs_a_transactional_file_system() {
    let mut fs = Fs::format(small_device("plain"), FsMode::Journaled).unwrap();
    assert!(matches!(
        fs.set_fsync_policy(FsyncPolicy::OneTransaction),
        Err(FsError::NotTransactional)
    ));
}

/// The clean-page cache follows an fsync sent as one device transaction:
/// a page read back after its second fsync is the second version, not the
/// first one the cache kept.
#[test]
fn the_clean_page_cache_follows_fsyncs_sent_as_one_transaction() {
    let mut fs = Fs::format(medium_device("xftl"), FsMode::Transactional).unwrap();
    fs.set_fsync_policy(FsyncPolicy::OneTransaction).unwrap();
    fs.set_read_cache(16).unwrap();
    let ino = fs.create("f", FileClass::Other).unwrap();
    let ps = fs.page_size();
    let mut buf = vec![0u8; ps];
    for seed in [1, 2] {
        fs.write(None, ino, 0, &page_bytes(ps, seed, 0)).unwrap();
        fs.fsync(None, ino).unwrap();
        fs.read(None, ino, 0, &mut buf).unwrap();
        assert_eq!(buf, page_bytes(ps, seed, 0), "version {seed}");
    }
    assert!(fs.stats().cached_reads > 0);
    // And it changes only while no transaction is open.
    let tid = fs.begin().unwrap();
    assert!(matches!(fs.set_read_cache(0), Err(FsError::ReadCacheBusy(1))));
    fs.abort(tid).unwrap();
    fs.set_read_cache(0).unwrap();
}
