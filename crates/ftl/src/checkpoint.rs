//! The mapping checkpoint: the whole L2P and the block table at one instant,
//! appended to the checkpoint ring. Recovery loads it, then rolls forward from
//! the OOB of pages written after it.
//!
//! Byte layout, integers little-endian (split over as many pages as needed; each
//! page's OOB is a `Checkpoint` record with the page index in `lpn` and a CRC of
//! its data; the superblock keeps the byte length and a CRC of the whole):
//!
//! ```text
//!  0  [u8; 8]  magic "TXFTLCK1"
//!  8  u64      checkpoint sequence number: every data page programmed before the
//!              checkpoint has a smaller sequence number, every one after a larger
//! 16  u32      logical pages L
//! 20  u32      block count N
//! 24  u32 x L  L2P: physical page of each logical page, 0xFFFF_FFFF if unmapped
//!  .  N x 8    block records: u32 erase count, u16 write pointer, u8 state, u8 reserved
//!              state: 0 free, 1 open (write pointer valid), 2 used, 3 bad, 4 metadata
//!  .  u32      protocol section length P
//!  .  [u8; P]  protocol section
//! ```

pub const UNMAPPED: u32 = u32::MAX;
const MAGIC: &[u8; 8] = b"TXFTLCK1";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordState {
    Free = 0,
    Open = 1,
    Used = 2,
    Bad = 3,
    Meta = 4,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRecord {
    pub erase_count: u32,
    pub write_ptr: u16,
    pub state: RecordState,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub seq: u64,
    pub l2p: Vec<u32>,
    pub blocks: Vec<BlockRecord>,
    pub protocol: Vec<u8>,
}

impl Checkpoint {
    pub fn encoded_len(logical_pages: u32, block_count: u32, protocol_len: usize) -> usize {
        24 + 4 * logical_pages as usize + 8 * block_count as usize + 4 + protocol_len
    }

    pub fn encode(&self) -> Vec<u8> {
        Self::encode_parts(self.seq, &self.l2p, &self.blocks, &self.protocol)
    }

    /// Encodes a checkpoint from its parts (the FTL passes its live L2P, uncopied).
    pub fn encode_parts(seq: u64, l2p: &[u32], blocks: &[BlockRecord], protocol: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::encoded_len(l2p.len() as u32, blocks.len() as u32, protocol.len()));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&(l2p.len() as u32).to_le_bytes());
        out.extend_from_slice(&(blocks.len() as u32).to_le_bytes());
        for p in l2p {
            out.extend_from_slice(&p.to_le_bytes());
        }
        for r in blocks {
            out.extend_from_slice(&r.erase_count.to_le_bytes());
            out.extend_from_slice(&r.write_ptr.to_le_bytes());
            out.push(r.state as u8);
            out.push(0);
        }
        out.extend_from_slice(&(protocol.len() as u32).to_le_bytes());
        out.extend_from_slice(protocol);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Checkpoint, String> {
        let need = |n: usize| {
            if bytes.len() < n {
                Err(format!("checkpoint truncated at {n} bytes"))
            } else {
                Ok(())
            }
        };
        need(24)?;
        if &bytes[0..8] != MAGIC {
            return Err("checkpoint magic missing".into());
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let seq = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        let (l, n) = (u32_at(16) as usize, u32_at(20) as usize);
        need(24 + 4 * l + 8 * n + 4)?;
        let l2p = (0..l).map(|i| u32_at(24 + 4 * i)).collect();
        let base = 24 + 4 * l;
        let mut blocks = Vec::with_capacity(n);
        for i in 0..n {
            let at = base + 8 * i;
            let state = match bytes[at + 6] {
                0 => RecordState::Free,
                1 => RecordState::Open,
                2 => RecordState::Used,
                3 => RecordState::Bad,
                4 => RecordState::Meta,
                s => return Err(format!("block {i} has unknown state {s}")),
            };
            blocks.push(BlockRecord {
                erase_count: u32_at(at),
                write_ptr: u16::from_le_bytes([bytes[at + 4], bytes[at + 5]]),
                state,
            });
        }
        let p_at = base + 8 * n;
        let p = u32_at(p_at) as usize;
        need(p_at + 4 + p)?;
        Ok(Checkpoint {
            seq,
            l2p,
            blocks,
            protocol: bytes[p_at + 4..p_at + 4 + p].to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let c = Checkpoint {
            seq: 5,
            l2p: vec![3, UNMAPPED, 9],
            blocks: vec![
                BlockRecord {
                    erase_count: 2,
                    write_ptr: 0,
                    state: RecordState::Free,
                },
                BlockRecord {
                    erase_count: 1,
                    write_ptr: 4,
                    state: RecordState::Open,
                },
            ],
            protocol: vec![1, 2],
        };
        let bytes = c.encode();
        assert_eq!(bytes.len(), Checkpoint::encoded_len(3, 2, 2));
        assert_eq!(Checkpoint::decode(&bytes).unwrap(), c);
        assert!(Checkpoint::decode(&bytes[..20]).is_err());
    }
}
