//! `tau config check` finds what `tau chat` would stumble on in `[model]`, without
//! connecting to anything.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::Tau;
use pretty_assertions::assert_eq;

#[test]
fn a_model_value_out_of_range_is_an_error_naming_its_key() {
    let tau = Tau::new();
    let config = tau.config("[model]\nspec = \"ollama:llama3.2\"\ntemperature = 3\n");
    let run = tau.run(
        &["--config", config.to_str().unwrap(), "config", "check"],
        "",
    );
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            format!(
                "tau: {}: invalid model.temperature: must be between 0.0 and 2.0, got 3\n",
                config.display()
            )
        )
    );
    // A bad value comes before a missing key: it is what the file says that is wrong.
    let config = tau.config("[model]\nspec = \"openai:gpt-4o-mini\"\nmax_tokens = 0\n");
    let run = tau.run(
        &["--config", config.to_str().unwrap(), "config", "check"],
        "",
    );
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            format!(
                "tau: {}: invalid model.max_tokens: must be between 1 and 1000000, got 0\n",
                config.display()
            )
        )
    );
}

#[test]
fn a_missing_api_key_is_an_error_and_a_present_one_is_never_shown() {
    let tau = Tau::new();
    let config = tau.config("[model]\nspec = \"openai:gpt-4o-mini\"\n");
    let args = ["--config", config.to_str().unwrap(), "config", "check"];
    let run = tau.run(&args, "");
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            "tau: openai:gpt-4o-mini needs an API key: set the environment variable OPENAI_API_KEY\n"
                .to_owned()
        )
    );
    let run = tau.run_env(&args, &[("OPENAI_API_KEY", "sk-very-secret-1234")], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("[model]\nspec = \"openai:gpt-4o-mini\"\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("very-secret"), "{}", run.stdout);
    assert!(!tau.home().exists(), "checking writes nothing");
}

#[test]
fn a_model_named_on_the_command_line_is_checked_too() {
    let tau = Tau::new();
    let run = tau.run(&["--model", "teleport:x", "config", "check"], "");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("tau: invalid model.spec: "),
        "{}",
        run.stderr
    );
}
