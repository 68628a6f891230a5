//! AVX-512 loop kernels (runtime/src/codegen/x86) against the Cranelift kernels they replace:
//! the same bits on random elementwise programs (tails of every length, broadcasts in 1-3
//! dims, permuted outer dims, special values, tiled transcendentals, bool masks), and the
//! fallback to Cranelift where they do not apply.

use crate::common::*;
use jitfuse::internals::codegen::{Isa, Target};
use jitfuse::internals::ir::Graph;
use jitfuse::{DType, Tensor};

const ZMM_MARK: &str = "AVX-512 loop kernel";

/// Compile `g` at `level` (AVX2: Cranelift kernels; AVX-512: this backend where it applies)
/// and run it; also returns how many kernels were emitted as AVX-512 code.
fn run_at(level: Isa, g: &Graph, args: &[Tensor]) -> (Vec<Tensor>, usize) {
    let exe = compile_at(g.clone(), &Target::at(level));
    let exe = exe.unwrap();
    let zmm = exe.asm_text().matches(ZMM_MARK).count();
    let refs: Vec<&Tensor> = args.iter().collect();
    (exe.run_with(&refs).unwrap(), zmm)
}

/// The reference interpreter's outputs of `g` on `args`.
fn interpreted(g: &Graph, args: &[Tensor]) -> Vec<Tensor> {
    jitfuse::internals::interpret::eval_graph(g, args, &[]).unwrap()
}

/// The bits of an f32 or f64 tensor's elements (f64 bits of the value for f32, so that they
/// print alike), with every NaN as one value.
fn bits(t: &Tensor) -> Vec<(u64, f64)> {
    let key = |nan: bool, b: u64, v: f64| if nan { (1, v) } else { (b, v) };
    match t.dtype() {
        DType::F64 => t
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|v| key(v.is_nan(), v.to_bits(), *v))
            .collect(),
        _ => t
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| key(v.is_nan(), v.to_bits() as u64, *v as f64))
            .collect(),
    }
}

/// Panics at the first element where `got` (x86) and `want` (Cranelift) differ.
fn same_bits(got: &Tensor, want: &Tensor, what: &str) {
    assert_eq!(got.dtype(), want.dtype(), "{what}");
    let (x, y) = (bits(got), bits(want));
    assert_eq!(x.len(), y.len(), "{what}");
    if let Some(i) = (0..x.len()).find(|&i| x[i].0 != y[i].0) {
        panic!(
            "{what}: element {i}: x86 {:e} ({:#x}), Cranelift {:e} ({:#x})",
            x[i].1, x[i].0, y[i].1, y[i].0
        );
    }
}

/// How a row kernel's output is held to the Cranelift kernel's and the interpreter's: its
/// sums add 16 lanes at a time, not 4 (nor in f64), so their last bits differ. `Rel` for results that do not cancel (softmax,
/// sums of positive terms), whose small elements an absolute floor would pass whatever their
/// value; `Norm` (normwise on the output's largest element) for results that do (sums of
/// signed terms, centred or normalised values, log-probabilities); `Exact` for max and min.
#[derive(Clone, Copy, Debug)]
enum Cmp {
    Exact,
    Rel,
    Norm,
}

fn close_to_cranelift(got: &Tensor, want: &Tensor, cmp: Cmp, what: &str) {
    close_to(got, want, cmp, &format!("{what} (x86 against Cranelift)"));
}

/// The x86 levels this CPU runs, with the name their listings give the code.
fn x86_levels() -> Vec<(Isa, &'static str)> {
    [(Isa::Avx2, "AVX2"), (Isa::Avx512, "AVX-512")]
        .into_iter()
        .filter(|l| l.0 <= Isa::detected())
        .collect()
}

/// `got` against `want` under `cmp`, with bounds for the dtype's precision (f64: the sums'
/// association, 16 or 8 lanes against 2, moves the last bits of a 4100-term sum by ~1e-13).
fn close_to(got: &Tensor, want: &Tensor, cmp: Cmp, what: &str) {
    let (rel, abs) = match want.dtype() {
        DType::F64 => (1e-11, 1e-13),
        _ => (2e-5, 1e-6),
    };
    let tol = match cmp {
        Cmp::Exact => Tol { rel: 0.0, abs: 0.0 },
        Cmp::Rel => Tol::rel(want.dtype(), rel),
        Cmp::Norm => Tol { rel, abs }.normwise(want),
    };
    assert_close(got, want, tol, what);
}

/// `specials` as dtype `dt` (f32 or f64: the same values).
fn specials_as(rng: &mut Rng, shape: &[usize], dt: DType) -> Tensor {
    let t = specials(rng, shape);
    match dt {
        DType::F64 => {
            let v = t.to_vec::<f32>().unwrap();
            let v: Vec<f64> = v.iter().map(|&x| x as f64).collect();
            Tensor::from_vec(v, shape).unwrap()
        }
        _ => t,
    }
}

/// Values that take the edge paths of each op: NaN, infinities, signed zeros, denormals, and
/// ties of max/min.
fn specials(rng: &mut Rng, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let pick = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-40,
        -1e-40,
        1.0,
        -1.0,
        0.5,
        2.5,
        -2.5,
        3.0,
    ];
    let v: Vec<f32> = (0..n)
        .map(|_| {
            if rng.chance(0.3) {
                pick[rng.below(pick.len())]
            } else {
                rng.uniform(-4.0, 4.0) as f32
            }
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// The argument shapes the random programs cycle through: tails of every length, broadcasts
/// in 1-3 dims, 1-4 dims.
fn program_shapes() -> Vec<Vec<Vec<usize>>> {
    vec![
        vec![vec![1], vec![1], vec![1]],
        vec![vec![15], vec![15], vec![1]],
        vec![vec![16], vec![1], vec![16]],
        vec![vec![17], vec![17], vec![17]],
        vec![vec![63], vec![63], vec![]],
        vec![vec![64], vec![64], vec![64]],
        vec![vec![65], vec![1], vec![65]],
        vec![vec![1000], vec![1000], vec![1]],
        vec![vec![3075], vec![3075], vec![3075]],
        vec![vec![7, 33], vec![33], vec![7, 1]],
        vec![vec![33, 7], vec![1, 7], vec![33, 1]],
        vec![vec![3, 5, 130], vec![5, 1], vec![3, 1, 130]],
        vec![vec![2, 3, 4, 70], vec![3, 1, 70], vec![2, 1, 4, 1]],
        vec![vec![5, 1300], vec![1300], vec![5, 1]],
    ]
}

/// The graph of a random program on `args`: each pick `p` (the `k`-th) applies `op(p, a, b)`
/// to two values of the pool so far (the arguments, then every result); the outputs are the
/// last, the third-last and the middle value.
fn pooled_program(
    args: &[Tensor],
    picks: &[usize],
    op: impl Fn(usize, &Tensor, &Tensor) -> Tensor,
) -> Graph {
    trace_fn(args, |ts| {
        let mut pool: Vec<Tensor> = ts.to_vec();
        for (k, &p) in picks.iter().enumerate() {
            let v = op(p, &pool[p % pool.len()], &pool[(p / 7 + k) % pool.len()]);
            pool.push(v);
        }
        let n = pool.len();
        vec![
            pool[n - 1].clone(),
            pool[n - 3].clone(),
            pool[n / 2].clone(),
        ]
    })
}

/// Random elementwise program number `trial` of the AVX-512 tests (every op the backend
/// emits, the shapes cycling through tails, broadcasts and 1-4 dims) and its arguments, of
/// dtype `dt` (f32 or f64).
fn random_program(rng: &mut Rng, trial: usize, dt: DType) -> (Graph, Vec<Tensor>, Vec<Vec<usize>>) {
    let shapes = program_shapes();
    {
        let sh = &shapes[trial % shapes.len()];
        let args: Vec<Tensor> = sh.iter().map(|s| specials_as(rng, s, dt)).collect();
        let picks: Vec<usize> = (0..20).map(|_| rng.below(10_000)).collect();
        let g = pooled_program(&args, &picks, |p, a, b| {
            let (a, b) = (a.clone(), b.clone());
            match (p / 13) % 27 {
                0 => &a + &b,
                1 => &a - &b,
                2 => &a * &b,
                3 => &a / &b,
                4 => a.maximum(&b),
                5 => a.minimum(&b),
                6 => a.maximum(0.5),
                7 => a.full_like(1.5).maximum(&a) + a.full_like(-0.0).minimum(&b),
                8 => a.minimum(-0.0),
                9 => -&a,
                10 => a.abs(),
                11 => a.sqrt(),
                12 => a.rsqrt() + a.recip(),
                13 => a.square(),
                14 => a.relu(),
                15 => a.floor(),
                16 => jitfuse::select(a.gt(&b), &a, &b * 0.5),
                17 => jitfuse::select(a.le(&b).logical_and(&a.ne(0.5)), &b, 3.0),
                18 => jitfuse::select(!a.eq(&b).logical_or(&a.lt(-1.0)), -&a, &b),
                19 => a.ge(&b).cast(dt) * &b,
                20 => a.cast(DType::Bool).cast(dt) + jitfuse::stop_gradient(&b),
                21 => (&a * 0.25).tanh() + (&b * 0.1).exp(),
                22 => 2.0 - &a / 3.0,
                24 => (a.abs() * 3.0).ln() - b.erf(),
                25 => (&a * 2.0).sin() + b.cos(),
                26 => (&a * 0.2 + &b).exp().ln(),
                _ => a.sigmoid() * b.minimum(4.0),
            }
        });
        (g, args, sh.clone())
    }
}

/// Random programs built from every op the backend emits; each result compared bit for bit
/// between the AVX-512 and the Cranelift kernels, and against the interpreter.
#[test]
fn avx512_kernels_match_cranelift_bit_for_bit() {
    if Isa::detected() < Isa::Avx512 {
        // Nothing to compare on this CPU: no AVX-512 code may then run.
        assert_ne!(Target::at(Isa::Avx512).isa, Isa::Avx512);
        return;
    }
    let mut rng = Rng::new(21);
    let mut zmm_kernels = 0;
    for trial in 0..48 {
        let (g, args, sh) = random_program(&mut rng, trial, DType::F32);
        let what = format!("trial {trial} shapes {sh:?}");
        // Differences of random terms cancel anywhere: a normwise bound.
        check_graph_with(&g, &args, &what, |_, want| {
            Tol {
                rel: 1e-4,
                abs: 1e-6,
            }
            .normwise(want)
        });
        let (want, none) = run_at(Isa::Portable, &g, &args);
        assert_eq!(none, 0, "{what}: AVX-512 code at the AVX2 level");
        let (got, zmm) = run_at(Isa::Avx512, &g, &args);
        zmm_kernels += zmm;
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            same_bits(a, b, &format!("{what} output {k}\n{g}"));
        }
    }
    // Most programs fuse into one or two loop kernels, all of which the backend takes.
    assert!(zmm_kernels >= 48, "{zmm_kernels} AVX-512 kernels");
}

/// The same random programs as AVX2 loop kernels (8 lanes, masks in vector registers, the tail
/// under `vmaskmovps`) against the portable Cranelift kernels: the same bits, and most kernels
/// taken by the AVX2 emitter.
#[test]
fn avx2_kernels_match_cranelift_bit_for_bit() {
    if Isa::detected() < Isa::Avx2 {
        return;
    }
    let mut rng = Rng::new(22);
    let mut avx2_kernels = 0;
    for trial in 0..56 {
        let (g, args, sh) = random_program(&mut rng, trial, DType::F32);
        let what = format!("trial {trial} shapes {sh:?}");
        let (want, _) = run_at(Isa::Portable, &g, &args);
        let exe = compile_at(g.clone(), &Target::at(Isa::Avx2)).unwrap();
        avx2_kernels += exe.asm_text().matches("AVX2 loop kernel").count();
        let refs: Vec<&Tensor> = args.iter().collect();
        let got = exe.run_with(&refs).unwrap();
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            same_bits(a, b, &format!("{what} output {k}\n{g}"));
        }
        // Tiled through the AVX2 micro-kernels first: the same bits again.
        let tiled = Target::at(Isa::Avx2).tiled_first(true);
        let exe = compile_at(g.clone(), &tiled).unwrap();
        let got = exe.run_with(&refs).unwrap();
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            same_bits(a, b, &format!("{what} output {k}, tiled\n{g}"));
        }
    }
    assert!(avx2_kernels >= 40, "{avx2_kernels} AVX2 kernels");
}

/// The random programs in f64 at every x86 level the CPU runs (qword lanes: 8 per zmm, 4 per
/// ymm; `pd` forms; the AVX2 tail mask from the dword table at 8 - 2m; the f64 functions of
/// `math.rs` traced from `micro.rs`'s generic code) against the portable Cranelift kernels:
/// the same bits, and most kernels taken by the x86 emitter (sin and cos have no traced f64
/// form: their kernels stay Cranelift code). These programs chain ln, exp and division by
/// 1e-40 into sin: last-bit differences from the interpreter's std functions grow without
/// bound, so the interpreter holds f64 kernels in the fuzzer, which filters such programs.
#[test]
fn x86_f64_kernels_match_cranelift_bit_for_bit() {
    let mut rng = Rng::new(23);
    for (level, name) in x86_levels() {
        let mark = format!("{name} loop kernel");
        let (mut taken, mut kernels) = (0, 0);
        for trial in 0..42 {
            let (g, args, sh) = random_program(&mut rng, trial, DType::F64);
            let what = format!("{name} f64 trial {trial} shapes {sh:?}");
            let (want, _) = run_at(Isa::Portable, &g, &args);
            let exe = compile_at(g.clone(), &Target::at(level)).unwrap();
            let text = exe.asm_text();
            taken += text.matches(&mark).count();
            kernels += text.matches("loop kernel").count().max(1);
            let refs: Vec<&Tensor> = args.iter().collect();
            let got = exe.run_with(&refs).unwrap();
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert_eq!(a.dtype(), DType::F64, "{what}");
                same_bits(a, b, &format!("{what} output {k}\n{g}"));
            }
        }
        eprintln!("{name}: {taken} f64 kernels of the x86 emitter");
        assert!(
            taken >= 45,
            "{name}: {taken} f64 x86 kernels ({kernels} listed)"
        );
    }
}

/// Integers of dtype `dt` (i32 or i64) that take the edge paths: the extremes (where add, sub,
/// neg, abs and mul wrap), 0, 1, -1, ties, and small values of both signs.
fn int_values(rng: &mut Rng, shape: &[usize], dt: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let (min, max) = match dt {
        DType::I32 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    let pick = [min, max, min + 1, max - 1, 0, 1, -1, 2, -2, 7];
    let v: Vec<i64> = (0..n)
        .map(|_| match rng.chance(0.3) {
            true => pick[rng.below(pick.len())],
            false => rng.below(2001) as i64 - 1000,
        })
        .collect();
    match dt {
        DType::I32 => Tensor::from_vec(v.iter().map(|&x| x as i32).collect(), shape).unwrap(),
        _ => Tensor::from_vec(v, shape).unwrap(),
    }
}

/// An integer tensor's elements as i64.
fn ints(t: &Tensor) -> Vec<i64> {
    match t.dtype() {
        DType::I32 => t
            .to_vec::<i32>()
            .unwrap()
            .iter()
            .map(|&x| x as i64)
            .collect(),
        _ => t.to_vec::<i64>().unwrap(),
    }
}

/// Random elementwise program number `trial` on integers of dtype `dt` (every integer op the
/// x86 emitter takes; multiplication in i32 only), on the shapes of `random_program`.
fn random_int_program(
    rng: &mut Rng,
    trial: usize,
    dt: DType,
) -> (Graph, Vec<Tensor>, Vec<Vec<usize>>) {
    let shapes = program_shapes();
    let sh = &shapes[trial % shapes.len()];
    let args: Vec<Tensor> = sh.iter().map(|s| int_values(rng, s, dt)).collect();
    let picks: Vec<usize> = (0..16).map(|_| rng.below(10_000)).collect();
    let g = pooled_program(&args, &picks, |p, a, b| {
        let (a, b) = (a.clone(), b.clone());
        match (p / 13) % 16 {
            0 => &a + &b,
            1 => &a - &b,
            2 => a.maximum(&b),
            3 => a.minimum(&b),
            4 => -&a,
            5 => a.abs(),
            6 => a.relu(),
            7 => jitfuse::select(a.gt(&b), &a, &b - 3),
            8 => jitfuse::select(a.le(&b).logical_and(&a.ne(-1)), &b, a.full_like(7)),
            9 => jitfuse::select(!a.eq(&b).logical_or(&a.lt(2)), -&a, &b),
            10 => a.ge(&b).cast(dt) + &b,
            11 => a.cast(DType::Bool).cast(dt) - jitfuse::stop_gradient(&b),
            12 => (&a + 1000).maximum(-5).minimum(&b),
            13 => a.gt(5).logical_or(&b.le(-5)).cast(dt) - &a,
            14 if dt == DType::I32 => a.square() + &b,
            15 if dt == DType::I32 => &a * &b,
            14 => (&a - &b).abs(),
            _ => a.maximum(&b).relu() - 1,
        }
    });
    (g, args, sh.clone())
}

/// The random integer programs at every x86 level the CPU runs (i32 in dword lanes, i64 in
/// qword lanes; integer add, sub, min, max, abs, neg, compares, selects and casts with bools;
/// multiplication of i32): the Cranelift kernels' values exactly and the interpreter's, and
/// most kernels taken by the x86 emitter; i64 multiplication and integer division, which x86
/// has no vector instruction for at these levels, stay Cranelift code.
#[test]
fn x86_integer_kernels_match_cranelift_exactly() {
    let mut rng = Rng::new(27);
    for (level, name) in x86_levels() {
        for (dt, lanes) in [(DType::I32, "i32 lanes"), (DType::I64, "i64 lanes")] {
            let mark = format!("{name} loop kernel ({lanes})");
            let mut taken = 0;
            for trial in 0..28 {
                let (g, args, sh) = random_int_program(&mut rng, trial, dt);
                let what = format!("{name} {dt:?} trial {trial} shapes {sh:?}");
                let (want, _) = run_at(Isa::Portable, &g, &args);
                let exe = compile_at(g.clone(), &Target::at(level));
                let exe = exe.unwrap();
                taken += exe.asm_text().matches(&mark).count();
                let refs: Vec<&Tensor> = args.iter().collect();
                let got = exe.run_with(&refs).unwrap();
                let reference = interpreted(&g, &args);
                for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(a.dtype(), dt, "{what}");
                    assert_eq!(ints(a), ints(b), "{what} output {k} against Cranelift\n{g}");
                    assert_eq!(ints(a), ints(&reference[k]), "{what} output {k}\n{g}");
                }
            }
            eprintln!("{name}: {taken} {dt:?} kernels of the x86 emitter");
            assert!(taken >= 30, "{name}: {taken} {dt:?} x86 kernels");
        }
        // What the emitter leaves to Cranelift, still exact.
        let sh = [1000];
        let a = int_values(&mut rng, &sh, DType::I64);
        let b = int_values(&mut rng, &sh, DType::I64);
        for what in ["i64 product", "i64 quotient"] {
            let g = trace_fn(&[a.clone(), b.clone()], |t| match what {
                "i64 product" => vec![&t[0] * &t[1] + 1],
                _ => vec![&t[0] / &t[1] - 1],
            });
            let exe = compile_at(g.clone(), &Target::at(level)).unwrap();
            assert!(
                !exe.asm_text().contains("loop kernel (i64"),
                "{name} {what}"
            );
            let got = exe.run_with(&[&a, &b]).unwrap();
            let reference = interpreted(&g, &[a.clone(), b.clone()]);
            assert_eq!(ints(&got[0]), ints(&reference[0]), "{name} {what}");
        }
    }
}

/// Every element of `t` (any dtype) as bits, NaN as one value: for exact comparisons.
fn exact(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::Bool => t
            .to_vec::<bool>()
            .unwrap()
            .iter()
            .map(|&b| b as u64)
            .collect(),
        DType::I32 | DType::I64 => ints(t).iter().map(|&v| v as u64).collect(),
        _ => bits(t).iter().map(|b| b.0).collect(),
    }
}

/// Kernels reading and writing bool tensors (a byte per element) in f32, f64, i32 and i64
/// kernels and in kernels of bools only, at every x86 level the CPU runs: contiguous and
/// broadcast bool reads, bool outputs, tails of every length (the tail's bytes are copied
/// through the frame): the Cranelift kernels' results exactly, and most kernels taken.
#[test]
fn x86_kernels_read_and_write_bools() {
    let mut rng = Rng::new(28);
    for (level, name) in x86_levels() {
        let (mut taken, mut tiled_taken) = (0, 0);
        for dt in [DType::F32, DType::F64, DType::I32, DType::I64] {
            for (trial, sh) in program_shapes().into_iter().enumerate() {
                let x = match dt {
                    DType::I32 | DType::I64 => int_values(&mut rng, &sh[0], dt),
                    _ => specials_as(&mut rng, &sh[0], dt),
                };
                let n: usize = sh[1].iter().product();
                let m: Vec<bool> = (0..n).map(|_| rng.chance(0.5)).collect();
                let m = Tensor::from_vec(m, &sh[1]).unwrap();
                let args = [x, m];
                let g = trace_fn(&args, |t| {
                    let (x, m) = (&t[0], &t[1]);
                    let pos = x.gt(x.full_like(0));
                    vec![
                        pos.clone(),
                        jitfuse::select(m, x, -x),
                        m.logical_and(&pos).logical_or(&!m),
                        (!m).logical_and(&x.le(x.full_like(1))),
                    ]
                });
                let what = format!("{name} {dt:?} trial {trial} shapes {sh:?}");
                let (want, _) = run_at(Isa::Portable, &g, &args);
                let exe = compile_at(g.clone(), &Target::at(level)).unwrap();
                taken += exe
                    .asm_text()
                    .matches(&format!("{name} loop kernel"))
                    .count();
                let got = exe.run_with(&[&args[0], &args[1]]).unwrap();
                for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(a.dtype(), b.dtype(), "{what}");
                    assert_eq!(exact(a), exact(b), "{what} output {k}\n{g}");
                }
                if dt == DType::F32 {
                    // Tiled tile by tile (a transcendental through its micro-kernel): the
                    // bool accesses, their tails included, per tile.
                    let g = trace_fn(&args, |t| {
                        let (x, m) = (&t[0], &t[1]);
                        vec![
                            jitfuse::select(m, &(x * 0.5).tanh(), x),
                            x.tanh().gt(x.full_like(0.25)).logical_or(m),
                        ]
                    });
                    let (want, _) = run_at(Isa::Portable, &g, &args);
                    let tiled = Target::at(level).tiled_first(true);
                    let exe = compile_at(g.clone(), &tiled).unwrap();
                    let text = exe.asm_text();
                    tiled_taken += (text.lines())
                        .filter(|l| l.starts_with(&format!("{name} loop kernel")))
                        .filter(|l| !l.contains(" 0 micro-kernel calls"))
                        .count();
                    let got = exe.run_with(&[&args[0], &args[1]]).unwrap();
                    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(exact(a), exact(b), "{what} tiled output {k}\n{g}");
                    }
                }
            }
        }
        eprintln!("{name}: {taken} x86 kernels with bool accesses, {tiled_taken} tiled");
        assert!(tiled_taken >= 3, "{name}: {tiled_taken} tiled x86 kernels");
        assert!(taken >= 56, "{name}: {taken} x86 kernels");
    }
}

/// Each function with a traced form, alone on values across its whole range (log-uniform
/// magnitudes of both signs down to subnormals, the edges of its branches and clamps, NaN,
/// infinities, signed zeros), in f32 and f64, as x86 code at every level the CPU runs: the
/// bits of the Cranelift kernels, which lower the same trace (`traced.rs`).
#[test]
fn x86_functions_match_cranelift_bit_for_bit() {
    let mut rng = Rng::new(24);
    let mut v: Vec<f64> = vec![
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        5e-324,
        -5e-324,
        1e-40,
        f64::MIN_POSITIVE,
        f64::MAX,
        0.5493,
        0.5492999999999999,
        20.0,
        20.000000000000004,
        88.7,
        89.0,
        709.78,
        710.0,
        -103.9,
        -745.1,
        -746.0,
        -1.0,
        -0.999,
        1.2,
        1.1999999999999997,
        3.92,
        5.93,
        -5.93,
        30.0,
        -60.0,
    ];
    while v.len() < 4099 {
        let mag = 10f64.powf(rng.uniform(-310.0, 4.0));
        v.push(if rng.chance(0.5) { -mag } else { mag });
    }
    let f32s: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    for x in [
        Tensor::from_vec(v, &[4099]).unwrap(),
        Tensor::from_vec(f32s, &[4099]).unwrap(),
    ] {
        let dt = x.dtype();
        for (level, name) in x86_levels() {
            for (op, f) in [
                ("exp", Tensor::exp as fn(&Tensor) -> Tensor),
                ("ln", |t: &Tensor| t.abs().ln()),
                ("tanh", Tensor::tanh),
                ("sigmoid", Tensor::sigmoid),
                ("erf", Tensor::erf),
                ("log1p", Tensor::log1p),
                ("expm1", Tensor::expm1),
            ] {
                let g = trace_fn(std::slice::from_ref(&x), |ts| vec![f(&ts[0])]);
                let target = Target::at(level);
                let exe = compile_at(g.clone(), &target).unwrap();
                assert!(
                    exe.asm_text().contains(&format!("{name} loop kernel")),
                    "{name} {dt} {op}: not x86 code\n{}",
                    exe.asm_text()
                );
                let got = exe.run_with(&[&x]).unwrap();
                let (want, _) = run_at(Isa::Portable, &g, std::slice::from_ref(&x));
                same_bits(&got[0], &want[0], &format!("{name} {dt} {op}"));
                // Tiled through the micro-kernels (f32): the same bits again.
                let tiled = compile_at(g, &target.tiled_first(true));
                let got = tiled.unwrap().run_with(&[&x]).unwrap();
                same_bits(&got[0], &want[0], &format!("{name} {dt} {op}, tiled"));
            }
        }
    }
}

/// pow, the traced function of two arguments, inline in x86 loop kernels at every level the
/// CPU runs: the Cranelift kernels' bits on every pair of special values (zeros, infinities,
/// NaN, ±1, integers odd and even, halves, the edges of overflow and underflow) and on random
/// pairs, negative bases with integer exponents among them, f32 and f64.
#[test]
fn x86_pow_matches_cranelift_bit_for_bit() {
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        1.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e-40,
        5e-324,
        1e300,
        16777217.0,
        8388609.0,
        88.7,
        -149.5,
        1100.0,
    ];
    let mut rng = Rng::new(31);
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for &x in &specials {
        for &y in &specials {
            xs.push(x);
            ys.push(y);
        }
    }
    while xs.len() < 3001 {
        let x = 10f64.powf(rng.uniform(-40.0, 40.0));
        let negative = rng.chance(0.3);
        xs.push(if negative { -x } else { x });
        let y = rng.uniform(-60.0, 60.0);
        ys.push(if negative { y.round() } else { y });
    }
    let n = xs.len();
    let (x32, y32): (Vec<f32>, Vec<f32>) = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| (x as f32, y as f32))
        .unzip();
    for args in [
        [
            Tensor::from_vec(xs.clone(), &[n]).unwrap(),
            Tensor::from_vec(ys.clone(), &[n]).unwrap(),
        ],
        [
            Tensor::from_vec(x32.clone(), &[n]).unwrap(),
            Tensor::from_vec(y32.clone(), &[n]).unwrap(),
        ],
    ] {
        let dt = args[0].dtype();
        let g = trace_fn(&args, |ts| vec![ts[0].powf(&ts[1])]);
        let (want, _) = run_at(Isa::Portable, &g, &args);
        for (level, name) in x86_levels() {
            let exe = compile_at(g.clone(), &Target::at(level)).unwrap();
            assert!(
                exe.asm_text().contains(&format!("{name} loop kernel")),
                "{name} {dt} pow: not x86 code\n{}",
                exe.asm_text()
            );
            let got = exe.run_with(&[&args[0], &args[1]]).unwrap();
            same_bits(&got[0], &want[0], &format!("{name} {dt} pow"));
        }
    }
}

/// Outer dimensions walked in a permuted order (the inner run contiguous), a range split over
/// threads, and a program with more live values than registers (left to Cranelift): all
/// bit-identical to the Cranelift kernels.
#[test]
fn avx512_kernels_walk_permuted_rows_and_fall_back_when_registers_run_out() {
    if Isa::detected() < Isa::Avx512 {
        return;
    }
    let mut rng = Rng::new(22);
    let x = specials(&mut rng, &[4, 6, 75]);
    let y = specials(&mut rng, &[6, 1, 75]);
    let g = trace_fn(&[x.clone(), y.clone()], |ts| {
        let xt = ts[0].transpose(&[1, 0, 2]);
        vec![(&xt * &ts[1] + 1.0).maximum(&xt)]
    });
    let args = [x, y];
    let (want, _) = run_at(Isa::Portable, &g, &args);
    let (got, zmm) = run_at(Isa::Avx512, &g, &args);
    assert_eq!(zmm, 1, "{g}");
    same_bits(&got[0], &want[0], "permuted");
    check_graph(&g, &args, Tol { rel: 0.0, abs: 0.0 }, "permuted");

    // Large enough to be split over the pool: each part starts mid-range.
    let a = specials(&mut rng, &[300_007]);
    let g = trace_fn(&[a.clone()], |ts| vec![(&ts[0] * 3.0 - 1.0).abs().sqrt()]);
    let args = [a];
    let (want, _) = run_at(Isa::Portable, &g, &args);
    let (got, zmm) = run_at(Isa::Avx512, &g, &args);
    assert_eq!(zmm, 1);
    same_bits(&got[0], &want[0], "split");
    // Two compiled kernels agreeing is not enough: both against the interpreter (+ - * and
    // sqrt round once, as there).
    assert_close(&got[0], &interpreted(&g, &args)[0], EXACT, "split");

    // 33 values live at once: more than the 32 vector registers (in 64
    // nodes, the most one kernel holds: `MAX_KERNEL_NODES`; two sums
    // of 17 and 16 products).
    let a = specials(&mut rng, &[333]);
    let g = trace_fn(&[a.clone()], |ts| {
        let parts: Vec<Tensor> = (0..33).map(|i| &ts[0] * (i as f64 + 0.5)).collect();
        let sum = |ps: &[Tensor]| {
            let mut acc = ps[ps.len() - 1].clone();
            for p in ps.iter().rev().skip(1) {
                acc = &acc + p;
            }
            acc
        };
        vec![sum(&parts[..17]), sum(&parts[17..])]
    });
    let args = [a];
    let (want, _) = run_at(Isa::Portable, &g, &args);
    let (got, zmm) = run_at(Isa::Avx512, &g, &args);
    assert_eq!(zmm, 0, "33 live values cannot be in registers:\n{g}");
    same_bits(&got[1], &want[1], "33 live values");
    same_bits(&got[0], &want[0], "33 live values");
    let reference = interpreted(&g, &args);
    for k in 0..2 {
        assert_close(&got[k], &reference[k], EXACT, "33 live values");
    }
}

/// Empty dimensions anywhere: nothing is read or written (the row odometer must not start).
#[test]
fn avx512_kernels_of_empty_shapes_do_nothing() {
    let mut rng = Rng::new(23);
    for shape in [vec![3, 0, 70], vec![0, 40], vec![5, 7, 0], vec![0]] {
        let x = specials(&mut rng, &shape);
        let g = trace_fn(&[x.clone()], |ts| {
            vec![(&ts[0] * 2.0 + 1.0).tanh(), ts[0].sum(shape.len() - 1)]
        });
        let args = [x];
        let (got, _) = run_at(Isa::Avx512, &g, &args);
        let (want, _) = run_at(Isa::Portable, &g, &args);
        let reference = interpreted(&g, &args);
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            assert_eq!(a.shape(), b.shape());
            same_bits(a, b, &format!("empty {shape:?}"));
            // (A sum over an empty axis is zeros: its rows must be written.)
            assert_close(a, &reference[k], EXACT, &format!("empty {shape:?}"));
        }
    }
}

/// Row sums (f32, contiguous reduced run) as x86 code at each width the CPU runs: runs of every length around the
/// vector, group and block sizes, several kept dims read through permuted, sliced and
/// reversed views; against the interpreter (the order of additions differs from the
/// Cranelift kernel's, the accuracy does not).
#[test]
fn x86_row_sums_match_the_interpreter() {
    let mut rng = Rng::new(24);
    let levels = x86_levels();
    let mut x86_sums = vec![0; levels.len()];
    for &n in &[
        1usize, 15, 16, 17, 63, 64, 65, 100, 2047, 2048, 2049, 4096, 5000,
    ] {
        // Finite values of at most 4 (the f32 block sums' error stays below the tolerance).
        let x = specials(&mut rng, &[3, 4, n]);
        let x = Tensor::from_vec(
            x.to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(|v| if v.is_finite() { v } else { 0.5 })
                .collect(),
            &[3, 4, n],
        )
        .unwrap();
        // One reduction per program (sibling reductions would fuse into a row kernel).
        type Sum = fn(&Tensor) -> Tensor;
        let sums: [Sum; 4] = [
            |x| x.sum(2),
            |x| x.transpose(&[1, 0, 2]).sum(2),
            |x| x.slice_axis(0, 2, 0, -1).sum(2),
            |x| x.sum_all(),
        ];
        for (i, f) in sums.iter().enumerate() {
            let g = trace_fn(&[x.clone()], |ts| vec![f(&ts[0])]);
            let args = [x.clone()];
            // A sum's rounding error is relative to the sum of its terms' magnitudes (the
            // same views of |x|), not to its value, which cancels: an absolute 1e-4 was 5e-5
            // of single terms and passed any error in short rows' sums of them.
            let mags = to_f64s(&f(&x.abs()));
            let want = jitfuse::internals::interpret::eval_graph(&g, &args, &[]).unwrap();
            let b = to_f64s(&want[0]);
            for (l, &(isa, name)) in levels.iter().enumerate() {
                let exe = compile_at(g.clone(), &Target::at(isa)).unwrap();
                x86_sums[l] += exe
                    .asm_text()
                    .matches(&format!("{name} row kernel"))
                    .count();
                let a = to_f64s(&exe.run_with(&[&x]).unwrap()[0]);
                assert_eq!(a.len(), mags.len());
                for j in 0..a.len() {
                    assert!(
                        (a[j] - b[j]).abs() <= 1e-6 * b[j].abs() + 5e-7 * mags[j],
                        "{name} row sum {i} of {n}, element {j}: compiled {:e}, interpreter {:e}, terms' magnitude {:e}",
                        a[j],
                        b[j],
                        mags[j]
                    );
                }
            }
        }
    }
    for (l, &(_, name)) in levels.iter().enumerate() {
        // (Runs of one element are not row groups: `x.sum(2)` of [3, 4, 1] is a copy, which
        // Cranelift's reduction kernel makes; `sum_all` of it is a row of 12.)
        assert!(x86_sums[l] >= 12 * 4 + 1, "{} {name} row sums", x86_sums[l]);
    }
}

/// Row kernels (softmax, log-softmax, layer norm, max-centred rows, mean and variance as
/// outputs) as x86 code at each width the CPU runs: rows of every length around the vector,
/// group and block sizes, several row dims, broadcast scale and shift, NaN and infinities in
/// rows; against the Cranelift row kernels and the interpreter (sums may differ in the last
/// bits: a tolerance; NaN where it is).
#[test]
fn x86_row_kernels_match_cranelift() {
    row_kernels_match_cranelift(DType::F32, 25);
}

/// The same row kernels in f64 (qword lanes; sums and max/min across blocks in f64, the
/// lanes folded by 128-bit blocks and then `vpermilpd`; row-level values one f64 each).
#[test]
fn x86_f64_row_kernels_match_cranelift() {
    row_kernels_match_cranelift(DType::F64, 26);
}

fn row_kernels_match_cranelift(dt: DType, seed: u64) {
    let mut rng = Rng::new(seed);
    let levels = x86_levels();
    // Per level, per program: how many of its kernels were x86 row kernels.
    let mut x86_rows = vec![[0usize; 9]; levels.len()];
    type Row = fn(&[Tensor]) -> Vec<Tensor>;
    use Cmp::{Exact, Norm, Rel};
    // Each program with how each of its outputs is compared.
    let progs: [(&str, Row, &[Cmp]); 9] = [
        ("softmax", |ts| vec![ts[0].softmax(-1)], &[Rel]),
        ("log_softmax", |ts| vec![ts[0].log_softmax(-1)], &[Norm]),
        (
            "layer_norm",
            |ts| vec![ts[0].layer_norm(&ts[1], &ts[2], 1e-5, -1)],
            &[Norm],
        ),
        (
            "centred",
            |ts| {
                let m = ts[0].max_keepdims(-1);
                vec![(&ts[0] - &m).exp() * &ts[1], ts[0].min(-1)]
            },
            &[Rel, Exact],
        ),
        // 14 constants in the reductions' cone: the hoisted values push the phase's
        // scratch registers past zmm15 (VEX-only instructions cannot reach them).
        (
            "many constants",
            |ts| {
                let mut y = ts[0].clone();
                for i in 0..7 {
                    y = &y * (1.0 + 0.01 * i as f64) + 0.1 * (i + 1) as f64;
                }
                vec![y.sum(-1), (&y - y.max_keepdims(-1)).exp().sum(-1)]
            },
            &[Norm, Rel],
        ),
        // Five sibling reductions in one phase: 20 accumulators, the last in zmm16-19.
        (
            "five reductions",
            |ts| {
                let x = &ts[0];
                vec![
                    x.sum(-1),
                    x.max(-1),
                    x.min(-1),
                    x.square().sum(-1),
                    x.abs().sum(-1),
                ]
            },
            &[Norm, Exact, Exact, Rel, Rel],
        ),
        // A row-level mask (the row's max is finite) stored to and read from the frame.
        ("logsumexp", |ts| vec![ts[0].logsumexp(-1)], &[Norm]),
        (
            "logsumexp_all",
            |ts| vec![ts[0].logsumexp_all(), (&ts[0] * 2.0).logsumexp(-1)],
            &[Norm, Norm],
        ),
        (
            "moments",
            |ts| {
                let x = &ts[0];
                let mean = x.mean_keepdims(-1);
                vec![x.mean(-1), ((x - &mean).square()).mean(-1), x - &mean]
            },
            &[Norm, Rel, Norm],
        ),
    ];
    for &n in &[1usize, 15, 16, 17, 64, 100, 1000, 2049, 4100] {
        for (rows, special) in [(vec![3], false), (vec![2, 5], true)] {
            let mut shape = rows.clone();
            shape.push(n);
            let x = if special {
                specials_as(&mut rng, &shape, dt)
            } else {
                random_tensor(&mut rng, &shape, dt, -8.0, 8.0, false)
            };
            let w = random_tensor(&mut rng, &[n], dt, -2.0, 2.0, false);
            let b = random_tensor(&mut rng, &[n], dt, -2.0, 2.0, false);
            let args = [x, w, b];
            for (p, (name, f, cmps)) in progs.iter().enumerate() {
                let g = trace_fn(&args, |ts| f(ts));
                let what = format!("{name} rows {rows:?} of {n}");
                let (want, _) = run_at(Isa::Portable, &g, &args);
                let reference = interpreted(&g, &args);
                for (l, &(isa, level)) in levels.iter().enumerate() {
                    let exe = compile_at(g.clone(), &Target::at(isa));
                    let exe = exe.unwrap();
                    x86_rows[l][p] += exe
                        .asm_text()
                        .matches(&format!("{level} row kernel"))
                        .count();
                    let refs: Vec<&Tensor> = args.iter().collect();
                    let got = exe.run_with(&refs).unwrap();
                    assert_eq!(got.len(), cmps.len());
                    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                        let what = format!("{level} {what} output {k}\n{g}");
                        close_to_cranelift(a, b, cmps[k], &what);
                        // And both against the interpreter, with the same bounds.
                        close_to(a, &reference[k], cmps[k], &what);
                    }
                }
            }
        }
    }
    // Every program's kernels are x86 code at AVX-512 (18 shapes, at least 6 of them a row
    // kernel, not a row sum or a loop kernel); at AVX2 all but the five reductions' (20
    // accumulators: more than its 15 registers; Cranelift takes it).
    for (l, &(isa, level)) in levels.iter().enumerate() {
        for (p, (name, _, _)) in progs.iter().enumerate() {
            let at_least = if isa == Isa::Avx2 && *name == "five reductions" {
                0
            } else {
                6
            };
            let got = x86_rows[l][p];
            assert!(
                got >= at_least,
                "{level} {dt:?}: {got} row kernels for {name}"
            );
        }
    }
}

/// The last pass of a row kernel prefetches the next row of the accesses that move with the
/// row: softmax's input (its output holds the stashed exp, written by the sweep computing it,
/// not prefetched), layer norm's input and output but not its scale and shift (the same
/// every row); nothing when a row is a single one or the kernel runs from cache. Row sums
/// prefetch the next run when runs are long.
#[test]
fn avx512_row_kernels_prefetch_the_next_row_of_moving_accesses() {
    if Isa::detected() < Isa::Avx512 {
        return;
    }
    let mut rng = Rng::new(26);
    let listing = |args: &[Tensor], f: fn(&[Tensor]) -> Vec<Tensor>, cmp: Cmp| {
        kernel_listing(args, f, "AVX-512 row kernel", cmp)
    };
    let x = random_tensor(&mut rng, &[256, 1024], DType::F32, -4.0, 4.0, false);
    let w = random_tensor(&mut rng, &[1024], DType::F32, -2.0, 2.0, false);
    let b = random_tensor(&mut rng, &[1024], DType::F32, -2.0, 2.0, false);
    let args = [x, w, b];
    let softmax = listing(&args, |ts| vec![ts[0].softmax(-1)], Cmp::Rel);
    assert!(
        softmax.contains("1 stashed rows kept in outputs, next row prefetched for 1 accesses"),
        "{softmax}"
    );
    let norm = listing(
        &args,
        |ts| vec![ts[0].layer_norm(&ts[1], &ts[2], 1e-5, -1)],
        Cmp::Norm,
    );
    assert!(
        norm.contains("next row prefetched for 2 accesses"),
        "{norm}"
    );
    let one = [random_tensor(
        &mut rng,
        &[1024],
        DType::F32,
        -4.0,
        4.0,
        false,
    )];
    let single = listing(&one, |ts| vec![ts[0].softmax(-1)], Cmp::Rel);
    assert!(!single.contains("prefetched"), "{single}");
    // A kernel that runs from cache: no prefetches.
    let few = [random_tensor(
        &mut rng,
        &[8, 1024],
        DType::F32,
        -4.0,
        4.0,
        false,
    )];
    let small = listing(&few, |ts| vec![ts[0].softmax(-1)], Cmp::Rel);
    assert!(!small.contains("prefetched"), "{small}");
    // Row sums prefetch the next run when runs are a page or more in an input beyond L2.
    let long = [random_tensor(
        &mut rng,
        &[64, 4096],
        DType::F32,
        -1.0,
        1.0,
        false,
    )];
    let sum = kernel_listing(
        &long,
        |ts| vec![ts[0].sum(1)],
        "AVX-512 row kernel",
        Cmp::Norm,
    );
    assert!(sum.contains("next row prefetched for 1 accesses"), "{sum}");
    let short = [random_tensor(
        &mut rng,
        &[512, 512],
        DType::F32,
        -1.0,
        1.0,
        false,
    )];
    let sum = kernel_listing(
        &short,
        |ts| vec![ts[0].sum(1)],
        "AVX-512 row kernel",
        Cmp::Norm,
    );
    assert!(!sum.contains("prefetched"), "{sum}");
}

/// The first listing line starting with `mark` of `f` compiled at the AVX-512 level; checks
/// the results against the AVX2 (Cranelift) kernels on the way (bit for bit for loop kernels;
/// row kernels' sums add 16 lanes at a time: `cmp`), and against the interpreter (`cmp`).
fn kernel_listing(
    args: &[Tensor],
    f: fn(&[Tensor]) -> Vec<Tensor>,
    mark: &str,
    cmp: Cmp,
) -> String {
    let g = trace_fn(args, f);
    let (want, _) = run_at(Isa::Portable, &g, args);
    let reference = interpreted(&g, args);
    let exe = compile_at(g, &Target::at(Isa::Avx512)).unwrap();
    let refs: Vec<&Tensor> = args.iter().collect();
    let got = exe.run_with(&refs).unwrap();
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        if mark == ZMM_MARK {
            same_bits(a, b, mark);
        } else {
            close_to_cranelift(a, b, cmp, mark);
        }
        close_to(
            a,
            &reference[k],
            cmp,
            &format!("{mark} against the interpreter"),
        );
    }
    let text = exe.asm_text();
    text.lines()
        .find(|l| l.starts_with(mark))
        .unwrap_or_else(|| panic!("no {mark} in\n{text}"))
        .to_string()
}

/// Loop kernels streaming more than L2 along long runs prefetch their contiguous accesses
/// ahead (reads and writes), not the ones broadcast along the run; small kernels do not.
#[test]
fn avx512_loop_kernels_prefetch_long_streams() {
    if Isa::detected() < Isa::Avx512 {
        return;
    }
    let mut rng = Rng::new(27);
    let mut t = |shape: &[usize]| random_tensor(&mut rng, shape, DType::F32, -1.0, 1.0, false);
    let axpby: fn(&[Tensor]) -> Vec<Tensor> =
        |ts| vec![((&ts[0] * 2.0 + &ts[1]) * &ts[2] - &ts[0]) / (1.0 + &ts[1] * &ts[1])];
    let big = [t(&[1 << 18]), t(&[1 << 18]), t(&[1 << 18])];
    let line = kernel_listing(&big, axpby, ZMM_MARK, Cmp::Exact);
    assert!(
        line.contains("1024 bytes ahead prefetched for 4 accesses"),
        "{line}"
    );
    let small = [t(&[5000]), t(&[5000]), t(&[5000])];
    let line = kernel_listing(&small, axpby, ZMM_MARK, Cmp::Exact);
    assert!(!line.contains("prefetched"), "{line}");
    // A column broadcast along the run (stride 0): the matrix and the output only.
    let scaled = [t(&[512, 1024]), t(&[512, 1])];
    let line = kernel_listing(&scaled, |ts| vec![&ts[0] * &ts[1]], ZMM_MARK, Cmp::Exact);
    assert!(line.contains("prefetched for 2 accesses"), "{line}");
    // Runs shorter than the distance (rows of 16 that do not merge: the column broadcast):
    // nothing.
    let narrow = [t(&[65536, 16]), t(&[65536, 1])];
    let line = kernel_listing(&narrow, |ts| vec![&ts[0] * &ts[1]], ZMM_MARK, Cmp::Exact);
    assert!(!line.contains("prefetched"), "{line}");
}

/// A loop kernel keeps its constants in registers for the whole pass as far as the width's
/// registers allow: all 10 distinct ones of a 20-op chain at both widths (AVX2 has 15 value
/// registers; reloading 5 of them per vector made the AVX2 kernel 15 % slower than rustc's
/// loop), fewer
/// where the vectors' values need the registers (then at AVX2 5), none where even those do not
/// fit. Listings only (`Target::emit_only`): the code is not run here.
#[test]
fn x86_loop_kernels_hold_their_constants_in_registers() {
    let held = |isa: Isa, f: fn(&Tensor) -> Tensor| -> usize {
        let x = Tensor::zeros(&[4096], DType::F32);
        let g = trace_fn(&[x], |ts| vec![f(&ts[0])]);
        let exe = compile_at(g, &Target::emit_only(isa)).unwrap();
        let text = exe.asm_text();
        let line = text
            .lines()
            .find(|l| l.contains("loop kernel,"))
            .unwrap_or_else(|| panic!("no x86 loop kernel at {isa}:\n{text}"));
        let n = line.split(" values held in registers").next().unwrap();
        n.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let chain: fn(&Tensor) -> Tensor = |x| {
        let y = ((x * 1.5 + 0.25) * x - 1.0).abs() + 1.0;
        let y = (y.sqrt() * 0.5 - x).maximum(-2.0).minimum(2.0);
        let y = -((y.square() + x) * 0.125) + 3.0;
        (y.recip() * x - 0.5).abs()
    };
    // 1.5, 0.25, 1 (also the recip's), the abs and sign masks, 0.5, -2, 2, 0.125, 3.
    assert_eq!(held(Isa::Avx2, chain), 10);
    assert_eq!(held(Isa::Avx512, chain), 10);
    // Eight values live at once (a sum of products of distinct powers of x): past AVX2's room
    // for 12 constants beside them, the 5-constant level.
    let wide: fn(&Tensor) -> Tensor = |x| {
        let p: Vec<Tensor> = (1..=8).map(|i| x * (0.5 + i as f64)).collect();
        let mut s = &p[0] * &p[1];
        for i in 2..8 {
            s = &s + &p[i] * (1.25 + i as f64) * &p[i - 1];
        }
        s
    };
    let (y, z) = (held(Isa::Avx2, wide), held(Isa::Avx512, wide));
    assert!(y < z, "AVX2 holds {y}, AVX-512 {z}");
}

/// The AVX-512 machine code of a fixed corpus (the random elementwise programs above, row
/// kernels, row sums), built for AVX-512 whatever the CPU (`Target::emit_only`: no micro-kernel
/// calls, never run), is the recorded code: a change of the emitters that is meant to leave
/// AVX-512 code as it is proves it here even on a CPU without AVX-512. After an intended
/// change, `UPDATE_EXPECT=1` rewrites `snapshots/avx512_code.txt` (and the tests above, on an
/// AVX-512 CPU, prove the new code).
#[test]
fn avx512_machine_code_is_the_recorded_code() {
    let target = Target::emit_only(Isa::Avx512);
    let mut out = String::new();
    let mut record = |name: &str, g: &Graph| {
        let exe = compile_at(g.clone(), &target).unwrap();
        let text = exe.asm_text();
        // FNV-1a over the listings' instruction and constant lines (`x86::listing`, one per
        // instruction at its offset): the code of every AVX-512 kernel, in order.
        let (mut kernels, mut hash) = (0, 0xcbf2_9ce4_8422_2325u64);
        let mut in_listing = false;
        for l in text.lines() {
            if l.starts_with("AVX-512 ") {
                kernels += 1;
                in_listing = true;
            } else if in_listing && l.starts_with("  ") {
                for b in l.bytes() {
                    hash = (hash ^ b as u64).wrapping_mul(0x100_0000_01b3);
                }
            } else {
                in_listing = false;
            }
        }
        out.push_str(&format!("{name}: {kernels} kernels, fnv {hash:016x}\n"));
    };
    let mut rng = Rng::new(21);
    for trial in 0..28 {
        let (g, _, sh) = random_program(&mut rng, trial, DType::F32);
        record(&format!("elementwise {trial} {sh:?}"), &g);
    }
    type Row = fn(&[Tensor]) -> Vec<Tensor>;
    let rows: [(&str, Row); 6] = [
        ("softmax", |ts| vec![ts[0].softmax(-1)]),
        ("layer_norm", |ts| {
            vec![ts[0].layer_norm(&ts[1], &ts[2], 1e-5, -1)]
        }),
        ("logsumexp", |ts| vec![ts[0].logsumexp(-1)]),
        ("five reductions", |ts| {
            let x = &ts[0];
            vec![x.sum(-1), x.max(-1), x.min(-1), x.square().sum(-1)]
        }),
        ("row sum", |ts| vec![ts[0].sum(-1)]),
        ("column sum", |ts| vec![ts[0].t().sum(-1)]),
    ];
    for n in [17usize, 1000, 4100] {
        let args = [
            Tensor::zeros(&[3, n], DType::F32),
            Tensor::zeros(&[n], DType::F32),
            Tensor::zeros(&[n], DType::F32),
        ];
        for (name, f) in &rows {
            record(&format!("{name} 3x{n}"), &trace_fn(&args, |ts| f(ts)));
        }
    }
    expect_test::expect_file!["snapshots/avx512_code.txt"].assert_eq(&out);
}

/// Loop kernels that move at least `Target::streaming_min_bytes` (the last-level cache's
/// size; 1 here) store their outputs around the caches (`vmovntps`/`vmovntpd`) on rows whose
/// outputs start on a vector boundary, and with ordinary stores on the others: the same bits
/// as the interpreter at AVX-512 and AVX2 widths, for f32, f64 and i32 outputs, rows aligned
/// and not (101 elements: every other row starts off a boundary, a 2-D kernel's rows), a
/// 16-bit output beside them (never streamed), and the default threshold leaves small kernels
/// alone.
#[test]
fn outputs_stored_around_the_caches_keep_their_bits() {
    let mut rng = Rng::new(41);
    let levels: Vec<Isa> = [Isa::Avx512, Isa::Avx2]
        .into_iter()
        .filter(|&l| l <= Isa::detected())
        .collect();
    for (shape, dtype) in [
        (vec![4096usize], DType::F32),
        (vec![37, 101], DType::F32),
        (vec![64, 64], DType::F64),
        (vec![33, 101], DType::F64),
        (vec![3000], DType::I32),
    ] {
        let args: Vec<Tensor> = (0..3)
            .map(|_| random_tensor(&mut rng, &shape, dtype, -4.0, 4.0, false))
            .collect();
        // (At AVX2 a kernel with a 16-bit access is Cranelift's.)
        let half = shape.len() == 1 && dtype == DType::F32;
        let g = trace_fn(&args, |t| {
            let axpby = &(&t[0] * 3) + &(&t[1] * 2);
            let mut outs = vec![&axpby + &t[2], axpby.clone()];
            if shape.len() == 2 {
                // A row broadcast keeps the kernel 2-D: rows of 101 elements.
                outs.push(&axpby + &t[2].sum_keepdims(0));
            }
            if half {
                // A 16-bit output of the same kernel: stored the ordinary way.
                outs.push(axpby.cast(DType::BF16));
            }
            outs
        });
        let want = jitfuse::internals::interpret::eval_graph(&g, &args, &[]).unwrap();
        for &level in &levels {
            let target = Target {
                streaming_min_bytes: 1,
                ..Target::at(level)
            };
            let exe = compile_at(g.clone(), &target).unwrap();
            let listing = exe.asm_text();
            let nt = if dtype == DType::F64 {
                "vmovntpd"
            } else {
                "vmovntps"
            };
            if !(half && level == Isa::Avx2) {
                assert!(listing.contains(nt), "{level} {shape:?} {dtype}: {listing}");
                assert!(listing.contains("sfence"), "{level} {shape:?}");
            }
            let refs: Vec<&Tensor> = args.iter().collect();
            let got = exe.run_with(&refs).unwrap();
            assert_eq!(got.len(), want.len());
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert_eq!(a.dtype(), b.dtype());
                assert_eq!(
                    to_f64s(a),
                    to_f64s(b),
                    "{level} {shape:?} {dtype}: output {k}"
                );
            }
            // At the default threshold (the cache's size) these kernels store as before.
            let small = compile_at(g.clone(), &Target::at(level)).unwrap();
            assert!(!small.asm_text().contains(nt), "{level} {shape:?}");
        }
    }
}
