//! SHA-256 (FIPS 180-4), the digest that keys the unpack and compile caches:
//! mlf-rt's portable code (the digest a model slot states, checked on the
//! device), here with x86-64's SHA instructions plugged in.
//!
//! Written in mlf-rt rather than taken from `sha2`: that crate and the five it
//! brings (generic-array, typenum, digest, block-buffer, cpufeatures) cost a
//! new user's first build about two seconds of compile time. On x86-64 it
//! uses the SHA instructions where the processor has them, as `sha2` does:
//! a build script runs unoptimised, and a 51 MB archive is hashed in 1.3 s
//! with them, 1.7 s without.

/// An incremental SHA-256 (mlf-rt's, the one a slot's digest uses) with the
/// processor's SHA instructions where it has them.
#[derive(Clone)]
pub(crate) struct Sha256(mlf_rt::sha256::Sha256);

impl Sha256 {
    pub(crate) fn new() -> Self {
        Sha256(mlf_rt::sha256::Sha256::with_compressor(compress_blocks))
    }

    pub(crate) fn update(&mut self, data: impl AsRef<[u8]>) {
        self.0.update(data.as_ref());
    }

    pub(crate) fn finalize(self) -> [u8; 32] {
        self.0.finalize()
    }
}

impl std::io::Write for Sha256 {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Compresses `blocks` (a multiple of 64 bytes) into `state`: with the
/// processor's SHA instructions where it has them (x86-64's SHA-NI, about 3
/// times the portable code in an unoptimised build script), else portably.
fn compress_blocks(state: &mut [u32; 8], blocks: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sha") && std::arch::is_x86_feature_detected!("sse4.1") {
        // SAFETY: the features the function is compiled for were just detected.
        unsafe { x86::compress_blocks(state, blocks) };
        return;
    }
    mlf_rt::sha256::compress_blocks(state, blocks);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// The rounds of mlf-rt's portable compression with SHA-NI: the state is kept as
    /// the two vectors the instructions take, ABEF and CDGH.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub(super) unsafe fn compress_blocks(state: &mut [u32; 8], blocks: &[u8]) {
        // SAFETY (every load and store): unaligned accesses within `state`, `blocks` and the constants.
        let dcba = _mm_loadu_si128(state.as_ptr().cast());
        let hgfe = _mm_loadu_si128(state.as_ptr().add(4).cast());
        let cdab = _mm_shuffle_epi32(dcba, 0xB1);
        let efgh = _mm_shuffle_epi32(hgfe, 0x1B);
        let mut abef = _mm_alignr_epi8(cdab, efgh, 8);
        let mut cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
        // Big-endian words to lanes.
        let byte_swap = _mm_set_epi64x(0x0c0d_0e0f_0809_0a0b, 0x0405_0607_0001_0203);
        for block in blocks.chunks_exact(64) {
            let (abef_before, cdgh_before) = (abef, cdgh);
            let mut w = [_mm_setzero_si128(); 4];
            for group in 0..16 {
                let word = if group < 4 {
                    _mm_shuffle_epi8(_mm_loadu_si128(block.as_ptr().add(16 * group).cast()), byte_swap)
                } else {
                    // W[t..t+4] from W[t-16..t-12], W[t-12..t-8], W[t-7..t-3] and W[t-4..t].
                    let (oldest, old, previous, last) = (w[group % 4], w[(group + 1) % 4], w[(group + 2) % 4], w[(group + 3) % 4]);
                    let sum = _mm_add_epi32(_mm_sha256msg1_epu32(oldest, old), _mm_alignr_epi8(last, previous, 4));
                    _mm_sha256msg2_epu32(sum, last)
                };
                w[group % 4] = word;
                let with_constants = _mm_add_epi32(word, _mm_loadu_si128(mlf_rt::sha256::ROUND_CONSTANTS.as_ptr().add(4 * group).cast()));
                cdgh = _mm_sha256rnds2_epu32(cdgh, abef, with_constants);
                abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(with_constants, 0x0E));
            }
            abef = _mm_add_epi32(abef, abef_before);
            cdgh = _mm_add_epi32(cdgh, cdgh_before);
        }
        let feba = _mm_shuffle_epi32(abef, 0x1B);
        let dchg = _mm_shuffle_epi32(cdgh, 0xB1);
        _mm_storeu_si128(state.as_mut_ptr().cast(), _mm_blend_epi16(feba, dchg, 0xF0));
        _mm_storeu_si128(state.as_mut_ptr().add(4).cast(), _mm_alignr_epi8(dchg, feba, 8));
    }
}

#[cfg(test)]
mod tests {
    use super::Sha256;

    fn hex(data: &[u8]) -> String {
        let mut hasher = Sha256::new();
        hasher.update(data);
        hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
    }

    #[test]
    fn the_processors_instructions_and_the_portable_code_agree() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let data: Vec<u8> = (0..64 * 37)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        let mut portable = mlf_rt::sha256::INITIAL_STATE;
        mlf_rt::sha256::compress_blocks(&mut portable, &data);
        let mut chosen = mlf_rt::sha256::INITIAL_STATE;
        super::compress_blocks(&mut chosen, &data);
        assert_eq!(chosen, portable);
    }

    #[test]
    fn any_split_of_the_input_gives_the_same_digest() {
        // Every length around the padding's edges (55, 56, 63, 64 bytes), cut at every place.
        let data: Vec<u8> = (0..200u32).map(|i| (i * 31 + 7) as u8).collect();
        for len in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 200] {
            let whole = hex(&data[..len]);
            for cut in 0..=len {
                let mut hasher = Sha256::new();
                hasher.update(&data[..cut]);
                hasher.update(&data[cut..len]);
                let split: String = hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect();
                assert_eq!(split, whole, "length {len} cut at {cut}");
            }
        }
    }
}
