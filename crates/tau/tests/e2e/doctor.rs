//! `tau doctor` never says everything is there when something tau needs is not: with no
//! model set it says the model is missing and how to set one.

use crate::common;

use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::json;

/// The lines of the report from `title` to the next section.
fn section<'a>(report: &'a str, title: &str) -> Vec<&'a str> {
    let mut lines = report.lines().skip_while(|l| !l.starts_with(title));
    let first = lines.next().into_iter();
    first
        .chain(lines.take_while(|l| l.starts_with("  ")))
        .collect()
}

#[test]
fn with_no_model_set_the_doctor_says_it_is_missing_and_how_to_set_one() {
    let tau = Tau::new();
    let run = tau.run(&["doctor"], "");
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        section(&run.stdout, "model"),
        vec![
            "model",
            "  no  spec         none is set, and tau chat and tau serve need one: pass --model \
             SPEC or write [model] spec = \"...\" in tau.toml, e.g. ollama:llama3.2 for a local \
             Ollama (`tau chat` without one lists every kind)",
        ]
    );
    assert!(
        run.stdout
            .ends_with("tau doctor: some of what tau needs is missing (the rows marked no)\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("everything tau needs is there"));
    assert!(!tau.home().exists(), "the doctor writes nothing");

    // With one set, the model and the config are fine.
    let model = tau.replay(&json!([answer("unused")]));
    let run = tau.run(&["--model", &model, "doctor"], "");
    assert_eq!(
        section(&run.stdout, "config"),
        vec![
            "config (no file: the defaults)",
            "  ok  checks       tau serve would start with it",
        ]
    );
    assert_eq!(
        section(&run.stdout, "model"),
        vec![
            format!("model {model}").as_str(),
            "  ok  script       readable"
        ]
    );
}
