//! The seeded schedule of power cuts a server runs (`--cut-after-ops`,
//! `--cut-at-ns`), beside the cuts asked for on the control socket.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use txftl_nand::{Nand, PowerCut, Torn};

/// When power goes by itself. Both counts restart at each power-on (the
/// NAND's operation counter and clock do), so a schedule of several cuts
/// cuts each boot at the same point of it.
#[derive(Clone, Debug, Default)]
pub struct CutSchedule {
    /// Power goes at this flash operation (0-based) after each mount's
    /// recovery, tearing it as `torn` says.
    pub after_ops: Option<u64>,
    /// Power goes once the device clock has reached this instant (ns since
    /// the power-on), at the next command: the device runs one command at a
    /// time, so the cut falls between two of them.
    pub at_ns: Option<u64>,
    /// How many scheduled cuts, at most (each followed by recovery).
    pub cuts: u64,
    /// How the cut operation is torn; None: drawn from the seed, cut by cut.
    pub torn: Option<Torn>,
    pub seed: u64,
}

impl CutSchedule {
    pub fn is_empty(&self) -> bool {
        self.after_ops.is_none() && self.at_ns.is_none()
    }

    /// The torn variant of scheduled cut `k` (0-based): the one asked for,
    /// or a draw of ChaCha8 seeded with the schedule's seed and `k`.
    pub fn torn_of(&self, k: u64) -> Torn {
        self.torn.unwrap_or_else(|| {
            let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ k.rotate_left(29));
            Torn::ALL[rng.gen_range(0..Torn::ALL.len())]
        })
    }

    /// Arms the next cut by operation count on a NAND just mounted, if any
    /// is left (`done` scheduled cuts so far).
    pub fn arm(&self, nand: &mut Nand, done: u64) {
        let Some(n) = self.after_ops.filter(|_| done < self.cuts) else { return };
        nand.arm_power_cut(PowerCut {
            at_op: nand.op_count() + n,
            torn: self.torn_of(done),
            seed: self.seed.wrapping_add(done),
        });
    }

    /// Whether the cut at an instant is due at `now_ns` (`done` scheduled cuts so far).
    pub fn instant_due(&self, now_ns: u64, done: u64) -> bool {
        done < self.cuts && self.at_ns.is_some_and(|t| now_ns >= t)
    }
}
