// Rust control flow in #[jit] bodies: staged through trait dispatch, so one
// spelling compiles for `bool`/`usize` (run at trace time) and for traced
// tensors (graph control flow).
#![deny(warnings)]
use jitfuse::prelude::*;

// `if` as an expression, `else if` chains, on a static `bool`.
#[jit]
fn pick(x: &Tensor, mode: usize, neg: bool) -> Tensor {
    let y = if mode == 0 {
        x.exp()
    } else if mode == 1 {
        x.tanh()
    } else {
        x.abs()
    };
    if neg {
        -y
    } else {
        y
    }
}

// Nested `if` in `while` in `for`; variables declared before and assigned
// inside; a usize counter under a bool condition; shadowing inside.
#[jit]
fn nested(x: &Tensor, n: usize, limit: usize) -> (Tensor, Tensor) {
    let mut acc = x.clone();
    let mut other = x * 2.0;
    let mut count = 0usize;
    for i in 0..n {
        let mut j = 0;
        while j < i {
            if j % 2 == 0 && count < limit {
                acc = &acc + x;
                count += 1;
            } else {
                let acc = acc.exp(); // shadows: not state of this `if`
                other = &other + acc.sum_all();
            }
            j += 1;
        }
    }
    (acc, other)
}

// A variable declared without a value and assigned in every branch.
#[jit]
fn uninit(x: &Tensor, flag: bool) -> Tensor {
    let y;
    let z: Tensor;
    if flag {
        y = x.exp();
        z = x.sin();
    } else if x.ndim() > 1 {
        y = x.cos();
        z = x.tanh();
    } else {
        y = x * 3.0;
        z = x.relu();
    }
    y + z
}

// A branch that panics need not assign.
#[jit]
fn diverging(x: &Tensor, n: usize) -> Tensor {
    let y;
    if n > 0 {
        y = x * n as f64;
    } else {
        panic!("n must be positive");
    }
    y
}

// Traced conditions: must compile (they stage `cond`, `while_loop`, counted
// loops and scans).
#[jit]
fn traced_if(x: &Tensor) -> Tensor {
    let mut y = x.clone();
    if x.sum_all().gt(0.0) {
        y = y.exp();
    }
    let z = if y.sum_all().lt(1.0) { &y * 2.0 } else { y.clone() };
    z + y
}

#[jit]
fn traced_if_outputs(x: &Tensor) -> (Tensor, Tensor) {
    let a;
    let b;
    if x.sum_all().gt(0.0) {
        a = x.exp();
        b = x.sin();
    } else {
        a = x.cos();
        b = x * 2.0;
    }
    (a, b)
}

#[jit]
fn traced_while(x: &Tensor) -> Tensor {
    let mut y = x.clone();
    let mut steps = Tensor::scalar(0i32);
    while y.sum_all().gt(1.0).logical_and(&steps.lt(100)) {
        y = &y * 0.5;
        steps = steps + 1;
    }
    y
}

#[jit]
fn traced_for(x: &Tensor, n: &Tensor) -> Tensor {
    let mut y = x.clone();
    for i in Tensor::scalar(0i32)..n.clone() {
        y = &y + i.cast(DType::F32);
    }
    let mut total = x.sum_all();
    for row in x.iter_axis(0) {
        total = total + row.sum_all();
    }
    y * total
}

// Closures in the body are traced too.
#[jit]
fn in_closure(x: &Tensor, n: usize) -> Tensor {
    let f = |t: &Tensor| {
        let mut u = t.clone();
        for _ in 0..n {
            u = u.tanh();
        }
        if n > 2 {
            u.exp()
        } else {
            u
        }
    };
    f(x) + f(&(x * 2.0))
}

// `if let`, `match` and `loop` stay plain Rust (inside, `if`s are staged).
#[jit]
fn plain(x: &Tensor, o: Option<usize>) -> Tensor {
    let mut y = x.clone();
    if let Some(k) = o {
        for _ in 0..k {
            y = y.exp();
        }
    }
    let mut i = 0;
    loop {
        i += 1;
        if i > 3 {
            break;
        }
        y = &y * 0.5;
    }
    let mut v = Vec::new();
    while v.len() < 3 {
        v.push(y.clone());
    }
    match o {
        Some(0) => y,
        _ => y + v[2].clone(),
    }
}

// Early exits keep a construct plain Rust: fine on static conditions.
#[jit]
fn early(x: &Tensor, n: usize) -> Tensor {
    let mut y = x.clone();
    for i in 0..10 {
        if i >= n {
            break;
        }
        if i == 1 {
            continue;
        }
        y = y.sin();
    }
    if n == 7 {
        return y;
    }
    y.cos()
}

// Many state variables: more than 12 travel in nested tuples.
#[jit]
fn many(x: &Tensor, flag: bool) -> Tensor {
    let (mut a, mut b, mut c, mut d, mut e) = (x.clone(), x.clone(), x.clone(), x.clone(), x.clone());
    let (mut f, mut g, mut h, mut i, mut j) = (x.clone(), x.clone(), x.clone(), x.clone(), x.clone());
    let (mut k, mut l, mut m, mut n) = (x.clone(), x.clone(), x.clone(), x.clone());
    if flag {
        a = a.exp();
        b = b.exp();
        c = c.exp();
        d = d.exp();
        e = e.exp();
        f = f.exp();
        g = g.exp();
        h = h.exp();
        i = i.exp();
        j = j.exp();
        k = k.exp();
        l = l.exp();
        m = m.exp();
        n = n.exp();
    }
    a + b + c + d + e + f + g + h + i + j + k + l + m + n
}

// An `if` whose value borrows; a loop writing through `iter_mut`; a `while`
// condition with a side effect; a value-less `if` in a match arm.
#[jit]
fn odd_forms(x: &Tensor, c: bool, n: usize) -> Tensor {
    let a = x.exp();
    let b = x.sin();
    let r = if c { &a } else { &b };
    let mut v = vec![x.clone(), x * 2.0];
    for t in v.iter_mut() {
        *t = t.tanh();
    }
    let mut i = 0;
    while {
        i += 1;
        i < n
    } {}
    let mut acc = r + &v[0] + &v[1];
    match n {
        0 => {}
        _ => if c {
            acc = acc * i as f64;
        },
    }
    acc
}

fn main() {
    let _ = odd_forms(&Tensor::vector(&[1.0f32]), true, 3);
    let x = Tensor::vector(&[1.0f32, -2.0]);
    let _ = pick(&x, 1, true);
    let _ = nested(&x, 3, 2);
    let _ = uninit(&x, false);
    let _ = diverging(&x, 2);
    let _ = in_closure(&x, 3);
    let _ = plain(&x, Some(2));
    let _ = early(&x, 7);
    let _ = many(&x, true);
    let _ = (traced_if, traced_if_outputs, traced_while, traced_for);
}
