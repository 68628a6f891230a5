//! Threefry-2x32 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as
//! 1, 2, 3", SC 2011; the Random123 library), the bit generator of JAX: a keyed
//! bijection of 64-bit counters, two 32-bit words each, built from the Threefish
//! round function (add, rotate, xor) with a key injection every four rounds.

/// Rotation constants of Threefry-2x32 (`R_32x2` of Random123), used cyclically.
const ROTATIONS: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];

/// Skein's key-schedule parity constant (`SKEIN_KS_PARITY32`).
const PARITY: u32 = 0x1BD1_1BDA;

/// Threefry-2x32 with `rounds` rounds (Random123's `threefry2x32_R`).
pub fn threefry2x32_rounds(key: [u32; 2], ctr: [u32; 2], rounds: usize) -> [u32; 2] {
    let ks = [key[0], key[1], PARITY ^ key[0] ^ key[1]];
    let mut x0 = ctr[0].wrapping_add(ks[0]);
    let mut x1 = ctr[1].wrapping_add(ks[1]);
    for r in 0..rounds {
        x0 = x0.wrapping_add(x1);
        x1 = x1.rotate_left(ROTATIONS[r % 8]) ^ x0;
        if r % 4 == 3 {
            let i = r / 4 + 1;
            x0 = x0.wrapping_add(ks[i % 3]);
            x1 = x1.wrapping_add(ks[(i + 1) % 3]).wrapping_add(i as u32);
        }
    }
    [x0, x1]
}

/// Threefry-2x32 with 20 rounds, the generator of JAX and Random123's default:
/// the two output words for counter `ctr` under `key`.
///
/// ```
/// use jitfuse_runtime::random::threefry2x32;
/// // Random123's known-answer vector: counter and key zero.
/// assert_eq!(threefry2x32([0, 0], [0, 0]), [0x6b20_0159, 0x99ba_4efe]);
/// ```
#[inline]
pub fn threefry2x32(key: [u32; 2], ctr: [u32; 2]) -> [u32; 2] {
    threefry2x32_rounds(key, ctr, 20)
}

/// The block of element `i`: its flat index as the counter `(i >> 32, i & 0xffff_ffff)`
/// (JAX's `iota_2x32_shape`, so values do not depend on how the work is split).
#[inline]
pub fn block(key: [u32; 2], i: u64) -> [u32; 2] {
    threefry2x32(key, [(i >> 32) as u32, i as u32])
}
