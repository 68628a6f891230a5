//! The random-program differential fuzzer: random programs over the op set
//! (`generate.rs`), each traced, interpreted and compiled at every codegen
//! level with every argument borrowed, donated or owned-but-shared
//! (`check.rs`). A failure shrinks to a small program, written as a regression program
//! (IR, argument modes, seed, and what each stage makes of it) into `programs/`
//! (`case_file.rs`), where `programs.rs` runs it from then on.
//!
//! CI runs a fixed seed and case budget; `JITFUSE_FUZZ_CASES=n` and
//! `JITFUSE_FUZZ_SECONDS=s` run longer, `JITFUSE_FUZZ_SEED=k` elsewhere,
//! `JITFUSE_FUZZ_KEEP_GOING=1` reports every failure instead of the first,
//! `JITFUSE_FUZZ_FROM=i` starts at a run's case i (`JITFUSE_FUZZ_VERBOSE=1` prints each case
//! before it runs, to find one that does not end). Every call's
//! allocation is measured against its memory report (`check::call`).

pub mod case_file;
pub mod check;
pub mod generate;
pub mod noise;
pub mod program;

use crate::common::Rng;
use jitfuse::internals::exec::CompileOptions;
use jitfuse::internals::ir::Graph;
use jitfuse::internals::trace::{trace, ParamSpec};
use jitfuse::Tensor;
use program::{Mode, Program};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// The traced graph of a program (and the tensors it captured), or why
/// it did not trace.
pub fn trace_program(p: &Program) -> Result<(Graph, Vec<Tensor>), String> {
    trace_program_at(p, program::loop_levels(p))
}

/// `trace_program` with the gradient's loops checkpointed `levels` deep.
pub fn trace_program_at(p: &Program, levels: Option<u32>) -> Result<(Graph, Vec<Tensor>), String> {
    let specs: Vec<ParamSpec> = p
        .params
        .iter()
        .map(|q| ParamSpec {
            shape: q.shape.clone(),
            dtype: q.dtype,
            weak: false,
        })
        .collect();
    let r = catch_unwind(AssertUnwindSafe(|| {
        trace(&specs, |ts| program::build_at(p, ts, levels))
    }));
    match r {
        Ok(Ok(t)) => Ok((t.graph, t.captured)),
        Ok(Err(e)) => Err(format!("trace: {e}")),
        Err(_) => Err("trace: panic".into()),
    }
}

#[derive(Debug)]
pub enum Outcome {
    Pass,
    /// The generator made something the library rejects (counted, shown).
    Invalid(String),
    Fail(String),
}

/// The comparison's floor for the scale of an output (`check::compare`): 1
/// for gradients, 0.1 otherwise (the log-sum-exp of a log-softmax row is
/// mathematically 0, computed from values of size 1 to 10, so it is a few
/// f32 ulps of 1).
pub fn floor(p: &Program) -> f64 {
    if p.grad {
        1.0
    } else {
        0.1
    }
}

/// One program on arguments drawn from `seed`.
pub fn run_case(p: &Program, seed: u64) -> Outcome {
    let (g, captured) = match trace_program(p) {
        Ok(x) => x,
        Err(e) => return Outcome::Invalid(e),
    };
    let modes: Vec<Mode> = p.params.iter().map(|q| q.mode).collect();
    let draws: Vec<u64> = p.params.iter().map(|q| q.draw).collect();
    let args = check::arguments(&g, seed, &draws, seed % 3 == 0);
    let floor = floor(p);
    // A gradient through self-attention is checked against the composition's gradient
    // (traced with pattern fusion off), whose rounding the noise model follows.
    let composed = if p.grad && p.ins.iter().any(|i| matches!(i, program::Ins::Attend(..))) {
        jitfuse::internals::passes::set_pattern_fusion(false);
        let t = trace_program(p);
        jitfuse::internals::passes::set_pattern_fusion(true);
        match t {
            Ok(t) => Some(t),
            Err(e) => return Outcome::Invalid(e),
        }
    } else {
        None
    };
    let oracle = composed
        .as_ref()
        .map_or((&g, &captured[..]), |(o, c)| (o, &c[..]));
    let levels = check::levels(seed);
    if let Err(e) = check::check_graph_against(&g, &captured, oracle, &args, &modes, &levels, floor)
    {
        return Outcome::Fail(e);
    }
    match checkpointed_loops_agree(p, &g, &captured, &args, floor) {
        Ok(()) => Outcome::Pass,
        Err(e) => Outcome::Fail(e),
    }
}

/// A gradient program whose loops were checkpointed: the interpreter gives the values of
/// the same program storing every carry, and the compiled program's report never stacks
/// more than that program's does (fewer when a loop of 16 steps or more is all there is).
fn checkpointed_loops_agree(
    p: &Program,
    g: &Graph,
    captured: &[Tensor],
    args: &[Tensor],
    floor: f64,
) -> Result<(), String> {
    let Some(levels) = program::loop_levels(p).filter(|&l| p.grad && l > 0) else {
        return Ok(());
    };
    let (plain, plain_captured) = trace_program_at(p, None)?;
    let cut = noise::node_values(g, args, captured).map_err(|e| format!("interpreter: {e}"))?;
    let every = noise::node_values(&plain, args, &plain_captured)
        .map_err(|e| format!("interpreter: {e}"))?;
    let noise::Noise {
        scales: noise,
        noisy_infinities: noisy_inf,
    } = noise::analyse(&plain, &every);
    let f32 = check::coarsest(&plain);
    for (k, (a, b)) in g.outputs.iter().zip(&plain.outputs).enumerate() {
        check::compare_with(
            &cut[a.index()],
            &every[b.index()],
            f32,
            floor,
            noise[k],
            noisy_inf[k],
        )
        .map_err(|e| {
            format!("output {k}: loops checkpointed {levels} deep against every carry kept: {e}")
        })?;
    }
    let only_loop = p
        .ins
        .iter()
        .filter(|i| matches!(i, program::Ins::Fori(..) | program::Ins::Loop(..)))
        .collect::<Vec<_>>();
    let long = matches!(only_loop[..], [program::Ins::Loop(_, _, n, ..)] if *n >= 16);
    {
        use jitfuse::internals::exec::Executable;
        let stacked = |g: &Graph, c: &[Tensor]| {
            let kinds = vec![jitfuse::jit::ArgKind::Borrowed; g.params().len()];
            Executable::from_graph_with(
                g.clone(),
                c.to_vec(),
                Some(&kinds),
                &CompileOptions::at(&jitfuse::internals::codegen::Target::host()),
            )
            .map(|e| e.memory_analysis().loop_stack_bytes)
            .map_err(|e| format!("compile: {e}"))
        };
        let (cut, every) = (stacked(g, captured)?, stacked(&plain, &plain_captured)?);
        if cut > every || (long && every > 0 && cut == every) {
            return Err(format!(
                "loops checkpointed {levels} deep stack {cut} bytes, every carry {every}"
            ));
        }
    }
    Ok(())
}

/// Remove instructions no output reads, and parameters nothing reads.
fn prune(p: &Program) -> Program {
    let np = p.params.len();
    let mut live = vec![false; np + p.ins.len()];
    for &o in &p.outputs {
        live[o] = true;
    }
    for i in (0..p.ins.len()).rev() {
        if live[np + i] {
            for x in p.ins[i].operands() {
                live[x] = true;
            }
        }
    }
    let mut map = vec![usize::MAX; live.len()];
    let mut next = 0;
    let mut params = Vec::new();
    for k in 0..np {
        if live[k] {
            map[k] = next;
            next += 1;
            params.push(p.params[k].clone());
        }
    }
    let mut ins = Vec::new();
    for i in 0..p.ins.len() {
        if live[np + i] {
            map[np + i] = next;
            next += 1;
            let mut x = p.ins[i].clone();
            x.map_operands(&|v| map[v]);
            ins.push(x);
        }
    }
    Program {
        params,
        ins,
        outputs: p.outputs.iter().map(|&o| map[o]).collect(),
        grad: p.grad,
    }
}

/// Smaller programs to try in place of `p`.
fn candidates(p: &Program) -> Vec<Program> {
    let mut out = Vec::new();
    if p.grad {
        out.push(Program {
            grad: false,
            ..p.clone()
        });
    }
    if p.outputs.len() > 1 {
        for &o in &p.outputs {
            out.push(Program {
                outputs: vec![o],
                ..p.clone()
            });
        }
    }
    let np = p.params.len();
    for i in (0..p.ins.len()).rev() {
        // Instruction i replaced by one of its operands everywhere.
        for x in p.ins[i].operands() {
            let mut q = p.clone();
            let v = np + i;
            for ins in q.ins.iter_mut().skip(i + 1) {
                ins.map_operands(&|u| if u == v { x } else { u });
            }
            for o in q.outputs.iter_mut() {
                if *o == v {
                    *o = x;
                }
            }
            out.push(q);
        }
    }
    for k in 0..np {
        if p.params[k].mode != Mode::Borrowed {
            let mut q = p.clone();
            q.params[k].mode = Mode::Borrowed;
            out.push(q);
        }
    }
    out.into_iter().map(|q| prune(&q)).collect()
}

fn size(p: &Program) -> usize {
    p.ins.len() * 4
        + p.outputs.len()
        + p.grad as usize * 8
        + p.params.iter().filter(|q| q.mode != Mode::Borrowed).count()
}

/// The smallest failing program reachable by `candidates`.
pub fn shrink(p: &Program, seed: u64) -> (Program, String) {
    let mut best = prune(p);
    let mut why = match run_case(&best, seed) {
        Outcome::Fail(e) => e,
        _ => return (p.clone(), "the pruned program passes".into()),
    };
    let mut budget = 300;
    'outer: while budget > 0 {
        for c in candidates(&best) {
            budget -= 1;
            if size(&c) < size(&best) {
                if let Outcome::Fail(e) = run_case(&c, seed) {
                    best = c;
                    why = e;
                    continue 'outer;
                }
            }
            if budget == 0 {
                break;
            }
        }
        break;
    }
    (best, why)
}

/// The report of a failing case: what differed, the program, and its IR.
pub fn report(p: &Program, seed: u64) -> String {
    let (small, why) = shrink(p, seed);
    let ir = trace_program(&small)
        .and_then(|(g, captured)| constants_inlined(&g.to_text(), &captured))
        .unwrap_or_else(|e| e);
    let modes: Vec<Mode> = small.params.iter().map(|q| q.mode).collect();
    let draws: Vec<u64> = small.params.iter().map(|q| q.draw).collect();
    let floor = floor(&small);
    let first = why.lines().next().unwrap_or("");
    let saved = match case_file::save(
        &case_file::folder(),
        first,
        &ir,
        &modes,
        &draws,
        seed,
        floor,
    ) {
        Ok(path) => format!("written to {}", path.display()),
        Err(e) => format!("not written ({e}):\n{ir}"),
    };
    format!("fuzz case (seed {seed}) failed: {why}\nshrunk program: {small:?}\nregression program {saved}\n")
}

/// The IR `text` with each captured tensor (the scalar of a `Scalar` instruction, broadcast)
/// written as the constant it is, so that a case file replays without it; an error where a
/// captured tensor holds more than one value.
fn constants_inlined(text: &str, captured: &[Tensor]) -> Result<String, String> {
    let mut out = String::new();
    for line in text.lines() {
        let Some((lhs, rest)) = line.split_once(" = captured ") else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let (k, ty) = rest
            .split_once(" : ")
            .ok_or_else(|| format!("unread line {line}"))?;
        let k: usize = k.parse().map_err(|_| format!("unread line {line}"))?;
        let values = crate::common::to_f64s(&captured[k]);
        let v = values[0];
        if !v.is_finite() || values.iter().any(|x| x.to_bits() != v.to_bits()) {
            return Err(format!(
                "captured tensor {k} is not one finite value:\n{text}"
            ));
        }
        out.push_str(&format!("{lhs} = const {v:?} : {ty}\n"));
    }
    Ok(out)
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Run `cases` programs from `seed` (or until `JITFUSE_FUZZ_SECONDS`);
/// returns (passed, invalid) counts, panicking with the shrunk report of
/// the first failure.
pub fn fuzz(seed: u64, cases: u64) -> (u64, u64) {
    let cases = env_u64("JITFUSE_FUZZ_CASES").unwrap_or(cases);
    let seconds = env_u64("JITFUSE_FUZZ_SECONDS");
    let seed = env_u64("JITFUSE_FUZZ_SEED").map_or(seed, |s| s ^ seed);
    let verbose = std::env::var_os("JITFUSE_FUZZ_VERBOSE").is_some();
    // Long runs: report each failure and go on (panicking at the end).
    let keep_going = std::env::var_os("JITFUSE_FUZZ_KEEP_GOING").is_some();
    let mut failures = 0u64;
    let start = Instant::now();
    let (mut passed, mut invalid) = (0, 0);
    let mut first_invalid: Vec<String> = Vec::new();
    // A long run's case k again: `JITFUSE_FUZZ_FROM=k` starts there.
    let mut i = env_u64("JITFUSE_FUZZ_FROM").unwrap_or(0);
    let end = i + cases;
    loop {
        match seconds {
            Some(s) if start.elapsed() >= Duration::from_secs(s) => break,
            None if i >= end => break,
            _ => {}
        }
        let case = seed.wrapping_mul(1_000_003).wrapping_add(i);
        let mut rng = Rng::new(case);
        let p = generate::program(&mut rng);
        if verbose {
            eprintln!("case {case}: {p:?}");
        }
        match run_case(&p, case) {
            Outcome::Pass => passed += 1,
            Outcome::Invalid(e) => {
                invalid += 1;
                if first_invalid.len() < 5 {
                    first_invalid.push(format!("{e}\n{p:?}"));
                }
            }
            Outcome::Fail(e) if keep_going => {
                failures += 1;
                eprintln!("{}(before shrinking: {e})", report(&p, case));
            }
            Outcome::Fail(e) => panic!("{}(before shrinking: {e})", report(&p, case)),
        }
        i += 1;
    }
    eprintln!(
        "fuzz seed {seed}: {passed} programs passed, {failures} failed, {invalid} did not trace, {:.1} s",
        start.elapsed().as_secs_f64()
    );
    for e in &first_invalid {
        eprintln!("  not traced: {e}");
    }
    assert_eq!(failures, 0, "{failures} programs failed (reported above)");
    (passed, invalid)
}

/// Program `text` checked at every level, donated or not, against the interpreter, with
/// parameter k's values drawn from stream `draws[k]` (a shrunk case that dropped parameters
/// keeps the others' values).
pub fn check_ir_drawn(text: &str, modes: &[Mode], draws: &[u64], seed: u64, floor: f64) {
    let g = jitfuse::internals::ir::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let args = check::arguments(&g, seed, draws, seed % 3 == 0);
    let mut levels = check::levels(seed);
    levels.extend(check::levels(seed + 1));
    levels.sort_by_key(|l| *l as u8);
    levels.dedup();
    if let Err(e) = check::check_graph(&g, &[], &args, modes, &levels, floor) {
        panic!("{e}\n{text}");
    }
}

/// Run `case` on the seeds `$seed_var..+$cases_var` (defaults `seed`, `cases`) and fail
/// with every failing seed's message; at least half the seeds must give a program the
/// library accepts (`Ok(true)`; `Ok(false)` is the generator's invalid case).
pub fn run_seeds(
    seed_var: &str,
    seed: u64,
    cases_var: &str,
    cases: u64,
    case: impl Fn(u64) -> Result<bool, String>,
) {
    let base = env_u64(seed_var).unwrap_or(seed);
    let cases = env_u64(cases_var).unwrap_or(cases);
    let (mut ran, mut failures) = (0, Vec::new());
    for seed in base..base + cases {
        match case(seed) {
            Ok(true) => ran += 1,
            Ok(false) => {}
            Err(e) => failures.push(format!("seed {seed}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran >= cases / 2, "only {ran} of {cases} programs ran");
}

#[test]
fn random_programs_match_the_interpreter_at_every_level_donated_or_not() {
    let (passed, invalid) = fuzz(1, 2500);
    assert!(
        invalid * 50 <= passed,
        "{invalid} of {passed} programs did not trace"
    );
}

/// The generator bounds every value it makes, empty operands included: case 378,509 of seed
/// 905000's run multiplied `[1, 257, 1030, 0] @ [1, 257, 0, 1030]` (no multiply-adds, a
/// 272 M-element output) and ran out of memory; case 374,173 concatenated a `[1030, 1030, 3]`
/// parameter with itself (6.4 M elements). Every value of those cases and of the 20,000
/// cases around them stays within the cap of a broadcast result.
#[test]
fn generated_programs_make_no_value_beyond_the_size_cap() {
    let seed = 905000u64 ^ 1;
    for i in 368_509..388_509u64 {
        let case = seed.wrapping_mul(1_000_003).wrapping_add(i);
        let p = generate::program(&mut Rng::new(case));
        let Ok((g, _)) = trace_program(&p) else {
            continue;
        };
        for node in &g.nodes {
            let n: usize = node.shape.iter().product();
            assert!(n <= 1 << 22, "case {case}: {n} elements\n{p:?}");
        }
    }
}

#[test]
fn random_programs_match_the_interpreter_second_seed() {
    let (passed, invalid) = fuzz(2, 2500);
    assert!(
        invalid * 50 <= passed,
        "{invalid} of {passed} programs did not trace"
    );
}

/// A borrowed f32 parameter of a hand-written test program, its values from stream `draw`.
#[cfg(test)]
/// A regression case passes through the harness (compiled at every level, donated or
/// not, against the interpreter).
fn assert_passes(p: &Program, seed: u64) {
    match run_case(p, seed) {
        Outcome::Pass => {}
        Outcome::Fail(e) => panic!("{e}\n{p:?}"),
        Outcome::Invalid(e) => panic!("did not trace: {e}"),
    }
}

fn borrowed_f32(shape: &[usize], draw: u64) -> program::Param {
    program::Param {
        shape: shape.to_vec(),
        dtype: jitfuse::DType::F32,
        mode: Mode::Borrowed,
        draw,
    }
}

/// Dropping a parameter the outputs do not read keeps the values of the
/// others: the shrunk case runs on the arguments that failed.
#[test]
fn pruning_a_parameter_keeps_the_others_values() {
    use program::{Ins, Un};
    let param = |draw| borrowed_f32(&[3, 5], draw);
    let p = Program {
        params: vec![param(0), param(1)],
        ins: vec![Ins::Unary(Un::Neg, 0), Ins::Unary(Un::Neg, 1)],
        outputs: vec![2, 3],
        grad: false,
    };
    let small = Program {
        outputs: vec![3],
        ..p.clone()
    };
    let small = prune(&small);
    assert_eq!(small.params.len(), 1);
    assert_eq!(small.params[0].draw, 1);
    let args = |p: &Program| {
        let (g, _) = trace_program(p).unwrap();
        let draws: Vec<u64> = p.params.iter().map(|q| q.draw).collect();
        check::arguments(&g, 77, &draws, false)
    };
    let (full, pruned) = (args(&p), args(&small));
    assert_eq!(
        crate::common::bits(&full[1]),
        crate::common::bits(&pruned[0])
    );
    assert_ne!(crate::common::bits(&full[0]), crate::common::bits(&full[1]));
}

/// Found by a long run: the gradient of a product was `prod / x`, NaN (0 / 0) where a
/// factor is exactly 0. Here `gelu(x) - tanh(gelu(x))` is 0 in the compiled code (its
/// tanh rounds to its argument for tiny values) and a tiny nonzero in the interpreter:
/// the compiled gradient was NaN. The product of the other factors is finite at a zero.
#[test]
fn the_gradient_of_a_product_with_a_zero_factor_is_finite() {
    use program::{Bin, Ins, Red, Un};
    let p = Program {
        params: vec![borrowed_f32(&[4, 3, 16], 1)],
        ins: vec![
            Ins::Unary(Un::Gelu, 0),
            Ins::Unary(Un::Tanh, 1),
            Ins::Binary(Bin::Sub, 1, 2),
            Ins::Reduce(Red::Prod, 3, -2, false),
        ],
        outputs: vec![4],
        grad: true,
    };
    assert_passes(&p, 2027240337);
}

/// The shrunk programs of three false alarms of a long run, each a sum whose
/// terms cancel: a loss `Σ(x - flip x)` of 13,888 elements, a loss
/// `Σ(x[i] - x[j])` over all pairs, and the gradient of a sum of softmax
/// rows added back to every element (cotangents of size 193). Each result is
/// rounding noise of its terms' size (1e-4 against an interpreter's 0); the
/// noise scale makes it so, where the floor of 1 did not.
#[test]
fn rounding_noise_of_cancelling_sums_is_not_a_mismatch() {
    use program::{Bin, Ins, Red, Row};
    let param = borrowed_f32;
    let cases = [
        (
            Program {
                params: vec![param(&[7, 64, 31], 0)],
                ins: vec![Ins::Flip(0, vec![-1]), Ins::Binary(Bin::Sub, 0, 1)],
                outputs: vec![2],
                grad: true,
            },
            2027312365,
        ),
        (
            Program {
                params: vec![param(&[64, 1], 1)],
                ins: vec![
                    Ins::Reduce(Red::Max, 0, -1, false),
                    Ins::Binary(Bin::Sub, 0, 1),
                ],
                outputs: vec![2],
                grad: true,
            },
            2027447517,
        ),
        (
            Program {
                params: vec![param(&[64, 3], 1)],
                ins: vec![
                    Ins::RowOp(Row::Softmax, 0, -1),
                    Ins::ReduceAll(Red::Max, 0),
                    Ins::ReduceAll(Red::Sum, 1),
                    Ins::Binary(Bin::Add, 1, 3),
                ],
                outputs: vec![4, 2, 3],
                grad: true,
            },
            2027401049,
        ),
    ];
    for (p, seed) in cases {
        match run_case(&p, seed) {
            Outcome::Pass => {}
            Outcome::Fail(e) => panic!("{e}\n{p:?}"),
            Outcome::Invalid(e) => panic!("did not trace: {e}"),
        }
    }
}

/// The noise scale of a cancelling sum is the sum of its terms' magnitudes,
/// and no more: a compiled sum that dropped one term still fails.
#[test]
fn the_noise_scale_is_the_size_of_the_cancelled_terms() {
    let text = "%0 = param 0 : f32[4096]\n\
                %1 = slice[4095:-1] %0 : f32[4096]\n\
                %2 = sub %0, %1 : f32[4096]\n\
                %3 = reduce_sum[0] %2 : f32[]\n\
                return %3, %2\n";
    let g = jitfuse::internals::ir::parse(text).unwrap();
    let args = check::arguments(&g, 5, &[0], false);
    let x = args[0].to_vec::<f32>().unwrap();
    let terms: f64 = x.iter().map(|v| 2.0 * v.abs() as f64).sum();
    let s = noise::analyse(&g, &noise::node_values(&g, &args, &[]).unwrap()).scales;
    assert!((s[0] - terms).abs() <= 1e-3 * terms, "{} vs {terms}", s[0]);
    let pairs = x.iter().zip(x.iter().rev());
    let largest = pairs
        .map(|(a, b)| (a.abs() + b.abs()) as f64)
        .fold(0.0, f64::max);
    assert!(
        (s[1] - largest).abs() <= 1e-6 * largest,
        "{} vs {largest}",
        s[1]
    );
    // The exact sum is 0; one term (about 3) missing is far outside the tolerance.
    let dropped = Tensor::from_vec(vec![x[0] - x[4095]], &[]).unwrap();
    let want = Tensor::from_vec(vec![0.0f32], &[]).unwrap();
    assert!(check::compare(&dropped, &want, jitfuse::DType::F32, 1.0, s[0]).is_err());
    let noise = Tensor::from_vec(vec![1e-4f32], &[]).unwrap();
    assert!(check::compare(&noise, &want, jitfuse::DType::F32, 1.0, s[0]).is_ok());
}

/// A false alarm of a long run: infinite outer products (`x xᵀ` of an argument with
/// infinities) times their GELU, whose tiny values near -1 of tanh are exactly 0 in the
/// compiled code (`inf · 0`: NaN) and 1e-7 in the interpreter (inf). Infinite arguments
/// now stay out of graphs where they could meet a computed value in a product; the other
/// specials (NaN, ±0) stay, and graphs without such products keep their infinities.
#[test]
fn infinite_arguments_stay_out_of_products_of_values() {
    use program::{Ins, Un};
    let p = Program {
        params: vec![borrowed_f32(&[64, 31, 4], 1)],
        ins: vec![
            Ins::Take(0, -1, 1, 3, None),
            Ins::Transpose(1, vec![0, 2, 1]),
            Ins::Matmul(1, 2),
            Ins::Unary(Un::Gelu, 3),
            Ins::Matmul(3, 4),
        ],
        outputs: vec![5],
        grad: false,
    };
    assert_passes(&p, 6007054326);
    let (g, _) = trace_program(&p).unwrap();
    let has_inf = |g: &Graph| {
        check::arguments(g, 3, &[0], true)[0]
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .any(|v| v.is_infinite())
    };
    assert!(!has_inf(&g));
    let sums = jitfuse::internals::ir::parse(
        "%0 = param 0 : f32[64,31,4]\n%1 = reduce_sum[2] %0 : f32[64,31]\nreturn %1\n",
    )
    .unwrap();
    assert!(has_inf(&sums));
}

#[test]
fn long_sums_count_as_far_from_the_inputs_size() {
    use generate::{Gen, Ty};
    use program::{Ins, Red, Row};
    let ty = |shape: &[usize]| Ty {
        shape: shape.to_vec(),
        dtype: jitfuse::DType::F32,
        exact: false,
    };
    let mut rng = Rng::new(7006319535);
    let mut g = Gen {
        rng: &mut rng,
        tys: vec![Ty {
            exact: true,
            ..ty(&[1, 17])
        }],
        ins: Vec::new(),
        grad: false,
        float: jitfuse::DType::F32,
        big: vec![false],
    };
    // `cos(sum(log_softmax(x)))` over 17 values, the shrunk false alarm: the
    // sum is about -50 and its last bit depends on the order of the terms.
    g.push(Ins::RowOp(Row::LogSoftmax, 0, -1), ty(&[1, 17]));
    g.push(Ins::Reduce(Red::Sum, 1, 1, true), ty(&[1, 1]));
    g.push(Ins::Reduce(Red::Sum, 1, -1, false), ty(&[1]));
    g.push(Ins::ReduceAll(Red::Sum, 1), ty(&[]));
    // Short sums and means stay of the inputs' size.
    g.push(Ins::Reduce(Red::Sum, 1, 0, false), ty(&[17]));
    g.push(Ins::Reduce(Red::Mean, 1, 1, false), ty(&[1]));
    g.push(Ins::ReduceAll(Red::Sum, 6), ty(&[]));
    assert_eq!(g.big, [false, false, true, true, true, false, false, false]);
    // sin and cos of a long sum are not generated.
    for _ in 0..4000 {
        let n = g.ins.len();
        if g.step().is_none() || g.ins.len() == n {
            continue;
        }
        if let Ins::Unary(program::Un::Sin | program::Un::Cos, a) = g.ins[n] {
            assert!(
                !g.big[a] || g.tys[a].exact,
                "{:?} reads a long sum",
                g.ins[n]
            );
        }
        g.tys.truncate(8);
        g.ins.truncate(7);
        g.big.truncate(8);
    }
}

/// A false alarm of a long run: `tanh` of a product of four GELUs of `3.25 x`, one of whose
/// factors `1 + tanh(-8)` is exactly 0 compiled (tanh saturates within its ulp bound) and
/// 2.4e-7 interpreted, so the product is -0 against -4.5e-5. The product is all noise of its
/// factors' size, and `tanh` (slope at most 1) carries that noise to the output.
#[test]
fn smooth_functions_carry_the_noise_of_a_cancelled_input() {
    use program::{Ins, Red, Un};
    let p = Program {
        params: vec![borrowed_f32(&[4, 64], 0)],
        ins: vec![
            Ins::Scalar(program::Bin::Mul, 0, 3.25, true),
            Ins::Unary(Un::Gelu, 1),
            Ins::Reduce(Red::Prod, 2, 0, false),
            Ins::Unary(Un::Tanh, 3),
        ],
        outputs: vec![4],
        grad: false,
    };
    assert_passes(&p, 8009155385);
    // `tanh(a - b)` of exact, nearly equal values: the noise of the difference is
    // |a| + |b|, carried through tanh; `sin` of an exact argument keeps its own scale.
    let text = "%0 = param 0 : f32[3]\n\
                %1 = const 1.0 : f32[3]\n\
                %2 = sub %0, %1 : f32[3]\n\
                %3 = tanh %2 : f32[3]\n\
                %4 = sin %0 : f32[3]\n\
                return %3, %4\n";
    let g = jitfuse::internals::ir::parse(text).unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 1.0 + 1e-6, 100.0], &[3]).unwrap();
    let s = noise::analyse(&g, &noise::node_values(&g, &[x], &[]).unwrap()).scales;
    assert!((s[0] - 2.000001).abs() < 1e-5, "{}", s[0]);
    assert!(s[1] <= 1.0, "{}", s[1]);
}

/// A false alarm of a long run: `ln(|s²/(|s²| + 0.5)| + 0.5)` of `s = x xᵀ` over 1,030
/// terms. An off-diagonal `s ≈ 0.75` is what is left of terms summing to about 1,100 in
/// magnitude, so its last bits depend on the order of the terms; `square`, the quotient
/// and `ln` carry that noise (times their slopes) to the output.
#[test]
fn nonlinear_functions_of_a_cancelled_product_carry_its_noise() {
    use program::{Bin, Ins, Un};
    let p = Program {
        params: vec![borrowed_f32(&[63, 1030], 1)],
        ins: vec![
            Ins::Transpose(0, vec![1, 0]),
            Ins::Matmul(0, 1),
            Ins::Unary(Un::Square, 2),
            Ins::Binary(Bin::DivPos, 3, 3),
            Ins::Unary(Un::LnPos, 4),
        ],
        outputs: vec![5],
        grad: false,
    };
    assert_passes(&p, 9011133949);
    // The slope rule on its own: `(a - 1)²` of a cancelled difference carries its noise
    // (|a| + 1) times the slope 2|a - 1|; the square of an exact argument keeps its own
    // scale.
    let text = "%0 = param 0 : f32[2]\n\
                %1 = const 1.0 : f32[2]\n\
                %2 = sub %0, %1 : f32[2]\n\
                %3 = square %2 : f32[2]\n\
                %4 = square %0 : f32[2]\n\
                return %3, %4\n";
    let g = jitfuse::internals::ir::parse(text).unwrap();
    let x = Tensor::from_vec(vec![1.25f32, 1.5], &[2]).unwrap();
    let s = noise::analyse(&g, &noise::node_values(&g, &[x], &[]).unwrap()).scales;
    // 1.5 - 1 = 0.5 with noise 2.5 (more than twice 0.5): 2 · 0.5 · 2.5 = 2.5, not 0.25.
    assert!((s[0] - 2.5).abs() < 1e-6, "{}", s[0]);
    assert!((s[1] - 2.25).abs() < 1e-6, "{}", s[1]);
}

/// A false alarm of a long run (seed 14301092779, and the class of several before it):
/// bf16 `exp((x + x)²)`. The interpreter rounds the square to bf16 before `exp`, the fused
/// kernel keeps it in f32; at an argument near 27 one bf16 ulp of it (0.1) is 10 % of the
/// result. `exp` of a computed argument carries the argument's noise times its slope
/// (`noise.rs`); of an exact one, it keeps its own scale.
#[test]
fn smooth_functions_of_a_rounded_argument_carry_its_rounding() {
    use program::{Bin, Ins, Un};
    let bf16 = program::Param {
        dtype: jitfuse::DType::BF16,
        ..borrowed_f32(&[5, 2], 0)
    };
    let p = Program {
        params: vec![bf16],
        ins: vec![
            Ins::Binary(Bin::Add, 0, 0),
            Ins::Binary(Bin::Mul, 1, 1),
            Ins::Unary(Un::Exp, 2),
        ],
        outputs: vec![3],
        grad: false,
    };
    assert_passes(&p, 14301092779);
    let text = "%0 = param 0 : f32[2]\n\
                %1 = mul %0, %0 : f32[2]\n\
                %2 = exp %1 : f32[2]\n\
                %3 = exp %0 : f32[2]\n\
                return %2, %3\n";
    let g = jitfuse::internals::ir::parse(text).unwrap();
    let x = Tensor::from_vec(vec![2.0f32, 0.5], &[2]).unwrap();
    let s = noise::analyse(&g, &noise::node_values(&g, &[x], &[]).unwrap()).scales;
    // exp(4) with noise 4 carried at slope exp(4); exp of the exact 2 keeps exp(2).
    let e4 = 4f64.exp() * 4.0;
    assert!((s[0] - e4).abs() < 1e-3 * e4, "{}", s[0]);
    assert!((s[1] - 2f64.exp()).abs() < 1e-5, "{}", s[1]);
}

/// Noise magnitudes are f64 whatever the values' type, and a product carries its operands'
/// noise to first order. The f16 gradient of `tanh(var(x) + x)` (fuzz seed 14601067088)
/// multiplies noisy values whose magnitudes, multiplied, passed f16's largest finite value:
/// as f16 they were infinite and dropped from the output's scale, so the gradient was held
/// to its result's scale, 1, against roundings of values 20 times larger; as f64, products
/// of magnitudes compounded to 9,000. The square of 0.5 of noise 400 carries 2·0.5·400 (and
/// the product of the two noises), not 400².
#[test]
fn noise_magnitudes_do_not_overflow_and_products_carry_noise_to_first_order() {
    let text = "%0 = param 0 : f16[2]\n\
                %1 = sub %0, %0 : f16[2]\n\
                %2 = mul %1, %1 : f16[2]\n\
                %3 = mul %2, %1 : f16[2]\n\
                %4 = const 0.5 : f16[2]\n\
                %5 = add %1, %4 : f16[2]\n\
                %6 = mul %5, %5 : f16[2]\n\
                return %3, %6\n";
    let g = jitfuse::internals::ir::parse(text).unwrap();
    let x = Tensor::from_vec(vec![jitfuse::f16::from_f64(200.0); 2], &[2]).unwrap();
    let s = noise::analyse(&g, &noise::node_values(&g, &[x], &[]).unwrap()).scales;
    // 0 times 0 of noises 400² and 400: their product in f16's unit of tolerance
    // (u = 2⁻⁸), finite.
    let u = 2f64.powi(-8);
    let want = u * u * 400f64.powi(3);
    assert!((s[0] - want).abs() < 1e-9 * want, "{s:?}");
    // (0 + 0.5)² with noise 400.5: 2 · 0.5 · 400.5 and u · 400.5².
    let want = 400.5 + u * 400.5 * 400.5;
    assert!((s[1] - want).abs() < 1e-9 * want, "{s:?}");
    let shrunk = Program {
        params: vec![program::Param {
            dtype: jitfuse::DType::F16,
            ..borrowed_f32(&[31, 1], 0)
        }],
        ins: vec![
            program::Ins::Reduce(program::Red::Var, 0, -2, true),
            program::Ins::Binary(program::Bin::Add, 1, 0),
            program::Ins::Unary(program::Un::Tanh, 2),
        ],
        outputs: vec![3],
        grad: true,
    };
    assert_passes(&shrunk, 14601067088);
}

/// Found on an AMD Zen 4 machine: the gradient of a row product of `gelu(2x)` over a row
/// holding a NaN. One `gelu` rounded to exactly 0 compiled (its tanh to -1) and to -1.5e-7
/// in the interpreter; the product rule's "one zero" branch gave 0 off the zero, so the
/// row's NaN gradient became zeros compiled only.
#[test]
fn the_gradient_of_a_row_product_with_a_nan_and_a_rounded_zero_is_nan() {
    use program::{Bin, Ins, Red, Un};
    let p = Program {
        params: vec![borrowed_f32(&[17, 8], 0)],
        ins: vec![
            Ins::Binary(Bin::Add, 0, 0),
            Ins::Unary(Un::Gelu, 1),
            Ins::Reduce(Red::Prod, 2, -1, false),
        ],
        outputs: vec![3],
        grad: true,
    };
    assert_passes(&p, 31339205787);
}

/// A long run's case (seed 8081090467): the gradient of `exp(layer_norm(x) · exp(x²))`
/// multiplies an infinity by the row's mean deviation, a sum that cancels to rounding noise
/// (-3.4e-8 compiled, -1.1e-8 interpreted, 0 in some rows), so the compiled program gave
/// NaN where the interpreter gave -inf: both are what f32 gives for `inf × noise`. The
/// oracle accepts another non-finite value there (`noise::Noise::noisy_infinities`), and only
/// there: the same infinities against a value that is not noise still compare exactly.
#[test]
fn an_infinity_times_a_cancelled_sum_may_be_any_non_finite_value() {
    use program::{Bin, Ins, Row, Un};
    let p = Program {
        params: vec![borrowed_f32(&[64, 64], 0)],
        ins: vec![
            Ins::Unary(Un::Square, 0),
            Ins::Unary(Un::Exp, 1),
            Ins::RowOp(Row::LayerNorm, 0, -1),
            Ins::Binary(Bin::Mul, 3, 2),
            Ins::Unary(Un::Exp, 4),
        ],
        outputs: vec![5],
        grad: true,
    };
    assert_passes(&p, 8081090467);
    let (g, _) = trace_program(&p).unwrap();
    let args = check::arguments(&g, 8081090467, &[0], 8081090467u64.is_multiple_of(3));
    let v = noise::node_values(&g, &args, &[]).unwrap();
    assert_eq!(noise::analyse(&g, &v).noisy_infinities, [false, true]);
    // `exp(x²)` alone overflows without any cancelled factor: its gradient's infinities
    // are exact.
    let exact = Program {
        params: vec![borrowed_f32(&[64, 64], 0)],
        ins: vec![Ins::Unary(Un::Square, 0), Ins::Unary(Un::Exp, 1)],
        outputs: vec![2],
        grad: true,
    };
    let (g, _) = trace_program(&exact).unwrap();
    let v = noise::node_values(&g, &args, &[]).unwrap();
    assert_eq!(noise::analyse(&g, &v).noisy_infinities, [false, false]);
}

/// The generator's self-attention (`Ins::Attend`, spelled as users write it) compiles to the
/// fused `attention` step in every float type (and `attention_grad` in f64 gradient
/// programs), so the random programs check the fused ops against the interpreter's
/// composition (`generate::attend`).
#[test]
fn generated_self_attention_compiles_to_the_fused_step() {
    use jitfuse::internals::exec::Executable;
    use std::collections::BTreeMap;
    // (dtype, gradient) -> (programs with attention, of which fused)
    let mut seen: BTreeMap<(String, bool), (usize, usize)> = BTreeMap::new();
    for case in 0..40_000u64 {
        let p = generate::program(&mut Rng::new(case ^ 0x5eed));
        // Values the outputs read (an attention nothing reads is not compiled).
        let params = p.params.len();
        let mut live = vec![false; params + p.ins.len()];
        p.outputs.iter().for_each(|&o| live[o] = true);
        for i in (0..p.ins.len()).rev() {
            if live[params + i] {
                p.ins[i].operands().into_iter().for_each(|a| live[a] = true);
            }
        }
        let attends = (0..p.ins.len())
            .any(|i| live[params + i] && matches!(p.ins[i], program::Ins::Attend(..)));
        if !attends {
            continue;
        }
        let Ok((g, captured)) = trace_program(&p) else {
            continue;
        };
        let exe = Executable::from_graph_with(g, captured, None, &CompileOptions::default())
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{p:?}"));
        let text = exe.optimized_text();
        let fused = text.contains(if p.grad {
            "attention_grad["
        } else {
            "attention["
        });
        let float = p.params.iter().map(|q| q.dtype).find(|d| d.is_float());
        let entry = seen.entry((format!("{float:?}"), p.grad)).or_default();
        entry.0 += 1;
        entry.1 += fused as usize;
    }
    println!("{seen:?}");
    // Four float types in forward programs, f64 in gradient programs (`generate::attend`).
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert!(
        seen.contains_key(&("Some(F64)".to_string(), true)),
        "{seen:?}"
    );
    for (k, (n, fused)) in &seen {
        assert!(*fused * 10 >= *n * 9, "{k:?}: {fused} of {n} fused");
    }
}

/// A failing case's captured scalar is written into its case file as the constant it is (the
/// file replays without captured tensors); a captured tensor of several values is refused.
#[test]
fn a_case_file_writes_a_captured_scalar_as_its_constant() {
    let text = "%0 = param 0 : f32[2,2]\n%1 = captured 0 : f32[2,2]\n\
                %2 = add %0, %1 : f32[2,2]\nreturn %2";
    let scalar = Tensor::from_vec(vec![3.25f32; 4], &[2, 2]).unwrap();
    let ir = constants_inlined(text, &[scalar]).unwrap();
    assert!(ir.contains("%1 = const 3.25 : f32[2,2]\n"), "{ir}");
    let g = jitfuse::internals::ir::parse(&ir).unwrap_or_else(|e| panic!("{e}\n{ir}"));
    jitfuse::internals::ir::verify(&g).unwrap();
    let mixed = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    assert!(constants_inlined(text, &[mixed]).is_err());
}
