//! Filebench's personalities on the file system: they run, do what their
//! flowop lists say, repeat from their seed, and, with one device
//! transaction per fsync, send each written file as one transaction.

use txftl_fs::{Fs, FsMode, FsyncPolicy};
use txftl_ftl::FtlConfig;
use txftl_host::filebench::{Bench, Personality, Report, Spec};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::ProtocolOptions;

/// The `mobius` preset (4 KiB pages) at 32 blocks a plane, full data.
fn fs_on(protocol: &str, policy: FsyncPolicy) -> Fs {
    let mut p = preset("mobius").unwrap();
    p.geometry.blocks_per_plane = 32;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = txftl_protocols::format(protocol, nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let mut fs = Fs::format(dev, FsMode::Transactional).unwrap();
    fs.set_fsync_policy(policy).unwrap();
    fs
}

fn small(p: Personality) -> Spec {
    Spec {
        nfiles: 200,
        loops: 60,
        seed: 7,
        ..Spec::of(p)
    }
}

/// Runs `spec` on a fresh file system; the report, the fs's commits during
/// the run, and the device's operation count.
fn run(protocol: &str, spec: &Spec) -> (Report, u64, u64) {
    let mut fs = fs_on(protocol, FsyncPolicy::OneTransaction);
    let mut bench = Bench::prepare(&mut fs, spec).unwrap();
    fs.reset_stats();
    let mut seen = 0;
    let r = bench.run(&mut fs, &mut |i| seen = i).unwrap();
    assert_eq!(seen, spec.loops);
    fs.check().unwrap();
    assert_eq!(fs.stats().one_tx_fallbacks, 0);
    (r, fs.stats().tx_commits, fs.device().nand().op_count())
}

#[test]
fn the_fileserver_runs_its_eleven_flowops_a_loop() {
    let spec = small(Personality::Fileserver);
    let (r, commits, _) = run("mobius", &spec);
    // Every loop finds files to create, append, read, delete and stat.
    assert_eq!(r.flowops, 11 * spec.loops, "{r:?}");
    for (op, n) in [
        ("createfile", 1),
        ("writewholefile", 1),
        ("closefile", 3),
        ("openfile", 2),
        ("deletefile", 1),
    ] {
        assert_eq!(r.by_flowop[op], n * spec.loops, "{op}");
    }
    assert_eq!(r.fsyncs, 2 * spec.loops);
    // Per loop: a create, two fsyncs and a delete, each one device transaction.
    assert_eq!(commits, 4 * spec.loops);
    // 160 preallocated, one created and one deleted a loop.
    assert_eq!(r.files, 160);
    assert!(r.bytes_read > 0 && r.bytes_written > 0);
}

#[test]
fn the_webserver_reads_ten_files_and_appends_to_its_log_a_loop() {
    let spec = small(Personality::Webserver);
    let (r, commits, _) = run("mobius", &spec);
    assert_eq!(r.flowops, 31 * spec.loops);
    assert_eq!(r.by_flowop["readwholefile"], 10 * spec.loops);
    assert_eq!(r.by_flowop["appendfilerand"], spec.loops);
    assert_eq!(commits, spec.loops, "one device transaction per log append");
    assert!(r.bytes_written <= spec.loops * spec.meanappendsize);
}

#[test]
fn a_run_repeats_from_its_seed_on_every_transactional_protocol() {
    let spec = small(Personality::Fileserver);
    let a = run("mobius", &spec);
    for protocol in ["mobius", "xftl", "atomic-write", "lighttx"] {
        let b = run(protocol, &spec);
        assert_eq!(
            (a.0.bytes_written, a.0.bytes_read, a.1),
            (b.0.bytes_written, b.0.bytes_read, b.1),
            "{protocol}"
        );
    }
    assert_eq!(a.2, run("mobius", &spec).2, "the same flash operations");
    let other = run("mobius", &Spec { seed: 8, ..spec });
    assert_ne!(a.0.bytes_written, other.0.bytes_written, "another seed draws other files");
}

#[test]
fn bad_parameters_are_refused() {
    let mut fs = fs_on("mobius", FsyncPolicy::Ordered);
    for spec in [
        Spec {
            nfiles: 0,
            ..Spec::fileserver()
        },
        Spec {
            meandirwidth: 1,
            ..Spec::fileserver()
        },
        Spec {
            prealloc_pct: 101,
            ..Spec::fileserver()
        },
        Spec {
            prealloc_pct: 0,
            ..Spec::webserver()
        },
        Spec {
            filesize_gamma: 0.0,
            ..Spec::webserver()
        },
    ] {
        assert!(Bench::prepare(&mut fs, &spec).is_err(), "{spec:?}");
    }
}
