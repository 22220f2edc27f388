//! Atomic-Write's on-flash format: a commit flag on every data page, and the
//! open group's log position in each checkpoint.
//!
//! # Page metadata (the OOB record's 32 protocol bytes, `txftl_ftl::oob`)
//!
//! Atomic-Write (Ouyang et al., HPCA 2011, as LightTx §II-C describes it)
//! appends a transaction's pages to the log and tags the last page of each
//! atomic group with flag 1, the others with flag 0. Integers little-endian:
//!
//! ```text
//!  0  u32  group id: the device's id of the transaction (0: a write outside
//!          transactions, or a GC copy of committed data)
//!  4  u8   flag: 1 on the last page of a group (its commit), 0 on the others
//!          (and on non-transactional pages, which are no group)
//!  5  [u8; 27] zero
//! ```
//!
//! # Log position (the checkpoint's protocol section, `txftl_ftl::checkpoint`)
//!
//! The mapping table is written back at every commit, so recovery replays
//! the log only from there: the pages programmed after the checkpoint (the
//! framework's roll-forward), and, when a group was open at the checkpoint
//! (a checkpoint the FTL took for itself in the middle of a transaction),
//! the pages that group had already appended, which lie in blocks the
//! checkpoint records in use:
//!
//! ```text
//!  0  u32  next group id the device hands out
//!  4  u32  n: blocks holding pages of the group open at the checkpoint (0: none open)
//!  8  u32 × n  their block ids, ascending
//! ```

use txftl_ftl::{DeviceError, Oob, Result, PROTOCOL_BYTES};
use txftl_nand::BlockId;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageFlag {
    pub group: u32,
    pub last: bool,
}

impl PageFlag {
    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut p = [0u8; PROTOCOL_BYTES];
        p[0..4].copy_from_slice(&self.group.to_le_bytes());
        p[4] = self.last as u8;
        p
    }

    pub fn of(oob: &Oob) -> PageFlag {
        PageFlag {
            group: u32::from_le_bytes(oob.protocol[0..4].try_into().expect("4 bytes")),
            last: oob.protocol[4] == 1,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogPosition {
    pub next_group: u32,
    pub open_group_blocks: Vec<BlockId>,
}

impl LogPosition {
    pub fn len_max(blocks: u32) -> usize {
        8 + 4 * blocks as usize
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + 4 * self.open_group_blocks.len());
        out.extend_from_slice(&self.next_group.to_le_bytes());
        out.extend_from_slice(&(self.open_group_blocks.len() as u32).to_le_bytes());
        for b in &self.open_group_blocks {
            out.extend_from_slice(&b.to_le_bytes());
        }
        out
    }

    /// An empty section (the checkpoint `format` writes) is the zero state.
    pub fn decode(bytes: &[u8]) -> Result<LogPosition> {
        if bytes.is_empty() {
            return Ok(LogPosition {
                next_group: 1,
                open_group_blocks: Vec::new(),
            });
        }
        let bad = || DeviceError::Corrupted(format!("Atomic-Write log position of {} bytes does not decode", bytes.len()));
        if bytes.len() < 8 {
            return Err(bad());
        }
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        let n = u32_at(4) as usize;
        if bytes.len() != 8 + 4 * n {
            return Err(bad());
        }
        Ok(LogPosition {
            next_group: u32_at(0),
            open_group_blocks: (0..n).map(|i| u32_at(8 + 4 * i)).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_positions_round_trip() {
        let p = PageFlag { group: 258, last: true }.encode();
        assert_eq!(&p[..5], &[2, 1, 0, 0, 1]);
        let pos = LogPosition {
            next_group: 9,
            open_group_blocks: vec![4, 7],
        };
        assert_eq!(LogPosition::decode(&pos.encode()).unwrap(), pos);
        assert!(LogPosition::decode(&[1, 2, 3]).is_err());
    }
}
