//! What the mounts decided, recorded in every checkpoint (the protocol's
//! section), so that a transaction a mount decided needs no flag again.
//!
//! A page programmed before a mount has an unknown count of partial
//! programs (a power cut may have torn one that cleared nothing visible):
//! the framework answers every flag program on it "NOP spent", and the
//! protocol would copy the page instead. Without a record, every flag GC
//! moves after a mount onto an older page costs a page program, and on a
//! nearly full device GC can free less than its copies take. So each mount
//! records its verdicts: every XID up to `decided_to` committed, but those
//! listed in `uncommitted`. Recovery takes a recorded verdict before the
//! flags; GC moves no flag for a transaction a verdict covers (its flags no
//! longer decide it); commits and the transactions of later XIDs use flags
//! as ever.
//!
//! The list holds a mount's uncommitted transactions (and, with CFC, its
//! torn commits above `decided_to`: pages reading TRUE beside a FALSE head,
//! which once GC reclaims the FALSE heads would read committed) while their
//! pages are on flash; an entry leaves once the table holds no page of it
//! (every checkpoint writes what is left). At most [`LIST_MAX`]: a mount
//! that finds more lowers `decided_to` so that what it covers fits, and the
//! flags keep deciding the rest.
//!
//! Section format (little-endian): `u32 decided_to`, `u32 n`, `n x u32` XIDs.

use std::collections::BTreeSet;
use txftl_ftl::{DeviceError, Result};

/// XIDs a checkpoint lists at most.
pub const LIST_MAX: usize = 1024;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdicts {
    /// XIDs up to this one are decided by the record (0: none).
    pub decided_to: u32,
    /// Of those, the transactions not committed (and torn commits above).
    pub uncommitted: BTreeSet<u32>,
}

impl Verdicts {
    /// The recorded verdict on `xid`, if any: committed or not.
    pub fn decide(&self, xid: u32) -> Option<bool> {
        if self.uncommitted.contains(&xid) {
            Some(false)
        } else if xid <= self.decided_to {
            Some(true)
        } else {
            None
        }
    }

    /// Whether a verdict covers `xid` (its flags need no moving).
    pub fn covers(&self, xid: u32) -> bool {
        self.decide(xid).is_some()
    }

    pub fn len_max() -> usize {
        8 + 4 * LIST_MAX
    }

    pub fn encode(&self) -> Vec<u8> {
        assert!(
            self.uncommitted.len() <= LIST_MAX,
            "{} XIDs listed, at most {LIST_MAX}",
            self.uncommitted.len()
        );
        let mut out = Vec::with_capacity(8 + 4 * self.uncommitted.len());
        out.extend_from_slice(&self.decided_to.to_le_bytes());
        out.extend_from_slice(&(self.uncommitted.len() as u32).to_le_bytes());
        for x in &self.uncommitted {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out
    }

    pub fn decode(protocol: &str, section: &[u8]) -> Result<Verdicts> {
        if section.is_empty() {
            return Ok(Verdicts::default());
        }
        let bad = || DeviceError::Corrupted(format!("{protocol}: the checkpoint's section is not a record of verdicts"));
        let u = |at: usize| -> Result<u32> {
            let b = section.get(at..at + 4).ok_or_else(bad)?;
            Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
        };
        let (decided_to, n) = (u(0)?, u(4)? as usize);
        if n > LIST_MAX || section.len() != 8 + 4 * n {
            return Err(bad());
        }
        let uncommitted = (0..n).map(|i| u(8 + 4 * i)).collect::<Result<BTreeSet<u32>>>()?;
        Ok(Verdicts { decided_to, uncommitted })
    }

    /// A mount's verdicts: every XID found up to `max_xid`, `uncommitted`
    /// (sorted) not committed, `torn` of them torn commits (listed even
    /// above `decided_to`, if the list must stop short of `max_xid`).
    pub fn after_mount(max_xid: u32, uncommitted: &[u32], torn: &BTreeSet<u32>) -> Verdicts {
        debug_assert!(uncommitted.windows(2).all(|w| w[0] < w[1]), "uncommitted XIDs unsorted");
        // The largest k such that the first k uncommitted and the torn ones
        // beyond them fit the list.
        let mut k = uncommitted.len();
        let torn_above = |k: usize| {
            let from = uncommitted.get(k).copied().unwrap_or(u32::MAX);
            torn.range(from..).count()
        };
        while k > 0 && k + torn_above(k) > LIST_MAX {
            k -= 1;
        }
        let decided_to = match uncommitted.get(k) {
            Some(&next) => next - 1,
            None => max_xid,
        };
        let mut list: BTreeSet<u32> = uncommitted[..k].iter().copied().collect();
        list.extend(torn.range(decided_to.saturating_add(1)..));
        assert!(list.len() <= LIST_MAX, "{} torn commits alone overflow the list", list.len());
        Verdicts {
            decided_to,
            uncommitted: list,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_round_trip_and_decide() {
        let v = Verdicts::after_mount(10, &[3, 7], &BTreeSet::from([7]));
        assert_eq!(v.decided_to, 10);
        assert_eq!(v.decide(3), Some(false));
        assert_eq!(v.decide(4), Some(true));
        assert_eq!(v.decide(11), None);
        assert_eq!(Verdicts::decode("t", &v.encode()).unwrap(), v);
        assert!(Verdicts::decode("t", &v.encode()[..9]).is_err());
    }

    /// More uncommitted transactions than the list holds: the record stops
    /// short of them, and the flags decide the rest.
    #[test]
    fn a_long_list_lowers_what_the_record_covers() {
        let unc: Vec<u32> = (1..=LIST_MAX as u32 + 10).map(|i| 2 * i).collect();
        let torn = BTreeSet::from([*unc.last().unwrap()]);
        let v = Verdicts::after_mount(5000, &unc, &torn);
        assert_eq!(v.uncommitted.len(), LIST_MAX);
        assert!(v.decided_to < unc[LIST_MAX - 1 + 1]);
        assert_eq!(v.decide(*unc.last().unwrap()), Some(false), "the torn commit stays listed");
        assert_eq!(v.decide(v.decided_to + 2), None);
    }
}
