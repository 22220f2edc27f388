//! Whether bytes read erased (every bit 1, as an erase leaves the cells).

/// Do `bytes` read erased (all 0xFF)? Whole 64-byte chunks are folded
/// without an early exit inside them, which the compiler vectorizes;
/// the first chunk that is not erased ends the scan. Recovery asks this of
/// every page it probes (a crash set recovers after every point), and a
/// byte-at-a-time scan of an erased page was a tenth of such a set's time.
pub fn is_erased(bytes: &[u8]) -> bool {
    // Most bytes asked about are programmed and their first byte says so
    // (a record's kind, a page's header): answered before the scan.
    if bytes.first().is_some_and(|&b| b != 0xFF) {
        return false;
    }
    let mut chunks = bytes.chunks_exact(64);
    for chunk in &mut chunks {
        if chunk.iter().fold(0xFF, |acc, &b| acc & b) != 0xFF {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| b == 0xFF)
}

#[cfg(test)]
mod tests {
    use super::is_erased;

    /// One bit cleared anywhere, in a whole chunk or the remainder, makes
    /// the bytes programmed; an empty slice is erased.
    #[test]
    fn one_cleared_bit_anywhere_is_programmed() {
        assert!(is_erased(&[]));
        for len in [1, 63, 64, 65, 200, 512] {
            let mut b = vec![0xFFu8; len];
            assert!(is_erased(&b), "{len} erased bytes");
            for i in 0..len {
                for bit in 0..8 {
                    b[i] = !(1 << bit);
                    assert!(!is_erased(&b), "{len} bytes, byte {i} bit {bit} cleared");
                }
                b[i] = 0xFF;
            }
        }
    }
}
