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
    pub more: &'static str,
    pub expires: &'static str,
    pub approve: &'static str,
    pub reject: &'static str,
    pub show_all: &'static str,
    /// The second step of a lock-class device's question: `{code}` is its number.
    pub second_step: &'static str,
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
    /// Below a call's output cut short: `{n}` lines.
    pub more_lines: &'static str,
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
}

const EN: Texts = Texts {
    greeting: "Hi, I am tau. Write to me here and I answer here.\n\n\
Before I do something that acts on the world or runs code (tier 2), I ask: a message says \
which tool, what it does and with what arguments, under it Approve and Reject. Nothing runs \
until an owner of this bot presses Approve; a press by anyone else changes nothing. A \
question stays open through restarts until it is answered or expires, and afterwards the \
message says what was decided, by whom and when.\n\n\
/new starts a new conversation, /cancel stops what I am doing, /pending lists what waits \
for your answer.",
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
    more: "… {n} more characters: Show all",
    expires: "open until",
    approve: "Approve",
    reject: "Reject",
    show_all: "Show all",
    second_step: "🔐 Second step: to approve, press {code} below. There is no plain Approve for this device.",
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
    more_lines: "  … {n} more lines",
    nothing_waits: "Nothing waits for your answer.",
    questions_wait: "Waiting for your answer ({n}):",
    answer_here: "its buttons are on its message in this chat",
    answer_other_chat: "answer it in the chat that asked",
    answer_on: "answer it on {channel}",
};

const TR: Texts = Texts {
    greeting: "Merhaba, ben tau. Bana buradan yaz, buradan cevap vereyim.\n\n\
Dünyada bir şeyi değiştiren ya da kod çalıştıran bir işten (seviye 2) önce sorarım: bir mesaj \
hangi aracı, ne yaptığını ve hangi argümanlarla çalışacağını söyler, altında Onayla ve Reddet \
düğmeleri olur. Bu botun sahiplerinden biri Onayla'ya basmadan hiçbir şey çalışmaz; başka \
birinin basması hiçbir şeyi değiştirmez. Soru, cevaplanana ya da süresi dolana kadar yeniden \
başlatmalardan sonra da açık kalır; sonra mesaj neye, kimin, ne zaman karar verdiğini söyler.\n\n\
/new yeni bir sohbet başlatır, /cancel yaptığım işi durdurur, /pending cevabını bekleyen \
soruları listeler.",
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
    more: "… {n} karakter daha: Tümünü göster",
    expires: "açık kalma süresi",
    approve: "Onayla",
    reject: "Reddet",
    show_all: "Tümünü göster",
    second_step: "🔐 İkinci adım: onaylamak için aşağıdaki {code} düğmesine bas. Bu cihaz için düz bir Onayla yok.",
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
    more_lines: "  … {n} satır daha",
    nothing_waits: "Cevabını bekleyen bir şey yok.",
    questions_wait: "Cevabını bekleyenler ({n}):",
    answer_here: "düğmeleri bu sohbetteki mesajında",
    answer_other_chat: "soran sohbette cevapla",
    answer_on: "{channel} üzerinden cevapla",
};

pub(crate) fn texts(language: Language) -> &'static Texts {
    match language {
        Language::En => &EN,
        Language::Tr => &TR,
    }
}
