//! The `remap` workload's generator: a write-ahead log checkpointed by
//! remapping (SW-WAL's pattern, `Op::WriteRemappable` and `Op::Remap`).
//!
//! The working set's last quarter is the log, the rest the database. A
//! transaction appends 1 to 4 frames to the log (each a remappable write
//! naming a database page, the same page possibly twice), reads a few
//! database and log pages, and syncs (a flush). After a transaction, or when
//! the log is full, a checkpoint follows 30% of the time: the newest frame of
//! each database page is remapped onto it, then a flush (the database's
//! sync), and the log starts again from its first page.
//!
//! A checkpoint's host guesses which frame a database write copies (a VFS
//! sees only reads and writes of equal bytes): 10% of its remaps name the
//! frame of the checkpoint's next page. The device must refuse those
//! (the frame's spare area names another target) and the host then copies
//! the frame it named, as it does for every refused remap (`run.rs`).

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, VecDeque};
use txftl_ftl::Op;

/// The log's state between operations.
#[derive(Clone, Debug, Default)]
pub(crate) struct WalGen {
    planned: VecDeque<Op>,
    /// Next free page of the log (relative to its first page).
    cursor: u32,
    /// Frames since the last checkpoint: (log page, database page).
    frames: Vec<(u32, u32)>,
}

impl WalGen {
    /// The next operation on a working set of `ws` pages.
    pub(crate) fn next(&mut self, rng: &mut ChaCha8Rng, ws: u32) -> Op {
        if ws < 2 {
            return Op::Write(0);
        }
        if self.planned.is_empty() {
            self.plan(rng, ws);
        }
        self.planned.pop_front().expect("planned")
    }

    fn plan(&mut self, rng: &mut ChaCha8Rng, ws: u32) {
        let wal = (ws / 4).clamp(1, ws - 1);
        let db = ws - wal;
        let n = rng.gen_range(1..=4).min(wal - self.cursor);
        for _ in 0..n {
            let (page, target) = (db + self.cursor, rng.gen_range(0..db));
            self.cursor += 1;
            self.frames.push((page, target));
            self.planned.push_back(Op::WriteRemappable(page, target));
            if rng.gen_range(0..100) < 30 {
                self.planned.push_back(Op::Read(rng.gen_range(0..ws)));
            }
        }
        self.planned.push_back(Op::Flush);
        if self.cursor == wal || rng.gen_range(0..100) < 30 {
            self.checkpoint(rng);
        }
    }

    fn checkpoint(&mut self, rng: &mut ChaCha8Rng) {
        // The newest frame of each database page.
        let newest: BTreeMap<u32, u32> = self.frames.iter().map(|&(page, target)| (target, page)).collect();
        let frames: Vec<(u32, u32)> = newest.into_iter().collect();
        for (i, &(target, page)) in frames.iter().enumerate() {
            // A wrong guess: the frame of a page this checkpoint has not
            // reached yet (still in the log).
            let guess = match frames.get(i + 1) {
                Some(&(_, other)) if rng.gen_range(0..100) < 10 => other,
                _ => page,
            };
            self.planned.push_back(Op::Remap(guess, target));
        }
        self.planned.push_back(Op::Flush);
        self.frames.clear();
        self.cursor = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The log's pages are the working set's last quarter; every remap names
    /// a log page and a database page; most remaps follow a frame naming
    /// that target, a few are wrong guesses; flushes close transactions and
    /// checkpoints.
    #[test]
    fn a_log_checkpointed_by_remaps() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut g = WalGen::default();
        let ops: Vec<Op> = (0..3000).map(|_| g.next(&mut rng, 40)).collect();
        let mut target_of = BTreeMap::new();
        let (mut right, mut wrong, mut flushes) = (0, 0, 0);
        for op in &ops {
            match *op {
                Op::WriteRemappable(page, target) => {
                    assert!((30..40).contains(&page) && target < 30, "{op:?}");
                    target_of.insert(page, target);
                }
                Op::Remap(page, target) => {
                    assert!((30..40).contains(&page) && target < 30, "{op:?}");
                    if target_of.get(&page) == Some(&target) {
                        right += 1;
                    } else {
                        wrong += 1;
                    }
                }
                Op::Flush => flushes += 1,
                Op::Read(l) => assert!(l < 40),
                other => panic!("{other:?}"),
            }
        }
        assert!(right > 500 && wrong > 20 && wrong * 5 < right, "{right} {wrong}");
        assert!(flushes > 500, "{flushes}");
    }
}
