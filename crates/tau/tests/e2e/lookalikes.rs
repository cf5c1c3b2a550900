//! Characters a reader could take for others, on every channel's question: a `run_command`
//! whose spaces are not spaces (a no-break space, U+2000..U+200A, an ideographic space)
//! and whose words mix scripts (a Cyrillic `ѕ`, a Greek `ο`, a Hangul jamo) or are written
//! in lookalikes (`сор`, all Cyrillic). The odd spaces are escaped where the arguments are
//! shown, and every odd word is flagged on tau's card with its code points; plain Turkish
//! and Russian words stay as written, with no flag. A flagged card offers no grant on any
//! channel: a yes to what may have been misread stands for that one call.

use crate::common;

use common::{Tau, answer, peers, tool_call};
use serde_json::{Value, json};

/// The command the model asks to run.
fn command() -> String {
    [
        "sh setup.sh\u{a0}--dry-run",
        "sh setup.\u{455}h",
        "cat p\u{3bf}rt.txt setup.sh\u{1100}",
        "\u{441}\u{43e}\u{440} -la",
        "echo a\u{2000}b\u{2001}c\u{2002}d\u{2003}e\u{2004}f\u{2005}g\u{2006}h\u{2007}i\u{2008}j\u{2009}k\u{200a}l\u{3000}m",
        "echo 'kırmızı ışık' привет",
    ]
    .join("; ")
}

/// The lookalike notes every channel must show, as tau writes them.
fn notes() -> Vec<String> {
    vec![
        r#"command: "setup.ѕh" mixes Latin and Cyrillic: U+0455 Cyrillic, looks like "s""#.to_owned(),
        r#"command: "pοrt.txt" mixes Latin and Greek: U+03BF Greek, looks like "o""#.to_owned(),
        r#"command: "setup.shᄀ" mixes Latin and Hangul: U+1100 Hangul"#.to_owned(),
        r#"command: "сор" looks like ASCII: U+0441 Cyrillic, looks like "c"; U+043E Cyrillic, looks like "o"; U+0440 Cyrillic, looks like "p""#.to_owned(),
    ]
}

/// What shows of the odd spaces: each escaped.
const ESCAPED: [&str; 13] = [
    r"\u{a0}",
    r"\u{2000}",
    r"\u{2001}",
    r"\u{2002}",
    r"\u{2003}",
    r"\u{2004}",
    r"\u{2005}",
    r"\u{2006}",
    r"\u{2007}",
    r"\u{2008}",
    r"\u{2009}",
    r"\u{200a}",
    r"\u{3000}",
];

fn model(tau: &Tau) -> String {
    tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": command()})),
        answer("Not run."),
    ]))
}

/// `text` shows every note, every escape, the Turkish and Russian words as written, and no
/// raw odd space.
fn assert_flagged(channel: &str, text: &str) {
    for note in notes() {
        assert!(text.contains(&note), "{channel}: no {note:?} in:\n{text}");
    }
    for escaped in ESCAPED {
        assert!(
            text.contains(escaped),
            "{channel}: no {escaped} in:\n{text}"
        );
    }
    for raw in ['\u{a0}', '\u{2000}', '\u{2003}', '\u{200a}', '\u{3000}'] {
        assert!(!text.contains(raw), "{channel}: a raw {raw:?} in:\n{text}");
    }
    assert!(text.contains("'kırmızı ışık' привет"), "{channel}: {text}");
    assert!(
        !text.contains("\"kırmızı"),
        "{channel}: Turkish was flagged: {text}"
    );
    assert!(
        !text.contains("\"привет\""),
        "{channel}: Russian was flagged: {text}"
    );
}

#[test]
fn the_terminal_question_escapes_odd_spaces_and_flags_lookalike_words() {
    let tau = Tau::new();
    let run = tau.run(
        &[
            "--model",
            &model(&tau),
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "go\nn\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let question: String = run
        .stdout
        .lines()
        .skip_while(|l| !l.contains("┌─"))
        .take_while(|l| !l.contains("└─"))
        .map(|l| format!("{l}\n"))
        .collect();
    // The terminal wraps rows at 80 columns; the notes are read unwrapped.
    let unwrapped = question.replace("↩\n  │     ", "").replace("↩\n  │   ", "");
    assert_flagged("terminal", &unwrapped);
    assert!(!question.contains("always"), "a grant offered:\n{question}");
    insta::assert_snapshot!(question);
    // `always` is no answer to it: it refuses, and makes no grant.
    let tau = Tau::new();
    let run = tau.run(
        &["--model", &model(&tau), "chat", "--answers-from-stdin"],
        "go\nalways\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("✗ run_command refused"),
        "{}",
        run.stdout
    );
    assert!(
        !tau.audit().iter().any(|l| l["type"] == "grant_created"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_mcp_elicitation_escapes_odd_spaces_and_flags_lookalike_words() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let arguments = json!({"command": command()}).to_string();
    let mut args: Vec<String> = vec![
        "--elicit".into(),
        "decline".into(),
        "--call".into(),
        "run_command".into(),
        arguments,
    ];
    args.extend(peers::stdio_args(&tau, None));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = peers::client(&python, &tau, &args);
    let message = out["questions"][0]["message"].as_str().unwrap().to_owned();
    assert_flagged("mcp", &message);
    assert_eq!(out["calls"][0]["isError"], Value::Bool(true));
}

/// Every string in `value`, one a line.
fn strings(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text}\n"),
        Value::Array(items) => items.iter().map(strings).collect(),
        Value::Object(map) => map.values().map(strings).collect(),
        Value::Null | Value::Bool(_) | Value::Number(_) => String::new(),
    }
}

#[test]
fn the_taubar_card_escapes_odd_spaces_and_flags_lookalike_words() {
    let tau = Tau::new();
    let config = tau.serve_config("");
    let serve = tau.serve(&model(&tau), &config);
    let session = serve.new_session();
    let asked = serve.ask(&session, "go");
    // What the page shows: the question as the display function gave it.
    let shown = serve
        .get("/api/approvals?state=pending&display=true")
        .json();
    let row = shown
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == asked["id"])
        .cloned()
        .unwrap();
    assert_flagged("taubar", &strings(&row));
    // No grant offered, nor any of its words: the page draws no "allow again".
    for key in [
        "grant_offer",
        "grant_line",
        "grant_covers",
        "grant_covers_channel",
    ] {
        assert!(row.get(key).is_none_or(Value::is_null), "{key}: {row}");
    }
    let id = asked["id"].as_str().unwrap();
    let granted = serve.answer(
        id,
        &json!({"decision": "approve", "grant": {"scope": "conversation"}}),
    );
    assert_eq!(granted.status, 422, "{granted:?}");
}

const TOKEN: &str = "123456:TEST-token_x";
const OWNER: i64 = 4242;

#[test]
fn the_telegram_question_escapes_odd_spaces_and_flags_lookalike_words() {
    let Some(emulator) = tau_test_support::telegram::Emulator::start(TOKEN) else {
        return;
    };
    let tau = Tau::new();
    let config = tau.serve_config(&format!(
        "[telegram]\nowners = [{OWNER}]\napi_url = \"{}\"\npoll_timeout_seconds = 0\n\
         min_poll_interval_ms = 50\nedit_interval_ms = 50\n",
        emulator.url
    ));
    let _serve = tau.serve_env(&model(&tau), &config, &[("TAU_TELEGRAM_TOKEN", TOKEN)]);
    emulator.write(OWNER, OWNER, "go");
    let asked = emulator.wait("a question with buttons", |messages| {
        messages
            .iter()
            .find(|m| m.buttons.iter().any(|b| b.starts_with("v1:a:")))
            .cloned()
    });
    assert_flagged("telegram", &asked.text);
    // No "Approve, allow again" and no words about it: Approve and Reject only.
    assert!(
        asked
            .buttons
            .iter()
            .all(|b| b.starts_with("v1:a:") || b.starts_with("v1:r:")),
        "{:?}",
        asked.buttons
    );
    assert!(!asked.text.contains("Allow again"), "{}", asked.text);
}
