//! The GEMM libraries jitfuse can call, timed against each other on the shapes
//! of the workloads (interleaved samples, medians): `matrixmultiply` (threaded
//! by its own pool) and `gemm` (faer's, AVX-512 kernels when the CPU has them)
//! on rayon's pool and single-threaded. Operands are read through strides the
//! way the autodiff's transposed products reach the library step.
//!
//! Run: `cargo bench --bench gemm_compare` (`JITFUSE_BENCH_ROUNDS=n` samples,
//! default 15). Prints one line per case: median ms and GFLOP/s of each.

use std::hint::black_box;
use std::time::Instant;

/// How an operand is stored: `N` row-major as used, `T` stored transposed
/// (read with row stride 1).
#[derive(Clone, Copy, PartialEq)]
enum Lay {
    N,
    T,
}

struct Case {
    name: &'static str,
    m: usize,
    k: usize,
    n: usize,
    la: Lay,
    lb: Lay,
}

fn strides(lay: Lay, rows: usize, cols: usize) -> (isize, isize) {
    let _ = rows;
    match lay {
        Lay::N => (cols as isize, 1),
        Lay::T => (1, rows as isize),
    }
}

trait El: Copy + 'static + Send + Sync {
    fn of(x: f64) -> Self;
    const NAME: &'static str;
    /// # Safety
    /// Pointers and strides as matrixmultiply's.
    #[allow(clippy::too_many_arguments)]
    unsafe fn mm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        c: *mut Self,
    );
}

impl El for f32 {
    fn of(x: f64) -> Self {
        x as f32
    }
    const NAME: &'static str = "f32";
    unsafe fn mm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        c: *mut Self,
    ) {
        matrixmultiply::sgemm(
            m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, n as isize, 1,
        )
    }
}

impl El for f64 {
    fn of(x: f64) -> Self {
        x
    }
    const NAME: &'static str = "f64";
    unsafe fn mm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        c: *mut Self,
    ) {
        matrixmultiply::dgemm(
            m, k, n, 1.0, a, rsa, csa, b, rsb, csb, 0.0, c, n as isize, 1,
        )
    }
}

/// Single-threaded `gemm` on row panels (or column panels when `m` is small)
/// of the output, the panels spread over rayon's pool by work stealing: one
/// join per product instead of gemm's barrier per block of `k`.
#[allow(clippy::too_many_arguments)]
unsafe fn panels<T: El>(
    m: usize,
    k: usize,
    n: usize,
    a: *const T,
    rsa: isize,
    csa: isize,
    b: *const T,
    rsb: isize,
    csb: isize,
    c: *mut T,
) {
    #[derive(Clone, Copy)]
    struct P<T>(*const T, *const T, *mut T);
    unsafe impl<T> Send for P<T> {}
    unsafe impl<T> Sync for P<T> {}
    let p = P(a, b, c);
    let chunks = 4 * rayon::current_num_threads();
    let by_rows = m >= n;
    let len = if by_rows { m } else { n };
    let step = len.div_ceil(chunks).max(32);
    use rayon::prelude::*;
    (0..len.div_ceil(step)).into_par_iter().for_each(move |i| {
        let p = p;
        let (s, e) = (i * step, ((i + 1) * step).min(len));
        let (mm, nn, pa, pb, pc) = if by_rows {
            (e - s, n, p.0.offset(s as isize * rsa), p.1, p.2.add(s * n))
        } else {
            (m, e - s, p.0, p.1.offset(s as isize * csb), p.2.add(s))
        };
        gemm::gemm(
            mm,
            nn,
            k,
            pc,
            1,
            n as isize,
            false,
            pa,
            csa,
            rsa,
            pb,
            csb,
            rsb,
            T::of(0.0),
            T::of(1.0),
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    });
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn run<T: El>(c: &Case, rounds: usize) {
    let (m, k, n) = (c.m, c.k, c.n);
    let a: Vec<T> = (0..m * k)
        .map(|i| T::of((i % 7) as f64 * 0.1 - 0.3))
        .collect();
    let b: Vec<T> = (0..k * n)
        .map(|i| T::of((i % 5) as f64 * 0.1 - 0.2))
        .collect();
    let mut out = vec![T::of(0.0); m * n];
    let (rsa, csa) = strides(c.la, m, k);
    let (rsb, csb) = strides(c.lb, k, n);
    // Calls per sample: about 20 ms of work at 100 GFLOP/s, at least 1.
    let flops = 2.0 * (m * n * k) as f64;
    let reps = ((2e9 / flops) as usize).clamp(1, 20000);
    let names = [
        "matrixmultiply",
        "gemm rayon",
        "gemm 1 thread",
        "gemm panels",
    ];
    let mut times = vec![Vec::new(); names.len()];
    for round in 0..rounds + 1 {
        for (ci, t) in times.iter_mut().enumerate() {
            let start = Instant::now();
            for _ in 0..reps {
                let (pa, pb, pc) = (a.as_ptr(), b.as_ptr(), out.as_mut_ptr());
                // SAFETY: the strides address exactly the operands' buffers.
                unsafe {
                    match ci {
                        0 => T::mm(m, k, n, pa, rsa, csa, pb, rsb, csb, pc),
                        3 => panels(m, k, n, pa, rsa, csa, pb, rsb, csb, pc),
                        _ => gemm::gemm(
                            m,
                            n,
                            k,
                            pc,
                            1,
                            n as isize,
                            false,
                            pa,
                            csa,
                            rsa,
                            pb,
                            csb,
                            rsb,
                            T::of(0.0),
                            T::of(1.0),
                            false,
                            false,
                            false,
                            if ci == 1 {
                                gemm::Parallelism::Rayon(0)
                            } else {
                                gemm::Parallelism::None
                            },
                        ),
                    }
                }
                black_box(&mut out);
            }
            if round > 0 {
                t.push(start.elapsed().as_secs_f64() / reps as f64);
            }
        }
    }
    let mut line = format!(
        "{:<28} {} {:>4}x{:>4}x{:>4} {}{}",
        c.name,
        T::NAME,
        m,
        k,
        n,
        if c.la == Lay::T { "At" } else { "A " },
        if c.lb == Lay::T { "Bt" } else { "B " },
    );
    let meds: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
    for (name, &t) in names.iter().zip(&meds) {
        line += &format!(" | {name}: {:>9.4} ms {:>6.1} GF", t * 1e3, flops / t / 1e9);
    }
    line += &format!(
        " | gemm/mm {:.2} panels/rayon {:.2}",
        meds[0] / meds[1].min(meds[2]),
        meds[1] / meds[3]
    );
    println!("{line}");
}

fn main() {
    let rounds = std::env::var("JITFUSE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    println!(
        "avx512f: {}, rayon threads: {}",
        std::arch::is_x86_feature_detected!("avx512f"),
        rayon::current_num_threads()
    );
    let filter = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    use Lay::*;
    #[rustfmt::skip]
    let cases = [
        Case { name: "W9", m: 1024, k: 1024, n: 1024, la: N, lb: N },
        Case { name: "W6 x@W1", m: 256, k: 784, n: 512, la: N, lb: N },
        Case { name: "W6 h@W2", m: 256, k: 512, n: 10, la: N, lb: N },
        Case { name: "W7 dh=dz@W2^T", m: 256, k: 10, n: 512, la: N, lb: T },
        Case { name: "W7 dW1=x^T@dh", m: 784, k: 256, n: 512, la: T, lb: N },
        Case { name: "W7 dW2=h^T@dz", m: 512, k: 256, n: 10, la: T, lb: N },
        Case { name: "W8 h@W", m: 256, k: 512, n: 512, la: N, lb: N },
        Case { name: "W8 dh=g@W^T", m: 256, k: 512, n: 512, la: N, lb: T },
        Case { name: "W8 dW=h^T@g", m: 512, k: 256, n: 512, la: T, lb: N },
        Case { name: "CNN h@W1", m: 128, k: 3136, n: 1024, la: N, lb: N },
        Case { name: "CNN dx=dh@W1^T", m: 128, k: 1024, n: 3136, la: N, lb: T },
        Case { name: "CNN dW1=x^T@dh", m: 3136, k: 128, n: 1024, la: T, lb: N },
        Case { name: "GPT x@W_qkv", m: 16384, k: 384, n: 1152, la: N, lb: N },
        Case { name: "GPT h@W_down", m: 16384, k: 1536, n: 384, la: N, lb: N },
        Case { name: "GPT dW=x^T@dy", m: 384, k: 16384, n: 1536, la: T, lb: N },
        Case { name: "attn q@k^T tile", m: 64, k: 64, n: 128, la: N, lb: T },
        Case { name: "attn p@v tile", m: 64, k: 128, n: 64, la: N, lb: N },
        Case { name: "small 4", m: 4, k: 4, n: 4, la: N, lb: N },
        Case { name: "small 16x64x16", m: 16, k: 64, n: 16, la: N, lb: N },
        Case { name: "small 16x64x16 T", m: 16, k: 64, n: 16, la: T, lb: T },
        Case { name: "small 64", m: 64, k: 64, n: 64, la: N, lb: N },
        Case { name: "mid 128", m: 128, k: 128, n: 128, la: N, lb: N },
        Case { name: "mid 256", m: 256, k: 256, n: 256, la: N, lb: N },
        Case { name: "gemv-ish 1x512x512", m: 1, k: 512, n: 512, la: N, lb: N },
        Case { name: "gemv-ish 512x512x1", m: 512, k: 512, n: 1, la: N, lb: N },
        Case { name: "skinny 8x1024x8", m: 8, k: 1024, n: 8, la: N, lb: N },
    ];
    for c in &cases {
        if filter.as_deref().is_some_and(|f| !c.name.contains(f)) {
            continue;
        }
        run::<f32>(c, rounds);
        run::<f64>(c, rounds);
    }
}
