//! Batching rules per op family, as properties over random shapes, batched
//! arguments and axes (`harness.rs`): each case against a loop of single
//! calls, and compiled against the interpreter.

use super::harness::{arg, ints, property, Arg, Body};
use crate::common::Rng;
use jitfuse::prelude::*;
use jitfuse::{attention, attention_with, AttnMask, AttnOptions};

fn dims(rng: &mut Rng, rank: usize) -> Vec<usize> {
    (0..rank).map(|_| 1 + rng.below(4)).collect()
}

fn axis(rng: &mut Rng, rank: usize) -> isize {
    let a = rng.below(rank) as isize;
    if rng.chance(0.4) {
        a - rank as isize
    } else {
        a
    }
}

fn float(rng: &mut Rng) -> DType {
    if rng.chance(0.5) {
        DType::F32
    } else {
        DType::F64
    }
}

#[test]
fn elementwise_ops_broadcast_shared_and_batched_operands() {
    property("elementwise", 24, |rng| {
        let r = 1 + rng.below(3);
        let s = dims(rng, r);
        // A trailing-suffix partner, broadcast against the example.
        let tail = s[rng.below(r)..].to_vec();
        let d = float(rng);
        let args = vec![arg(&s, d), arg(&tail, d), arg(&[], d)];
        let body: Body = Box::new(|x| {
            let y = (&x[0] * &x[1]).tanh() + &x[2];
            let z = where_(&x[0].gt(&x[1]), &y, (&x[1] - 0.5).exp());
            vec![y.relu() * 2.0, z, x[2].clone() + 1.0]
        });
        (args, body)
    });
}

#[test]
fn matmul_is_a_batched_matmul_whichever_operands_are_batched() {
    // Vector and matrix operands, and a leading batch of the example's own.
    property("matmul", 40, |rng| {
        let (m, k, n) = (1 + rng.below(5), 1 + rng.below(6), 1 + rng.below(5));
        let d = float(rng);
        let kind = rng.below(6);
        let (a, b) = match kind {
            0 => (vec![m, k], vec![k, n]),
            1 => (vec![k], vec![k, n]),
            2 => (vec![m, k], vec![k]),
            3 => (vec![k], vec![k]),
            4 => (vec![2, m, k], vec![k, n]),
            _ => (vec![m, k], vec![3, k, n]),
        };
        // A layer's case half the time: batched rows, a weight shared by the
        // batch (the rule that folds the batch into the rows).
        let args = if rng.chance(0.5) {
            vec![arg(&a, d).batched(), arg(&b, d).shared()]
        } else {
            vec![arg(&a, d), arg(&b, d)]
        };
        let body: Body = Box::new(|x| vec![x[0].matmul(&x[1])]);
        (args, body)
    });
}

#[test]
fn a_shared_weight_matrix_with_batched_rows_is_one_gemm_in_the_graph() {
    // The rule for the most common case (a layer's weights shared by the
    // batch) folds the batch into the rows: no per-lane matmul in the graph.
    let x = Tensor::ones(&[5, 3, 4], DType::F32);
    let w = Tensor::ones(&[4, 6], DType::F32);
    let f = vmap(|(x, w): &(Tensor, Tensor)| x.matmul(w), [Some(0), None], 0);
    let g = crate::common::trace_fn(&[x.clone(), w.clone()], |t| {
        vec![f(&(t[0].clone(), t[1].clone()))]
    });
    let text = g.to_string();
    let matmuls: Vec<&str> = text.lines().filter(|l| l.contains("matmul")).collect();
    assert_eq!(matmuls.len(), 1, "{text}");
    assert!(
        matmuls[0].contains("[15,4]") || matmuls[0].contains("15"),
        "{text}"
    );
    assert_eq!(f(&(x, w)).shape(), &[5, 3, 6]);
}

#[test]
fn reductions_shift_their_axes_negative_or_not() {
    property("reductions", 40, |rng| {
        let r = 1 + rng.below(3);
        let s = dims(rng, r);
        let d = float(rng);
        let (a, b) = (axis(rng, r), axis(rng, r));
        let two: Vec<isize> = if a.rem_euclid(r as isize) == b.rem_euclid(r as isize) {
            vec![a]
        } else {
            vec![a, b]
        };
        let body: Body = Box::new(move |x| {
            let t = &x[0];
            vec![
                t.sum(a),
                t.max_keepdims(b),
                t.min(two.as_slice()),
                t.prod(a),
                t.mean_keepdims(two.as_slice()),
                t.var(b),
                t.logsumexp(a),
                t.argmax(a),
                t.argmin(b),
                t.sum_all(),
            ]
        });
        (vec![arg(&s, d)], body)
    });
}

#[test]
fn softmax_layer_norm_and_cross_entropy_batch_along_their_axis() {
    property("softmax and layer norm", 30, |rng| {
        let r = 1 + rng.below(3);
        let s = dims(rng, r);
        let d = float(rng);
        let a = axis(rng, r);
        let last = s[r - 1];
        let classes = last as i64;
        let lead = s[..r - 1].to_vec();
        let args = vec![
            arg(&s, d).range(-3.0, 3.0),
            arg(&[last], d),
            arg(&[last], d),
            ints(&lead, 0, classes - 1),
        ];
        let body: Body = Box::new(move |x| {
            vec![
                x[0].softmax(a),
                x[0].log_softmax(a),
                x[0].layer_norm(&x[1], &x[2], 1e-5, -1),
                softmax_cross_entropy_with_labels(&x[0], &x[3]),
            ]
        });
        (args, body)
    });
}

#[test]
fn shape_ops_move_with_the_batch_axis() {
    property("shape ops", 40, |rng| {
        let r = 1 + rng.below(3);
        let s = dims(rng, r);
        let d = float(rng);
        let a = axis(rng, r);
        let au = a.rem_euclid(r as isize) as usize;
        let mut perm: Vec<usize> = (0..r).collect();
        perm.rotate_left(rng.below(r));
        let pads: Vec<(usize, usize)> = (0..r).map(|_| (rng.below(2), rng.below(3))).collect();
        let start = rng.below(s[au] + 1) as isize;
        let mut other = s.clone();
        other[au] = 1 + rng.below(3);
        let flat: Vec<isize> = vec![-1];
        let body: Body = Box::new(move |x| {
            let t = &x[0];
            vec![
                t.transpose(&perm),
                t.reshape(&flat),
                t.slice_axis(a, start, None, 1),
                t.slice_axis(a, None, None, -2),
                t.flip(&[a]),
                t.pad(&pads, 0.5),
                concat(&[t, &x[1]], a),
                stack(&[t, t], a),
                t.expand_dims(a),
                t.expand_dims(0).squeeze(&[0]),
                t.reshape(&[1, -1]).tril(0),
                Tensor::iota(t.shape(), au, DType::I32) + t.argmax(a).expand_dims(a),
            ]
        });
        (vec![arg(&s, d), arg(&other, d)], body)
    });
}

#[test]
fn take_and_gather_with_batched_tables_and_indices() {
    property("take", 40, |rng| {
        let (n, w) = (1 + rng.below(5), 1 + rng.below(3));
        let k = 1 + rng.below(4);
        let d = float(rng);
        // Out-of-range and negative indices too: the batched gather must
        // clamp per lane, never into a neighbouring lane's rows.
        let lo = -(n as i64) - 1;
        let hi = n as i64;
        let on_rows = rng.chance(0.5);
        let args = vec![arg(&[n, w], d), ints(&[k], lo, hi), ints(&[k, 2], lo, hi)];
        let body: Body = Box::new(move |x| {
            let a = if on_rows { 0 } else { -1 };
            vec![
                x[0].take(&x[1], a),
                x[0].gather(&x[2], 0),
                x[0].take(&x[1], 0).sum(0),
            ]
        });
        (args, body)
    });
}

#[test]
fn gradients_of_take_scatter_into_each_lanes_table() {
    // `scatter_add` is what the gradient of `take` is: per-example gradients
    // of an embedding lookup with per-example token ids.
    property("scatter via grad of take", 30, |rng| {
        let (n, w, k) = (1 + rng.below(5), 1 + rng.below(3), 1 + rng.below(6));
        let args = vec![
            arg(&[n, w], DType::F32),
            ints(&[k], -(n as i64), n as i64 - 1),
            arg(&[k, w], DType::F32),
        ];
        let body: Body = Box::new(|x| {
            let (ids, up) = (x[1].clone(), x[2].clone());
            vec![grad(|t: &Tensor| (t.take(&ids, 0) * &up).sum_all(), &x[0])]
        });
        (args, body)
    });
}

#[test]
fn attention_batches_over_queries_keys_values_and_masks() {
    property("attention", 30, |rng| {
        let (sq, sk, dk, dv) = (
            1 + rng.below(4),
            1 + rng.below(5),
            1 + rng.below(4),
            1 + rng.below(3),
        );
        let heads = rng.below(3);
        let lead: Vec<usize> = if heads > 0 { vec![heads] } else { vec![] };
        let with = |tail: [usize; 2]| -> Vec<usize> { lead.iter().copied().chain(tail).collect() };
        let d = DType::F32;
        let mask = rng.below(4);
        let mut args: Vec<Arg> = vec![
            arg(&with([sq, dk]), d),
            arg(&with([sk, dk]), d),
            arg(&with([sk, dv]), d),
            arg(&[sq, sk], d),
        ];
        if mask == 2 {
            args[3] = Arg {
                dtype: DType::Bool,
                ..arg(&[sq, sk], DType::Bool)
            };
        }
        let body: Body = Box::new(move |x| {
            let m = match mask {
                0 => AttnMask::None,
                1 => AttnMask::Causal,
                2 => AttnMask::Bool(&x[3]),
                _ => AttnMask::Additive(&x[3]),
            };
            let o = if mask == 0 {
                attention_with(
                    &x[0],
                    &x[1],
                    &x[2],
                    m,
                    AttnOptions {
                        scale: Some(0.7),
                        ..Default::default()
                    },
                )
            } else {
                attention(&x[0], &x[1], &x[2], m)
            };
            // With an all-false bool row the result is NaN, which a loop
            // gives too: compared as NaN against NaN.
            vec![o]
        });
        (args, body)
    });
}

#[test]
fn gradients_of_attention_batch_too() {
    property("attention gradients", 16, |rng| {
        let (s, dk) = (1 + rng.below(4), 1 + rng.below(4));
        let d = DType::F32;
        let args = vec![arg(&[s, dk], d), arg(&[s, dk], d), arg(&[s, dk], d)];
        let body: Body = Box::new(|x| {
            let (k, v) = (x[1].clone(), x[2].clone());
            let g = grad(
                |q: &Tensor| attention(q, &k, &v, AttnMask::Causal).square().sum_all(),
                &x[0],
            );
            vec![g]
        });
        (args, body)
    });
}

#[test]
fn random_numbers_follow_their_key_shared_or_batched() {
    // A shared key gives every lane the same numbers (as JAX does); a
    // batched key (split keys) gives each lane its own.
    let keys = Key::new(7).split_data(3);
    let f = vmap(
        |(k, x): &(Tensor, Tensor)| {
            let key = Key::from_data(k.clone()).unwrap();
            random::uniform(&key, &[4], DType::F32, 0.0, 1.0) + x
        },
        [Some(0), Some(0)],
        0,
    );
    let x = Tensor::zeros(&[3, 4], DType::F32);
    let got = f(&(keys.clone(), x.clone()));
    for l in 0..3 {
        let key = Key::from_data(
            keys.slice_axis(0, l as isize, l as isize + 1, 1)
                .squeeze(&[0]),
        )
        .unwrap();
        let want = random::uniform(&key, &[4], DType::F32, 0.0, 1.0);
        let row = got
            .slice_axis(0, l as isize, l as isize + 1, 1)
            .squeeze(&[0]);
        assert_eq!(
            row.to_vec::<f32>().unwrap(),
            want.to_vec::<f32>().unwrap(),
            "lane {l}"
        );
    }
    let shared = vmap(
        |(k, x): &(Tensor, Tensor)| {
            let key = Key::from_data(k.clone()).unwrap();
            random::normal(&key, &[2], DType::F32) + x
        },
        [None, Some(0)],
        0,
    );
    let one = Key::new(3).into_data();
    let got = shared(&(one.clone(), Tensor::zeros(&[3, 2], DType::F32)));
    let want = random::normal(&Key::from_data(one).unwrap(), &[2], DType::F32);
    for l in 0..3 {
        let row = got
            .slice_axis(0, l as isize, l as isize + 1, 1)
            .squeeze(&[0]);
        assert_eq!(
            row.to_vec::<f32>().unwrap(),
            want.to_vec::<f32>().unwrap(),
            "lane {l}"
        );
    }
}
