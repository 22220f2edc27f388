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
    /// Power goes at this instant of the device clock (ns since the
    /// power-on): the first flash operation issued after it finds power
    /// gone, and every program, partial program or erase still running at
    /// it is torn (or lost, if it had not begun changing cells) as a
    /// seeded draw says ([`Nand::arm_cut_at_ns`]). If the device is idle
    /// then, the cut lands at the next command, with the same tearing.
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

    /// Arms the next cut on a NAND just mounted, if any is left (`done`
    /// scheduled cuts so far).
    pub fn arm(&self, nand: &mut Nand, done: u64) {
        if done >= self.cuts {
            return;
        }
        if let Some(t) = self.at_ns {
            nand.arm_cut_at_ns(t, self.seed.wrapping_add(done));
        }
        let Some(n) = self.after_ops else { return };
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
