//! Power-cut injection. A cut is armed at an operation index: every operation
//! before it completes, the operation at that index is torn (or simply not
//! done), and every later operation fails with [`NandError::PowerLoss`](crate::NandError).
//!
//! What a torn operation leaves behind is drawn from the cut's seed with
//! ChaCha8, so one (index, kind, seed) triple always produces the same image.
//!
//! A cut at an instant of the device clock ([`InstantCut`]) catches every
//! operation in flight then, not only the last one issued: on parallel dies a
//! program issued early on a busy die may still be running while one issued
//! later on an idle die is done. The array keeps what each operation it
//! names found (the page a program meant to fill, the block an erase meant
//! to clear) and, when power goes, puts it back and lets the operation end
//! as its [`Torn`] says, as if the cut had caught it alone:
//! - `None`: it never reached the cells (an operation still queued, or its
//!   data still crossing the channel, can only end this way);
//! - any other variant: torn as above, each operation drawing its own bytes
//!   (the seed mixed with its index), on top of what the earlier ones left.
//!
//! On one die the operations run one after another, so at most one per die
//! is torn; the caller names the rest `None`. Every operation issued before
//! the instant and not named is done; the stop operation and every later one
//! never happen.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Torn {
    /// The operation at the cut index never reached the array.
    None,
    /// A program leaves random bytes in data and OOB (an SLC partial program:
    /// a random subset of the bits it was clearing cleared, nothing else
    /// changed); an erase erases a random subset of the block's pages and
    /// leaves random bytes in the others.
    Garbage,
    /// A program leaves a random prefix of data and OOB programmed and the rest
    /// erased (on SLC partial programs: only some of the cleared bits); an erase
    /// erases a random subset of pages and leaves the others untouched.
    Partial,
    /// A program leaves the OOB whole and the data area torn as `Partial` does:
    /// a page whose spare area checks out but whose data does not (the case a
    /// spare area exactly the size of the OOB record never produces with
    /// `Partial`). An erase tears as `Partial`.
    Data,
    /// A program leaves the data whole and the OOB torn as `Partial` does. An
    /// erase tears as `Partial`.
    Oob,
}

/// Which area of a page a torn program is applied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Area {
    Data,
    Oob,
}

impl Torn {
    pub const ALL: [Torn; 5] = [Torn::None, Torn::Garbage, Torn::Partial, Torn::Data, Torn::Oob];
    pub fn name(self) -> &'static str {
        match self {
            Torn::None => "none",
            Torn::Garbage => "garbage",
            Torn::Partial => "partial",
            Torn::Data => "data",
            Torn::Oob => "oob",
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

/// A planned power cut at an instant of the device clock (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstantCut {
    /// Index (counted as [`PowerCut::at_op`]) of the first operation issued
    /// after the instant: power is gone when it is issued, it fails with
    /// `PowerLoss` and changes nothing.
    pub stop_at_op: u64,
    /// The operations issued before the instant and not done at it, by
    /// index (each below `stop_at_op`, increasing), and how each ends. Only
    /// programs, partial programs and erases change the array; others are
    /// ignored.
    pub in_flight: Vec<(u64, Torn)>,
    pub seed: u64,
}

impl PowerCut {
    pub(crate) fn rng(&self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed ^ self.at_op.rotate_left(17))
    }
}

/// Fills `buf` with what a torn program leaves when it meant to program `target`.
/// `buf` holds the page's previous contents (erased: all 0xFF).
/// What a partial program cut short leaves in one area. A partial program
/// only clears bits (`target` is `buf` with some bits cleared; the array
/// checked it), so a cut stops it with a subset of those bits cleared: it
/// never sets a bit nor touches one it was not clearing, and the rest of a
/// spare area it flags (the FTL's OOB record) stays as it was. `Garbage`
/// clears a random subset of them; the other variants tear as a program
/// does, which here also clears only some of them (`Partial`: the bits of a
/// random prefix of bytes).
pub(crate) fn tear_partial_program(rng: &mut ChaCha8Rng, torn: Torn, area: Area, buf: &mut [u8], target: &[u8]) {
    debug_assert!(buf.iter().zip(target).all(|(b, t)| t & !b == 0), "a partial program sets no bit");
    if torn != Torn::Garbage {
        return tear_program(rng, torn, area, buf, target);
    }
    for (b, t) in buf.iter_mut().zip(target.iter()) {
        let clearing = *b & !*t;
        if clearing != 0 {
            *b &= !(clearing & rng.gen::<u8>());
        }
    }
}

pub(crate) fn tear_program(rng: &mut ChaCha8Rng, torn: Torn, area: Area, buf: &mut [u8], target: &[u8]) {
    let torn = match (torn, area) {
        // The area this variant keeps whole is programmed completely.
        (Torn::Data, Area::Oob) | (Torn::Oob, Area::Data) => {
            for (b, t) in buf.iter_mut().zip(target.iter()) {
                *b &= *t;
            }
            return;
        }
        (Torn::Data, Area::Data) | (Torn::Oob, Area::Oob) => Torn::Partial,
        (t, _) => t,
    };
    match torn {
        Torn::None | Torn::Data | Torn::Oob => {}
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
