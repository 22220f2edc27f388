//! Power-cut injection. A cut is armed at an operation index: every operation
//! before it completes, the operation at that index is torn (or simply not
//! done), and every later operation fails with [`NandError::PowerLoss`](crate::NandError).
//!
//! What a torn operation leaves behind is drawn from the cut's seed with
//! ChaCha8, so one (index, kind, seed) triple always produces the same image.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Torn {
    /// The operation at the cut index never reached the array.
    None,
    /// A program leaves random bytes in data and OOB; an erase erases a random
    /// subset of the block's pages and leaves random bytes in the others.
    Garbage,
    /// A program leaves a random prefix of data and OOB programmed and the rest
    /// erased (on SLC partial programs: only some of the cleared bits); an erase
    /// erases a random subset of pages and leaves the others untouched.
    Partial,
}

impl Torn {
    pub const ALL: [Torn; 3] = [Torn::None, Torn::Garbage, Torn::Partial];
    pub fn name(self) -> &'static str {
        match self {
            Torn::None => "none",
            Torn::Garbage => "garbage",
            Torn::Partial => "partial",
        }
    }
    pub fn parse(s: &str) -> Option<Torn> {
        Torn::ALL.into_iter().find(|t| t.name() == s)
    }
}

/// A planned power cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PowerCut {
    /// Index (0-based, counting every read, program, partial program and erase since
    /// the counter was last reset) of the operation that the cut interrupts.
    pub at_op: u64,
    pub torn: Torn,
    pub seed: u64,
}

impl PowerCut {
    pub(crate) fn rng(&self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed ^ self.at_op.rotate_left(17))
    }
}

/// Fills `buf` with what a torn program leaves when it meant to program `target`.
/// `buf` holds the page's previous contents (erased: all 0xFF).
pub(crate) fn tear_program(rng: &mut ChaCha8Rng, torn: Torn, buf: &mut [u8], target: &[u8]) {
    match torn {
        Torn::None => {}
        Torn::Garbage => rng.fill(buf),
        Torn::Partial => {
            if buf.is_empty() {
                return;
            }
            let cut = rng.gen_range(0..buf.len());
            for (b, t) in buf[..cut].iter_mut().zip(target.iter()) {
                *b &= *t;
            }
        }
    }
}
