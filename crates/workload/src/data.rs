//! Page contents the harness writes: each page says which logical page and
//! which write (version) it is, and carries a CRC, so a torn page, a stale
//! page or a page from another address is recognised on sight.
//!
//! ```text
//!  0  u32  magic 0x5446_5854 ("TXFT")
//!  4  u32  logical page
//!  8  u64  version: the global index of the write that produced the page
//! 16  ..   filler derived from (lpn, version) by SplitMix64
//! -4  u32  CRC-32 of everything before it
//! ```
//! An unwritten (or trimmed) page reads as all zeros.

const MAGIC: u32 = 0x5446_5854;

/// What a page read back holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    Unwritten,
    Written {
        lpn: u32,
        version: u64,
    },
    /// Neither zeros nor an intact page: torn, or corrupted.
    Foreign,
    /// The device reported the page lost to bit errors (`DeviceError::DataLost`):
    /// physical page `ppn` was uncorrectable. Not a decode result: reads set it.
    Lost {
        ppn: u32,
    },
}

/// SplitMix64's finalizer: a well-mixed 64-bit value from any input.
pub fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Fills `buf` (a whole page) with the content of write `version` to `lpn`.
pub fn fill(buf: &mut [u8], lpn: u32, version: u64) {
    let n = buf.len();
    buf[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    buf[4..8].copy_from_slice(&lpn.to_le_bytes());
    buf[8..16].copy_from_slice(&version.to_le_bytes());
    let mut x = splitmix(((lpn as u64) << 40) ^ version);
    for chunk in buf[16..n - 4].chunks_mut(8) {
        x = splitmix(x);
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    let crc = crc32fast::hash(&buf[..n - 4]);
    buf[n - 4..].copy_from_slice(&crc.to_le_bytes());
}

pub fn decode(buf: &[u8]) -> Content {
    let n = buf.len();
    // The magic first: a written page is told from a zero one without
    // scanning it (a zero page has no magic), which recoveries do for every
    // page at every crash point.
    if n < 24 || u32::from_le_bytes(buf[0..4].try_into().expect("4")) != MAGIC {
        // A fold rather than `all`: without an early exit it vectorises,
        // and most pages it sees (never written) are zero to the end.
        return if buf.iter().fold(0u8, |a, &b| a | b) == 0 {
            Content::Unwritten
        } else {
            Content::Foreign
        };
    }
    if crc32fast::hash(&buf[..n - 4]) != u32::from_le_bytes(buf[n - 4..].try_into().expect("4")) {
        return Content::Foreign;
    }
    Content::Written {
        lpn: u32::from_le_bytes(buf[4..8].try_into().expect("4")),
        version: u64::from_le_bytes(buf[8..16].try_into().expect("8")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tear() {
        let mut p = vec![0u8; 512];
        fill(&mut p, 7, 42);
        assert_eq!(decode(&p), Content::Written { lpn: 7, version: 42 });
        p[100] ^= 1;
        assert_eq!(decode(&p), Content::Foreign);
        assert_eq!(decode(&[0u8; 512]), Content::Unwritten);
        assert_eq!(decode(&[0xFFu8; 512]), Content::Foreign);
    }
}
