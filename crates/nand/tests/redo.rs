//! The redo log: an array brought to another's state by redoing the logged
//! programs and erases (reads change nothing), and torn at any of them as a
//! cut there tears the original run.

use txftl_nand::*;

fn tiny() -> Nand {
    Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
}

/// Programs, reads between them, an erase, a program of the erased block.
fn run(n: &mut Nand) -> Result<(), NandError> {
    let g = *n.geometry();
    let (mut d, mut o) = (vec![0u8; g.page_size as usize], vec![0u8; g.oob_size as usize]);
    for (i, ppn) in [0, 1, 2, 8].into_iter().enumerate() {
        d.fill(i as u8 + 1);
        o.fill(0x40 + i as u8);
        n.program(ppn, 0, &d, &o)?;
        n.read(ppn, 0, Some(&mut d), &mut o)?;
    }
    n.erase(0, 0)?;
    n.read(8, 0, None, &mut o)?;
    n.program(0, 0, &d, &o)?;
    Ok(())
}

/// Every page's contents and program count, every block's wear.
fn cells(n: &Nand) -> Vec<(u8, Vec<u8>, Vec<u8>)> {
    let g = *n.geometry();
    let pages = (0..g.page_count()).map(|p| (n.inspect_programs(p), n.inspect_data(p), n.inspect_oob(p)));
    let blocks = (0..g.block_count()).map(|b| (n.inspect_bad(b) as u8, n.inspect_erase_count(b).to_le_bytes().to_vec(), vec![]));
    pages.chain(blocks).collect()
}

#[test]
fn redone_operations_reach_the_same_array_and_tear_as_a_cut_there() {
    let mut logged = tiny();
    logged.set_redo_log(true);
    run(&mut logged).unwrap();
    let log = logged.redo_log().to_vec();
    // Five programs and an erase, numbered as the cut counts (reads too).
    assert_eq!(log.iter().map(|r| r.op_index).collect::<Vec<_>>(), vec![0, 2, 4, 6, 8, 10]);
    let mut again = tiny();
    for r in &log {
        again.redo(r).unwrap();
    }
    assert!(cells(&again) == cells(&logged));
    for (i, r) in log.iter().enumerate() {
        for torn in Torn::ALL {
            let cut = PowerCut {
                at_op: r.op_index,
                torn,
                seed: 3,
            };
            let mut original = tiny();
            original.arm_power_cut(cut);
            assert!(matches!(run(&mut original), Err(NandError::PowerLoss)));
            let mut redone = tiny();
            for earlier in &log[..i] {
                redone.redo(earlier).unwrap();
            }
            redone.arm_power_cut(cut);
            assert!(matches!(redone.redo(r), Err(NandError::PowerLoss)));
            assert!(cells(&redone) == cells(&original), "op {} torn {torn:?}", r.op_index);
        }
    }
}
