//! Donation: a program writes outputs into the buffers of arguments the
//! caller gave away. Every result must equal the same call with the
//! arguments kept shared (never donated), whatever the kernel's order of
//! loads and stores.

use jitfuse::prelude::*;

#[jit]
fn shift_and_add(p: Tensor, m: Tensor) -> (Tensor, Tensor) {
    let m2 = &m + 1.0;
    (&p + &m2, m2)
}

fn v(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn a_multi_output_kernel_reads_every_donated_input_before_writing() {
    let p = Tensor::from_vec(vec![10.0f32, 20.0, 30.0, 40.0], &[4]).unwrap();
    let m = Tensor::from_vec(vec![3.0f32, 8.0, 15.0, 24.0], &[4]).unwrap();
    let (a, b) = shift_and_add(p, m);
    assert_eq!(v(&a), vec![14.0, 29.0, 46.0, 65.0]);
    assert_eq!(v(&b), vec![4.0, 9.0, 16.0, 25.0]);
}

/// Two calls of `f`: arguments donated (unshared) and kept shared by the
/// caller; results must agree bit for bit and the shared copies stay intact.
fn donated_matches_shared(args: &[Tensor], f: impl Fn(Vec<Tensor>) -> Vec<Tensor>) -> Vec<Tensor> {
    let fresh = |t: &Tensor| Tensor::from_vec(t.to_vec::<f32>().unwrap(), t.shape()).unwrap();
    let donated = f(args.iter().map(fresh).collect());
    let keep: Vec<Tensor> = args.iter().map(fresh).collect();
    let shared = f(keep.clone());
    for (k, (a, b)) in keep.iter().zip(args).enumerate() {
        assert_eq!(v(a), v(b), "argument {k} kept by the caller was written");
    }
    for (k, (d, s)) in donated.iter().zip(&shared).enumerate() {
        let (d, s): (Vec<u32>, Vec<u32>) = (
            v(d).iter().map(|x| x.to_bits()).collect(),
            v(s).iter().map(|x| x.to_bits()).collect(),
        );
        assert_eq!(d, s, "output {k}: donated and shared calls differ");
    }
    shared
}

fn ramp(n: usize, scale: f32, offset: f32) -> Tensor {
    Tensor::from_vec(
        (0..n)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * scale + offset)
            .collect(),
        &[n],
    )
    .unwrap()
}

#[jit]
fn momentum_step(p: Tensor, v: Tensor, g: &Tensor) -> (Tensor, Tensor) {
    let v2 = 0.9 * v + g;
    (p - 0.1 * &v2, v2)
}

#[test]
fn momentum_sgd_with_donated_state_trains_as_without() {
    for n in [4, 17, 64, 1000] {
        let g = ramp(n, 0.01, 0.3);
        let (p0, v0) = (ramp(n, 1.0, 2.0), ramp(n, 0.5, -1.0));
        let out = donated_matches_shared(&[p0.clone(), v0.clone()], |a| {
            let mut a = a.into_iter();
            let (p, v) = momentum_step(a.next().unwrap(), a.next().unwrap(), &g);
            vec![p, v]
        });
        // Against the formula, element by element.
        let (pp, vv, gg) = (v(&p0), v(&v0), v(&g));
        for i in 0..n {
            let v2 = 0.9 * vv[i] + gg[i];
            assert!((v(&out[1])[i] - v2).abs() <= 1e-5 * v2.abs().max(1.0));
            let p2 = pp[i] - 0.1 * v2;
            assert!((v(&out[0])[i] - p2).abs() <= 1e-5 * p2.abs().max(1.0));
        }
        // Many donated steps in a row equal many shared ones.
        let (mut pd, mut vd) = (p0.clone() + 0.0, v0.clone() + 0.0);
        let (mut ps, mut vs) = (p0.clone(), v0.clone());
        for _ in 0..5 {
            (pd, vd) = momentum_step(pd, vd, &g);
            let (keep_p, keep_v) = (ps.clone(), vs.clone());
            (ps, vs) = momentum_step(ps, vs, &g);
            drop((keep_p, keep_v));
        }
        assert_eq!(v(&pd), v(&ps), "n = {n}");
        assert_eq!(v(&vd), v(&vs), "n = {n}");
    }
}

#[jit]
fn adam_step(p: Tensor, m: Tensor, s: Tensor, g: &Tensor, lr: f32) -> (Tensor, Tensor, Tensor) {
    let m2 = 0.9 * m + 0.1 * g;
    let s2 = 0.999 * s + 0.001 * g * g;
    let p2 = p - lr * &m2 / (s2.sqrt() + 1e-8);
    (p2, m2, s2)
}

#[test]
fn adam_with_donated_moments_matches_the_shared_call() {
    for n in [3, 16, 33, 4096] {
        let g = ramp(n, 0.02, 0.1);
        let args = [
            ramp(n, 1.0, 0.5),
            ramp(n, 0.1, 0.0),
            ramp(n, 0.001, 0.2).abs(),
        ];
        let out = donated_matches_shared(&args, |a| {
            let mut a = a.into_iter();
            let (p, m, s) = adam_step(
                a.next().unwrap(),
                a.next().unwrap(),
                a.next().unwrap(),
                &g,
                0.01,
            );
            vec![p, m, s]
        });
        let (p, m, s, gg) = (v(&args[0]), v(&args[1]), v(&args[2]), v(&g));
        for i in 0..n {
            let m2 = 0.9 * m[i] + 0.1 * gg[i];
            let s2 = 0.999 * s[i] + 0.001 * gg[i] * gg[i];
            let p2 = p[i] - 0.01 * m2 / (s2.sqrt() + 1e-8);
            assert!(
                (v(&out[0])[i] - p2).abs() <= 1e-5 * p2.abs().max(1.0),
                "p, n={n}, i={i}"
            );
            assert!((v(&out[1])[i] - m2).abs() <= 1e-5 * m2.abs().max(1e-3));
            assert!((v(&out[2])[i] - s2).abs() <= 1e-5 * s2.abs().max(1e-6));
        }
    }
}

/// Outputs in swapped buffers: the output written into `a`'s buffer reads
/// `b`, and the other way round, in one kernel.
#[jit]
fn cross(a: Tensor, b: Tensor) -> (Tensor, Tensor) {
    (&b * 2.0 + 1.0, &a - &b)
}

#[test]
fn crossed_outputs_of_one_kernel_read_both_donated_inputs_first() {
    for n in [1, 5, 16, 64, 100, 4099] {
        donated_matches_shared(&[ramp(n, 1.0, 0.0), ramp(n, 0.25, 3.0)], |x| {
            let mut x = x.into_iter();
            let (p, q) = cross(x.next().unwrap(), x.next().unwrap());
            vec![p, q]
        });
    }
}

#[jit]
fn softmax_pair(x: Tensor, y: Tensor) -> (Tensor, Tensor) {
    let s = x.softmax(-1);
    (&s + &y, s * 2.0 - &y)
}

#[test]
fn row_kernel_outputs_over_donated_rows() {
    for n in [3, 16, 40, 1024] {
        let rows = 5;
        let mk = |sc: f32| {
            Tensor::from_vec(
                (0..rows * n)
                    .map(|i| ((i * 13 % 29) as f32 - 14.0) * sc)
                    .collect(),
                &[rows, n],
            )
            .unwrap()
        };
        donated_matches_shared(&[mk(0.1), mk(1.0)], |a| {
            let mut a = a.into_iter();
            let (p, q) = softmax_pair(a.next().unwrap(), a.next().unwrap());
            vec![p, q]
        });
    }
}

#[jit]
fn softmax_times(x: &Tensor, y: Tensor) -> Tensor {
    x.softmax(-1) * y
}

#[jit]
fn softmax_of_donated(x: Tensor, y: &Tensor) -> Tensor {
    x.softmax(-1) * y
}

/// A row kernel may keep a stashed value (softmax's exp) in its output's row until its last
/// sweep: never when that output is written over an input the last sweep still reads (the
/// donated `y` of `softmax(x) * y`), always when the input it replaces is read only before
/// (`softmax(x)` over a donated `x`).
#[test]
fn row_kernels_keep_stashed_rows_in_outputs_only_where_no_later_sweep_reads_what_they_replace() {
    for n in [5, 16, 1000, 1024, 4100] {
        let rows = 7;
        let mk = |sc: f32, shift: usize| {
            Tensor::from_vec(
                (0..rows * n)
                    .map(|i| (((i + shift) * 13 % 29) as f32 - 14.0) * sc)
                    .collect(),
                &[rows, n],
            )
            .unwrap()
        };
        let (x, y) = (mk(0.3, 0), mk(1.0, 5));
        let want = jitfuse::eager::interpreted(|| &x.softmax(-1) * &y);
        let got = donated_matches_shared(&[x.clone(), y.clone()], |a| {
            let mut a = a.into_iter();
            let x = a.next().unwrap();
            vec![softmax_times(&x, a.next().unwrap())]
        });
        crate::common::assert_close(
            &got[0],
            &want,
            crate::common::float_tol(DType::F32),
            "softmax(x) * donated y",
        );
        let got = donated_matches_shared(&[x.clone(), y.clone()], |a| {
            let mut a = a.into_iter();
            let x = a.next().unwrap();
            vec![softmax_of_donated(x, &a.next().unwrap())]
        });
        crate::common::assert_close(
            &got[0],
            &want,
            crate::common::float_tol(DType::F32),
            "softmax(donated x) * y",
        );
    }
}

#[jit]
fn read_late(p: Tensor, q: &Tensor) -> (Tensor, Tensor) {
    let a = &p * 2.0;
    (a, p.matmul(q))
}

/// The checker proves donation safety from the steps' reads, not from the
/// planner's own liveness: a plan writing an output into a donated
/// argument before a later step reads the argument, donating one argument
/// twice, or donating a borrowed one is rejected.
#[test]
fn the_plan_checker_rejects_unsafe_donations() {
    let p = Tensor::from_vec((0..16).map(|i| i as f32).collect(), &[4, 4]).unwrap();
    let q = Tensor::from_vec((0..16).map(|i| 1.0 - i as f32).collect(), &[4, 4]).unwrap();
    let c = read_late::lower(p.clone(), &q).unwrap().compile().unwrap();
    let exe = c.executable();
    exe.check_plan().unwrap();
    let plan = exe.buffer_plan().clone();
    assert!(
        plan.donations.is_empty(),
        "the matmul reads p after p * 2 is written: no donation ({plan:?})"
    );
    let out = exe.graph().outputs[0];
    let mut early = plan.clone();
    early.donations.push((0, out));
    let e = exe.check_plan_with(&early).unwrap_err();
    assert!(e.message.contains("reads the argument later"), "{e}");
    let mut borrowed = plan.clone();
    borrowed.donations.push((1, out));
    let e = exe.check_plan_with(&borrowed).unwrap_err();
    assert!(e.message.contains("not an owned parameter"), "{e}");
    // The program still computes the right thing when donated.
    let (a, s) = read_late(p.clone() + 0.0, &q);
    assert_eq!(v(&a), v(&(&p * 2.0)));
    assert_eq!(v(&s), v(&p.matmul(&q)));

    let c = shift_and_add::lower(ramp(64, 1.0, 0.0), ramp(64, 2.0, 1.0))
        .unwrap()
        .compile()
        .unwrap();
    let exe = c.executable();
    exe.check_plan().unwrap();
    let mut twice = exe.buffer_plan().clone();
    assert_eq!(
        twice.donations.len(),
        2,
        "both arguments donated: {twice:?}"
    );
    twice.donations[1].1 = twice.donations[0].1;
    let e = exe.check_plan_with(&twice).unwrap_err();
    assert!(e.message.contains("twice"), "{e}");
}
