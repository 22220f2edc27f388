//! LevelDB's `util/random.h` (`Random`, the Park-Miller "minimal standard"
//! generator) and `util/testutil.cc` (`RandomString`, `CompressibleString`),
//! and db_bench's `RandomGenerator`: a 1 MiB buffer of compressible data the
//! values are cut from, in turn.

/// LevelDB's `Random`: seed' = seed * 16807 mod (2^31 - 1).
#[derive(Clone, Debug)]
pub struct LevelDbRandom {
    seed: u32,
}

impl LevelDbRandom {
    pub fn new(s: u32) -> LevelDbRandom {
        let mut seed = s & 0x7fff_ffff;
        // Avoid the bad seeds.
        if seed == 0 || seed == 2_147_483_647 {
            seed = 1;
        }
        LevelDbRandom { seed }
    }

    /// `Next()`.
    pub fn next_u32(&mut self) -> u32 {
        const M: u32 = 2_147_483_647;
        const A: u64 = 16_807;
        let product = self.seed as u64 * A;
        self.seed = ((product >> 31) + (product & M as u64)) as u32;
        if self.seed > M {
            self.seed -= M;
        }
        self.seed
    }

    /// `Uniform(n)`: in 0..n.
    pub fn uniform(&mut self, n: u32) -> u32 {
        self.next_u32() % n
    }
}

/// `test::RandomString`: `len` characters `' ' + Uniform(95)`.
pub fn random_string(rnd: &mut LevelDbRandom, len: usize) -> Vec<u8> {
    (0..len).map(|_| b' ' + rnd.uniform(95) as u8).collect()
}

/// `test::CompressibleString`: `len * fraction` random characters, repeated
/// until at least `len` bytes (so it compresses to about `fraction`).
pub fn compressible_string(rnd: &mut LevelDbRandom, fraction: f64, len: usize) -> Vec<u8> {
    let raw = ((len as f64 * fraction) as usize).max(1);
    let raw_data = random_string(rnd, raw);
    let mut dst = Vec::with_capacity(len + raw);
    while dst.len() < len {
        dst.extend_from_slice(&raw_data);
    }
    dst
}

/// Bytes of data the generator holds at least (db_bench's 1 MiB: larger than
/// a compression window and than any value).
pub const GENERATOR_BYTES: usize = 1_048_576;

/// db_bench's `RandomGenerator`: built from `Random(301)` in pieces of 100
/// compressible bytes; `generate(len)` hands out the next `len` bytes,
/// starting over at the beginning when they would run past the end.
#[derive(Clone, Debug)]
pub struct ValueGenerator {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGenerator {
    pub fn new(compression_ratio: f64) -> ValueGenerator {
        let mut rnd = LevelDbRandom::new(301);
        let mut data = Vec::with_capacity(GENERATOR_BYTES + 200);
        while data.len() < GENERATOR_BYTES {
            data.extend(compressible_string(&mut rnd, compression_ratio, 100));
        }
        ValueGenerator { data, pos: 0 }
    }

    pub fn generate(&mut self, len: usize) -> &[u8] {
        assert!(len < self.data.len(), "a value of {len} B is larger than the generator's data");
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        self.pos += len;
        &self.data[self.pos - len..self.pos]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn park_miller_matches_the_minimal_standard() {
        // Park and Miller's check: from seed 1, the 10,000th value is 1043618065.
        let mut r = LevelDbRandom::new(1);
        let mut v = 0;
        for _ in 0..10_000 {
            v = r.next_u32();
        }
        assert_eq!(v, 1_043_618_065);
        assert_eq!(LevelDbRandom::new(0).next_u32(), 16_807);
    }

    #[test]
    fn values_are_half_repeated_and_wrap_around() {
        let mut g = ValueGenerator::new(0.5);
        let v = g.generate(100).to_vec();
        assert_eq!(v[..50], v[50..], "a 100-byte piece is 50 random bytes twice");
        assert!(v.iter().all(|b| (b' '..b' ' + 95).contains(b)));
        let n = g.data.len();
        g.generate(n - 150);
        let w = g.generate(100).to_vec();
        assert_eq!(w, v, "past the end, the generator starts over");
    }
}
