//! `vmap` of the fuzzer's random programs (every op family it generates,
//! gradients, `cond`, loops and random numbers included) against a loop of
//! single calls, with random batch sizes, batched and shared arguments and
//! axes; and the batched program traced, verified and compiled at every
//! level against the interpreter.

use crate::common::Rng;
use crate::fuzz::{check, generate, noise, program, trace_program};
use jitfuse::internals::ir::verify;
use jitfuse::internals::trace::{trace, ParamSpec};
use jitfuse::{stack, vmap, BatchAxes, Tensor};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// One random program batched: `Ok(false)` when the program is not one the
/// library accepts (the generator's invalid cases).
pub fn vmap_case(seed: u64) -> Result<bool, String> {
    let mut rng = Rng::new(seed);
    let p = generate::program(&mut rng);
    let Ok((g, captured)) = trace_program(&p) else {
        return Ok(false);
    };
    let size = 1 + rng.below(4);
    let draws: Vec<u64> = p.params.iter().map(|q| q.draw).collect();
    let lanes: Vec<Vec<Tensor>> = (0..size as u64)
        .map(|l| check::arguments(&g, seed.wrapping_mul(31).wrapping_add(l), &draws, false))
        .collect();
    // Each parameter batched (at a random axis, sometimes negative) or shared.
    let mut axes: Vec<Option<isize>> = Vec::new();
    let mut args: Vec<Tensor> = Vec::new();
    for (i, q) in p.params.iter().enumerate() {
        let r = q.shape.len();
        if i == 0 || rng.chance(0.6) {
            let a = rng.below(r + 1);
            let parts: Vec<&Tensor> = lanes.iter().map(|l| &l[i]).collect();
            args.push(stack(&parts, a as isize));
            axes.push(Some(if rng.chance(0.3) {
                a as isize - (r as isize + 1)
            } else {
                a as isize
            }));
        } else {
            // Shared: every lane sees lane 0's value.
            args.push(lanes[0][i].clone());
            axes.push(None);
        }
    }
    let lane_args = |l: usize| -> Vec<Tensor> {
        (0..p.params.len())
            .map(|i| {
                if axes[i].is_some() {
                    lanes[l][i].clone()
                } else {
                    lanes[0][i].clone()
                }
            })
            .collect()
    };
    let single: Vec<Vec<Tensor>> = (0..size)
        .map(|l| program::build(&p, &lane_args(l)))
        .collect();
    let noise: Vec<f64> = (0..size)
        .map(|l| {
            let v = noise::node_values(&g, &lane_args(l), &captured)
                .map_err(|e| format!("noise: {e}"))?;
            Ok(noise::analyse(&g, &v).scales)
        })
        .collect::<Result<Vec<_>, String>>()?
        .into_iter()
        .reduce(|a, b| a.iter().zip(&b).map(|(x, y)| x.max(*y)).collect())
        .unwrap_or_default();
    let out_axes: Vec<Option<isize>> = single[0]
        .iter()
        .map(|o| Some(rng.below(o.ndim() + 1) as isize))
        .collect();
    let want: Vec<Tensor> = (0..single[0].len())
        .map(|k| {
            let parts: Vec<&Tensor> = single.iter().map(|s| &s[k]).collect();
            stack(&parts, out_axes[k].unwrap())
        })
        .collect();
    let f32 = check::coarsest(&g);
    let floor = if p.grad { 1.0 } else { 0.1 };
    let batched = vmap(
        |xs: &Vec<Tensor>| program::build(&p, xs),
        BatchAxes(axes.clone()),
        BatchAxes(out_axes.clone()),
    );
    let got = catch_unwind(AssertUnwindSafe(|| batched(&args)))
        .map_err(|e| format!("eager vmap panicked: {}", crate::common::panic_text(&*e)))?;
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        check::compare(a, b, f32, floor, noise[k])
            .map_err(|e| format!("eager vmap, output {k}: {e}"))?;
    }
    // The batched function traced: a valid graph, compiled as it interprets.
    let specs: Vec<ParamSpec> = args
        .iter()
        .map(|a| ParamSpec {
            shape: a.shape().to_vec(),
            dtype: a.dtype(),
            weak: false,
        })
        .collect();
    let traced = trace(&specs, |ts| batched(&ts.to_vec())).map_err(|e| format!("trace: {e}"))?;
    verify(&traced.graph).map_err(|e| format!("verify: {e}"))?;
    let modes = vec![program::Mode::Borrowed; args.len()];
    check::check_graph(
        &traced.graph,
        &traced.captured,
        &args,
        &modes,
        &check::levels(seed),
        floor,
    )
    .map_err(|e| format!("compiled vmap: {e}"))?;
    Ok(true)
}

#[test]
fn vmap_of_random_programs_matches_a_loop_of_single_calls() {
    crate::fuzz::run_seeds(
        "JITFUSE_VMAP_SEED",
        7000,
        "JITFUSE_VMAP_CASES",
        300,
        vmap_case,
    );
}
