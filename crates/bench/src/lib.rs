//! Shared set-up of the benchmarks: a device in steady state and a
//! deterministic segment of host writes to replay on copies of it.
//!
//! Benchmarks measure wall time (how fast the emulator runs); the simulated
//! figures of the same runs come from `txftl run`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use txftl_ftl::{Device, Ftl, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::plain::Plain;

/// A device filled to `fill_pct` of its logical pages and then overwritten at
/// random until GC runs in steady state, in metadata-only mode.
pub fn steady_state(preset_name: &str, blocks_per_plane: Option<u32>, fill_pct: u32, seed: u64) -> (Ftl<Plain>, u32) {
    let mut p = preset(preset_name).expect("known preset");
    if let Some(b) = blocks_per_plane {
        p.geometry.blocks_per_plane = b;
    }
    let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).expect("valid geometry");
    let mut f = Ftl::format(nand, FtlConfig::default(), Plain::default()).expect("format");
    let working_set = (f.logical_pages() as u64 * fill_pct as u64 / 100) as u32;
    for lpn in 0..working_set {
        f.write(lpn, &[]).expect("fill");
    }
    // Overwrite the working set twice at random: GC then runs on every block.
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..2 * working_set as u64 {
        f.write(rng.gen_range(0..working_set), &[]).expect("age");
    }
    f.flush().expect("flush");
    (f, working_set)
}

/// The logical pages of a segment of random writes.
pub fn segment(working_set: u32, writes: usize, seed: u64) -> Vec<u32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..writes).map(|_| rng.gen_range(0..working_set)).collect()
}

/// Replays a segment; returns the flash operations it issued.
pub fn replay(f: &mut Ftl<Plain>, lpns: &[u32]) -> u64 {
    let before = f.stats().flash_ops();
    for &lpn in lpns {
        f.write(lpn, &[]).expect("write");
    }
    f.stats().flash_ops() - before
}

/// A device of `protocol` filled to `fill_pct` of its logical pages with
/// plain writes, then aged by random transactions (8 pages each) until GC
/// runs in steady state, metadata-only, cleanly closed: returns its NAND (a
/// mount of a snapshot is a fresh copy) and the working set.
pub fn tx_steady_state(protocol: &str, preset_name: &str, fill_pct: u32, seed: u64) -> (Nand, u32) {
    let p = preset(preset_name).expect("known preset");
    let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).expect("valid geometry");
    let mut d =
        txftl_protocols::format(protocol, nand, FtlConfig::default(), &txftl_protocols::ProtocolOptions::default()).expect("format");
    let working_set = (d.info().logical_pages as u64 * fill_pct as u64 / 100) as u32;
    for lpn in 0..working_set {
        d.write(lpn, &[]).expect("fill");
    }
    // Twice the working set in transactional writes: GC then runs on every block.
    transactions(&mut *d, working_set, 2 * working_set as usize / 8, seed);
    d.flush().expect("flush");
    (d.close().expect("close"), working_set)
}

/// Runs `txs` transactions of 8 random page writes each, one at a time, every
/// tenth aborted; returns the flash operations they issued.
pub fn transactions(d: &mut dyn txftl_protocols::AnyDevice, working_set: u32, txs: usize, seed: u64) -> u64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let before = d.stats().flash_ops();
    for t in 0..txs {
        let tid = t as u32 + 1;
        d.begin(tid).expect("begin");
        for _ in 0..8 {
            d.write_tx(tid, rng.gen_range(0..working_set), &[]).expect("write");
        }
        if t % 10 == 9 {
            d.abort(tid).expect("abort");
        } else {
            d.commit(tid).expect("commit");
        }
    }
    d.stats().flash_ops() - before
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The benchmark at toy size, so it never rots: a replay from a duplicate
    /// issues exactly the same operations as from the original.
    #[test]
    fn segment_replays_identically() {
        let (f, ws) = steady_state("tiny", None, 90, 1);
        let lpns = segment(ws, 500, 2);
        let a = replay(&mut f.duplicate(), &lpns);
        let b = replay(&mut f.duplicate(), &lpns);
        assert_eq!(a, b);
        assert!(a > 500, "GC must run: {a} flash ops for 500 writes");
    }

    /// The protocols' benchmark at toy size: a fresh mount of the same NAND
    /// issues the same operations every time.
    #[test]
    fn transactions_replay_identically() {
        for entry in txftl_protocols::PROTOCOLS.iter().filter(|e| e.transactional) {
            let protocol = entry.name;
            let (nand, ws) = tx_steady_state(protocol, entry.nand.tiny_preset(), 90, 1);
            let run = || {
                let mut d = txftl_protocols::mount(protocol, nand.snapshot(), FtlConfig::default(), &Default::default()).unwrap();
                transactions(&mut *d, ws, 50, 2)
            };
            let (a, b) = (run(), run());
            assert_eq!(a, b, "{protocol}");
            assert!(a > 400, "{protocol}: GC must run: {a} flash ops for 400 writes");
        }
    }
}
