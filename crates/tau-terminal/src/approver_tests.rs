use super::*;
use crate::input::{Answers, start};
use crate::question::Flush;
use crate::testing::Screen;
use serde_json::json;
use std::io::Write;
use std::time::Duration;
use tau_core::Language;
use tau_protocol::{ChannelEvent, Decision, Tier};
use tokio::io::{AsyncWriteExt, DuplexStream};

fn request() -> ApprovalQuestion {
    ApprovalQuestion {
        approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
        tool: "run_command".into(),
        tier: Tier::Physical,
        effect: "runs a shell command".into(),
        arguments: json!({"command": "touch b.txt"}),
        call_id: "t1".into(),
        channel: TERMINAL_CHANNEL.into(),
        deadline: None,
        card: Default::default(),
        grant: None,
    }
}

fn requested() -> ChannelEvent {
    let r = request();
    ChannelEvent::ApprovalRequested(Box::new(ApprovalQuestion {
        approval_id: r.approval_id,
        call_id: r.call_id,
        tool: r.tool,
        tier: r.tier,
        effect: r.effect,
        arguments: r.arguments,
        channel: r.channel,
        deadline: None,
        card: Default::default(),
        grant: None,
    }))
}

fn decided(answer: &Answer) -> ChannelEvent {
    ChannelEvent::ApprovalDecided {
        approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
        call_id: "t1".into(),
        tool: "run_command".into(),
        ruling: tau_protocol::Ruling::new(answer.decision, answer.decided_by.clone()),
        grant: None,
    }
}

/// An approver whose answers are typed on `keyboard`, a terminal, and whose console
/// writes to `screen` (as a pipe shows it, so the typed lines show too).
fn at_a_terminal() -> (DuplexStream, Screen, Arc<Console>, Arc<TerminalApprover>) {
    let (keyboard, reader) = tokio::io::duplex(64);
    let answers = Answers::FromPrompts {
        terminal: Some(Flush::new(|| {})),
    };
    let (_prompts, questions) = start(reader, true, answers);
    let screen = Screen::default();
    let console = Console::new(Box::new(screen.clone()), false, false, Language::En);
    let approver = Arc::new(TerminalApprover::new(Arc::clone(&console), questions));
    (keyboard, screen, console, approver)
}

#[tokio::test(start_paused = true)]
async fn only_a_line_typed_once_the_question_could_be_read_answers_it() {
    let (mut keyboard, screen, console, approver) = at_a_terminal();
    // The approver is asked before the prompt is drawn; what comes before the drawing
    // (and in the moment after) is not an answer, however long it waits.
    let decision = tokio::spawn({
        let approver = Arc::clone(&approver);
        async move { approver.decide(request()).await }
    });
    while !approver.questions.is_open() {
        tokio::task::yield_now().await;
    }
    keyboard.write_all(b"y\n").await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    console.render(&requested());
    tokio::time::sleep(Duration::from_millis(100)).await;
    keyboard.write_all(b"yes\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    keyboard.write_all(b"n\n").await.unwrap();
    let answer = decision.await.unwrap().unwrap();
    assert_eq!(
        answer,
        Answer::rejected(DecidedBy::person(TERMINAL_CHANNEL))
    );
    console.render(&decided(&answer));
    insta::assert_snapshot!(screen.text());
}

#[tokio::test(start_paused = true)]
async fn a_yes_once_the_guard_is_over_approves() {
    let (mut keyboard, _screen, console, approver) = at_a_terminal();
    let decision = tokio::spawn({
        let approver = Arc::clone(&approver);
        async move { approver.decide(request()).await }
    });
    tokio::task::yield_now().await;
    console.render(&requested());
    tokio::time::sleep(Duration::from_millis(300)).await;
    keyboard.write_all(b"y\n").await.unwrap();
    let answer = decision.await.unwrap().unwrap();
    assert_eq!(answer.decision, Decision::Approved);
}

#[tokio::test]
async fn with_nowhere_to_ask_the_approver_fails_and_says_why() {
    let input = &b"go\nyes\n"[..];
    let (_prompts, questions) = start(input, false, Answers::Nowhere);
    let screen = Screen::default();
    let console = Console::new(Box::new(screen.clone()), false, false, Language::En);
    let approver = TerminalApprover::new(Arc::clone(&console), questions);
    console.render(&requested());
    let failed = approver.decide(request()).await;
    assert_eq!(failed, Err(ApproverError::new(NOWHERE_TO_ASK)));
    console.render(&decided(&Answer::rejected(DecidedBy::ApproverFailed)));
    insta::assert_snapshot!(screen.text());
}

#[tokio::test(start_paused = true)]
async fn the_question_is_also_drawn_on_the_answering_terminal() {
    let (mut keyboard, _screen, console, approver) = at_a_terminal();
    let terminal = Screen::default();
    console.draw_questions_also_on(Box::new(terminal.clone()));
    let decision = tokio::spawn({
        let approver = Arc::clone(&approver);
        async move { approver.decide(request()).await }
    });
    // What is typed shows on the terminal (its echo); tau draws the rest.
    let mut echo = terminal.clone();
    let mut type_line = async |line: &str| {
        keyboard.write_all(line.as_bytes()).await.unwrap();
        echo.write_all(line.as_bytes()).unwrap();
    };
    console.render(&requested());
    type_line("y\n").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    type_line("n\n").await;
    let answer = decision.await.unwrap().unwrap();
    console.render(&decided(&answer));
    insta::assert_snapshot!(terminal.text());
}

fn garage() -> ApprovalQuestion {
    let mut question = request();
    question.tool = "device_set".into();
    question.effect = "sends a command to a device in tau's registry".into();
    question.arguments = json!({"device": "garage-door", "action": "open"});
    question.card.headline = Some("OPEN · Garage door (garage) — a lock-class device".into());
    question.card.confirm = Some(tau_protocol::ConfirmStep {
        word: "garage-door".into(),
        code: "47".into(),
    });
    question
}

/// Asks about the garage at a terminal, types `lines` each once its question could be
/// read, and returns the answer and the screen.
async fn garage_answered(lines: &[&str]) -> (Answer, String) {
    answered(garage(), lines).await
}

/// Asks `question` at a terminal, types `lines` each once it could be read, and
/// returns the answer and the screen.
async fn answered(question: ApprovalQuestion, lines: &[&str]) -> (Answer, String) {
    let (mut keyboard, screen, console, approver) = at_a_terminal();
    let decision = tokio::spawn({
        let approver = Arc::clone(&approver);
        let question = question.clone();
        async move { approver.decide(question).await }
    });
    tokio::task::yield_now().await;
    console.render(&ChannelEvent::ApprovalRequested(Box::new(question)));
    for line in lines {
        tokio::time::sleep(Duration::from_millis(400)).await;
        keyboard
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    let answer = decision.await.unwrap().unwrap();
    (answer, screen.text())
}

fn offer() -> tau_protocol::GrantOffer {
    tau_protocol::GrantOffer {
        schema_sha256: "0".repeat(64),
        arguments_sha256: "1".repeat(64),
        card_sha256: "2".repeat(64),
        hours: 24,
        pins_workspace: false,
        suggestion: None,
    }
}

#[tokio::test(start_paused = true)]
async fn always_to_a_question_that_offers_a_grant_approves_and_asks_for_it() {
    let mut question = request();
    question.grant = Some(offer());
    let (answer, _) = answered(question, &["always"]).await;
    assert_eq!(
        answer,
        Answer::approved_with_grant(TERMINAL_CHANNEL, GrantRequest::conversation())
    );
    let mut question = request();
    question.grant = Some(offer());
    let (answer, _) = answered(question, &["always all"]).await;
    assert_eq!(
        answer,
        Answer::approved_with_grant(TERMINAL_CHANNEL, GrantRequest::channel())
    );
    // Without an offer the word is no yes.
    let (answer, _) = answered(request(), &["always"]).await;
    assert_eq!(
        answer,
        Answer::rejected(DecidedBy::person(TERMINAL_CHANNEL))
    );
}

#[tokio::test(start_paused = true)]
async fn always_never_passes_a_second_step_nor_asks_for_a_grant() {
    // The gate offers no grant with a second step; were one on the question anyway,
    // the step still decides and `always` refuses.
    let mut question = garage();
    question.grant = Some(offer());
    let (answer, _) = answered(question, &["always"]).await;
    assert_eq!(
        answer,
        Answer::new(Decision::Rejected, DecidedBy::person(TERMINAL_CHANNEL))
    );
    assert_eq!(answer.grant, None);
}

#[tokio::test(start_paused = true)]
async fn a_second_step_ignores_a_bare_yes_and_takes_the_device_s_name() {
    let (answer, screen) = garage_answered(&["y", "YES", "garage-door"]).await;
    assert_eq!(
        answer,
        Answer::approved_by(TERMINAL_CHANNEL).confirmed_with("garage-door")
    );
    insta::assert_snapshot!(screen);
}

#[tokio::test(start_paused = true)]
async fn a_second_step_takes_the_number_and_refuses_anything_else() {
    let (answer, _) = garage_answered(&["47"]).await;
    assert_eq!(
        answer,
        Answer::approved_by(TERMINAL_CHANNEL).confirmed_with("47")
    );
    for other in ["n", "garage", "48", "kitchen-light"] {
        let (answer, _) = garage_answered(&[other]).await;
        assert_eq!(
            answer,
            Answer::new(Decision::Rejected, DecidedBy::person(TERMINAL_CHANNEL)),
            "{other}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_names_the_terminal_s_person() {
    let (mut keyboard, _screen, console, approver) = at_a_terminal();
    let approver = Arc::new(
        Arc::into_inner(approver)
            .unwrap()
            .for_person(Some("ana".into())),
    );
    let decision = tokio::spawn({
        let approver = Arc::clone(&approver);
        async move { approver.decide(request()).await }
    });
    tokio::task::yield_now().await;
    console.render(&requested());
    tokio::time::sleep(Duration::from_millis(400)).await;
    keyboard.write_all(b"y\n").await.unwrap();
    let answer = decision.await.unwrap().unwrap();
    assert_eq!(
        answer.decided_by,
        DecidedBy::Person {
            channel: TERMINAL_CHANNEL.into(),
            user: None,
            person: Some("ana".into()),
        }
    );
}

/// The garage asked at a terminal where every question takes a passkey: what was
/// typed, the answer, the screen, and how many yeses were recorded as refused.
async fn garage_with_a_passkey(lines: &[&str]) -> (Answer, String, usize) {
    let (mut keyboard, screen, console, approver) = at_a_terminal();
    let refused = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let approver = Arc::new(
        Arc::into_inner(approver)
            .unwrap()
            .with_passkeys(PasskeyQuestions {
                takes_passkey: Arc::new(|question| question.card.confirm.is_some()),
                not_yours: Arc::new(|_| None),
                refused: Arc::new({
                    let refused = Arc::clone(&refused);
                    move |question, reason| {
                        assert_eq!(question.tool, "device_set");
                        assert_eq!(reason, None);
                        refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }),
            }),
    );
    let decision = tokio::spawn({
        let approver = Arc::clone(&approver);
        async move { approver.decide(garage()).await }
    });
    tokio::task::yield_now().await;
    console.render(&ChannelEvent::ApprovalRequested(Box::new(garage())));
    for line in lines {
        tokio::time::sleep(Duration::from_millis(400)).await;
        keyboard
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    drop(keyboard);
    let answer = decision.await.unwrap().unwrap();
    console.render(&decided(&answer));
    let refused = refused.load(std::sync::atomic::Ordering::SeqCst);
    (answer, screen.text(), refused)
}

#[tokio::test(start_paused = true)]
async fn a_question_that_takes_a_passkey_is_approved_by_nothing_typed() {
    let (answer, screen, refused) = garage_with_a_passkey(&["y", "garage-door", "always"]).await;
    assert_eq!(answer, Answer::rejected(DecidedBy::EndOfInput));
    assert_eq!(refused, 3);
    insta::assert_snapshot!(screen);
    // Anything but a yes refuses it, as any question.
    let (answer, _, refused) = garage_with_a_passkey(&["y", "n"]).await;
    assert_eq!(
        answer,
        Answer::new(Decision::Rejected, DecidedBy::person(TERMINAL_CHANNEL))
    );
    assert_eq!(refused, 1);
}

#[tokio::test(start_paused = true)]
async fn after_a_bare_yes_the_guard_starts_again() {
    let (mut keyboard, _screen, console, approver) = at_a_terminal();
    let decision = tokio::spawn({
        let approver = Arc::clone(&approver);
        async move { approver.decide(garage()).await }
    });
    tokio::task::yield_now().await;
    console.render(&ChannelEvent::ApprovalRequested(Box::new(garage())));
    tokio::time::sleep(Duration::from_millis(400)).await;
    // A habitual double yes: the second one lands within the new guard and is dropped.
    keyboard.write_all(b"y\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    keyboard.write_all(b"garage-door\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    keyboard.write_all(b"n\n").await.unwrap();
    let answer = decision.await.unwrap().unwrap();
    assert_eq!(answer.decision, Decision::Rejected);
}
