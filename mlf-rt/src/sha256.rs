//! SHA-256 (FIPS 180-4) without heap or `std`: the digest a slot image states
//! and the device checks ([`crate::slot::SlotHeader::check_digest`]); mlf-build's
//! cache digest is this code too, with x86-64's SHA instructions plugged in
//! through [`Sha256::with_compressor`].

/// The first 32 bits of the fractional parts of the cube roots of the first 64 primes.
pub const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
    0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
    0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
    0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
    0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
    0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// The first 32 bits of the fractional parts of the square roots of the first 8 primes.
pub const INITIAL_STATE: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// Compresses whole 64-byte blocks into a state; `blocks.len()` is a multiple of 64.
pub type Compressor = fn(&mut [u32; 8], &[u8]);

/// An incremental SHA-256: `update` any number of times, then `finalize`.
#[derive(Clone)]
pub struct Sha256 {
    state: [u32; 8],
    /// Bytes not yet compressed (fewer than a block).
    pending: [u8; 64],
    pending_len: usize,
    /// Bytes hashed so far; the padding states it in bits, modulo 2^64 as the standard says.
    total_len: u64,
    compress_blocks: Compressor,
}

impl Default for Sha256 {
    fn default() -> Self {
        Sha256::new()
    }
}

impl Sha256 {
    /// A hasher with the portable compression function.
    pub fn new() -> Self {
        Sha256::with_compressor(compress_blocks)
    }

    /// A hasher whose blocks `compress_blocks` compresses (which must agree with [`compress_blocks`]).
    pub fn with_compressor(compress_blocks: Compressor) -> Self {
        Sha256 { state: INITIAL_STATE, pending: [0; 64], pending_len: 0, total_len: 0, compress_blocks }
    }

    /// Adds `data` to the message.
    pub fn update(&mut self, mut data: &[u8]) {
        self.total_len = self.total_len.wrapping_add(data.len() as u64);
        if self.pending_len > 0 {
            let taken = data.len().min(64 - self.pending_len);
            self.pending[self.pending_len..self.pending_len + taken].copy_from_slice(&data[..taken]);
            self.pending_len += taken;
            data = &data[taken..];
            if self.pending_len < 64 {
                return;
            }
            let block = self.pending;
            (self.compress_blocks)(&mut self.state, &block);
            self.pending_len = 0;
        }
        let whole = data.len() - data.len() % 64;
        (self.compress_blocks)(&mut self.state, &data[..whole]);
        let rest = &data[whole..];
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }

    /// The digest of everything added.
    pub fn finalize(mut self) -> [u8; 32] {
        let bits = self.total_len.wrapping_mul(8);
        // A 1 bit, zeros up to 56 bytes into a block, then the length in bits.
        let zeros = (64 + 55 - self.pending_len) % 64;
        let mut padding = [0u8; 72];
        padding[0] = 0x80;
        padding[1 + zeros..9 + zeros].copy_from_slice(&bits.to_be_bytes());
        self.update(&padding[..9 + zeros]);
        debug_assert_eq!(self.pending_len, 0);
        let mut digest = [0u8; 32];
        for (bytes, word) in digest.chunks_exact_mut(4).zip(self.state) {
            bytes.copy_from_slice(&word.to_be_bytes());
        }
        digest
    }
}

/// The portable [`Compressor`].
pub fn compress_blocks(state: &mut [u32; 8], blocks: &[u8]) {
    for block in blocks.chunks_exact(64) {
        compress(state, block);
    }
}

// Plain index loops and no iterator adapters: build scripts run unoptimised
// (opt-level 0), where every adapter call is a real call.
fn compress(state: &mut [u32; 8], block: &[u8]) {
    let mut w = [0u32; 64];
    let mut i = 0;
    while i < 16 {
        w[i] = u32::from_be_bytes([block[4 * i], block[4 * i + 1], block[4 * i + 2], block[4 * i + 3]]);
        i += 1;
    }
    while i < 64 {
        let (a, b) = (w[i - 15], w[i - 2]);
        let s0 = a.rotate_right(7) ^ a.rotate_right(18) ^ (a >> 3);
        let s1 = b.rotate_right(17) ^ b.rotate_right(19) ^ (b >> 10);
        w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        i += 1;
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    i = 0;
    while i < 64 {
        let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let choose = (e & f) ^ (!e & g);
        let t1 = h.wrapping_add(s1).wrapping_add(choose).wrapping_add(ROUND_CONSTANTS[i]).wrapping_add(w[i]);
        let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let majority = (a & b) ^ (a & c) ^ (b & c);
        let t2 = s0.wrapping_add(majority);
        h = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
        i += 1;
    }
    let added = [a, b, c, d, e, f, g, h];
    i = 0;
    while i < 8 {
        state[i] = state[i].wrapping_add(added[i]);
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::String;
    use std::vec::Vec;

    fn hex(data: &[u8]) -> String {
        let mut hasher = super::Sha256::new();
        hasher.update(data);
        hasher.finalize().iter().map(|byte| std::format!("{byte:02x}")).collect()
    }

    #[test]
    fn the_standards_examples() {
        // FIPS 180-4's examples (NIST CSRC "SHA256.pdf") and the empty message.
        assert_eq!(hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        assert_eq!(hex(&[b'a'; 1_000_000]), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }

    #[test]
    fn any_split_of_the_input_gives_the_same_digest() {
        // Every length around the padding's edges (55, 56, 63, 64 bytes), cut at every place.
        let data: Vec<u8> = (0..200u32).map(|i| (i * 31 + 7) as u8).collect();
        for len in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 200] {
            let whole = hex(&data[..len]);
            for cut in 0..=len {
                let mut hasher = super::Sha256::new();
                hasher.update(&data[..cut]);
                hasher.update(&data[cut..len]);
                let split: String = hasher.finalize().iter().map(|byte| std::format!("{byte:02x}")).collect();
                assert_eq!(split, whole, "length {len} cut at {cut}");
            }
        }
    }
}
