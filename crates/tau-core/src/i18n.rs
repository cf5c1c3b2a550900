//! What a person reads, in their language. The texts the model reads are not here: they
//! stay fixed English (see `approval::texts`).

use serde::{Deserialize, Serialize};

/// A UI language with a full message table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    #[default]
    En,
    Tr,
}

impl Language {
    pub const ALL: [Language; 2] = [Language::En, Language::Tr];

    /// `en`, `tr`, or a tag starting with one (`tr-TR`, `en_GB.UTF-8`).
    pub fn parse(code: &str) -> Option<Self> {
        let primary = code
            .trim()
            .split(['-', '_', '.'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        match primary.as_str() {
            "en" => Some(Self::En),
            "tr" => Some(Self::Tr),
            _ => None,
        }
    }

    /// The configured language, or English with a warning when tau has no table for it.
    pub fn from_config(code: &str) -> Self {
        Self::parse(code).unwrap_or_else(|| {
            tracing::warn!(
                language = code,
                "no messages for this UI language; using English"
            );
            Self::En
        })
    }

    pub fn code(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Tr => "tr",
        }
    }
}

/// A notice the hub shows a person during a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Notice {
    /// The turn used all its model calls.
    TurnLimit {
        max_turns: u32,
    },
    /// The turn used its token budget.
    TokenLimit,
    ModelError {
        message: String,
    },
    /// The model stopped because its answer reached the output limit.
    MaxTokens,
    Cancelled,
    Throttled {
        attempt: u32,
        seconds: u64,
    },
    /// Old messages were dropped so the conversation fits the model again.
    ContextReduced {
        removed: usize,
    },
    /// Even the shortest history does not fit.
    ContextOverflow,
    /// A hook tried to pause the turn with an interrupt; tau refused it.
    InterruptRefused {
        name: String,
    },
    ApprovalTimedOut {
        tool: String,
    },
    /// An approved call was let through and tau stopped before its result was stored.
    EffectUncertain {
        tool: String,
    },
    /// A person answered a question nothing waited for any more; nothing ran.
    AnswerNotUsed {
        tool: String,
    },
}

impl Notice {
    /// The text in `language`.
    pub fn text(&self, language: Language) -> String {
        match language {
            Language::En => english(self),
            Language::Tr => turkish(self),
        }
    }
}

fn english(notice: &Notice) -> String {
    match notice {
        Notice::TurnLimit { max_turns } => format!(
            "Stopped: this turn reached its limit of {max_turns} model calls. Send another message to continue."
        ),
        Notice::TokenLimit => "Stopped: this turn used its token budget. Send another message to continue.".into(),
        Notice::ModelError { message } => format!("The model could not answer: {message}"),
        Notice::MaxTokens => "The answer was cut off: the model reached its output token limit.".into(),
        Notice::Cancelled => "Cancelled.".into(),
        Notice::Throttled { attempt, seconds } => {
            format!("The model provider is busy; retrying in {seconds} s (retry {attempt}).")
        }
        Notice::ContextReduced { removed } => {
            format!("Dropped the {removed} oldest messages so the conversation fits the model.")
        }
        Notice::ContextOverflow => {
            "The conversation is too long for the model, even after dropping old messages. Start a new session.".into()
        }
        Notice::InterruptRefused { name } => {
            format!("A component tried to pause this turn ({name}); tau refused it and went on.")
        }
        Notice::ApprovalTimedOut { tool } => format!("No answer in time: {tool} was not run."),
        Notice::EffectUncertain { tool } => format!(
            "tau stopped while {tool} was running: it may or may not have run. It was not run again."
        ),
        Notice::AnswerNotUsed { tool } => format!(
            "Your answer about {tool} was not used: no turn waits for it any more, so nothing ran and the question is closed. Ask again if you still want it."
        ),
    }
}

fn turkish(notice: &Notice) -> String {
    match notice {
        Notice::TurnLimit { max_turns } => format!(
            "Durduruldu: bu tur {max_turns} model çağrısı sınırına ulaştı. Devam etmek için yeni bir mesaj gönderin."
        ),
        Notice::TokenLimit => {
            "Durduruldu: bu tur belirteç bütçesini doldurdu. Devam etmek için yeni bir mesaj gönderin.".into()
        }
        Notice::ModelError { message } => format!("Model yanıt veremedi: {message}"),
        Notice::MaxTokens => "Yanıt kesildi: model çıktı belirteci sınırına ulaştı.".into(),
        Notice::Cancelled => "İptal edildi.".into(),
        Notice::Throttled { attempt, seconds } => {
            format!("Model sağlayıcısı meşgul; {seconds} sn sonra yeniden denenecek ({attempt}. yeniden deneme).")
        }
        Notice::ContextReduced { removed } => {
            format!("Konuşmanın modele sığması için en eski {removed} mesaj çıkarıldı.")
        }
        Notice::ContextOverflow => {
            "Konuşma, eski mesajlar çıkarıldıktan sonra bile model için çok uzun. Yeni bir oturum başlatın.".into()
        }
        Notice::InterruptRefused { name } => {
            format!("Bir bileşen bu turu duraklatmak istedi ({name}); tau bunu reddetti ve devam etti.")
        }
        Notice::ApprovalTimedOut { tool } => format!("Zamanında yanıt gelmedi: {tool} çalıştırılmadı."),
        Notice::EffectUncertain { tool } => format!(
            "{tool} çalışırken tau durdu: çalışmış da olabilir, çalışmamış da. Yeniden çalıştırılmadı."
        ),
        Notice::AnswerNotUsed { tool } => format!(
            "{tool} hakkındaki yanıtınız kullanılmadı: onu bekleyen bir tur artık yok, bu yüzden hiçbir şey çalışmadı ve soru kapatıldı. Hâlâ istiyorsanız yeniden isteyin."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_notice() -> Vec<Notice> {
        vec![
            Notice::TurnLimit { max_turns: 3 },
            Notice::TokenLimit,
            Notice::ModelError {
                message: "connection refused".into(),
            },
            Notice::MaxTokens,
            Notice::Cancelled,
            Notice::Throttled {
                attempt: 2,
                seconds: 8,
            },
            Notice::ContextReduced { removed: 4 },
            Notice::ContextOverflow,
            Notice::InterruptRefused {
                name: "approval".into(),
            },
            Notice::ApprovalTimedOut {
                tool: "mqtt_publish".into(),
            },
            Notice::EffectUncertain {
                tool: "run_command".into(),
            },
            Notice::AnswerNotUsed {
                tool: "run_command".into(),
            },
        ]
    }

    #[test]
    fn every_notice_in_every_language() {
        for language in Language::ALL {
            let table: Vec<String> = every_notice()
                .iter()
                .map(|n| {
                    format!(
                        "{}: {}",
                        serde_json::to_value(n).unwrap()["kind"].as_str().unwrap(),
                        n.text(language)
                    )
                })
                .collect();
            insta::assert_snapshot!(format!("notices_{}", language.code()), table.join("\n"));
        }
    }

    #[test]
    fn language_tags_fall_back_to_english() {
        assert_eq!(Language::parse("tr-TR"), Some(Language::Tr));
        assert_eq!(Language::parse("en_GB.UTF-8"), Some(Language::En));
        assert_eq!(Language::parse("TR"), Some(Language::Tr));
        assert_eq!(Language::parse("de"), None);
        assert_eq!(Language::from_config("de"), Language::En);
    }
}
