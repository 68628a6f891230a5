// Trees: derived structs (named, tuple, unit, generic) as owned and borrowed
// parameters and in returns; tuples, arrays, `Vec` and `Option` of tensors.
#![deny(warnings)]
use jitfuse::prelude::*;

#[derive(Tree, Clone)]
struct Mlp {
    w: Tensor,
    b: Tensor,
}

#[derive(Tree)]
struct Pair(Tensor, jitfuse::Tensor);

#[derive(Tree, Clone, Copy)]
struct Unit;

#[derive(Tree)]
struct Stack<L> {
    layers: Vec<L>,
    norm: Option<Tensor>,
}

// The derive adds `Tree` bounds next to the user's own.
#[derive(Tree)]
struct Bounded<T: Clone, const N: usize>
where
    T: Send,
{
    items: [T; N],
}

#[jit]
fn owned(p: Mlp, x: &Tensor) -> (Mlp, Tensor) {
    let y = x * &p.w + &p.b;
    (p.map(|t| t * 2.0), y)
}

#[jit]
fn borrowed(p: &Mlp, q: &Pair, s: &Stack<Mlp>, u: Unit) -> Tensor {
    let _ = u;
    let mut acc = &p.w + &q.0 + &q.1;
    for l in &s.layers {
        acc = acc + &l.b;
    }
    acc
}

#[jit]
fn containers(t: (Tensor, Tensor), a: [Tensor; 2], v: Vec<Tensor>, o: Option<Tensor>, n: usize) -> Vec<Tensor> {
    let mut out = vec![t.0 + t.1, &a[0] * &a[1]];
    out.extend(v);
    out.extend(o);
    out.truncate(n);
    out
}

#[jit]
fn generic_field(b: &Bounded<Tensor, 2>) -> Bounded<Tensor, 2> {
    Bounded { items: [b.items[1].clone(), b.items[0].clone()] }
}

// Containers of non-trees stay static (the `Tree` impls for `Option` and
// `Vec` do not apply: their element is not a tree).
#[jit]
fn static_containers(x: &Tensor, k: Option<usize>, v: Vec<u8>, t: (bool, i32)) -> Tensor {
    x * (k.unwrap_or(1) + v.len()) as f64 * t.1 as f64
}

fn main() {
    let _ = static_containers(&Tensor::vector(&[1.0f32]), Some(2), vec![1], (true, 3));
    let x = Tensor::vector(&[1.0f32, -2.0]);
    let p = Mlp { w: x.clone(), b: x.clone() };
    let (_p, _y): (Mlp, Tensor) = owned(p.clone(), &x);
    let s = Stack { layers: vec![p.clone()], norm: None };
    let _: Tensor = borrowed(&p, &Pair(x.clone(), x.clone()), &s, Unit);
    let _: Vec<Tensor> = containers((x.clone(), x.clone()), [x.clone(), x.clone()], vec![x.clone()], Some(x.clone()), 3);
    let _ = generic_field(&Bounded { items: [x.clone(), x.clone()] });
    let _: Result<(Mlp, Tensor), Error> = owned::try_call(p.clone(), &x);
    let _ = owned::lower(p, &x);
}
