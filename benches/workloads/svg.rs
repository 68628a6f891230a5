//! The report's chart: an SVG bar chart of the ratios (log scale, 1 = parity), written by hand.

use std::fmt::Write as _;

pub fn svg(rows: &[(String, f64, f64)]) -> String {
    let (label_w, plot_w, bar_h, gap, top) = (250.0, 520.0, 12.0, 14.0, 60.0);
    let (lo, hi) = (0.125f64.log2(), 16f64.log2()); // axis from 1/8 to 16
    let x_of = |r: f64| label_w + (r.log2().clamp(lo, hi) - lo) / (hi - lo) * plot_w;
    let row_h = 2.0 * bar_h + gap;
    let height = top + rows.len() as f64 * row_h + 50.0;
    let width = label_w + plot_w + 40.0;
    let mut s = String::new();
    writeln!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#).unwrap();
    writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#).unwrap();
    writeln!(s, r#"<text x="10" y="18" font-size="14" font-weight="bold">jitfuse time ratios (lower is better; log scale; 1 = parity)</text>"#).unwrap();
    writeln!(s, r##"<rect x="10" y="28" width="12" height="10" fill="#3b6fb6"/><text x="26" y="37">ours / XLA (anchors)</text>"##).unwrap();
    writeln!(s, r##"<rect x="160" y="28" width="12" height="10" fill="#e08a2c"/><text x="176" y="37">ours / hand-written rustc loop</text>"##).unwrap();
    for k in -3..=4 {
        let r = 2f64.powi(k);
        let x = x_of(r);
        let (stroke, w) = if k == 0 { ("#000", 1.5) } else { ("#ccc", 0.7) };
        writeln!(s, r#"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="{stroke}" stroke-width="{w}"/>"#, top - 6.0, height - 40.0).unwrap();
        let lbl = if k < 0 {
            format!("1/{}", 1 << -k)
        } else {
            format!("{}", 1 << k)
        };
        writeln!(
            s,
            r#"<text x="{x:.1}" y="{}" text-anchor="middle">{lbl}</text>"#,
            height - 26.0
        )
        .unwrap();
    }
    for (i, (name, rx, rh)) in rows.iter().enumerate() {
        let y = top + i as f64 * row_h;
        writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            label_w - 8.0,
            y + bar_h + 4.0,
            xml(name)
        )
        .unwrap();
        for (j, (r, color)) in [(*rx, "#3b6fb6"), (*rh, "#e08a2c")].iter().enumerate() {
            let yb = y + j as f64 * bar_h;
            if !r.is_finite() {
                writeln!(
                    s,
                    r##"<text x="{}" y="{}" fill="#888">n/a</text>"##,
                    label_w + 4.0,
                    yb + bar_h - 2.0
                )
                .unwrap();
                continue;
            }
            let x0 = x_of(1.0);
            let x1 = x_of(*r);
            let (xa, w) = if x1 >= x0 {
                (x0, x1 - x0)
            } else {
                (x1, x0 - x1)
            };
            writeln!(
                s,
                r#"<rect x="{xa:.1}" y="{yb:.1}" width="{:.1}" height="{}" fill="{color}"/>"#,
                w.max(1.0),
                bar_h - 1.0
            )
            .unwrap();
            let tx = if x1 >= x0 { x1 + 3.0 } else { x1 - 3.0 };
            let anchor = if x1 >= x0 { "start" } else { "end" };
            writeln!(
                s,
                r#"<text x="{tx:.1}" y="{:.1}" text-anchor="{anchor}">{r:.2}</text>"#,
                yb + bar_h - 2.0
            )
            .unwrap();
        }
    }
    writeln!(s, "</svg>").unwrap();
    s
}

pub fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
