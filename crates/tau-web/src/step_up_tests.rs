use pretty_assertions::assert_eq;

use super::*;

fn binding() -> Binding<'static> {
    Binding {
        approval_id: "ap_1",
        arguments_sha256: "aa",
        card_sha256: "cc",
    }
}

#[test]
fn a_step_up_challenge_binds_the_question_its_arguments_and_its_card() {
    let nonce = [7u8; 32];
    let bound = step_up_challenge(binding(), &nonce);
    assert_eq!(bound.len(), 32);
    assert_eq!(bound, step_up_challenge(binding(), &nonce), "deterministic");
    let others = [
        Binding {
            approval_id: "ap_2",
            ..binding()
        },
        Binding {
            arguments_sha256: "ab",
            ..binding()
        },
        Binding {
            card_sha256: "cd",
            ..binding()
        },
        // The parts cannot be shifted into one another.
        Binding {
            approval_id: "ap_1\naa",
            arguments_sha256: "",
            card_sha256: "cc",
        },
    ];
    for other in others {
        assert_ne!(step_up_challenge(other, &nonce), bound, "{other:?}");
    }
    assert_ne!(step_up_challenge(binding(), &[8u8; 32]), bound, "the nonce");
}

#[test]
fn a_step_up_refusal_says_what_to_do_and_is_recorded_in_few_words() {
    let all = [
        StepUpRefusal::Missing,
        StepUpRefusal::Unknown,
        StepUpRefusal::OtherQuestion,
        StepUpRefusal::Changed,
        StepUpRefusal::Failed,
    ];
    assert_eq!(
        all.map(|r| (r.code(), r.reason())),
        [
            ("step_up_missing", "a yes without the passkey it takes"),
            (
                "step_up_unknown",
                "a passkey assertion for a challenge not offered, used or expired"
            ),
            (
                "step_up_other_question",
                "a passkey assertion for another question"
            ),
            (
                "step_up_changed",
                "a passkey assertion for other arguments or another card"
            ),
            ("step_up_failed", "a passkey assertion that did not verify"),
        ]
    );
    for refusal in all {
        assert!(
            refusal.text().ends_with("nothing was decided"),
            "{refusal:?}"
        );
    }
}

#[test]
fn hex_reads_back() {
    assert_eq!(unhex(&hex(&[0, 1, 254, 255])), Some(vec![0, 1, 254, 255]));
    assert_eq!(unhex("abc"), None);
    assert_eq!(unhex("zz"), None);
}
