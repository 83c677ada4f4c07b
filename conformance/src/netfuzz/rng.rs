//! The fuzzer's entropy: SplitMix64, seeded once per session, so a session is a pure function
//! of `(campaign seed, session number)` and can be replayed and minimised. Under cargo-fuzz the
//! same generator draws from the fuzzer's input instead ([`Rng::from_data`]), so coverage
//! feedback steers the sessions.

use arbitrary::Unstructured;

/// Where the bits come from.
#[derive(Clone, Debug)]
enum Source {
    /// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, good enough to drive a generator.
    SplitMix(u64),
    /// A fuzzer's input, read in order; zeros once it runs out.
    Data { bytes: Vec<u8>, at: usize },
}

/// A source of random choices.
#[derive(Clone, Debug)]
pub struct Rng(Source);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(Source::SplitMix(seed))
    }

    /// Choices read from `data` (a fuzzer's input).
    pub fn from_data(data: &[u8]) -> Self {
        Self(Source::Data {
            bytes: data.to_vec(),
            at: 0,
        })
    }

    /// The seed of session `index` of a campaign seeded with `seed`.
    pub fn session_seed(seed: u64, index: u64) -> u64 {
        Self::new(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_u64()
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        match &mut self.0 {
            Source::SplitMix(state) => {
                *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = *state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^ (z >> 31)
            }
            Source::Data { bytes, at } => {
                let mut word = [0u8; 8];
                for b in &mut word {
                    *b = bytes.get(*at).copied().unwrap_or(0);
                    *at += 1;
                }
                u64::from_le_bytes(word)
            }
        }
    }

    /// A value in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `p`.
    #[allow(clippy::cast_precision_loss)] // A 53-bit integer is exact in an f64.
    pub fn chance(&mut self, p: f64) -> bool {
        // 53 bits of the draw as a fraction in [0, 1).
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(len);
        out
    }

    /// A value of `T` from phux-proto's `arbitrary` impls, fed `budget` random bytes.
    pub fn arbitrary<T: for<'a> arbitrary::Arbitrary<'a>>(&mut self, budget: usize) -> Option<T> {
        let data = self.bytes(budget);
        T::arbitrary(&mut Unstructured::new(&data)).ok()
    }

    /// A u16 biased towards the edges (0, 1, the maximum, around 255 and 1024).
    pub fn edgy_u16(&mut self) -> u16 {
        const EDGES: [u16; 9] = [0, 1, 2, 80, 255, 256, 1024, 1025, u16::MAX];
        if self.chance(0.5) {
            EDGES[self.below(EDGES.len() as u64) as usize]
        } else {
            (self.below(300) + 1) as u16
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_read_in_order_then_zeros() {
        let mut r = Rng::from_data(&[1, 0, 0, 0, 0, 0, 0, 0, 2]);
        assert_eq!(r.next_u64(), 1);
        assert_eq!(r.next_u64(), 2);
        assert_eq!(r.next_u64(), 0);
    }

    #[test]
    fn the_same_seed_gives_the_same_stream() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.iter().all(|x| *x == a[0]));
        let mut r = Rng::new(7);
        let first = r.next_u64();
        assert_ne!(first, r.next_u64());
        assert_ne!(Rng::session_seed(1, 0), Rng::session_seed(1, 1));
    }
}
