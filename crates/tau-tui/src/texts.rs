//! What the TUI says, in each UI language. The notices themselves come from tau-core.

use tau_core::Language;

/// The TUI's own words.
#[derive(Debug)]
pub(crate) struct Texts {
    pub you: &'static str,
    pub tau: &'static str,
    pub card_title: &'static str,
    pub tier: &'static str,
    pub tool: &'static str,
    pub effect: &'static str,
    pub arguments: &'static str,
    pub approve_key: &'static str,
    pub reject_key: &'static str,
    pub wait: &'static str,
    pub scroll_first: &'static str,
    /// One line, and `{n}` lines, below the card's window.
    pub more_line: &'static str,
    pub more_lines: &'static str,
    /// `{time}` until the question is withdrawn.
    pub withdrawn_in: &'static str,
    /// `{n}` questions behind the one on screen.
    pub more_waiting: &'static str,
    pub early_key: &'static str,
    /// The keys of a card with a second step: `{word}` and `{code}` pass it.
    pub step_keys: &'static str,
    pub step_reject_key: &'static str,
    /// What was typed so far for the second step: `{typed}`.
    pub step_typed: &'static str,
    /// A bare yes on a card with a second step.
    pub bare_yes: &'static str,
    /// The card's note on a question that takes a passkey: its label and its line.
    pub passkey_label: &'static str,
    pub passkey_note: &'static str,
    /// The card's note on a question whose `approvers` name others: its label, and what
    /// follows the reason (the hub's "not yours: only ana may answer it").
    pub approvers_label: &'static str,
    pub approvers_note: &'static str,
    /// The unit of an argument's length.
    pub character: &'static str,
    pub characters: &'static str,
    pub thousands: char,
    pub session: &'static str,
    /// `{n}` of `{max}` model calls left in this turn.
    pub calls_left: &'static str,
    /// `{n}` approvals pending.
    pub approvals: &'static str,
    /// `{n}` questions waiting on other channels (the hub's), answered there.
    pub elsewhere: &'static str,
    /// How a card's grant is made: a word, never a key typed ahead.
    pub grant_key: &'static str,
    /// What a grant would cover, on one line of the card (`{hours}`); `grant_line_pinned`
    /// for a tool that runs the workspace's files.
    pub grant_line: &'static str,
    pub grant_line_pinned: &'static str,
    /// `/revoke` typed without a grant's id.
    pub revoke_usage: &'static str,
    pub ready: &'static str,
    pub running: &'static str,
    pub cancelling: &'static str,
    pub input_title: &'static str,
    pub input_busy: &'static str,
    /// A paste longer than `{kib}` KiB was cut.
    pub paste_cut: &'static str,
    pub call_running: &'static str,
    pub call_waiting: &'static str,
    pub call_ran: &'static str,
    pub call_failed: &'static str,
    pub call_refused: &'static str,
    pub call_timed_out: &'static str,
    pub call_cancelled: &'static str,
    pub call_unknown: &'static str,
    pub call_invalid: &'static str,
    pub call_earlier_ok: &'static str,
    pub call_earlier_error: &'static str,
    pub by_you: &'static str,
    /// A person on `{channel}`.
    pub by_person: &'static str,
    pub by_timeout: &'static str,
    pub by_end_of_input: &'static str,
    pub by_cancelled: &'static str,
    pub by_approver_failed: &'static str,
    /// The routine `{name}`.
    pub by_exemption: &'static str,
    pub by_grant: &'static str,
    pub by_superseded: &'static str,
    pub by_policy: &'static str,
    pub result: &'static str,
    pub result_so_far: &'static str,
    pub no_result: &'static str,
    pub new_session: &'static str,
    pub resumed_session: &'static str,
    pub sessions_title: &'static str,
    pub start_new: &'static str,
    pub column_name: &'static str,
    pub column_last: &'static str,
    pub column_messages: &'static str,
    pub picker_keys: &'static str,
    /// The picker's footer while a filter holds: `{text}`.
    pub picker_filtered: &'static str,
    /// While typing the filter: `{text}`.
    pub picker_search: &'static str,
    /// While typing a new title: `{text}`.
    pub picker_rename: &'static str,
    /// Before a delete: `{name}`.
    pub picker_delete: &'static str,
}

const EN: Texts = Texts {
    you: "you",
    tau: "tau",
    card_title: "tau asks: approval needed",
    tier: "tier",
    tool: "tool",
    effect: "effect",
    arguments: "arguments",
    approve_key: "y run it",
    reject_key: "n/Esc refuse",
    wait: "wait…",
    scroll_first: "scroll to the end to answer (↓ PgDn End)",
    more_line: "↓ 1 more line",
    more_lines: "↓ {n} more lines",
    withdrawn_in: "withdrawn in {time}",
    more_waiting: "{n} more waiting",
    early_key: "a key pressed too early was ignored",
    step_keys: "second step: type {word} or {code}, then Enter to run it",
    step_reject_key: "Esc refuse",
    step_typed: "typed: {typed}▏",
    bare_yes: "a bare yes does not run this call: type the device's name or the number",
    passkey_label: "passkey",
    passkey_note: "this question takes a passkey, which the TUI cannot ask for: a yes here refuses it; ask for it on TauBar, where the passkey confirms it",
    approvers_label: "approvers",
    approvers_note: "a yes here refuses it",
    character: "char",
    characters: "chars",
    thousands: ',',
    session: "session",
    calls_left: "calls left: {n}/{max}",
    approvals: "approvals: {n}",
    elsewhere: "waiting elsewhere: {n} (tau approvals)",
    grant_key: "always, Enter: allow again too (always all: all chats)",
    grant_line: "↻ allow again: exactly this call for {hours} h",
    grant_line_pinned: "↻ allow again: exactly this call for {hours} h, if its files stay unchanged",
    revoke_usage: "/revoke needs a grant's id: /grants lists them",
    ready: "ready",
    running: "running",
    cancelling: "cancelling (Ctrl-C again quits)",
    input_title: "Enter send · PgUp/PgDn scroll · Tab call · Ctrl-O expand · Ctrl-C quit",
    input_busy: "a turn is running · Ctrl-C cancels it",
    paste_cut: "the paste was cut: a prompt holds at most {kib} KiB",
    call_running: "running",
    call_waiting: "waiting for you",
    call_ran: "ran",
    call_failed: "failed",
    call_refused: "refused",
    call_timed_out: "timed out",
    call_cancelled: "cancelled",
    call_unknown: "unknown tool",
    call_invalid: "invalid call",
    call_earlier_ok: "earlier, ok",
    call_earlier_error: "earlier, error",
    by_you: "by you",
    by_person: "by a person on {channel}",
    by_timeout: "no answer in time",
    by_end_of_input: "the input ended",
    by_cancelled: "by Ctrl-C",
    by_approver_failed: "the approver failed",
    by_exemption: "by routine {name}",
    by_grant: "by grant {id}",
    by_superseded: "by a newer message",
    by_policy: "by tau's rules",
    result: "result",
    result_so_far: "result (the whole text shows when the turn ends)",
    no_result: "no result",
    new_session: "new session",
    resumed_session: "resumed session",
    sessions_title: "tau · sessions",
    start_new: "+ new session",
    column_name: "session",
    column_last: "last message",
    column_messages: "messages",
    picker_keys: "↑↓ choose · Enter open · / search · r rename · d delete · Esc quit",
    picker_filtered: "showing those with “{text}” · / change · Esc quit",
    picker_search: "search: {text}▏ (Enter keeps it, Esc clears it)",
    picker_rename: "new title: {text}▏ (Enter saves, empty: its first prompt's; Esc cancels)",
    picker_delete: "delete “{name}” and all its messages? y deletes, any other key keeps it",
};

const TR: Texts = Texts {
    you: "sen",
    tau: "tau",
    card_title: "tau soruyor: onay gerekiyor",
    tier: "seviye",
    tool: "araç",
    effect: "etki",
    arguments: "argümanlar",
    approve_key: "y çalıştır",
    reject_key: "n/Esc reddet",
    wait: "bekleyin…",
    scroll_first: "yanıtlamak için sona kaydırın (↓ PgDn End)",
    more_line: "↓ 1 satır daha",
    more_lines: "↓ {n} satır daha",
    withdrawn_in: "{time} sonra geri çekilir",
    more_waiting: "{n} soru daha bekliyor",
    early_key: "erken basılan bir tuş yok sayıldı",
    step_keys: "ikinci adım: {word} ya da {code} yazın, çalıştırmak için Enter",
    step_reject_key: "Esc reddet",
    step_typed: "yazılan: {typed}▏",
    bare_yes: "düz bir evet bu çağrıyı çalıştırmaz: cihazın adını ya da sayıyı yazın",
    passkey_label: "geçiş anahtarı",
    passkey_note: "bu soru bir geçiş anahtarı ister ve TUI onu soramaz: burada bir evet onu reddeder; bunu geçiş anahtarının onayladığı TauBar'da isteyin",
    approvers_label: "onaylayanlar",
    approvers_note: "burada bir evet onu reddeder",
    character: "karakter",
    characters: "karakter",
    thousands: '.',
    session: "oturum",
    calls_left: "kalan çağrı: {n}/{max}",
    approvals: "bekleyen onay: {n}",
    elsewhere: "başka kanalda bekleyen: {n} (tau approvals)",
    grant_key: "always, Enter: yine izin de ver (always all: hepsinde)",
    grant_line: "↻ yine izin: aynen bu çağrı, {hours} saat",
    grant_line_pinned: "↻ yine izin: aynen bu çağrı, {hours} saat, dosyaları değişmedikçe",
    revoke_usage: "/revoke bir iznin kimliğini ister: /grants onları listeler",
    ready: "hazır",
    running: "çalışıyor",
    cancelling: "iptal ediliyor (tekrar Ctrl-C çıkar)",
    input_title: "Enter gönder · PgUp/PgDn kaydır · Tab çağrı · Ctrl-O aç · Ctrl-C çık",
    input_busy: "bir tur sürüyor · Ctrl-C iptal eder",
    paste_cut: "yapıştırılan metin kesildi: bir istem en çok {kib} KiB olabilir",
    call_running: "çalışıyor",
    call_waiting: "onayınızı bekliyor",
    call_ran: "çalıştı",
    call_failed: "hata verdi",
    call_refused: "reddedildi",
    call_timed_out: "zaman aşımı",
    call_cancelled: "iptal edildi",
    call_unknown: "bilinmeyen araç",
    call_invalid: "geçersiz çağrı",
    call_earlier_ok: "önceden, tamam",
    call_earlier_error: "önceden, hata",
    by_you: "sizin kararınız",
    by_person: "{channel} üzerindeki bir kişinin kararı",
    by_timeout: "zamanında yanıt yok",
    by_end_of_input: "girdi sona erdi",
    by_cancelled: "Ctrl-C ile",
    by_approver_failed: "onaylayıcı hata verdi",
    by_exemption: "{name} rutini",
    by_grant: "{id} izniyle",
    by_superseded: "daha yeni bir mesajla",
    by_policy: "tau kurallarıyla",
    result: "sonuç",
    result_so_far: "sonuç (tam metin tur bitince görünür)",
    no_result: "sonuç yok",
    new_session: "yeni oturum",
    resumed_session: "sürdürülen oturum",
    sessions_title: "tau · oturumlar",
    start_new: "+ yeni oturum",
    column_name: "oturum",
    column_last: "son mesaj",
    column_messages: "mesaj",
    picker_keys: "↑↓ seç · Enter aç · / ara · r yeniden adlandır · d sil · Esc çık",
    picker_filtered: "“{text}” içerenler gösteriliyor · / değiştir · Esc çık",
    picker_search: "ara: {text}▏ (Enter tutar, Esc temizler)",
    picker_rename: "yeni başlık: {text}▏ (Enter kaydeder, boş: ilk istemin başlığı; Esc vazgeçer)",
    picker_delete: "“{name}” ve tüm mesajları silinsin mi? y siler, başka bir tuş tutar",
};

impl Texts {
    /// The card's note saying why no yes given here approves its question.
    pub(crate) fn no_yes_note(&self, why: &crate::approver::NoYes) -> tau_protocol::CardNote {
        match why {
            crate::approver::NoYes::NotYours(reason) => tau_protocol::CardNote::warning(
                self.approvers_label,
                format!("{reason}; {}", self.approvers_note),
            ),
            crate::approver::NoYes::Passkey => {
                tau_protocol::CardNote::warning(self.passkey_label, self.passkey_note)
            }
        }
    }
}

pub(crate) fn texts(language: Language) -> &'static Texts {
    match language {
        Language::En => &EN,
        Language::Tr => &TR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_exists_in_every_language_and_placeholders_survive() {
        for language in Language::ALL {
            let t = texts(language);
            assert!(t.more_lines.contains("{n}"));
            assert!(t.withdrawn_in.contains("{time}"));
            assert!(t.more_waiting.contains("{n}"));
            assert!(t.calls_left.contains("{n}") && t.calls_left.contains("{max}"));
            assert!(t.approvals.contains("{n}"));
            assert!(t.elsewhere.contains("{n}"));
            // The grant's word is the same in every language, as the answer keys are.
            assert!(t.grant_key.contains(crate::app::card_keys::GRANT_WORD));
            assert!(t.grant_line.contains("{hours}") && t.grant_line_pinned.contains("{hours}"));
            assert!(t.paste_cut.contains("{kib}"));
            assert!(t.by_person.contains("{channel}"));
            assert!(t.by_exemption.contains("{name}"));
            assert!(t.by_grant.contains("{id}"));
            // The answer keys are the same in every language: only `y` approves.
            assert!(t.approve_key.starts_with("y "));
            assert!(t.reject_key.starts_with("n/Esc "));
        }
    }
}
