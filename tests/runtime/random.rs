//! `jitfuse::random`: the Threefry-2x32 generator against published answers, keys,
//! the distributions' statistics, eager == jitted bit for bit, keys as jit arguments,
//! random ops in control flow and gradients, and the `random_*` IR ops through the
//! text form, the verifier and simplification.

use crate::common::bits;
use jitfuse::internals::exec::Executable;
use jitfuse::internals::{interpret, ir};
use jitfuse::prelude::*;
use jitfuse::random::{self, threefry2x32, threefry2x32_rounds, Key};

/// Random123's known-answer vectors (`tests/kat_vectors` of the Random123 library,
/// the same three that JAX's `random_test.py` checks for 20 rounds): rounds,
/// counter, key, expected output.
const KAT: [(usize, [u32; 2], [u32; 2], [u32; 2]); 9] = [
    (13, [0, 0], [0, 0], [0x9d1c_5ec6, 0x8bd5_0731]),
    (13, [u32::MAX; 2], [u32::MAX; 2], [0xfd36_d048, 0x2d17_272c]),
    (
        13,
        [0x243f_6a88, 0x85a3_08d3],
        [0x1319_8a2e, 0x0370_7344],
        [0xba3e_4725, 0xf27d_669e],
    ),
    (20, [0, 0], [0, 0], [0x6b20_0159, 0x99ba_4efe]),
    (20, [u32::MAX; 2], [u32::MAX; 2], [0x1cb9_96fc, 0xbb00_2be7]),
    (
        20,
        [0x243f_6a88, 0x85a3_08d3],
        [0x1319_8a2e, 0x0370_7344],
        [0xc492_3a9c, 0x483d_f7a0],
    ),
    (32, [0, 0], [0, 0], [0xcee3_d47e, 0xa23d_fd5c]),
    (32, [u32::MAX; 2], [u32::MAX; 2], [0x6e2f_e0d0, 0xb1b7_6f82]),
    (
        32,
        [0x243f_6a88, 0x85a3_08d3],
        [0x1319_8a2e, 0x0370_7344],
        [0xe282_7716, 0xc3c0_5cdf],
    ),
];

#[test]
fn threefry_matches_random123_known_answers() {
    for (rounds, ctr, key, want) in KAT {
        assert_eq!(
            threefry2x32_rounds(key, ctr, rounds),
            want,
            "threefry2x32_{rounds}(ctr {ctr:x?}, key {key:x?})"
        );
        if rounds == 20 {
            assert_eq!(threefry2x32(key, ctr), want);
        }
    }
}

#[test]
fn threefry_gives_jax_original_split_of_key_zero() {
    // `jax.random.split(PRNGKey(0))` without the partitionable layout is
    // [[4146024105, 967050713], [2718843009, 1272950319]]: the blocks of counters
    // (0, 2) and (1, 3), word 0 of each forming the first key.
    let a = threefry2x32([0, 0], [0, 2]);
    let b = threefry2x32([0, 0], [1, 3]);
    assert_eq!([a[0], b[0]], [4146024105, 967050713]);
    assert_eq!([a[1], b[1]], [2718843009, 1272950319]);
}

#[test]
fn key_new_is_jax_prng_key() {
    assert_eq!(Key::new(0).words().unwrap(), [0, 0]);
    assert_eq!(Key::new(42).words().unwrap(), [0, 42]);
    assert_eq!(
        Key::new((7 << 32) | 0xffff_fffe).words().unwrap(),
        [7, 0xffff_fffe]
    );
    let k = Key::new(3);
    assert_eq!(k.data().dtype(), DType::I32);
    assert_eq!(k.data().shape(), &[2]);
    let back = Key::from_data(k.data().clone()).unwrap();
    assert_eq!(back.words().unwrap(), [0, 3]);
    let e = Key::from_data(Tensor::zeros(&[3], DType::I32)).unwrap_err();
    assert!(e.message.contains("i32[2]"), "{}", e.message);
    let e = Key::from_data(Tensor::zeros(&[2], DType::F32)).unwrap_err();
    assert!(e.message.contains("i32[2]"), "{}", e.message);
}

#[test]
fn bits_are_the_threefry_block_of_each_index() {
    let key = Key::new(0x0123_4567_89ab_cdef);
    let kw = key.words().unwrap();
    let b32 = random::bits(&key, &[3, 5], DType::I32)
        .to_vec::<i32>()
        .unwrap();
    let b64 = random::bits(&key, &[15], DType::I64)
        .to_vec::<i64>()
        .unwrap();
    for i in 0..15u32 {
        let [x0, x1] = threefry2x32(kw, [0, i]);
        assert_eq!(b32[i as usize] as u32, x0 ^ x1, "element {i}");
        assert_eq!(b64[i as usize] as u64, (x0 as u64) << 32 | x1 as u64);
    }
    // Split and fold_in are blocks of (0, j).
    let keys = key.split(4);
    for (j, k) in keys.iter().enumerate() {
        assert_eq!(k.words().unwrap(), threefry2x32(kw, [0, j as u32]));
    }
    assert_eq!(key.fold_in(9u32).words().unwrap(), threefry2x32(kw, [0, 9]));
    // A value depends on its index only, not on the shape around it.
    let long = random::bits(&key, &[40000], DType::I32)
        .to_vec::<i32>()
        .unwrap();
    assert_eq!(&long[..15], &b32[..]);
    let [x0, x1] = threefry2x32(kw, [0, 39999]);
    assert_eq!(long[39999] as u32, x0 ^ x1);
}

#[test]
fn split_and_fold_in_are_deterministic_and_distinct() {
    let key = Key::new(1234);
    let a: Vec<[u32; 2]> = key.split(16).iter().map(|k| k.words().unwrap()).collect();
    let b: Vec<[u32; 2]> = key.split(16).iter().map(|k| k.words().unwrap()).collect();
    assert_eq!(a, b, "split is a function of the key");
    let mut all = a.clone();
    all.push(key.words().unwrap());
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        17,
        "new keys differ from each other and the parent"
    );
    // split(n)[j] == fold_in(j) for every n > j; the data form is the same keys.
    let short: Vec<[u32; 2]> = key.split(3).iter().map(|k| k.words().unwrap()).collect();
    assert_eq!(short, a[..3]);
    for (j, w) in a.iter().enumerate() {
        assert_eq!(key.fold_in(j as u32).words().unwrap(), *w);
        assert_eq!(key.fold_in(&Tensor::scalar(j as i64)).words().unwrap(), *w);
    }
    let d = key.split_data(16);
    assert_eq!(d.shape(), &[16, 2]);
    let flat: Vec<u32> = d
        .to_vec::<i32>()
        .unwrap()
        .iter()
        .map(|&v| v as u32)
        .collect();
    assert_eq!(flat, a.iter().flatten().copied().collect::<Vec<_>>());
    // Different keys, different streams.
    let x = random::normal(&Key::new(1), &[8], DType::F32);
    let y = random::normal(&Key::new(2), &[8], DType::F32);
    assert_ne!(x.to_vec::<f32>().unwrap(), y.to_vec::<f32>().unwrap());
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        random::normal(&Key::new(1), &[8], DType::F32)
            .to_vec::<f32>()
            .unwrap()
    );
    assert!(split_is_empty_for_zero());
}

fn split_is_empty_for_zero() -> bool {
    Key::new(5).split(0).is_empty() && Key::new(5).split_data(0).shape() == [0, 2]
}

/// Mean, variance, skewness and excess kurtosis.
fn moments(v: &[f64]) -> (f64, f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let (mut m2, mut m3, mut m4) = (0.0, 0.0, 0.0);
    for &x in v {
        let d = x - mean;
        m2 += d * d;
        m3 += d * d * d;
        m4 += d * d * d * d;
    }
    let (m2, m3, m4) = (m2 / n, m3 / n, m4 / n);
    (mean, m2, m3 / m2.powf(1.5), m4 / (m2 * m2) - 3.0)
}

/// The Kolmogorov–Smirnov statistic of `v` against the continuous CDF `cdf`
/// (evaluated on the sorted samples at once).
fn ks(v: &[f64], cdf: impl Fn(&[f64]) -> Vec<f64>) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let f = cdf(&s);
    let n = s.len() as f64;
    f.iter()
        .enumerate()
        .map(|(i, &fi)| (fi - i as f64 / n).max((i + 1) as f64 / n - fi))
        .fold(0.0, f64::max)
}

/// The standard normal CDF through jitfuse's own (libm, f64) erf.
fn normal_cdf(x: &[f64]) -> Vec<f64> {
    let t = Tensor::from_vec(x.to_vec(), &[x.len()]).unwrap();
    let e = (t * std::f64::consts::FRAC_1_SQRT_2).erf();
    e.to_vec::<f64>()
        .unwrap()
        .iter()
        .map(|e| 0.5 * (1.0 + e))
        .collect()
}

fn as_f64(t: &Tensor) -> Vec<f64> {
    crate::common::to_f64s(t)
}

const N: usize = 1_000_000;
/// KS critical value at the 0.1 % level, times sqrt(n).
const KS_999: f64 = 1.95;

#[test]
fn normal_has_the_moments_and_distribution_of_a_standard_normal() {
    let n = N as f64;
    for (dtype, seed) in [(DType::F32, 7), (DType::F64, 8)] {
        let v = as_f64(&random::normal(&Key::new(seed), &[N], dtype));
        assert!(v.iter().all(|x| x.is_finite()));
        let (mean, var, skew, kurt) = moments(&v);
        let what = format!("{dtype}: mean {mean}, var {var}, skew {skew}, kurt {kurt}");
        assert!(mean.abs() < 5.0 / n.sqrt(), "{what}");
        assert!((var - 1.0).abs() < 5.0 * (2.0 / n).sqrt(), "{what}");
        assert!(skew.abs() < 5.0 * (6.0 / n).sqrt(), "{what}");
        assert!(kurt.abs() < 5.0 * (24.0 / n).sqrt(), "{what}");
        let d = ks(&v, normal_cdf);
        assert!(d < KS_999 / n.sqrt(), "{dtype}: KS statistic {d}");
        // Tails are reached (P(|x| > 4) = 6.3e-5: ~63 of 10^6) but stay finite.
        let far = v.iter().filter(|x| x.abs() > 4.0).count();
        assert!((20..150).contains(&far), "{dtype}: {far} beyond 4 sigma");
    }
}

#[test]
fn uniform_has_the_moments_and_distribution_of_its_interval() {
    let n = N as f64;
    for (dtype, lo, hi, seed) in [
        (DType::F32, 0.0, 1.0, 1),
        (DType::F64, 0.0, 1.0, 2),
        (DType::F32, -2.0, 3.0, 3),
        (DType::F64, -0.5, 0.25, 4),
    ] {
        let t = random::uniform(&Key::new(seed), &[N], dtype, lo, hi);
        assert_eq!(t.dtype(), dtype);
        let v = as_f64(&t);
        assert!(
            v.iter().all(|&x| lo <= x && x < hi),
            "{dtype} in [{lo}, {hi})"
        );
        let w = hi - lo;
        let (mean, var, skew, kurt) = moments(&v);
        let what = format!("{dtype} [{lo}, {hi}): mean {mean}, var {var}, skew {skew}");
        assert!(
            (mean - (lo + hi) / 2.0).abs() < 5.0 * (w * w / 12.0 / n).sqrt(),
            "{what}"
        );
        let var_se = w * w * ((1.0 / 80.0 - 1.0 / 144.0) / n).sqrt();
        assert!((var - w * w / 12.0).abs() < 5.0 * var_se, "{what}");
        assert!(skew.abs() < 5.0 * (6.0 / n).sqrt(), "{what}");
        assert!((kurt + 1.2).abs() < 0.02, "{what}: excess kurtosis {kurt}");
        let d = ks(&v, |s| s.iter().map(|x| (x - lo) / w).collect());
        assert!(d < KS_999 / n.sqrt(), "{what}: KS statistic {d}");
    }
    // [0, 1) in f32 is a multiple of 2^-23: JAX's mantissa construction.
    let u = random::uniform(&Key::new(9), &[1000], DType::F32, 0.0, 1.0);
    for x in u.to_vec::<f32>().unwrap() {
        let m = x * (1u32 << 23) as f32;
        assert_eq!(m, m.floor());
    }
}

#[test]
fn bernoulli_frequency_matches_p() {
    let n = N as f64;
    for (p, seed) in [(0.3, 11), (0.5, 12), (0.999, 13)] {
        let m = random::bernoulli(&Key::new(seed), p, &[N]);
        assert_eq!(m.dtype(), DType::Bool);
        let k = m.to_vec::<bool>().unwrap().iter().filter(|&&b| b).count() as f64;
        let se = (p * (1.0 - p) / n).sqrt();
        assert!((k / n - p).abs() < 5.0 * se, "p {p}: frequency {}", k / n);
    }
    let key = Key::new(14);
    assert!(random::bernoulli(&key, 0.0, &[1000])
        .to_vec::<bool>()
        .unwrap()
        .iter()
        .all(|b| !b));
    assert!(random::bernoulli(&key, 1.0, &[1000])
        .to_vec::<bool>()
        .unwrap()
        .iter()
        .all(|b| *b));
    // p as a tensor broadcast over the shape: row r true with probability p[r].
    let p = Tensor::from_vec(vec![0.1f32, 0.9], &[2, 1]).unwrap();
    let m = random::bernoulli(&key, &p, &[2, 100_000]).cast(DType::F64);
    let rows = m.mean(vec![1]).to_vec::<f64>().unwrap();
    assert!(
        (rows[0] - 0.1).abs() < 0.005 && (rows[1] - 0.9).abs() < 0.005,
        "{rows:?}"
    );
}

/// Every kind of random value, with keys split, folded in and used twice.
fn draws(key: &Key, x: &Tensor) -> Vec<Tensor> {
    let s = x.shape();
    let ks = key.split(3);
    vec![
        random::normal(key, s, DType::F32),
        random::normal(key, s, DType::F64),
        random::uniform(&ks[0], s, DType::F32, -2.0, 3.0),
        random::uniform(&ks[0], s, DType::F64, 0.0, 1.0),
        random::bits(&ks[1], s, DType::I32),
        random::bits(&ks[1], s, DType::I64),
        random::bernoulli(&ks[2], 0.3, s),
        key.fold_in(7u32).into_data(),
        ks[2].fold_in(&x.sum_all().cast(DType::I32)).into_data(),
        // Consumers fused into kernels: correctly rounded, so the same bits too.
        random::normal(key, s, DType::F32) * 2.0 + x,
        select(&random::bernoulli(&ks[2], 0.3, s), x / 0.7, 0.0),
    ]
}

#[jit]
fn jitted_draws(key: &Key, x: &Tensor) -> Vec<Tensor> {
    draws(key, x)
}

#[test]
fn eager_and_jitted_values_agree_bit_for_bit() {
    let shapes: [&[usize]; 10] = [
        &[],
        &[0],
        &[1],
        &[7],
        &[3, 5],
        &[2, 0, 3],
        &[33, 17],
        &[1001],
        &[4, 1, 9],
        &[70_001],
    ];
    for (i, s) in shapes.iter().enumerate() {
        let x = Tensor::ones(s, DType::F32);
        let key = Key::new(100 + i as u64);
        let eager = draws(&key, &x);
        let jitted = jitted_draws(&key, &x);
        assert_eq!(eager.len(), jitted.len());
        for (k, (e, j)) in eager.iter().zip(&jitted).enumerate() {
            assert_eq!(e.shape(), j.shape(), "shape {s:?}, draw {k}");
            assert_eq!(e.dtype(), j.dtype(), "shape {s:?}, draw {k}");
            assert_eq!(bits(e), bits(j), "shape {s:?}, draw {k}");
        }
    }
}

#[jit]
fn add_noise(x: &Tensor, key: &Key, scale: f32) -> Tensor {
    x + scale * random::normal(key, x.shape(), x.dtype())
}

/// One step that uses a key it owns and returns the next one.
#[jit]
fn noisy_step(x: &Tensor, key: Key) -> (Tensor, Key) {
    let ks = key.split(2);
    (
        x + random::uniform(&ks[1], x.shape(), x.dtype(), 0.0, 1.0),
        ks[0].clone(),
    )
}

#[test]
fn a_new_key_is_a_new_value_not_a_recompile() {
    let x = Tensor::zeros(&[5, 3], DType::F32);
    let mut seen = Vec::new();
    for seed in 0..4 {
        let y = add_noise(&x, &Key::new(seed), 0.5).to_vec::<f32>().unwrap();
        assert!(
            !seen.contains(&y),
            "key {seed} repeats an earlier key's values"
        );
        seen.push(y);
    }
    assert_eq!(add_noise::cache_stats().misses, 1);
    let again = add_noise(&x, &Key::new(2), 0.5).to_vec::<f32>().unwrap();
    assert_eq!(again, seen[2], "the same key gives the same values");

    // A training-loop pattern: the key is threaded through the steps, by value.
    let mut key = Key::new(77);
    let mut outs = Vec::new();
    for _ in 0..5 {
        let (y, next) = noisy_step(&x, key);
        outs.push(y.to_vec::<f32>().unwrap());
        key = next;
    }
    assert_eq!(noisy_step::cache_stats().misses, 1);
    outs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    outs.dedup();
    assert_eq!(outs.len(), 5, "every step drew new values");
    // ... and it is the eager computation's key chain.
    let mut k = Key::new(77);
    for _ in 0..5 {
        k = k.split(2)[0].clone();
    }
    assert_eq!(key.words().unwrap(), k.words().unwrap());
}

#[jit]
fn loop_of_draws(key: &Key, x: &Tensor) -> Tensor {
    fori_loop(
        0,
        4,
        |i, acc: Tensor| acc + random::normal(&key.fold_in(i), x.shape(), x.dtype()),
        x.clone(),
    )
}

#[test]
fn keys_folded_with_a_loop_counter_inside_compiled_loops() {
    let x = Tensor::zeros(&[6], DType::F64);
    let key = Key::new(5);
    let got = loop_of_draws(&key, &x);
    let mut want = x.clone();
    for i in 0..4u32 {
        want = want + random::normal(&key.fold_in(i), &[6], DType::F64);
    }
    assert_eq!(bits(&got), bits(&want));
}

/// Inverted dropout: keep each element with probability `1 - rate`, scaled by 1 / (1 - rate).
fn dropout(key: &Key, x: &Tensor, rate: f64) -> Tensor {
    let keep = random::bernoulli(key, 1.0 - rate, x.shape());
    select(&keep, x / (1.0 - rate), 0.0)
}

fn dropout_loss(w: &Tensor, x: &Tensor, c: &Tensor, key: &Key) -> Tensor {
    (dropout(key, &(x * w), 0.25) * c).sum_all()
}

#[jit]
fn dropout_step(w: Tensor, x: &Tensor, c: &Tensor, key: &Key) -> (Tensor, Tensor, Tensor) {
    let (l, g) = value_and_grad(|w: &Tensor| dropout_loss(w, x, c, key), &w);
    (w - 0.1 * &g, l, g)
}

#[test]
fn dropout_in_a_jitted_training_step_has_the_masked_gradient() {
    let n = 257;
    let x = Tensor::from_vec((0..n).map(|i| 0.5 + i as f32 / 100.0).collect(), &[n]).unwrap();
    let c = Tensor::from_vec((0..n).map(|i| 1.0 - (i % 7) as f32 / 5.0).collect(), &[n]).unwrap();
    let w0 = Tensor::full(&[n], 0.3, DType::F32);
    let mut w = w0.clone();
    let mut keys = Key::new(2024).split(3);
    for key in &keys {
        let (w_next, l, g) = dropout_step(w.clone(), &x, &c, key);
        // d/dw sum(mask * x * w / (1 - p) * c) = mask * (x * c / (1 - p)): the
        // mask from the same key, eagerly.
        let keep = random::bernoulli(key, 0.75, &[n]).to_vec::<bool>().unwrap();
        let (gv, xv, cv) = (
            g.to_vec::<f32>().unwrap(),
            x.to_vec::<f32>().unwrap(),
            c.to_vec::<f32>().unwrap(),
        );
        for i in 0..n {
            let want = if keep[i] { cv[i] * xv[i] / 0.75 } else { 0.0 };
            assert!(
                (gv[i] - want).abs() <= 1e-6 * want.abs(),
                "element {i}: {} vs {want}",
                gv[i]
            );
        }
        let kept = keep.iter().filter(|&&k| k).count();
        assert!(kept > n / 2 && kept < n, "{kept} of {n} kept");
        // The eager gradient is the same.
        let (le, ge) = value_and_grad(|w: &Tensor| dropout_loss(w, &x, &c, key), &w);
        assert_eq!(bits(&ge), bits(&g));
        assert!(
            (le.item::<f32>().unwrap() - l.item::<f32>().unwrap()).abs()
                <= 1e-4 * le.item::<f32>().unwrap().abs()
        );
        w = w_next;
    }
    assert_eq!(dropout_step::cache_stats().misses, 1);
    // The gradient through a random value itself is zero: only `x` moves.
    let key = keys.pop().unwrap();
    let g = grad(
        |x: &Tensor| {
            (x * random::normal(&key, &[4], DType::F64)).sum_all()
                + random::uniform(&key, &[], DType::F64, 0.0, 1.0)
        },
        &Tensor::ones(&[4], DType::F64),
    );
    assert_eq!(bits(&g), bits(&random::normal(&key, &[4], DType::F64)));
}

#[test]
fn wrong_dtypes_are_errors_naming_the_op() {
    #[jit]
    fn int_normal(key: &Key) -> Tensor {
        random::normal(key, &[3], DType::I32)
    }
    let e = int_normal::try_call(&Key::new(0)).unwrap_err();
    assert!(e.message.contains("random::normal"), "{}", e.message);
    let r = std::panic::catch_unwind(|| random::bits(&Key::new(0), &[2], DType::F32));
    assert!(r.is_err());
    let r = std::panic::catch_unwind(|| {
        random::uniform(&Key::new(0), &[2], DType::F32, 0.0, f64::INFINITY)
    });
    assert!(r.is_err());
}

#[test]
fn random_ops_print_parse_verify_and_simplify() {
    let text = "%k = param 0 : i32[2]
                %d = param 1 : i32[]
                %a = random_normal %k : f32[3,4]
                %b = random_normal %k : f32[3,4]
                %u = random_uniform[-1.5,2.0] %k : f64[5]
                %v = random_uniform[0.0,1.0] %k : f64[5]
                %bits = random_bits %k : i64[5]
                %s = random_split %k : i32[4,2]
                %f = random_fold_in %k, %d : i32[2]
                %c = random_normal %f : f32[3,4]
                %sum = add %a, %b : f32[3,4]
                %sum2 = add %sum, %c : f32[3,4]
                %uv = add %u, %v : f64[5]
                return %sum2, %uv, %bits, %s";
    let g = ir::parse(text).unwrap();
    ir::verify(&g).unwrap();
    assert_eq!(ir::parse(&g.to_text()).unwrap(), g, "text round trip");
    let s = jitfuse::internals::passes::simplify(&g);
    ir::verify(&s).unwrap();
    let t = s.to_text();
    // The same key and type: one node (same values); a different key or bounds: kept.
    assert_eq!(t.matches("random_normal").count(), 2, "{t}");
    assert_eq!(t.matches("random_uniform").count(), 2, "{t}");
    assert!(t.contains("random_uniform[-1.5,2.0]"), "{t}");
    // Compiled and interpreted: the same bits.
    let key = Key::new(31).into_data();
    let d = Tensor::scalar(3i32);
    let want = interpret::eval_graph(&g, &[key.clone(), d.clone()], &[]).unwrap();
    let exe = Executable::from_graph(s, vec![]).unwrap();
    let got = exe.run_with(&[&key, &d]).unwrap();
    for (a, b) in got.iter().zip(&want) {
        assert_eq!(bits(a), bits(b));
    }
    // Ill-typed random nodes are rejected.
    for (bad, why) in [
        (
            "%k = param 0 : i32[3]\n%a = random_normal %k : f32[2]\nreturn %a",
            "key",
        ),
        (
            "%k = param 0 : f32[2]\n%a = random_normal %k : f32[2]\nreturn %a",
            "key",
        ),
        (
            "%k = param 0 : i32[2]\n%a = random_normal %k : i32[2]\nreturn %a",
            "cannot give",
        ),
        (
            "%k = param 0 : i32[2]\n%a = random_bits %k : f32[2]\nreturn %a",
            "cannot give",
        ),
        (
            "%k = param 0 : i32[2]\n%a = random_split %k : i32[2,3]\nreturn %a",
            "cannot give",
        ),
        (
            "%k = param 0 : i32[2]\n%a = random_fold_in %k : i32[2]\nreturn %a",
            "operands",
        ),
        (
            "%k = param 0 : i32[2]\n%a = random_uniform[0.0,inf] %k : f32[2]\nreturn %a",
            "finite",
        ),
    ] {
        let g = ir::parse(bad).unwrap();
        let e = ir::verify(&g).unwrap_err();
        assert!(e.message.contains(why), "{bad}: {}", e.message);
    }
    assert!(
        ir::parse("%k = param 0 : i32[2]\n%a = random_uniform[1.0] %k : f32[2]\nreturn %a")
            .is_err()
    );
}

#[test]
fn compiled_programs_draw_in_library_steps() {
    let x = Tensor::zeros(&[5, 3], DType::F32);
    let text = add_noise::lower(&x, &Key::new(0), 0.5).unwrap().as_text();
    // One library step writes the normals into its planned buffer; the kernel reads it.
    assert!(
        text.lines()
            .any(|l| l.starts_with("step") && l.contains("library") && l.contains("random_normal")),
        "{text}"
    );
}

#[test]
fn erfinv_inverts_erf_to_f64_accuracy() {
    let erf = |x: f64| Tensor::scalar(x).erf().item::<f64>().unwrap();
    for k in 1..2000 {
        let y = k as f64 / 2000.0;
        let x = random::erfinv(y);
        assert!(
            (erf(x) - y).abs() <= 8.0 * f64::EPSILON * y,
            "y = {y}: erf(erfinv(y)) = {}",
            erf(x)
        );
        assert_eq!(random::erfinv(-y), -x);
    }
    // Against 40-digit values (mpmath's erfinv of the exact f64 argument), tails
    // included: y = 1 - 2^-e down to the last f64 below 1.
    for (y, want) in [
        (0.001, 0.000_886_227_157_466_552_123_01),
        (0.1, 0.088_855_990_494_257_691_974),
        (0.5, 0.476_936_276_204_469_873_38),
        (0.75, 0.813_419_847_597_618_541_69),
        (0.9, 1.163_087_153_676_674_162_8),
        (0.999, 2.326_753_765_513_524_493_9),
        (0.999_999_910_593_032_8, 3.780_924_371_674_210_391_3),
        (0.999_999_995_343_387_1, 4.142_938_986_641_500_938_9),
        (0.999_999_999_999_997_3, 5.590_167_006_134_414_137_7),
    ] {
        let got = random::erfinv(y);
        assert!(
            (got - want).abs() <= 4.0 * f64::EPSILON * want,
            "erfinv({y}) = {got}, not {want}"
        );
    }
    for (e, want) in [
        (3, 1.084_787_040_069_283_141_3),
        (8, 2.040_452_014_605_609_194),
        (13, 2.716_655_240_567_082_223_5),
        (20, 3.465_505_025_803_330_717_3),
        (23, 3.743_921_162_776_799_624_9),
        (24, 3.832_506_856_900_710_909_5),
        (25, 3.919_205_843_636_721_871_5),
        (26, 4.004_131_885_114_475_294_7),
        (27, 4.087_387_844_576_440_329_3),
        (30, 4.328_028_275_800_946_455_4),
        (34, 4.630_325_675_029_963_523_8),
        (41, 5.118_165_804_744_632_715_5),
        (48, 5.564_773_326_996_244_537_5),
        (53, 5.863_584_748_755_167_927_2),
    ] {
        let got = random::erfinv(1.0 - (2f64).powi(-e));
        assert!(
            (got - want).abs() <= 4.0 * f64::EPSILON * want,
            "erfinv(1 - 2^-{e}) = {got}, not {want}"
        );
    }
    assert_eq!(random::erfinv(0.0), 0.0);
    assert!(random::erfinv(-0.0).is_sign_negative());
    assert_eq!(random::erfinv(1.0), f64::INFINITY);
    assert_eq!(random::erfinv(-1.0), f64::NEG_INFINITY);
    assert!(random::erfinv(1.5).is_nan() && random::erfinv(f64::NAN).is_nan());
}
