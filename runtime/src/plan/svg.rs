//! The buffer plan drawn as an SVG timeline: x = step (each column labelled with the
//! kernel that runs there), y = bytes (an axis in KiB/MiB), one box per temporary named by
//! its op and the user's source line that made it: the arena on top, then one band per
//! buffer hosting temporaries (an output before it is written, a dead donated argument).
//! Boxes are coloured by kind, a red line marks the step where most bytes are live, and a
//! label is drawn inside its own box, cut to the box's width (measured in characters of
//! the monospace font) or left to the box's hover title: no two labels can overlap, none
//! leaves the canvas.

use super::{BufferPlan, Interval};
use crate::fusion::partition::{Partition, Step};
use crate::ir::{Graph, ValueId};
use crate::units::human_bytes;

/// What each step runs, for the column labels: `loop`, `row`, `reduce_sum`, `matmul`, ...
pub fn step_names(g: &Graph, part: &Partition) -> Vec<String> {
    part.steps
        .iter()
        .map(|s| match s {
            Step::Kernel(_) => "loop kernel".to_string(),
            Step::Row(_) => "row kernel".to_string(),
            Step::Reduce(v) | Step::Library(v) => g.node(*v).op.name().to_string(),
        })
        .collect()
}

/// A value's name: `%17 exp`, with ` (src/model.rs:42)` when the trace recorded the user's
/// line that made it.
pub fn value_name(g: &Graph, v: ValueId) -> String {
    let n = g.node(v);
    match n.loc {
        Some(l) => format!("%{} {} ({}:{})", v.0, n.op.name(), l.file(), l.line()),
        None => format!("%{} {}", v.0, n.op.name()),
    }
}

/// Width of a character of the 10-pixel monospace font, rounded up.
pub const CHAR_W: f64 = 6.2;

/// Fill colours: an arena temporary, a temporary hosted in an output's buffer, one hosted
/// in a dead donated argument's.
const ARENA: &str = "#7aa6da";
const IN_OUTPUT: &str = "#b9ca4a";
const IN_ARGUMENT: &str = "#e7a05a";

/// `text` cut to `width` pixels of the monospace font (an ellipsis marks the cut), or
/// `None` when not even four characters fit.
pub fn fit_label(text: &str, width: f64) -> Option<String> {
    let room = (width / CHAR_W).floor().max(0.0) as usize;
    let n = text.chars().count();
    if n <= room {
        Some(text.to_string())
    } else if room >= 4 {
        Some(text.chars().take(room - 1).chain(['…']).collect())
    } else {
        None
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The picture of `plan` for the program `g` split into `part`'s steps, headed by `title`
/// (the function and its signature) when given.
pub fn svg(plan: &BufferPlan, g: &Graph, part: &Partition, title: Option<&str>) -> String {
    let names = step_names(g, part);
    let steps = names.len().max(1) as f64;
    // Wide enough for a short name in a one-step box where there are few steps.
    let (left, w, h, top_margin) = (90.0, (steps * 64.0).clamp(800.0, 2400.0), 400.0, 34.0);
    let width = left + w + 20.0;
    let mut hosts: Vec<(ValueId, usize)> =
        plan.hosted.iter().map(|g| (g.host, g.host_bytes)).collect();
    hosts.sort();
    hosts.dedup();
    // Each band's top, in bytes from the top of the picture.
    let mut top = plan.arena_bytes;
    let bands: Vec<(ValueId, usize, usize)> = hosts
        .iter()
        .map(|&(v, b)| {
            let t = top;
            top += b;
            (v, t, b)
        })
        .collect();
    let total = top.max(1) as f64;
    let y_of = |bytes: usize| top_margin + bytes as f64 / total * h;
    let x_of = |step: usize| left + step as f64 / steps * w;
    let step_name = |k: usize| names.get(k).map_or("", String::as_str);
    // Room below for the step labels, written downwards.
    let label_room = 110.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\" font-family=\"monospace\" font-size=\"10\">\n",
        top_margin + h + label_room
    );
    // The step where the most bytes are live (arena and hosted temporaries).
    let live_at = |k: usize| -> usize {
        let arena: usize = plan
            .temps
            .iter()
            .filter(|iv| iv.def <= k && k <= iv.last)
            .map(|iv| iv.size)
            .sum();
        let hosted: usize = plan
            .hosted
            .iter()
            .filter(|h| h.iv.def <= k && k <= h.iv.last)
            .map(|h| h.iv.size)
            .sum();
        arena + hosted
    };
    let (peak_step, peak) = (0..names.len())
        .map(|k| (k, live_at(k)))
        .max_by_key(|&(k, b)| (b, std::cmp::Reverse(k)))
        .unwrap_or((0, 0));
    let header = [
        title.unwrap_or("").to_string(),
        format!(
            "arena {}, {} temporaries, {} live at most (step {peak_step}, red); {} hosted in {} buffers; blue arena, green in an output, orange in a donated argument",
            human_bytes(plan.arena_bytes),
            plan.temps.len(),
            human_bytes(peak),
            plan.hosted.len(),
            bands.len()
        ),
    ];
    for (i, line) in header.iter().filter(|l| !l.is_empty()).enumerate() {
        if let Some(text) = fit_label(line, width - 8.0) {
            s += &format!(
                "<text x=\"4\" y=\"{}\">{}</text>\n",
                12 + 13 * i,
                escape(&text)
            );
        }
    }
    // The byte axis: five ticks from 0 to the arena and bands' total.
    for k in 0..=4 {
        let bytes = (total * k as f64 / 4.0) as usize;
        let y = y_of(bytes);
        s += &format!(
            "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{left:.1}\" y2=\"{y:.1}\" stroke=\"#555\"/>\n\
             <text x=\"2\" y=\"{:.1}\">{}</text>\n",
            left - 4.0,
            y + 3.0,
            escape(&human_bytes(bytes))
        );
    }
    let mut boxes: Vec<(&Interval, usize, &str, String)> = plan
        .temps
        .iter()
        .map(|iv| (iv, iv.offset, ARENA, String::new()))
        .collect();
    for hosted in &plan.hosted {
        let band = bands.iter().find(|b| b.0 == hosted.host).unwrap();
        let in_argument = plan.arg_hosts.iter().any(|a| a.1 == hosted.host);
        boxes.push((
            &hosted.iv,
            band.1 + hosted.iv.offset,
            if in_argument { IN_ARGUMENT } else { IN_OUTPUT },
            format!(" in the buffer of {}", value_name(g, hosted.host)),
        ));
    }
    // Boxes run from the middle of the step that writes the value to the middle of the last
    // one that reads it: a step that reads a value and writes another in its place ends one
    // box where it starts the next, so boxes at the same offset never overlap (a value read
    // by no later step takes the second half of its step).
    let half = w / steps / 2.0;
    for (iv, y0, color, note) in boxes {
        let x = x_of(iv.def) + half;
        let bw = ((iv.last - iv.def) as f64 / steps * w).max(half).max(2.0);
        let y = y_of(y0);
        let bh = (iv.size as f64 / total * h).max(2.0);
        let name = value_name(g, iv.value);
        s += &format!(
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{bh:.1}\" fill=\"{color}\" stroke=\"#23415f\"><title>{} : {} at offset {}{}, live from step {} ({}) to step {} ({})</title></rect>\n",
            escape(&name),
            escape(&human_bytes(iv.size)),
            iv.offset,
            escape(&note),
            iv.def,
            escape(step_name(iv.def)),
            iv.last,
            escape(step_name(iv.last)),
        );
        // The name inside the box, cut to its width less a character (so that the next
        // box's name never reads as its continuation), where it is tall enough for a line.
        if bh >= 11.0 {
            if let Some(label) = fit_label(&name, bw - 2.0 - CHAR_W) {
                s += &format!(
                    "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
                    x + 2.0,
                    y + 9.0,
                    escape(&label)
                );
            }
        }
    }
    for &(v, t, b) in &bands {
        let kind = if plan.arg_hosts.iter().any(|a| a.1 == v) {
            "argument"
        } else {
            "output"
        };
        s += &format!(
            "<rect x=\"{left:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#8a6d00\" stroke-dasharray=\"4 2\"><title>{kind} {}</title></rect>\n",
            y_of(t),
            b as f64 / total * h,
            escape(&value_name(g, v))
        );
    }
    // The peak step: a red line through the middle of its column.
    if !names.is_empty() {
        let x = (x_of(peak_step) + x_of(peak_step + 1)) / 2.0;
        s += &format!(
            "<line x1=\"{x:.1}\" y1=\"{top_margin}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#d0312d\" stroke-width=\"2\"><title>peak: {} live at step {peak_step} ({})</title></line>\n",
            top_margin + h,
            escape(&human_bytes(peak)),
            escape(step_name(peak_step))
        );
    }
    // Step columns: a grid line at each boundary, the step's number and kernel below (every
    // k-th where there are more than 60 steps).
    let every = names.len().div_ceil(60).max(1);
    for k in 0..=names.len() {
        s += &format!(
            "<line x1=\"{x:.1}\" y1=\"{top_margin}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#ccc\"/>\n",
            top_margin + h,
            x = x_of(k)
        );
    }
    for (k, name) in names.iter().enumerate().step_by(every) {
        let x = (x_of(k) + x_of(k + 1)) / 2.0;
        let y = top_margin + h + 6.0;
        let label = fit_label(&format!("{k} {name}"), label_room - 8.0).unwrap_or_default();
        s += &format!(
            "<text x=\"{x:.1}\" y=\"{y:.1}\" transform=\"rotate(90 {x:.1} {y:.1})\">{}</text>\n",
            escape(&label)
        );
    }
    s += "</svg>\n";
    s
}
