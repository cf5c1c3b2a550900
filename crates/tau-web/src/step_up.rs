//! The step-up a yes to a lock-class question takes on TauBar: a passkey assertion whose
//! challenge binds the question's id, its arguments' SHA-256 and its card's SHA-256, taken
//! once and expiring with the question; and the ladder that checks one.

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tau_state::{Ceremony, CeremonyKind, Passkeys};
use webauthn_rs::prelude::{PublicKeyCredential, RequestChallengeResponse, Webauthn};

use crate::passkey::{
    Asserted, AssertionState, CEREMONY_SECONDS, PasskeyError, Started, finish_assertion, hex, now,
    start_assertion,
};

/// What a step-up's challenge binds: one question, as it reads now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binding<'a> {
    pub approval_id: &'a str,
    pub arguments_sha256: &'a str,
    pub card_sha256: &'a str,
}

/// The challenge a step-up for `binding` signs: the SHA-256 of the question's id, its
/// arguments' and its card's hashes, and `nonce`, the relying party's random part. Another
/// question, other arguments or another card give another challenge.
pub(crate) fn step_up_challenge(binding: Binding<'_>, nonce: &[u8]) -> Vec<u8> {
    let mut hasher = Sha256::new();
    hasher.update(b"tau step-up\n");
    for part in [
        binding.approval_id,
        binding.arguments_sha256,
        binding.card_sha256,
    ] {
        hasher.update(part.as_bytes());
        hasher.update(b"\n");
    }
    hasher.update(nonce);
    hasher.finalize().to_vec()
}

/// Starts a step-up for the question `binding` names, expiring with it (`deadline`, in
/// seconds) or sooner: the ceremony's id and the options to sign.
pub(crate) fn start_step_up(
    rp: &Webauthn,
    store: &Passkeys,
    binding: Binding<'_>,
    deadline: i64,
) -> Result<(String, RequestChallengeResponse), PasskeyError> {
    let bind = |nonce: &[u8]| step_up_challenge(binding, nonce);
    let Started {
        challenge,
        options,
        state,
    } = start_assertion(rp, store, Some(&bind))?;
    let id = hex(&challenge);
    let now = now();
    store.add_ceremony(
        &id,
        CeremonyKind::StepUp,
        &Ceremony {
            person: None,
            approval_id: Some(binding.approval_id.to_owned()),
            state,
            expires_at: deadline.min(now + CEREMONY_SECONDS),
        },
        now,
    )?;
    Ok((id, options))
}

/// Why a step-up did not approve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepUpRefusal {
    /// A yes without an assertion, where one is needed.
    Missing,
    /// The challenge is not one TauBar offered, was used before, or expired.
    Unknown,
    /// The challenge was offered for another question.
    OtherQuestion,
    /// The question's arguments or card are not what the challenge bound.
    Changed,
    /// The assertion did not check out: its signature, origin, challenge or the person's
    /// verification.
    Failed,
}

impl StepUpRefusal {
    /// `refused` in the 422's body.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Self::Missing => "step_up_missing",
            Self::Unknown => "step_up_unknown",
            Self::OtherQuestion => "step_up_other_question",
            Self::Changed => "step_up_changed",
            Self::Failed => "step_up_failed",
        }
    }

    /// The 422's `error`.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Self::Missing => {
                "this question takes a passkey: ask for its challenge (POST /api/approvals/{id}/step_up), sign it and send it as \"step_up\"; nothing was decided"
            }
            Self::Unknown => {
                "that passkey challenge is not one TauBar offered, or it was used or expired: ask for a new one; nothing was decided"
            }
            Self::OtherQuestion => {
                "that passkey challenge was offered for another question; nothing was decided"
            }
            Self::Changed => {
                "the question is not the one the passkey challenge was offered for (its arguments or its card changed); nothing was decided"
            }
            Self::Failed => {
                "the passkey did not confirm it (the signature, the page it came from or the person's verification did not check out); nothing was decided"
            }
        }
    }

    /// The `answer_refused` line's `reason`.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::Missing => "a yes without the passkey it takes",
            Self::Unknown => "a passkey assertion for a challenge not offered, used or expired",
            Self::OtherQuestion => "a passkey assertion for another question",
            Self::Changed => "a passkey assertion for other arguments or another card",
            Self::Failed => "a passkey assertion that did not verify",
        }
    }
}

/// A step-up assertion as the answer carries it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepUpAnswer {
    /// The ceremony's id, as `POST .../step_up` gave it.
    pub ceremony: String,
    /// What `navigator.credentials.get` gave back.
    pub credential: Value,
}

/// Checks a step-up for the question `binding` names as it reads now: the ladder, top to
/// bottom, ends in a refusal for anything that fails.
pub(crate) fn finish_step_up(
    rp: &Webauthn,
    store: &Passkeys,
    binding: Binding<'_>,
    answer: &StepUpAnswer,
) -> Result<Asserted, StepUpRefusal> {
    // 1. a challenge TauBar offered, not used and not expired (taken now: single use)
    let taken = match store.take_ceremony(&answer.ceremony, CeremonyKind::StepUp, now()) {
        Ok(Some(taken)) => taken,
        Ok(None) => return Err(StepUpRefusal::Unknown),
        Err(error) => {
            tracing::error!(%error, "a step-up could not be read");
            return Err(StepUpRefusal::Unknown);
        }
    };
    // 2. offered for this question
    if taken.approval_id.as_deref() != Some(binding.approval_id) {
        return Err(StepUpRefusal::OtherQuestion);
    }
    let Ok(state) = serde_json::from_str::<AssertionState>(&taken.state) else {
        return Err(StepUpRefusal::Unknown);
    };
    // 3. the question still reads as it did when the challenge was drawn
    let nonce = state.nonce.as_deref().and_then(unhex);
    let bound = nonce.map(|nonce| hex(&step_up_challenge(binding, &nonce)));
    if bound.as_deref() != Some(answer.ceremony.as_str()) {
        return Err(StepUpRefusal::Changed);
    }
    // 4. the assertion signs exactly that challenge, on this origin, with the person
    //    verified
    let Ok(credential) = serde_json::from_value::<PublicKeyCredential>(answer.credential.clone())
    else {
        return Err(StepUpRefusal::Failed);
    };
    finish_assertion(rp, store, &state, &credential).map_err(|error| {
        tracing::info!(%error, approval_id = binding.approval_id, "a step-up that did not verify");
        StepUpRefusal::Failed
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
#[path = "step_up_tests.rs"]
mod tests;
