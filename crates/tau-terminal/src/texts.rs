//! What the terminal channel says, in each UI language.

use tau_core::Language;

/// The terminal's own texts (the notices come from tau-core).
#[derive(Debug)]
pub struct Texts {
    pub approval_needed: &'static str,
    pub tier: &'static str,
    pub tool: &'static str,
    pub arguments: &'static str,
    pub effect: &'static str,
    /// The unit of an argument's length: `(1 char)`, `(20,014 chars)`.
    pub character: &'static str,
    pub characters: &'static str,
    /// Groups the digits of a length.
    pub thousands: char,
    pub question: &'static str,
    pub approved: &'static str,
    pub refused: &'static str,
    pub new_session: &'static str,
    pub resumed_session: &'static str,
    pub result_ok: &'static str,
    pub result_refused: &'static str,
    pub result_error: &'static str,
    pub goodbye: &'static str,
}

const EN: Texts = Texts {
    approval_needed: "approval needed",
    tier: "tier",
    tool: "tool",
    arguments: "arguments",
    effect: "effect",
    character: "char",
    characters: "chars",
    thousands: ',',
    question: "run it? [y/N]",
    approved: "approved",
    refused: "refused",
    new_session: "new session",
    resumed_session: "resumed session",
    result_ok: "ok",
    result_refused: "refused",
    result_error: "error",
    goodbye: "bye",
};

const TR: Texts = Texts {
    approval_needed: "onay gerekiyor",
    tier: "seviye",
    tool: "araç",
    arguments: "argümanlar",
    effect: "etki",
    character: "karakter",
    characters: "karakter",
    thousands: '.',
    question: "çalıştırılsın mı? [e/H]",
    approved: "onaylandı",
    refused: "reddedildi",
    new_session: "yeni oturum",
    resumed_session: "sürdürülen oturum",
    result_ok: "tamam",
    result_refused: "reddedildi",
    result_error: "hata",
    goodbye: "hoşça kal",
};

pub fn texts(language: Language) -> &'static Texts {
    match language {
        Language::En => &EN,
        Language::Tr => &TR,
    }
}
