//! A 64-bit FNV-1a digest of rows, for fingerprints of a database's
//! contents (TPC-C's and the heavy crash scenario's oracles): each value
//! hashed with a type tag, so `1` and `'1'` differ, and a text or blob with
//! its length, so adjacent values cannot run together.

use rusqlite::types::ValueRef;

/// FNV-1a over the bytes fed to it.
pub(crate) struct Fnv(pub(crate) u64);

impl Fnv {
    pub(crate) fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// The first `columns` values of row `r`.
    pub(crate) fn row(&mut self, r: &rusqlite::Row, columns: usize) -> rusqlite::Result<()> {
        for c in 0..columns {
            match r.get_ref(c)? {
                ValueRef::Null => self.bytes(&[0]),
                ValueRef::Integer(i) => {
                    self.bytes(&[1]);
                    self.bytes(&i.to_le_bytes());
                }
                ValueRef::Real(f) => {
                    self.bytes(&[2]);
                    self.bytes(&f.to_bits().to_le_bytes());
                }
                ValueRef::Text(t) | ValueRef::Blob(t) => {
                    self.bytes(&[3]);
                    self.bytes(&(t.len() as u64).to_le_bytes());
                    self.bytes(t);
                }
            }
        }
        Ok(())
    }
}
