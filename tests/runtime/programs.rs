//! The regression programs of `programs/`: each file (`fuzz::case_file`) once gave a wrong
//! answer or crashed. Each is compiled at every level, donated or not, against the
//! interpreter, and what each compiler stage makes of it is compared with the recorded text;
//! after an intended change, `UPDATE_EXPECT=1` rewrites the stages.

use crate::fuzz::case_file::{folder, CaseFile};
use crate::fuzz::check_ir_drawn;
use std::panic::{catch_unwind, AssertUnwindSafe};

#[test]
fn every_regression_program_matches_the_interpreter_and_its_recorded_stages() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut files: Vec<_> = std::fs::read_dir(folder())
        .expect("the folder of regression programs")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{} regression programs", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(path).unwrap();
        let mut case = match CaseFile::parse(&text) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let (ir, modes, draws) = (&case.ir, &case.modes, &case.draws);
        let checked = catch_unwind(AssertUnwindSafe(|| {
            check_ir_drawn(ir, modes, draws, case.seed, case.floor)
        }));
        if let Err(p) = checked {
            failures.push(format!("{name}: {}", crate::common::panic_text(&*p)));
        }
        let now = case.current_stages();
        if update {
            case.stages = now;
            std::fs::write(path, case.to_text()).unwrap();
            continue;
        }
        for (stage, text) in &now {
            let recorded = case.stages.iter().find(|s| &s.0 == stage).map(|s| &s.1);
            if recorded != Some(text) {
                failures.push(format!(
                    "{name}: stage `{stage}` differs (UPDATE_EXPECT=1 rewrites it)\n\
                     recorded:\n{}\nnow:\n{text}",
                    recorded.map_or("(none)", |s| s.as_str())
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A file reads back as it was written, and a malformed one is refused with its line.
#[test]
fn a_case_file_reads_back_and_refuses_what_it_cannot_read() {
    let text = "# what it broke\nseed 7\nfloor 0.5\nparams Donated Borrowed\ndraws 1 3\n\
                === ir\n%0 = param 0 : f32[2]\n=== simplified\n%0 = param 0 : f32[2]\n";
    let case = CaseFile::parse(text).unwrap();
    assert_eq!(case.draws, [1, 3]);
    assert_eq!(case.to_text(), text);
    let err = CaseFile::parse("seed x\n=== ir\n%0 = param 0 : f32[]\n").unwrap_err();
    assert!(err.contains("seed x"), "{err}");
    let err = CaseFile::parse("params Donated\ndraws 0 1\n=== ir\n").unwrap_err();
    assert!(err.contains("2 draws for 1 parameters"), "{err}");
    let err = CaseFile::parse("params Lent\n=== ir\nx\n").unwrap_err();
    assert!(err.contains("Lent"), "{err}");
}

/// The fuzzer's shrinker writes a failing case as a file the runner reads: its IR, how it
/// is called, and what each stage makes of it.
#[test]
fn the_fuzzer_writes_a_case_file_the_runner_reads() {
    use crate::fuzz::case_file::save;
    use crate::fuzz::program::Mode;
    let dir = std::env::temp_dir().join(format!("jitfuse-case-{}", std::process::id()));
    let ir = "%0 = param 0 : f32[4]\n%1 = exp %0 : f32[4]\nreturn %1\n";
    let path = save(&dir, "elements differ", ir, &[Mode::Donated], &[3], 42, 0.5).unwrap();
    let case = CaseFile::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        case.about,
        ["Found by the fuzzer (seed 42): elements differ"]
    );
    assert_eq!(
        (case.seed, case.floor, case.draws.as_slice()),
        (42, 0.5, &[3u64][..])
    );
    assert_eq!(case.modes, [Mode::Donated]);
    assert_eq!(case.ir, ir);
    assert_eq!(case.stages, case.current_stages());
    assert!(
        case.stages[1].1.contains("step 0: kernel over [4]"),
        "{:?}",
        case.stages
    );
    check_ir_drawn(&case.ir, &case.modes, &case.draws, case.seed, case.floor);
}
