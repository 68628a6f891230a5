//! The profiler: every step of every call timed, as a Chrome trace Perfetto opens (checked
//! against the event format here) and as a table per program.

use jitfuse::prelude::*;
use jitfuse::{conv, ConvOptions};
use serde_json::Value;

#[jit]
fn mlp_layer(x: &Tensor, w: &Tensor) -> Tensor {
    x.matmul(w).gelu().sum(-1)
}

fn inputs() -> (Tensor, Tensor) {
    let mut rng = crate::common::Rng::new(5);
    let x = crate::common::random_tensor(&mut rng, &[64, 96], DType::F32, -1.0, 1.0, false);
    let w = crate::common::random_tensor(&mut rng, &[96, 128], DType::F32, -1.0, 1.0, false);
    (x, w)
}

/// The trace's events, each checked against the Chrome trace event format's complete
/// events (`ph: "X"`: name, category, microsecond start and duration, process and thread).
fn events(trace: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(trace).expect("the trace is JSON");
    let events = v["traceEvents"].as_array().expect("traceEvents").clone();
    for e in &events {
        assert!(e["name"].is_string(), "{e}");
        assert!(e["cat"].is_string(), "{e}");
        assert_eq!(e["ph"], "X", "{e}");
        assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
        assert!(e["dur"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        assert!(e["args"].is_object(), "{e}");
    }
    events
}

/// (In a child process of its own: a profile records the calls of every thread, and other
/// tests run beside this one in threads.)
#[test]
fn profiled_calls_give_a_trace_of_every_step_and_a_table() {
    if !crate::common::measure_alone(
        "profile::profiled_calls_give_a_trace_of_every_step_and_a_table",
    ) {
        return;
    }
    let (x, w) = inputs();
    let _ = mlp_layer(&x, &w); // compiled outside the profile
    let (outs, p) = jitfuse::profile(|| (0..3).map(|_| mlp_layer(&x, &w)).collect::<Vec<_>>());
    assert_eq!(outs.len(), 3);
    assert_eq!(p.calls(), 3);
    let events = events(&p.chrome_trace());
    let calls: Vec<&Value> = events.iter().filter(|e| e["cat"] == "call").collect();
    assert_eq!(calls.len(), 3);
    for c in &calls {
        assert!(c["name"].as_str().unwrap().starts_with("mlp_layer"), "{c}");
        let (t0, t1) = (
            c["ts"].as_f64().unwrap(),
            c["ts"].as_f64().unwrap() + c["dur"].as_f64().unwrap(),
        );
        // Its steps lie inside it, on its thread.
        let steps: Vec<&Value> = events
            .iter()
            .filter(|e| e["cat"] != "call" && e["args"]["program"] == c["args"]["program"])
            .filter(|e| {
                let t = e["ts"].as_f64().unwrap();
                t >= t0 - 1e-3 && t <= t1 + 1e-3
            })
            .collect();
        assert!(
            steps.len() >= 2,
            "a product and a kernel at least: {steps:?}"
        );
        for s in &steps {
            assert_eq!(s["tid"], c["tid"], "{s}");
            assert!(s["args"]["bytes"].as_u64().unwrap() > 0, "{s}");
        }
        // The product's FLOPs are 2mkn.
        let mm = steps
            .iter()
            .find(|s| s["cat"] == "matmul")
            .expect("a matmul step");
        assert_eq!(
            mm["args"]["flops"].as_u64(),
            Some(2 * 64 * 96 * 128),
            "{mm}"
        );
    }
    // Every call has the same steps.
    let per_call = events.iter().filter(|e| e["cat"] != "call").count();
    assert_eq!(per_call % 3, 0);
    let table = p.table();
    assert!(table.contains("mlp_layer"), "{table}");
    assert!(table.contains("3 calls"), "{table}");
    assert!(table.contains("matmul"), "{table}");
    // Rows come slowest first.
    let ms: Vec<f64> = table
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().skip(1).find_map(|t| t.parse().ok()))
        .collect();
    assert!(ms.len() >= 2, "{table}");
    assert!(ms.windows(2).all(|w| w[0] >= w[1]), "{table}");
    // Eager ops run compiled one-op programs, recorded under "eager".
    let ((), eager) = jitfuse::profile(|| {
        let _ = (&x * 2.0).exp();
    });
    assert!(eager.calls() >= 2, "{eager}");
    assert!(eager.table().starts_with("eager"), "{eager}");
    // Nothing is recorded outside a profile.
    let _ = mlp_layer(&x, &w);
    let ((), empty) = jitfuse::profile(|| ());
    assert_eq!(empty.calls(), 0);
}

#[jit]
fn conv_loss_grads(x: &Tensor, w: &Tensor) -> (Tensor, Tensor) {
    let o = ConvOptions {
        strides: vec![2, 1],
        ..Default::default()
    };
    let loss = |(x, w): &(Tensor, Tensor)| conv(x, w, o.clone()).square().sum_all();
    grad(loss, &(x.clone(), w.clone()))
}

/// Each convolution step (forward, input and weight gradient) counts the forward's products,
/// `2 · |y| · |window| · C`, so the table gives its GFLOP/s.
#[test]
fn convolution_steps_count_their_products() {
    if !crate::common::measure_alone("profile::convolution_steps_count_their_products") {
        return;
    }
    let mut rng = crate::common::Rng::new(6);
    let x = crate::common::random_tensor(&mut rng, &[2, 9, 8, 3], DType::F32, -1.0, 1.0, false);
    let w = crate::common::random_tensor(&mut rng, &[3, 2, 3, 5], DType::F32, -1.0, 1.0, false);
    let _ = conv_loss_grads(&x, &w);
    let (_, p) = jitfuse::profile(|| conv_loss_grads(&x, &w));
    let events = events(&p.chrome_trace());
    // y = [2, 4, 7, 5] (stride 2 over 9 rows, valid); a window of 3 · 2 over 3 features.
    let want = 2 * (2 * 4 * 7 * 5) * (3 * 2) * 3;
    let mut roles: Vec<&str> = Vec::new();
    for e in events
        .iter()
        .filter(|e| e["cat"].as_str().unwrap().starts_with("conv"))
    {
        assert_eq!(e["args"]["flops"].as_u64(), Some(want), "{e}");
        roles.push(e["cat"].as_str().unwrap());
    }
    roles.sort();
    assert_eq!(
        roles,
        ["conv", "conv_input_grad", "conv_weight_grad"],
        "{events:?}"
    );
}

/// `JITFUSE_PROFILE=path` profiles the whole process and writes the trace at exit (a child
/// process runs the calls).
#[test]
fn the_environment_variable_writes_a_trace_at_exit() {
    const NAME: &str = "profile::the_environment_variable_writes_a_trace_at_exit";
    if std::env::var_os("JITFUSE_PROFILE").is_some() {
        let (x, w) = inputs();
        for _ in 0..2 {
            let _ = mlp_layer(&x, &w);
        }
        return;
    }
    let path = std::env::temp_dir().join(format!("jitfuse-profile-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    crate::common::measure_alone_with(NAME, &[("JITFUSE_PROFILE", path.to_str().unwrap())]);
    let text = std::fs::read_to_string(&path).expect("the trace was written at exit");
    let _ = std::fs::remove_file(&path);
    let events = events(&text);
    assert_eq!(events.iter().filter(|e| e["cat"] == "call").count(), 2);
}
