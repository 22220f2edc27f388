//! The chip contract, enforced: each rule of the NAND physics, and power cuts.

use txftl_nand::*;

fn tiny(mode: DataMode, policy: ViolationPolicy) -> Nand {
    Nand::new(preset("tiny").unwrap().config(mode, policy)).unwrap()
}

fn slc(nop: u8) -> Nand {
    let mut p = preset("tiny").unwrap();
    p.geometry.cell = CellType::Slc;
    p.geometry.nop = nop;
    Nand::new(p.config(DataMode::Full, ViolationPolicy::Error)).unwrap()
}

fn page(nand: &Nand, fill: u8) -> (Vec<u8>, Vec<u8>) {
    let g = nand.geometry();
    (vec![fill; g.page_size as usize], vec![fill; g.oob_size as usize])
}

#[test]
fn program_then_read_back() {
    let mut n = tiny(DataMode::Full, ViolationPolicy::Error);
    let (d, o) = page(&n, 0x5A);
    n.program(0, 0, &d, &o).unwrap();
    let (mut rd, mut ro) = page(&n, 0);
    n.read(0, 0, Some(&mut rd), &mut ro).unwrap();
    assert_eq!((rd, ro), (d, o));
    // An erased page reads as 0xFF.
    let (mut rd, mut ro) = page(&n, 0);
    n.read(1, 0, Some(&mut rd), &mut ro).unwrap();
    assert!(rd.iter().chain(ro.iter()).all(|&b| b == 0xFF));
}

#[test]
fn reprogram_without_erase_is_refused() {
    let mut n = tiny(DataMode::Full, ViolationPolicy::Error);
    let (d, o) = page(&n, 0);
    n.program(0, 0, &d, &o).unwrap();
    let err = n.program(0, 0, &d, &o).unwrap_err();
    assert!(
        matches!(err, NandError::Violation(Violation::ProgramNotErased { ppn: 0, .. })),
        "{err}"
    );
    n.erase(0, 0).unwrap();
    n.program(0, 0, &d, &o).unwrap();
}

#[test]
#[should_panic(expected = "NAND rule violated")]
fn violations_panic_by_default() {
    let mut n = tiny(DataMode::Full, ViolationPolicy::Panic);
    let (d, o) = page(&n, 0);
    n.program(0, 0, &d, &o).unwrap();
    let _ = n.program(0, 0, &d, &o);
}

#[test]
fn mlc_programs_in_order_only() {
    let mut n = tiny(DataMode::Full, ViolationPolicy::Error);
    let (d, o) = page(&n, 0);
    let err = n.program(2, 0, &d, &o).unwrap_err();
    assert!(matches!(err, NandError::Violation(Violation::OutOfOrder { ppn: 2, expected: 0 })));
    n.program(0, 0, &d, &o).unwrap();
    n.program(1, 0, &d, &o).unwrap();
    assert!(n.partial_program(1, 0, None, Some(&o)).is_err(), "MLC has no partial programs");
}

#[test]
fn slc_partial_programs_only_clear_bits_up_to_nop() {
    let mut n = slc(2);
    let (_, o) = page(&n, 0xF0);
    let d = vec![0xFFu8; 512];
    n.program(3, 0, &d, &o).unwrap(); // SLC: any order
                                      // 0xF0 -> 0x70 clears one bit: allowed, and counts toward NOP.
    let o2 = vec![0x70u8; 64];
    n.partial_program(3, 0, None, Some(&o2)).unwrap();
    assert_eq!(n.inspect_oob(3), o2);
    // Setting a bit back is a violation.
    let err = n.partial_program(3, 0, None, Some(&[0xF0u8; 64])).unwrap_err();
    assert!(
        matches!(err, NandError::Violation(Violation::BitSet { .. })) || matches!(err, NandError::Violation(Violation::NopExceeded { .. }))
    );
    // NOP 2 reached (program + one partial).
    let err = n.partial_program(3, 0, None, Some(&[0x00u8; 64])).unwrap_err();
    assert!(matches!(err, NandError::Violation(Violation::NopExceeded { nop: 2, .. })), "{err}");
    let mut n = slc(4);
    n.program(0, 0, &d, &[0xFF; 64]).unwrap();
    let err = n.partial_program(
        0,
        0,
        None,
        Some(&{
            let mut x = vec![0xFF; 64];
            x[10] = 0x7F;
            x
        }),
    );
    assert!(err.is_ok());
    let err = n.partial_program(0, 0, None, Some(&[0xFF; 64])).unwrap_err();
    assert!(matches!(err, NandError::Violation(Violation::BitSet { byte: 10, .. })), "{err}");
}

/// The per-page program histogram: each page's first program, then each
/// partial program, counted at the program count it brings the page to;
/// a span's histogram is the difference of two snapshots.
#[test]
fn the_program_histogram_counts_each_page_s_programs() {
    let mut n = slc(4);
    let d = vec![0xFFu8; 512];
    n.program(0, 0, &d, &[0xFF; 64]).unwrap();
    n.program(1, 0, &d, &[0xFF; 64]).unwrap();
    let base = n.stats();
    n.partial_program(0, 0, None, Some(&[0x7F; 64])).unwrap();
    n.partial_program(0, 0, None, Some(&[0x3F; 64])).unwrap();
    n.partial_program(1, 0, None, Some(&[0x7F; 64])).unwrap();
    n.program(2, 0, &d, &[0xFF; 64]).unwrap();
    let s = n.stats();
    assert_eq!(&s.pages_reaching[..4], &[3, 2, 1, 0]);
    assert_eq!(&s.pages_reaching_since(&base)[..4], &[1, 2, 1, 0]);
    assert_eq!(s.pages_reaching.len(), txftl_nand::PROGRAMS_COUNTED);
}

/// A torn partial program clears some of the bits it was clearing and
/// nothing else: it never sets a bit, never touches another byte of the
/// spare area (the record of the page it flags stays whole), whatever the
/// variant; `Garbage` clears a random subset.
#[test]
fn torn_partial_program_clears_a_subset_of_its_bits() {
    // A record-like spare area; the partial program clears bits of bytes 56..60 only.
    let before: Vec<u8> = (0..64u8)
        .map(|i| if (56..60).contains(&i) { 0xFF } else { i.wrapping_mul(37) | 1 })
        .collect();
    let mut target = before.clone();
    target[56..60].copy_from_slice(&[0x00, 0xFE, 0x7F, 0x0F]);
    let mut strict_subsets = 0;
    for torn in [Torn::Garbage, Torn::Partial, Torn::Data, Torn::Oob] {
        for seed in 1..=16u64 {
            for instant in [false, true] {
                let mut n = slc(4);
                n.program(2, 0, &[0xFF; 512], &before).unwrap();
                if instant {
                    n.arm_instant_cut(InstantCut {
                        stop_at_op: 2,
                        in_flight: vec![(1, torn)],
                        seed,
                    });
                } else {
                    n.arm_power_cut(PowerCut { at_op: 1, torn, seed });
                }
                let _ = n.partial_program(2, 0, None, Some(&target));
                n.power_off();
                n.power_on();
                let after = n.inspect_oob(2);
                for (i, ((&b, &t), &a)) in before.iter().zip(&target).zip(&after).enumerate() {
                    assert_eq!(a & !b, 0, "{torn:?} seed {seed}: byte {i} got a bit set");
                    assert_eq!((a ^ b) & t, 0, "{torn:?} seed {seed}: byte {i} changed a bit it was not clearing");
                }
                if torn == Torn::Garbage && after != before && after != target {
                    strict_subsets += 1;
                }
            }
        }
    }
    assert!(strict_subsets > 0, "Garbage never cleared a strict subset");
}

#[test]
fn wear_out_makes_a_bad_block() {
    let mut p = preset("tiny").unwrap();
    p.endurance = 3;
    let mut n = Nand::new(p.config(DataMode::Full, ViolationPolicy::Error)).unwrap();
    for _ in 0..3 {
        n.erase(5, 0).unwrap();
    }
    assert_eq!(n.inspect_erase_count(5), 3);
    assert!(matches!(n.erase(5, 0), Err(NandError::EraseFailed(5))));
    assert!(n.inspect_bad(5));
    let (d, o) = page(&n, 0);
    assert!(matches!(n.program(5 * 8, 0, &d, &o), Err(NandError::BadBlock(5))));
    assert!(matches!(n.erase(5, 0), Err(NandError::BadBlock(5))));
}

#[test]
fn erase_resets_every_page() {
    let mut n = tiny(DataMode::Full, ViolationPolicy::Error);
    let (d, o) = page(&n, 1);
    for i in 0..8 {
        n.program(8 + i, 0, &d, &o).unwrap();
    }
    n.erase(1, 0).unwrap();
    for i in 0..8 {
        assert_eq!(n.inspect_programs(8 + i), 0);
        assert!(n.inspect_oob(8 + i).iter().all(|&b| b == 0xFF));
    }
    n.program(8, 0, &d, &o).unwrap();
}

#[test]
fn power_cut_tears_the_operation_in_flight_and_stops_the_rest() {
    for torn in [Torn::Garbage, Torn::Partial] {
        let mut n = tiny(DataMode::Full, ViolationPolicy::Error);
        let (d, o) = page(&n, 0x00);
        n.arm_power_cut(PowerCut { at_op: 1, torn, seed: 7 });
        n.program(0, 0, &d, &o).unwrap();
        assert!(matches!(n.program(1, 0, &d, &o), Err(NandError::PowerLoss)));
        assert!(matches!(n.program(2, 0, &d, &o), Err(NandError::PowerLoss)));
        let mut ro = vec![0; 64];
        assert!(matches!(n.read(0, 0, None, &mut ro), Err(NandError::PowerLoss)));
        n.power_on();
        // Page 1 is no longer erased and does not hold what was asked.
        assert_eq!(n.inspect_programs(1), 1);
        assert_ne!((n.inspect_data(1), n.inspect_oob(1)), (d.clone(), o.clone()), "{torn:?}");
        assert_eq!(n.inspect_programs(2), 0, "later operations never happened");
        // Same seed, same tear.
        let mut m = tiny(DataMode::Full, ViolationPolicy::Error);
        m.arm_power_cut(PowerCut { at_op: 1, torn, seed: 7 });
        m.program(0, 0, &d, &o).unwrap();
        let _ = m.program(1, 0, &d, &o);
        assert_eq!(m.inspect_data(1), n.inspect_data(1));
    }
}

#[test]
fn torn_erase_leaves_a_partly_erased_block() {
    let mut n = tiny(DataMode::Full, ViolationPolicy::Error);
    let (d, o) = page(&n, 0x11);
    for i in 0..8 {
        n.program(i, 0, &d, &o).unwrap();
    }
    n.arm_power_cut(PowerCut {
        at_op: 8,
        torn: Torn::Partial,
        seed: 3,
    });
    assert!(matches!(n.erase(0, 0), Err(NandError::PowerLoss)));
    let erased = (0..8).filter(|&p| n.inspect_programs(p) == 0).count();
    assert!(erased > 0 && erased < 8, "partly erased: {erased} of 8");
    assert_eq!(n.inspect_erase_count(0), 1);
}

#[test]
fn cut_with_torn_none_changes_nothing() {
    let mut n = tiny(DataMode::Full, ViolationPolicy::Error);
    let (d, o) = page(&n, 0x22);
    n.arm_power_cut(PowerCut {
        at_op: 0,
        torn: Torn::None,
        seed: 0,
    });
    assert!(matches!(n.program(0, 0, &d, &o), Err(NandError::PowerLoss)));
    assert_eq!(n.inspect_programs(0), 0);
}

/// A new array is shipped erased until its first program or erase, even a
/// torn one or one a cut stops before it reaches the cells; reads and
/// snapshots keep it fresh; an array opened from an image is never fresh.
#[test]
fn a_new_array_is_fresh_until_its_first_program_or_erase() {
    let mut n = tiny(DataMode::Full, ViolationPolicy::Error);
    assert!(n.is_factory_fresh());
    let (mut d, mut o) = page(&n, 0);
    n.read(5, 0, Some(&mut d), &mut o).unwrap();
    assert!(n.is_factory_fresh() && n.snapshot().is_factory_fresh());
    n.arm_power_cut(PowerCut {
        at_op: n.op_count(),
        torn: Torn::None,
        seed: 0,
    });
    assert!(n.program(0, 0, &d, &o).is_err());
    assert!(!n.is_factory_fresh(), "a program stopped by a cut may have reached the cells");
    let mut n = tiny(DataMode::MetaOnly, ViolationPolicy::Error);
    n.erase(0, 0).unwrap();
    assert!(!n.is_factory_fresh());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh.img");
    let cfg = preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Error);
    assert!(Nand::create_image(&path, cfg).unwrap().is_factory_fresh());
    assert!(!Nand::open_image(&path, ViolationPolicy::Error).unwrap().is_factory_fresh());
}

#[test]
fn meta_only_mode_stores_oob_and_metadata_pages() {
    let mut n = tiny(DataMode::MetaOnly, ViolationPolicy::Error);
    let (d, o) = page(&n, 0x33);
    n.program(0, 0, &[], &o).unwrap();
    n.program(1, 0, &d, &o).unwrap();
    assert_eq!(n.inspect_oob(0), o);
    assert_eq!(n.inspect_data(1), d);
    assert!(n.inspect_data(0).iter().all(|&b| b == 0));
    n.erase(0, 0).unwrap();
    assert!(n.inspect_data(1).iter().all(|&b| b == 0xFF));
}

/// Metadata-only mode forgets the data of a metadata page the FTL says it
/// will not read again (reads then yield zeros, as for pages programmed
/// without data); the spare area stays. Full-data mode keeps everything.
#[test]
fn metadata_only_mode_forgets_data_on_request() {
    for mode in [DataMode::MetaOnly, DataMode::Full] {
        let mut n = tiny(mode, ViolationPolicy::Error);
        let (d, o) = page(&n, 0x33);
        n.program(0, 0, &d, &o).unwrap();
        n.forget_data(0);
        n.forget_data(1);
        assert_eq!(n.inspect_oob(0), o);
        let (mut rd, mut ro) = page(&n, 0);
        n.read(0, 0, Some(&mut rd), &mut ro).unwrap();
        if mode == DataMode::Full {
            assert_eq!(rd, d);
        } else {
            assert!(rd.iter().all(|&b| b == 0));
            assert_eq!(n.inspect_stored_data_pages(), 0);
        }
    }
}

#[test]
fn parallel_dies_overlap_in_time() {
    let mut n = tiny(DataMode::Full, ViolationPolicy::Error);
    let (d, o) = page(&n, 0);
    let g = *n.geometry();
    let t = *n.timing();
    let a = n.program(0, 0, &d, &o).unwrap();
    // Block 16 is on the other die: its program overlaps the first.
    let b = n.program(g.ppn(16, 0), 0, &d, &o).unwrap();
    assert!(b.done_ns < a.done_ns + t.program_ns, "{a:?} {b:?}");
    // Same die: serialised.
    let c = n.program(1, 0, &d, &o).unwrap();
    assert!(c.done_ns >= a.done_ns + t.program_ns);
}

#[test]
fn image_round_trip_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    let p = preset("tiny").unwrap();
    let cfg = p.config(DataMode::Full, ViolationPolicy::Error);
    {
        let mut n = Nand::create_image(&path, cfg).unwrap();
        let (d, o) = page(&n, 0x44);
        n.program(0, 0, &d, &o).unwrap();
        n.erase(3, 0).unwrap();
        assert!(Nand::create_image(&path, cfg).is_err(), "never overwrites an image");
    }
    let n = Nand::open_image(&path, ViolationPolicy::Error).unwrap();
    assert_eq!(n.inspect_data(0), vec![0x44; 512]);
    assert_eq!(n.inspect_programs(0), 1);
    assert_eq!(n.inspect_erase_count(3), 1);
    assert!(n.inspect_data(1).iter().all(|&b| b == 0xFF));
    drop(n);
    // Foreign file.
    let foreign = dir.path().join("foreign.img");
    std::fs::write(&foreign, vec![7u8; 4096]).unwrap();
    assert!(matches!(
        Nand::open_image(&foreign, ViolationPolicy::Error),
        Err(ImageError::BadMagic)
    ));
    // Truncated image.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let len = f.metadata().unwrap().len();
    f.set_len(len - 1).unwrap();
    assert!(matches!(
        Nand::open_image(&path, ViolationPolicy::Error),
        Err(ImageError::Length { .. })
    ));
    // Missing file.
    assert!(matches!(
        Nand::open_image(&dir.path().join("none"), ViolationPolicy::Error),
        Err(ImageError::Io(_))
    ));
}

/// A toy OOB record for the packed store: lpn, seq, erase count, flag, then 0xFF.
/// The toy codec's protocol bytes: 4, at 17..21.
const TOY_PROTOCOL: usize = 4;
fn toy_pack(b: &[u8], protocol: &mut [u8]) -> Option<PackedSpare> {
    let w = protocol.len();
    if b[16] > 1 || b[17 + w..].iter().any(|&x| x != 0xFF) {
        return None;
    }
    protocol.copy_from_slice(&b[17..17 + w]);
    Some(PackedSpare {
        lpn: u32::from_le_bytes(b[0..4].try_into().unwrap()),
        seq: u64::from_le_bytes(b[4..12].try_into().unwrap()),
        erase_count: u32::from_le_bytes(b[12..16].try_into().unwrap()),
        flag: b[16] == 1,
    })
}
fn toy_unpack(f: &PackedSpare, protocol: &[u8], out: &mut [u8]) {
    out.fill(0xFF);
    out[0..4].copy_from_slice(&f.lpn.to_le_bytes());
    out[4..12].copy_from_slice(&f.seq.to_le_bytes());
    out[12..16].copy_from_slice(&f.erase_count.to_le_bytes());
    out[16] = f.flag as u8;
    out[17..17 + protocol.len()].copy_from_slice(protocol);
}

/// Scale issue, item 4: metadata-only mode stores spare areas packed (a codec
/// for the common form, the rest kept whole). The same operations on a
/// full-data array and a metadata-only one, with torn programs and erases of
/// every variant, flipped bytes and a fault model, leave every spare area
/// byte for byte the same, and reads return the same spare bytes and errors,
/// whether a program hands the spare area as bytes or as packed fields.
#[test]
fn packed_spare_areas_read_exactly_as_full_ones() {
    use rand::{Rng, SeedableRng};
    let mut full = tiny(DataMode::Full, ViolationPolicy::Error);
    let mut meta = tiny(DataMode::MetaOnly, ViolationPolicy::Error);
    meta.set_spare_codec(Some(SpareCodec {
        pack: toy_pack,
        unpack: toy_unpack,
        protocol_bytes: TOY_PROTOCOL,
        flag_bytes: 0,
        flags_at: 0,
        crc_span: 0,
    }))
    .unwrap();
    let mut model = FaultModel::profile("stress", 3).unwrap();
    model.retention_days = 300.0;
    full.set_fault_model(Some(model)).unwrap();
    meta.set_fault_model(Some(model)).unwrap();
    let g = *full.geometry();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut seq = 1u64;
    let data = vec![0x5Au8; g.page_size as usize];
    let mut next = vec![0u32; g.block_count() as usize];
    let (mut done, mut tears, mut by_fields) = (0, 0, 0);
    for step in 0..4000 {
        let block = rng.gen_range(0..g.block_count());
        let torn = match rng.gen_range(0..20) {
            i @ 0..5 => Some(Torn::ALL[i]),
            _ => None,
        };
        if let Some(t) = torn {
            let c = PowerCut {
                at_op: full.op_count(),
                torn: t,
                seed: step,
            };
            full.arm_power_cut(c);
            meta.arm_power_cut(PowerCut {
                at_op: meta.op_count(),
                ..c
            });
        }
        let roll = rng.gen_range(0..100);
        let (a, b) = if roll < 8 || next[block as usize] >= g.pages_per_block {
            next[block as usize] = 0;
            (full.erase(block, 0).map(|_| ()), meta.erase(block, 0).map(|_| ()))
        } else {
            let ppn = g.ppn(block, next[block as usize]);
            next[block as usize] += 1;
            let mut oob = vec![0xFFu8; g.oob_size as usize];
            let mut protocol = [0xFFu8; TOY_PROTOCOL + 1];
            if rng.gen_bool(0.5) {
                protocol[..TOY_PROTOCOL].iter_mut().for_each(|p| *p = rng.gen());
            }
            if rng.gen_bool(0.05) {
                protocol[TOY_PROTOCOL] = 1; // past the codec's bytes: kept whole
            }
            toy_unpack(
                &PackedSpare {
                    lpn: rng.gen_range(0..1000),
                    seq,
                    erase_count: full.inspect_erase_count(block),
                    flag: rng.gen_bool(0.3),
                },
                &protocol,
                &mut oob,
            );
            seq += rng.gen_range(1..30_000);
            if roll < 15 {
                oob[30] = 0x11; // not the codec's form: kept whole
            }
            // A spare area of the codec's form also goes as its fields
            // (`program_fields`), its bytes written only where needed.
            let mut kept = [0u8; TOY_PROTOCOL];
            let fields = toy_pack(&oob, &mut kept);
            let encode = |b: &mut [u8]| b.copy_from_slice(&oob);
            let spare = fields.map(|fields| FieldsSpare {
                fields,
                protocol: &kept,
                flags: &[],
                encode: &encode,
            });
            let program = |n: &mut Nand, data: &[u8], lazy: bool| match &spare {
                Some(f) if lazy => n.program_fields(ppn, 0, data, f),
                _ => n.program(ppn, 0, data, &oob),
            };
            let (lazy_full, lazy_meta) = (rng.gen_bool(0.5), rng.gen_bool(0.5));
            by_fields += (spare.is_some() && lazy_meta) as u32;
            (
                program(&mut full, &data, lazy_full).map(|_| ()),
                program(&mut meta, &[], lazy_meta).map(|_| ()),
            )
        };
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "step {step}");
        match (&a, torn) {
            (Ok(()), _) => done += 1,
            (Err(NandError::PowerLoss), Some(t)) if t != Torn::None => tears += 1,
            _ => {}
        }
        if torn.is_some() {
            full.power_on();
            meta.power_on();
            // A torn erase or program leaves the block's order uncertain: start it over.
            next[block as usize] = g.pages_per_block;
        }
        if rng.gen_range(0..20) == 0 {
            let ppn = rng.gen_range(0..g.page_count());
            let (at, mask) = (rng.gen_range(0..g.oob_size as usize), rng.gen::<u8>() | 1);
            assert_eq!(
                full.flip_byte(ppn, true, at, mask).unwrap(),
                meta.flip_byte(ppn, true, at, mask).unwrap()
            );
        }
        if step % 100 == 99 {
            for ppn in 0..g.page_count() {
                assert_eq!(full.inspect_oob(ppn), meta.inspect_oob(ppn), "page {ppn} after step {step}");
                // Borrowed from a store of bytes (full), unpacked (meta):
                // the same bytes, whatever the scratch held before.
                for n in [&full, &meta] {
                    let mut scratch = vec![0x5Au8; g.oob_size as usize];
                    assert_eq!(
                        n.inspect_oob_ref(ppn, &mut scratch),
                        n.inspect_oob(ppn),
                        "borrowed spare of page {ppn}"
                    );
                }
                let (mut fo, mut mo) = (vec![0u8; g.oob_size as usize], vec![0u8; g.oob_size as usize]);
                let (fr, mr) = (full.read(ppn, 0, None, &mut fo), meta.read(ppn, 0, None, &mut mo));
                assert_eq!((format!("{fr:?}"), fo), (format!("{mr:?}"), mo), "read of page {ppn}");
            }
        }
    }
    assert!(
        done > 1500 && tears > 500 && by_fields > 500,
        "{done} operations done, {tears} torn, {by_fields} programmed by fields"
    );
    assert!(
        meta.stats().program_failures > 0 && meta.stats().uncorrectable_reads > 0,
        "{:?}",
        meta.stats()
    );
}

/// A digest read (`read_digest`, which leaves a full-data array's page
/// where it is) says what a full read hands up: the same time, counts and
/// errors, the CRC and erasedness of the bytes a successful read hands up,
/// and, when the decode fails, the same bytes in its scratch buffer. Over
/// erased pages, pages of 0xFF data, torn programs and a fault model harsh
/// enough that decodes fail, in both data modes.
#[test]
fn a_digest_read_says_what_a_full_read_hands_up() {
    use rand::{Rng, SeedableRng};
    for mode in [DataMode::Full, DataMode::MetaOnly] {
        let mut n = tiny(mode, ViolationPolicy::Error);
        let mut model = FaultModel::profile("stress", 3).unwrap();
        model.retention_days = 400.0;
        n.set_fault_model(Some(model)).unwrap();
        let g = *n.geometry();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let (mut failed, mut erased, mut torn) = (0, 0, 0);
        for block in 0..g.block_count().min(8) {
            let programmed = rng.gen_range(0..=g.pages_per_block);
            for at in 0..programmed {
                let ppn = g.ppn(block, at);
                let fill = match rng.gen_range(0..4) {
                    0 => 0xFF,
                    _ => rng.gen(),
                };
                let (d, mut o) = page(&n, fill);
                o[0] = 0;
                if rng.gen_range(0..8) == 0 {
                    torn += 1;
                    n.arm_power_cut(PowerCut {
                        at_op: n.op_count(),
                        torn: Torn::ALL[rng.gen_range(0..Torn::ALL.len())],
                        seed: ppn as u64,
                    });
                    let _ = n.program(ppn, 0, &d, &o);
                    n.power_off();
                    n.power_on();
                } else {
                    n.program(ppn, 0, &d, &o).unwrap();
                }
            }
        }
        for ppn in 0..g.ppn(g.block_count().min(8), 0) {
            for level in [0, 1] {
                let (mut a, mut b) = (n.snapshot(), n.snapshot());
                let (mut data, mut oob) = page(&a, 0);
                let full = a.read_crc(ppn, 0, level, &mut data, &mut oob);
                let (mut scratch, mut oob2) = page(&b, 0x33);
                let digest = b.read_digest(ppn, 0, level, (&mut scratch, &mut oob2), true);
                assert_eq!(a.stats(), b.stats(), "{mode:?} page {ppn}: counts");
                assert_eq!(oob, oob2, "{mode:?} page {ppn}: spare area");
                match (full, digest) {
                    (Ok((t, crc)), Ok((t2, dg))) => {
                        assert_eq!(t, t2, "{mode:?} page {ppn}: time");
                        assert_eq!(dg.crc, Some(crc), "{mode:?} page {ppn}: CRC");
                        assert_eq!(crc, crc32fast::hash(&data), "{mode:?} page {ppn}: CRC of the bytes");
                        assert_eq!(dg.erased, is_erased(&data), "{mode:?} page {ppn}: erased");
                        erased += dg.erased as u32;
                    }
                    (Err(e), Err(e2)) => {
                        assert_eq!(format!("{e:?}"), format!("{e2:?}"), "{mode:?} page {ppn}: error");
                        assert_eq!(data, scratch, "{mode:?} page {ppn}: bytes handed up by a failed decode");
                        failed += 1;
                    }
                    (x, y) => panic!("{mode:?} page {ppn}: read {x:?}, digest read {y:?}"),
                }
            }
        }
        assert!(
            failed > 0 && erased > 0 && torn > 0,
            "{mode:?}: {failed} failed decodes, {erased} erased, {torn} torn"
        );
    }
}
