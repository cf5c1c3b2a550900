//! The example a newcomer is sent to: `examples/first-chat.json` played through the real
//! `tau chat`, so the README's first conversation stays true.

use crate::common;

use common::Tau;

/// The README's sample of the first chat: the fenced block after the command that plays it.
fn readme_sample() -> String {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .unwrap();
    let after = readme
        .split_once("tau chat --model replay:examples/first-chat.json\n```\n")
        .expect("the README plays the example")
        .1;
    let block = after.split_once("```\n").expect("its sample follows").1;
    block.split_once("```\n").expect("and ends").0.to_owned()
}

/// A run with the lines that hold the time (the clock's reading, the note's stamp) as
/// markers: they differ from run to run and from one machine's zone to another's.
fn timeless(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.contains("· rfc3339 ") {
                "<the clock's reading>"
            } else if line.contains("added to notes.md") {
                "<the note as added>"
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn example() -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/first-chat.json");
    format!("replay:{}", path.display())
}

#[test]
fn the_first_chat_reads_writes_and_asks_once() {
    let tau = Tau::new();
    let model = example();
    let args = ["chat", "--model", &model, "--answers-from-stdin"];
    let run = tau.run(&args, "what can you do?\ny\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    for line in [
        "✓ clock ok",
        "✓ append_note ok",
        "┌─ approval needed · tier 2",
        "✓ approved",
        "✓ run_command ok",
        "tau audit verify` checks its log.",
    ] {
        assert!(run.stdout.contains(line), "{line:?} in\n{}", run.stdout);
    }
    // What the README shows is what tau prints (its clock and the note's time aside).
    let printed = run.stdout.split_once('\n').unwrap().1;
    assert_eq!(timeless(&readme_sample()), timeless(printed));
    let notes = std::fs::read_to_string(tau.workspace().join("notes.md")).unwrap();
    assert!(notes.contains("tried tau for the first time"), "{notes}");
    let ran: Vec<_> = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "tool_call")
        .map(|l| {
            (
                l["tool"].as_str().unwrap().to_owned(),
                l["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("clock", "success"),
        ("append_note", "success"),
        ("run_command", "success"),
    ]
    .iter()
    .map(|(t, s)| ((*t).to_owned(), (*s).to_owned()))
    .collect();
    assert_eq!(ran, want);
}

#[test]
fn refusing_the_first_chats_question_runs_nothing() {
    let tau = Tau::new();
    let model = example();
    let args = ["chat", "--model", &model, "--answers-from-stdin"];
    let run = tau.run(&args, "what can you do?\nn\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("✗ run_command refused"),
        "{}",
        run.stdout
    );
    assert!(!tau.audit().iter().any(|l| l["type"] == "tool_call"
        && l["tool"] == "run_command"
        && l["status"] == "success"));
}
