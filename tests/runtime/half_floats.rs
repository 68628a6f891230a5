//! The 16-bit floats: conversions bit for bit against the `half` crate at every codegen
//! level (every pattern, every rounding tie, subnormals, overflow, NaN), ops that round
//! once, promotion, printing and checkpoints.

use crate::common::*;
use jitfuse::internals::codegen::{Isa, Target};
use jitfuse::{bf16, f16, DType, Tensor};

/// `f` traced on `x` and run at every level the CPU has.
fn at_every_level(x: &Tensor, f: impl Fn(&Tensor) -> Tensor) -> Vec<(Isa, Tensor)> {
    let g = trace_fn(std::slice::from_ref(x), |ts| vec![f(&ts[0])]);
    Isa::supported()
        .into_iter()
        .map(|isa| {
            let exe = compile_at(g.clone(), &Target::at(isa)).unwrap();
            (isa, exe.run_with(&[x]).unwrap().remove(0))
        })
        .collect()
}

/// The elements' bits (NaNs as one value: payloads are not specified).
fn half_bits(t: &Tensor) -> Vec<u16> {
    match t.dtype() {
        DType::BF16 => (t.to_vec::<bf16>().unwrap().iter())
            .map(|v| if v.is_nan() { 0x7fff } else { v.to_bits() })
            .collect(),
        DType::F16 => (t.to_vec::<f16>().unwrap().iter())
            .map(|v| if v.is_nan() { 0x7fff } else { v.to_bits() })
            .collect(),
        d => panic!("{d} is not a 16-bit float"),
    }
}

/// Every bit pattern of `d` as a tensor.
fn every_pattern(d: DType) -> Tensor {
    let n = 1 << 16;
    match d {
        DType::BF16 => Tensor::from_vec((0..n).map(|b| bf16::from_bits(b as u16)).collect(), &[n]),
        _ => Tensor::from_vec((0..n).map(|b| f16::from_bits(b as u16)).collect(), &[n]),
    }
    .unwrap()
}

fn to_f64(d: DType, bits: u16) -> f64 {
    match d {
        DType::BF16 => bf16::from_bits(bits).to_f64(),
        _ => f16::from_bits(bits).to_f64(),
    }
}

/// f64 values around every finite 16-bit value of `d`: the value, the midpoints to its
/// neighbours (ties, which round to even) and the values just beside them, as seen from
/// `wide` (f32: one f32 ulp beside; f64: one f64 ulp), plus values beyond the range and
/// far below it.
fn around_every_value(d: DType, wide: DType) -> Vec<f64> {
    let step = |v: f64, up: bool| -> f64 {
        if wide == DType::F32 {
            let b = (v as f32).to_bits();
            let b = if (v >= 0.0) == up { b + 1 } else { b - 1 };
            f32::from_bits(b) as f64
        } else {
            let b = v.to_bits();
            f64::from_bits(if (v >= 0.0) == up { b + 1 } else { b - 1 })
        }
    };
    let mut out = vec![1e300, -1e300, 1e-300, -1e-300, 0.0, -0.0];
    for bits in 0..=u16::MAX {
        let v = to_f64(d, bits);
        let next = to_f64(d, bits.wrapping_add(1));
        if !v.is_finite() {
            continue;
        }
        out.push(v);
        if next.is_finite() && next.abs() > v.abs() {
            let mid = (v + next) / 2.0;
            out.extend([mid, step(mid, true), step(mid, false)]);
        }
    }
    if wide == DType::F32 {
        out.retain(|v| (*v as f32) as f64 == *v || v.abs() > f32::MAX as f64);
        out.iter_mut().for_each(|v| *v = *v as f32 as f64);
    }
    out
}

/// `v` rounded to `d` by its definition (an oracle apart from every conversion routine):
/// the two neighbouring values of `d` around `|v|` and their midpoint (all exact in f64),
/// nearer wins, a tie goes to the even pattern; beyond the largest finite value the next
/// power of two is the neighbour (infinity if `v` rounds to it). NaN as `half_bits`.
fn rounded_exactly(d: DType, v: f64) -> u16 {
    if v.is_nan() {
        return 0x7fff;
    }
    let inf: u16 = if d == DType::BF16 { 0x7f80 } else { 0x7c00 };
    let sign: u16 = if v.is_sign_negative() { 0x8000 } else { 0 };
    let a = v.abs();
    // The largest pattern at or below |v| (patterns of positive values are ordered).
    let (mut lo, mut hi) = (0u16, inf);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if to_f64(d, mid) <= a {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == inf {
        return sign | inf;
    }
    let below = to_f64(d, lo);
    let above = if lo + 1 == inf {
        2.0 * to_f64(d, lo) - to_f64(d, lo - 1) // max + one ulp
    } else {
        to_f64(d, lo + 1)
    };
    let m = (below + above) / 2.0;
    let up = a > m || (a == m && lo % 2 == 1);
    sign | if up { lo + 1 } else { lo }
}

#[test]
fn every_16_bit_pattern_widens_as_the_half_crate_does_at_every_level() {
    for d in [DType::BF16, DType::F16] {
        let x = every_pattern(d);
        let want: Vec<f32> = (0..=u16::MAX).map(|b| to_f64(d, b) as f32).collect();
        for (isa, got) in at_every_level(&x, |x| x.cast(DType::F32)) {
            let got = got.to_vec::<f32>().unwrap();
            for (b, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                    "{d} {b:#06x} -> f32 at {isa:?}: {g:e}, want {w:e}"
                );
            }
        }
    }
}

#[test]
fn f32_and_f64_round_to_16_bits_once_to_nearest_even_at_every_level() {
    for d in [DType::BF16, DType::F16] {
        for wide in [DType::F32, DType::F64] {
            let vals = around_every_value(d, wide);
            let x = Tensor::from_vec(vals.clone(), &[vals.len()])
                .unwrap()
                .cast(wide);
            let want = Tensor::from_vec(vals.clone(), &[vals.len()])
                .unwrap()
                .cast(d);
            // The eager cast (the interpreter, `half`'s rounding) is the oracle.
            let want_bits = half_bits(&want);
            for (k, &v) in vals.iter().enumerate() {
                assert_eq!(
                    want_bits[k],
                    rounded_exactly(d, v),
                    "interpreter: {wide} {v:e} -> {d}"
                );
            }
            for (isa, got) in at_every_level(&x, |x| x.cast(d)) {
                let got = half_bits(&got);
                for (k, (g, w)) in got.iter().zip(&want_bits).enumerate() {
                    assert!(
                        g == w,
                        "{wide} {:e} -> {d} at {isa:?}: {g:#06x}, want {w:#06x}",
                        vals[k]
                    );
                }
            }
        }
    }
}

#[test]
fn integers_and_the_other_16_bit_type_round_once_at_every_level() {
    let ints: Vec<i64> = (0..2000)
        .map(|i| (i * 7919) % 300_000 - 150_000)
        .chain([
            i32::MAX as i64,
            i32::MIN as i64,
            65519,
            65520,
            65536,
            257,
            263,
        ])
        .collect();
    for (from, x) in [
        (
            "i32",
            Tensor::vector(&ints.iter().map(|&v| v as i32).collect::<Vec<_>>()),
        ),
        ("i64", Tensor::vector(&ints)),
        ("bf16", every_pattern(DType::BF16)),
        ("f16", every_pattern(DType::F16)),
    ] {
        for d in [DType::BF16, DType::F16] {
            let want = half_bits(&x.cast(d));
            for (isa, got) in at_every_level(&x, |x| x.cast(d)) {
                assert_eq!(half_bits(&got), want, "{from} -> {d} at {isa:?}");
            }
        }
    }
}

#[test]
fn an_op_on_16_bit_floats_rounds_its_exact_result_once() {
    // Sums, differences and products of two 16-bit values are exact in f32 (and the
    // quotient and square root round once in f32 away from any 16-bit tie), so the kernels
    // give the interpreter's bits: f64 computed, rounded once.
    let mut rng = Rng::new(32);
    for d in [DType::BF16, DType::F16] {
        let a = random_tensor(&mut rng, &[1003], d, -300.0, 300.0, true);
        let b = random_tensor(&mut rng, &[1003], d, -3.0, 3.0, true);
        let g = trace_fn(&[a.clone(), b.clone()], |ts| {
            let (a, b) = (&ts[0], &ts[1]);
            vec![a + b, a - b, a * b, a / b, a.abs().sqrt(), a.maximum(b)]
        });
        check_graph(
            &g,
            &[a.clone(), b.clone()],
            EXACT,
            &format!("{d} arithmetic"),
        );
        // A fused chain keeps f32 inside its kernel and rounds once where it stores: a*b + a
        // is exact in f32 here (and in f64), so it is the exact value rounded once, where
        // rounding a*b first (op by op, as the interpreter and eager ops do) may differ.
        let g = trace_fn(&[a.clone(), b.clone()], |ts| vec![&ts[0] * &ts[1] + &ts[0]]);
        let exe = jitfuse::internals::exec::Executable::from_graph(g, vec![]).unwrap();
        let got = exe.run_with(&[&a, &b]).unwrap().remove(0);
        let (av, bv) = (to_f64s(&a), to_f64s(&b));
        let want: Vec<f64> = (av.iter().zip(&bv))
            .map(|(&x, &y)| d.round_f64(x * y + x))
            .collect();
        let got = to_f64s(&got);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                g == w || (g.is_nan() && w.is_nan()),
                "{d} a*b+a [{k}]: {g:e}, want {w:e}"
            );
        }
    }
}

#[test]
fn sums_of_16_bit_floats_accumulate_in_f32_and_round_once() {
    // 4096 ones and a bf16 epsilon: bf16 additions one by one would stop at 256.
    let x = Tensor::full(&[4, 4096], 1.0, DType::BF16);
    let s = x.sum(-1).to_vec::<bf16>().unwrap();
    assert!(s.iter().all(|v| v.to_f64() == 4096.0), "{s:?}");
    let g = trace_fn(std::slice::from_ref(&x), |ts| {
        vec![ts[0].sum(-1), ts[0].sum(0), ts[0].mean(-1)]
    });
    check_graph(&g, &[x], EXACT, "bf16 sums");
    let mut rng = Rng::new(33);
    for d in [DType::BF16, DType::F16] {
        let x = random_tensor(&mut rng, &[7, 3001], d, -2.0, 2.0, false);
        let g = trace_fn(std::slice::from_ref(&x), |ts| {
            let x = &ts[0];
            let gamma = Tensor::full(&[3001], 1.0, d);
            vec![
                x.sum(-1),
                x.sum(0),
                x.max(-1),
                x.softmax(-1),
                x.layer_norm(&gamma, None, 1e-5, -1),
            ]
        });
        // Within one unit in the last place of the exact result (f32 blocks against the
        // interpreter's f64, each rounded once), normwise for the sums (they cancel).
        check_graph_with(&g, &[x], &format!("{d} reductions"), |k, want| match k {
            0 | 1 => Tol::half_ulp(d).normwise(want),
            _ => Tol {
                abs: Tol::half_ulp(d).rel,
                ..Tol::half_ulp(d)
            },
        });
    }
}

#[test]
fn promotion_keeps_16_bit_floats_with_integers_and_scalars_and_widens_to_f32_otherwise() {
    let b = Tensor::full(&[3], 1.5, DType::BF16);
    let h = Tensor::full(&[3], 1.5, DType::F16);
    let f = Tensor::full(&[3], 1.5, DType::F32);
    let i = Tensor::vector(&[1i32, 2, 3]);
    assert_eq!((&b * 2.0).dtype(), DType::BF16);
    assert_eq!((&b + &i).dtype(), DType::BF16);
    assert_eq!((&h + &i).dtype(), DType::F16);
    assert_eq!((&b + &f).dtype(), DType::F32);
    assert_eq!((&b + &h).dtype(), DType::F32);
    assert_eq!((&b + &h).to_vec::<f32>().unwrap(), vec![3.0; 3]);
    assert_eq!(DType::promote(DType::BF16, DType::F64), Some(DType::F64));
    // A weak scalar is rounded to the tensor's type: 0.1 in bf16 is 0.10009765625.
    let t = &Tensor::full(&[1], 0.0, DType::BF16) + 0.1;
    assert_eq!(t.to_vec::<bf16>().unwrap()[0].to_f64(), 0.10009765625);
}

#[test]
fn a_16_bit_tensor_prints_the_shortest_form_that_reads_back_as_it() {
    let b = Tensor::vector(&[0.1, 1.0, -2.5, 300.0]).cast(DType::BF16);
    assert_eq!(format!("{b}"), "[  0.1   1.   -2.5 300. ]");
    let h = Tensor::vector(&[0.1, 0.2, 2.0]).cast(DType::F16);
    assert_eq!(format!("{h}"), "[0.1 0.2 2. ]");
}

#[test]
fn a_checkpoint_of_16_bit_tensors_round_trips_with_their_safetensors_dtype() {
    let dir = std::env::temp_dir().join(format!("jitfuse_half_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("half.safetensors");
    let b = every_pattern(DType::BF16);
    let h = every_pattern(DType::F16);
    jitfuse::save(&(b.clone(), h.clone()), &path).unwrap();
    let (b2, h2): (Tensor, Tensor) = jitfuse::load(&path, &(b.clone(), h.clone())).unwrap();
    assert_eq!(b2.dtype(), DType::BF16);
    assert_eq!(h2.dtype(), DType::F16);
    assert_eq!(
        b2.to_vec::<bf16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>(),
        b.to_vec::<bf16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        h2.to_vec::<f16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>(),
        h.to_vec::<f16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>()
    );
    // The header names the ecosystem's dtype strings.
    let bytes = std::fs::read(&path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
    assert!(
        header.contains("\"BF16\"") && header.contains("\"F16\""),
        "{header}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ndarray_arrays_of_16_bit_floats_convert_both_ways() {
    let a =
        ndarray::Array2::from_shape_fn((3, 4), |(i, j)| bf16::from_f32((i * 4 + j) as f32 * 0.5));
    let t = Tensor::from(&a);
    assert_eq!((t.dtype(), t.shape()), (DType::BF16, &[3usize, 4][..]));
    let back: ndarray::ArrayD<bf16> = (&t * 2.0).try_into().unwrap();
    let want: Vec<f32> = (0..12).map(|k| k as f32).collect();
    assert_eq!(back.iter().map(|v| v.to_f32()).collect::<Vec<_>>(), want);
    let h: ndarray::ArrayD<f16> = t.cast(DType::F16).try_into().unwrap();
    assert_eq!(h.shape(), &[3, 4]);
}

#[test]
fn avx512_loop_kernels_read_and_write_16_bit_floats_themselves() {
    if !Isa::supported().contains(&Isa::Avx512) {
        return;
    }
    let x = Tensor::full(&[1000], 1.5, DType::BF16);
    let y = Tensor::full(&[1000], 2.5, DType::F16);
    let g = trace_fn(&[x.clone(), y.clone()], |ts| {
        let s = ts[0].cast(DType::F32) * ts[1].cast(DType::F32);
        vec![s.cast(DType::BF16), s.cast(DType::F16), &ts[0] * 3.0]
    });
    let exe = compile_at(g, &Target::at(Isa::Avx512)).unwrap();
    let asm = exe.asm_text();
    for ins in ["vpmovzxwd", "vcvtph2ps", "vpmovdw", "vcvtps2ph"] {
        assert!(asm.contains(ins), "{ins} missing:\n{asm}");
    }
    let got = exe.run_with(&[&x, &y]).unwrap();
    assert!(to_f64s(&got[0]).iter().all(|&v| v == 3.75));
    assert!(to_f64s(&got[1]).iter().all(|&v| v == 3.75));
    assert!(to_f64s(&got[2]).iter().all(|&v| v == 4.5));
}
