//! What the Telegram channel says, in each UI language (the notices come from tau-core).

use tau_core::Language;

#[derive(Debug)]
pub(crate) struct Texts {
    pub greeting: &'static str,
    pub new_session: &'static str,
    pub cancelling: &'static str,
    pub nothing_running: &'static str,
    pub not_taken: &'static str,
    pub too_long: &'static str,
    pub approval_needed: &'static str,
    pub tier: &'static str,
    pub tool: &'static str,
    pub effect: &'static str,
    pub arguments: &'static str,
    pub character: &'static str,
    pub characters: &'static str,
    pub thousands: char,
    /// `… and {n} more characters: Show all`
    pub more: [&'static str; 2],
    pub expires: &'static str,
    pub approve: &'static str,
    pub reject: &'static str,
    pub show_all: &'static str,
    /// The second step of a lock-class device's question: `{code}` is its number.
    pub second_step: &'static str,
    /// A question whose yes takes a passkey: given on TauBar, never here.
    pub passkey_step: &'static str,
    /// A press that was not the second step (the plain Approve, another number).
    pub step_missing: &'static str,
    pub approved_by: &'static str,
    pub rejected_by: &'static str,
    pub expired: &'static str,
    pub superseded: &'static str,
    pub cancelled: &'static str,
    pub not_asked: &'static str,
    pub not_yours: &'static str,
    pub invalid_button: &'static str,
    pub gone: &'static str,
    pub waiting: &'static str,
    pub running: &'static str,
    pub result_ok: &'static str,
    pub result_refused: &'static str,
    pub result_error: &'static str,
    pub result_unknown_tool: &'static str,
    pub result_invalid: &'static str,
    pub result_cancelled: &'static str,
    /// Heads a routine's prompt: `{routine}`, `{trigger}`.
    pub routine_prompt: &'static str,
    /// Below a call's output cut short: by one line, by `{n}` lines.
    pub more_lines: [&'static str; 2],
    /// `/pending` with nothing waiting.
    pub nothing_waits: &'static str,
    /// Heads `/pending`: `{n}` questions.
    pub questions_wait: &'static str,
    /// Where a question of this chat is answered.
    pub answer_here: &'static str,
    /// Where a question of another Telegram chat is answered.
    pub answer_other_chat: &'static str,
    /// Where another channel's question is answered: `{channel}`.
    pub answer_on: &'static str,
    /// The buttons of a question that offers a grant: for this conversation, and for
    /// every conversation of the person's on Telegram.
    pub approve_always: &'static str,
    pub approve_always_everywhere: &'static str,
    /// Under such a question, before its buttons: what the grant covers (`{hours}`), in
    /// tau's words, on one line (the whole rule is in docs/telegram.md); `{pin}` is
    /// `grant_pins_workspace` for a tool that runs the workspace's files, else nothing.
    pub grant_covers: &'static str,
    /// `{pin}` of `grant_covers`: the grant holds while the files stay as they are.
    pub grant_pins_workspace: &'static str,
    /// Under the grant's words when the person keeps approving this call: `{n}` times in
    /// `{days}` days.
    pub grant_suggested: &'static str,
    /// After it, when those calls came at about the same time each day.
    pub routine_suggested: &'static str,
    /// A closed question whose yes asked for a grant: `{user}`, `{time}`.
    pub approved_allowing: &'static str,
    /// The same, for every conversation of the person's.
    pub approved_allowing_everywhere: &'static str,
    /// `/grants` with nothing to list.
    pub grants_none: &'static str,
    /// Heads `/grants`: `{n}` entries.
    pub grants_head: &'static str,
    /// One grant: `{n}`, `{tool}`, `{arguments}`, `{scope}`, `{uses}`, `{until}`.
    pub grant_line: &'static str,
    pub scope_conversation: &'static str,
    pub scope_channel: &'static str,
    /// One routine's exemption: `{routine}`, `{trigger}`, `{tool}`, `{arguments}`.
    pub routine_line: &'static str,
    /// After a disabled routine's line.
    pub routine_off: &'static str,
    /// More grants than one message lists: `{n}`.
    pub grants_more: &'static str,
    /// Ends `/grants`.
    pub grants_foot: &'static str,
    /// The Revoke button of grant `{n}`.
    pub revoke: &'static str,
    /// A revoke that took: `{tool}`.
    pub revoked: &'static str,
    pub revoked_already: &'static str,
    pub grant_not_yours: &'static str,
    /// `/sessions`: nothing yet; `{n}` conversations; one line (`{title}`, `{n}`
    /// messages, `{when}`); a conversation without a message; `{n}` more.
    pub sessions_none: &'static str,
    pub sessions_head: &'static str,
    pub session_line: &'static str,
    /// `{messages}` of `session_line`: one message, `{n}` messages.
    pub messages: [&'static str; 2],
    pub untitled: &'static str,
    pub sessions_more: &'static str,
    /// `/search` that found nothing; `/search` without words.
    pub search_none: &'static str,
    pub search_usage: &'static str,
    /// `/rename` done (`{title}`), and without a title.
    pub renamed: &'static str,
    pub rename_usage: &'static str,
    /// `/delete` done, and with nothing to delete.
    pub deleted: &'static str,
    pub delete_nothing: &'static str,
}

const EN: Texts = Texts {
    greeting: "Hi, I am tau. Write to me here and I answer here.\n\n\
Before I do something that acts on the world or runs code (tier 2), I ask: a message says \
which tool, what it does and with what arguments, under it Approve and Reject. Nothing runs \
until an owner of this bot presses Approve; a press by anyone else changes nothing. A \
question stays open through restarts until it is answered or expires, and afterwards the \
message says what was decided, by whom and when.\n\n\
/new starts a new conversation, /cancel stops what I am doing, /pending lists what waits \
for your answer, /grants lists what you allowed to run again without asking (and revokes \
it), /sessions lists this chat's conversations, /search finds them, /rename names the open \
one, /delete deletes it.",
    new_session: "New conversation.",
    cancelling: "Stopping the running turn.",
    nothing_running: "Nothing is running.",
    not_taken: "tau could not take this message:",
    too_long: "This message is too long for tau; nothing was sent to the model.",
    approval_needed: "Approval needed",
    tier: "tier",
    tool: "tool",
    effect: "effect",
    arguments: "arguments",
    character: "char",
    characters: "chars",
    thousands: ',',
    more: [
        "… 1 more character: Show all",
        "… {n} more characters: Show all",
    ],
    expires: "open until",
    approve: "Approve",
    reject: "Reject",
    show_all: "Show all",
    second_step: "🔐 Second step: to approve, press {code} below. There is no plain Approve for this device.",
    passkey_step: "🔐 This takes a passkey: approve it on TauBar. Nothing pressed here approves it.",
    step_missing: "Not approved: press the number the question shows. It stays open.",
    approved_by: "✅ Approved by {user} at {time}",
    rejected_by: "❌ Rejected by {user} at {time}: not run",
    expired: "⌛ Expired unanswered at {time}: not run",
    superseded: "↪ Replaced by a newer message at {time}: not run",
    cancelled: "✖ Withdrawn at {time}: not run",
    not_asked: "✖ This question could not be found: not run",
    not_yours: "This question is not yours to answer.",
    invalid_button: "This button is not valid.",
    gone: "This question no longer exists.",
    waiting: "asks for approval ↓",
    running: "running…",
    result_ok: "ok",
    result_refused: "refused",
    result_error: "error",
    result_unknown_tool: "unknown tool, not run",
    result_invalid: "invalid call, not run",
    result_cancelled: "cancelled",
    routine_prompt: "⚙ Routine {routine} ({trigger}) asks tau:",
    more_lines: ["  … 1 more line", "  … {n} more lines"],
    nothing_waits: "Nothing waits for your answer.",
    questions_wait: "Waiting for your answer ({n}):",
    answer_here: "its buttons are on its message in this chat",
    answer_other_chat: "answer it in the chat that asked",
    answer_on: "answer it on {channel}",
    approve_always: "Approve, allow again",
    approve_always_everywhere: "Approve, allow in all my chats",
    grant_covers: "↻ Allow again: exactly this call, for {hours} h{pin}, in this chat (all my chats: in every one of yours). /grants revokes it.",
    grant_pins_workspace: ", while the workspace's files stay as they are",
    grant_suggested: "You approved exactly this call {n} times in the last {days} days: allowing it again would spare you this question.",
    routine_suggested: "It came at about the same time each day: a routine could make it on a schedule (tau routines).",
    approved_allowing: "✅ Approved by {user} at {time}, and allowed again in this conversation",
    approved_allowing_everywhere: "✅ Approved by {user} at {time}, and allowed again in all their chats",
    grants_none: "Nothing runs without asking: you have allowed nothing again.",
    grants_head: "Runs without asking ({n}):",
    grant_line: "{n}. {tool} {arguments}\n    {scope}, used {uses}×, until {until}",
    scope_conversation: "in one conversation",
    scope_channel: "in all your chats",
    routine_line: "⚙ routine {routine} ({trigger}): {tool} {arguments}",
    routine_off: " (disabled)",
    grants_more: "… and {n} more: tau grants list shows them all.",
    grants_foot: "Revoke stops a grant before its next call. A routine's own call stops with tau routines disable NAME.",
    revoke: "Revoke {n}",
    revoked: "Revoked: {tool} is asked again.",
    revoked_already: "This grant was revoked already.",
    grant_not_yours: "This grant is not yours to revoke.",
    sessions_none: "No conversation in this chat yet.",
    sessions_head: "Conversations in this chat ({n}), ▶ the open one:",
    session_line: "{title} · {messages} · {when}",
    messages: ["1 message", "{n} messages"],
    untitled: "(nothing written yet)",
    sessions_more: "… and {n} more: tau sessions list shows them all.",
    search_none: "No conversation of this chat holds that.",
    search_usage: "/search and some words finds this chat's conversations that hold them.",
    renamed: "This conversation is now called: {title}",
    rename_usage: "/rename and a title names this conversation (/rename alone gives it back its first message's).",
    deleted: "This conversation is deleted with everything in it; your next message starts a new one.",
    delete_nothing: "Nothing is written in this conversation yet; there is nothing to delete.",
};

const TR: Texts = Texts {
    greeting: "Merhaba, ben tau. Bana buradan yaz, buradan cevap vereyim.\n\n\
Dünyada bir şeyi değiştiren ya da kod çalıştıran bir işten (seviye 2) önce sorarım: bir mesaj \
hangi aracı, ne yaptığını ve hangi argümanlarla çalışacağını söyler, altında Onayla ve Reddet \
düğmeleri olur. Bu botun sahiplerinden biri Onayla'ya basmadan hiçbir şey çalışmaz; başka \
birinin basması hiçbir şeyi değiştirmez. Soru, cevaplanana ya da süresi dolana kadar yeniden \
başlatmalardan sonra da açık kalır; sonra mesaj neye, kimin, ne zaman karar verdiğini söyler.\n\n\
/new yeni bir sohbet başlatır, /cancel yaptığım işi durdurur, /pending cevabını bekleyen \
soruları listeler, /grants sormadan yeniden çalışmasına izin verdiklerini listeler (ve geri \
alır), /sessions bu sohbetin konuşmalarını listeler, /search onları bulur, /rename açık \
olanı adlandırır, /delete onu siler.",
    new_session: "Yeni sohbet.",
    cancelling: "Çalışan tur durduruluyor.",
    nothing_running: "Çalışan bir şey yok.",
    not_taken: "tau bu mesajı alamadı:",
    too_long: "Bu mesaj tau için çok uzun; modele bir şey gönderilmedi.",
    approval_needed: "Onay gerekiyor",
    tier: "seviye",
    tool: "araç",
    effect: "etki",
    arguments: "argümanlar",
    character: "karakter",
    characters: "karakter",
    thousands: '.',
    more: [
        "… 1 karakter daha: Tümünü göster",
        "… {n} karakter daha: Tümünü göster",
    ],
    expires: "açık kalma süresi",
    approve: "Onayla",
    reject: "Reddet",
    show_all: "Tümünü göster",
    second_step: "🔐 İkinci adım: onaylamak için aşağıdaki {code} düğmesine bas. Bu cihaz için düz bir Onayla yok.",
    passkey_step: "🔐 Bunun için geçiş anahtarı gerekir: TauBar'da onayla. Burada basılan hiçbir şey onaylamaz.",
    step_missing: "Onaylanmadı: sorunun gösterdiği sayıya bas. Soru açık kalıyor.",
    approved_by: "✅ {user} tarafından {time} zamanında onaylandı",
    rejected_by: "❌ {user} tarafından {time} zamanında reddedildi: çalıştırılmadı",
    expired: "⌛ {time} zamanında cevapsız kaldı: çalıştırılmadı",
    superseded: "↪ {time} zamanında yeni bir mesaj soruyu geçersiz kıldı: çalıştırılmadı",
    cancelled: "✖ {time} zamanında geri çekildi: çalıştırılmadı",
    not_asked: "✖ Bu soru bulunamadı: çalıştırılmadı",
    not_yours: "Bu soruyu cevaplamak sana düşmez.",
    invalid_button: "Bu düğme geçerli değil.",
    gone: "Bu soru artık yok.",
    waiting: "onay istiyor ↓",
    running: "çalışıyor…",
    result_ok: "tamam",
    result_refused: "reddedildi",
    result_error: "hata",
    result_unknown_tool: "bilinmeyen araç, çalıştırılmadı",
    result_invalid: "geçersiz çağrı, çalıştırılmadı",
    result_cancelled: "iptal edildi",
    routine_prompt: "⚙ {routine} rutini ({trigger}) tau'ya soruyor:",
    more_lines: ["  … 1 satır daha", "  … {n} satır daha"],
    nothing_waits: "Cevabını bekleyen bir şey yok.",
    questions_wait: "Cevabını bekleyenler ({n}):",
    answer_here: "düğmeleri bu sohbetteki mesajında",
    answer_other_chat: "soran sohbette cevapla",
    answer_on: "{channel} üzerinden cevapla",
    approve_always: "Onayla, tekrar izin ver",
    approve_always_everywhere: "Onayla, tüm sohbetlerimde izin ver",
    grant_covers: "↻ Tekrar izin: aynen bu çağrı, {hours} saat{pin}, bu sohbette (tüm sohbetlerimde: hepsinde). /grants geri alır.",
    grant_pins_workspace: ", çalışma alanının dosyaları değişmedikçe",
    grant_suggested: "Tam olarak bu çağrıyı son {days} günde {n} kez onayladın: tekrar izin vermek seni bu sorudan kurtarır.",
    routine_suggested: "Her gün aşağı yukarı aynı saatte geldi: bir rutin bunu bir zamanlamayla yapabilir (tau routines).",
    approved_allowing: "✅ {user} tarafından {time} zamanında onaylandı ve bu sohbette tekrar izin verildi",
    approved_allowing_everywhere: "✅ {user} tarafından {time} zamanında onaylandı ve tüm sohbetlerinde tekrar izin verildi",
    grants_none: "Sormadan çalışan bir şey yok: hiçbir şeye tekrar izin vermedin.",
    grants_head: "Sormadan çalışanlar ({n}):",
    grant_line: "{n}. {tool} {arguments}\n    {scope}, {uses} kez kullanıldı, bitiş {until}",
    scope_conversation: "tek bir sohbette",
    scope_channel: "tüm sohbetlerinde",
    routine_line: "⚙ {routine} rutini ({trigger}): {tool} {arguments}",
    routine_off: " (kapalı)",
    grants_more: "… ve {n} tane daha: tau grants list hepsini gösterir.",
    grants_foot: "Geri al, bir izni bir sonraki çağrıdan önce durdurur. Bir rutinin kendi çağrısı tau routines disable NAME ile durur.",
    revoke: "Geri al {n}",
    revoked: "Geri alındı: {tool} yeniden sorulacak.",
    revoked_already: "Bu izin zaten geri alınmıştı.",
    grant_not_yours: "Bu izni geri almak sana düşmez.",
    sessions_none: "Bu sohbette henüz bir konuşma yok.",
    sessions_head: "Bu sohbetteki konuşmalar ({n}), ▶ açık olan:",
    session_line: "{title} · {messages} · {when}",
    messages: ["1 mesaj", "{n} mesaj"],
    untitled: "(henüz bir şey yazılmadı)",
    sessions_more: "… ve {n} tane daha: tau sessions list hepsini gösterir.",
    search_none: "Bu sohbetin hiçbir konuşması bunu içermiyor.",
    search_usage: "/search ve birkaç kelime, bu sohbetin onları içeren konuşmalarını bulur.",
    renamed: "Bu konuşmanın adı artık: {title}",
    rename_usage: "/rename ve bir başlık bu konuşmayı adlandırır (yalnız /rename ilk mesajın başlığını geri verir).",
    deleted: "Bu konuşma içindeki her şeyle silindi; bir sonraki mesajın yeni bir konuşma başlatır.",
    delete_nothing: "Bu konuşmaya henüz bir şey yazılmadı; silinecek bir şey yok.",
};

/// `said[0]` when `count` is 1, else `said[1]` with `{n}` the count (its digits grouped
/// with `thousands`): a count is said with its noun in the singular or the plural.
pub(crate) fn counted(said: [&str; 2], count: usize, thousands: char) -> String {
    if count == 1 {
        said[0].to_owned()
    } else {
        said[1].replace("{n}", &tau_core::grouped_digits(count, thousands))
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

    /// What a person reads of the commands: the greeting that lists them, and what
    /// `/delete` says, in every language.
    #[test]
    fn the_greeting_and_delete_say_what_the_commands_do() {
        for (name, language) in [("en", Language::En), ("tr", Language::Tr)] {
            let t = texts(language);
            insta::assert_snapshot!(
                format!("commands_{name}"),
                [t.greeting, t.deleted, t.delete_nothing].join("\n---\n")
            );
        }
    }
}
