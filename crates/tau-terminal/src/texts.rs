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
    /// The question of a call with a second step: `{word}` and `{code}` are what passes it.
    pub second_step: &'static str,
    /// A bare yes to a question with a second step.
    pub bare_yes: &'static str,
    /// What a grant would cover and how it is made, on one line (`{hours}`): a word,
    /// never a key typed ahead. `grant_line_pinned` for a tool that runs the workspace's
    /// files, whose grant holds only while they stay as they are.
    pub grant_line: &'static str,
    pub grant_line_pinned: &'static str,
    pub approved: &'static str,
    pub refused: &'static str,
    pub refused_end_of_input: &'static str,
    pub refused_cancelled: &'static str,
    pub refused_approver_failed: &'static str,
    pub refused_superseded: &'static str,
    /// A line that came too soon after the question was drawn to be an answer to it.
    pub too_soon: &'static str,
    /// The card's note on a question whose yes takes a passkey: its label and its line.
    pub passkey_label: &'static str,
    pub passkey_note: &'static str,
    /// The last line of such a question, in place of `question` or `second_step`.
    pub passkey_question: &'static str,
    /// A yes (or a second step's answer) to such a question, which approved nothing.
    pub passkey_refused: &'static str,
    /// The card's note on a question whose `approvers` name others: its label, and what
    /// follows the reason (the hub's "not yours: only ana may answer it").
    pub approvers_label: &'static str,
    pub approvers_note: &'static str,
    /// After that reason, when a yes was typed to such a question anyway.
    pub approvers_refused: &'static str,
    /// Why every question is refused when there is no terminal to ask on.
    pub no_terminal: &'static str,
    /// A question taller than the screen: `rows 1–19 of 1,503`.
    pub rows_shown: &'static str,
    pub rows_of: &'static str,
    /// How to see the next rows of a paged question.
    pub next_rows: &'static str,
    /// The last rows of a paged question are on screen.
    pub the_end: &'static str,
    /// A yes typed before the end of a paged question was on screen.
    pub not_seen_yet: &'static str,
    pub new_session: &'static str,
    pub resumed_session: &'static str,
    pub result_ok: &'static str,
    pub result_refused: &'static str,
    pub result_error: &'static str,
    pub result_unknown_tool: &'static str,
    pub result_invalid: &'static str,
    pub result_cancelled: &'static str,
    pub goodbye: &'static str,
    /// Beside the spinner while the model has not answered yet (terminals only).
    pub thinking: &'static str,
    /// Below a call's output cut short by one line, and by `{n}` lines.
    pub more_line: &'static str,
    pub more_lines: &'static str,
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
    second_step: "second step: type {word} or {code} to run it (anything else refuses):",
    bare_yes: "ignored: a bare yes does not run this call; type the device's name or the number",
    grant_line: "always: exactly this again for {hours} h · always all: in all chats",
    grant_line_pinned: "always: exactly this again for {hours} h, files pinned · always all: all chats",
    approved: "approved",
    refused: "refused",
    refused_end_of_input: "refused: the input ended",
    refused_cancelled: "refused: cancelled",
    refused_approver_failed: "refused: the approval could not be asked",
    refused_superseded: "refused: a newer message replaced the question",
    too_soon: "ignored: typed before the question could be read",
    passkey_label: "passkey",
    passkey_note: "this question takes a passkey, which a terminal cannot ask for: no yes typed here approves it; ask for it on TauBar, where the passkey confirms it",
    passkey_question: "nothing typed here runs it; n refuses it:",
    passkey_refused: "this question takes a passkey: nothing was approved here; a terminal cannot ask for one, so ask for it on TauBar",
    approvers_label: "approvers",
    approvers_note: "no yes typed here approves it",
    approvers_refused: "nothing was approved here",
    no_terminal: "there is no terminal to ask on (stdin is not one, and there is no controlling terminal); start tau with --answers-from-stdin to read the answers from stdin",
    rows_shown: "rows",
    rows_of: "of",
    next_rows: "Enter: the next rows; y counts at the end",
    the_end: "the end",
    not_seen_yet: "not an answer yet: y counts once the end of the question was on screen (Enter shows the next rows)",
    new_session: "new session",
    resumed_session: "resumed session",
    result_ok: "ok",
    result_refused: "refused",
    result_error: "error",
    result_unknown_tool: "unknown tool, not run",
    result_invalid: "invalid call, not run",
    result_cancelled: "cancelled",
    goodbye: "bye",
    thinking: "thinking…",
    more_line: "… 1 more line (tau sessions show has it)",
    more_lines: "… {n} more lines (tau sessions show has them all)",
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
    second_step: "ikinci adım: çalıştırmak için {word} ya da {code} yaz (başka her şey reddeder):",
    bare_yes: "yok sayıldı: düz bir evet bu çağrıyı çalıştırmaz; cihazın adını ya da sayıyı yaz",
    grant_line: "always: aynen bu çağrı, {hours} saat · always all: tüm sohbetlerde",
    grant_line_pinned: "always: aynen bu çağrı, {hours} saat, dosyalar sabit · always all: hepsinde",
    approved: "onaylandı",
    refused: "reddedildi",
    refused_end_of_input: "reddedildi: girdi sona erdi",
    refused_cancelled: "reddedildi: iptal edildi",
    refused_approver_failed: "reddedildi: onay sorulamadı",
    refused_superseded: "reddedildi: yeni bir mesaj soruyu geçersiz kıldı",
    too_soon: "yok sayıldı: soru okunamadan önce yazıldı",
    passkey_label: "geçiş anahtarı",
    passkey_note: "bu soru bir geçiş anahtarı ister ve terminal onu soramaz: burada yazılan hiçbir evet onu onaylamaz; bunu geçiş anahtarının onayladığı TauBar'da isteyin",
    passkey_question: "burada yazılan hiçbir şey onu çalıştırmaz; h reddeder:",
    passkey_refused: "bu soru bir geçiş anahtarı ister: burada hiçbir şey onaylanmadı; terminal onu soramaz, bunu TauBar'da isteyin",
    approvers_label: "onaylayanlar",
    approvers_note: "burada yazılan hiçbir evet onu onaylamaz",
    approvers_refused: "burada hiçbir şey onaylanmadı",
    no_terminal: "sorulacak bir terminal yok (stdin terminal değil ve denetleyen terminal yok); yanıtları stdin'den okumak için tau'yu --answers-from-stdin ile başlatın",
    rows_shown: "satır",
    rows_of: "/",
    next_rows: "Enter: sonraki satırlar; e sonda geçerli",
    the_end: "son",
    not_seen_yet: "henüz yanıt değil: e, sorunun sonu ekranda görüldükten sonra geçerlidir (Enter sonraki satırları gösterir)",
    new_session: "yeni oturum",
    resumed_session: "sürdürülen oturum",
    result_ok: "tamam",
    result_refused: "reddedildi",
    result_error: "hata",
    result_unknown_tool: "bilinmeyen araç, çalıştırılmadı",
    result_invalid: "geçersiz çağrı, çalıştırılmadı",
    result_cancelled: "iptal edildi",
    goodbye: "hoşça kal",
    thinking: "düşünüyor…",
    more_line: "… 1 satır daha (tau sessions show onu gösterir)",
    more_lines: "… {n} satır daha (tau sessions show hepsini gösterir)",
};

pub fn texts(language: Language) -> &'static Texts {
    match language {
        Language::En => &EN,
        Language::Tr => &TR,
    }
}
