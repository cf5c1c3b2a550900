//! The few Bot API methods tau uses, through frankenstein's `AsyncTelegramApi::request`.
//!
//! Requests use frankenstein's typed parameters. Answers are read leniently (into
//! `serde_json::Value`, then the one or two fields tau needs): servers differ in what they
//! fill in (an emulator answers `null` where Telegram answers `true` or a message, dates in
//! milliseconds, missing `is_bot` or `chat_instance`), and one odd update must never make a
//! whole batch unreadable.

use std::time::Duration;

use frankenstein::AsyncTelegramApi;
use frankenstein::ParseMode;
use frankenstein::client_reqwest::Bot;
use frankenstein::methods::{
    AnswerCallbackQueryParams, EditMessageTextParams, GetUpdatesParams, SendMessageParams,
};
use frankenstein::types::{
    AllowedUpdate, InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions, ReplyMarkup,
};
use serde_json::Value;
use tau_secret::Scrubber;

/// Time for a connection to be made.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much longer than the long poll itself an HTTP request may take before it is given up.
const POLL_MARGIN: Duration = Duration::from_secs(15);

/// Why a Bot API call did not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 429: Telegram asks tau to wait this long.
    #[error("Telegram asks to wait {0} s before the next request (429)")]
    TooManyRequests(u64),
    /// 409: another program polls with the same token, or a webhook is set.
    #[error(
        "another program is reading this bot's updates (409: {0}); stop it or remove the bot's webhook, then start tau again"
    )]
    Conflict(String),
    /// 401 or 404: the token is wrong or revoked.
    #[error("Telegram does not accept the bot token ({code}: {description})")]
    Unauthorized { code: u64, description: String },
    /// Any other refusal (400 "message is not modified", 403 "bot was blocked", ...).
    #[error("Telegram refused the request ({code}: {description})")]
    Refused { code: u64, description: String },
    /// No answer: the connection failed or timed out.
    #[error("cannot reach the Bot API: {0}")]
    Transport(String),
    /// An answer tau cannot read.
    #[error("the Bot API answered something tau cannot read: {0}")]
    Malformed(String),
}

impl ApiError {
    /// Every text that came from the server (or a proxy in between) is scrubbed of the
    /// token before it becomes part of an error: an error is logged and shown.
    fn from_frankenstein(error: frankenstein::Error, scrubber: &Scrubber) -> Self {
        let quoted = |text: &str| tau_core::display(&scrubber.scrub(text));
        match error {
            frankenstein::Error::Api(response) => {
                let description = quoted(&response.description);
                match response.error_code {
                    429 => Self::TooManyRequests(
                        response
                            .parameters
                            .and_then(|p| p.retry_after)
                            .map_or(1, u64::from),
                    ),
                    409 => Self::Conflict(description),
                    code @ (401 | 404) => Self::Unauthorized { code, description },
                    code => Self::Refused { code, description },
                }
            }
            // frankenstein strips the URL from reqwest's errors; scrubbed all the same.
            frankenstein::Error::HttpReqwest(error) => Self::Transport(quoted(&error.to_string())),
            // A body that is not the Bot API's JSON: a proxy's error page, which may quote
            // the URL and with it the token.
            frankenstein::Error::JsonDecode { source, input } => Self::Malformed(format!(
                "{} in {}",
                quoted(&source.to_string()),
                tau_protocol::ellipsized(&quoted(&input), 200)
            )),
            other => Self::Malformed(quoted(&other.to_string())),
        }
    }
}

/// An inline keyboard: rows of (label, callback data).
pub(crate) type Keyboard = Vec<Vec<(String, String)>>;

fn markup(keyboard: &Keyboard) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup {
        inline_keyboard: keyboard
            .iter()
            .map(|row| {
                row.iter()
                    .map(|(label, data)| {
                        InlineKeyboardButton::builder()
                            .text(label.clone())
                            .callback_data(data.clone())
                            .build()
                    })
                    .collect()
            })
            .collect(),
        force_reply: None,
    }
}

fn no_preview() -> LinkPreviewOptions {
    LinkPreviewOptions {
        is_disabled: Some(true),
        url: None,
        prefer_small_media: None,
        prefer_large_media: None,
        show_above_text: None,
    }
}

/// A bot: the Bot API at `<base>/bot<token>`.
#[derive(Clone)]
pub struct BotApi {
    bot: Bot,
    /// Keeps the token out of every error text.
    scrubber: Scrubber,
}

impl std::fmt::Debug for BotApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL holds the token.
        f.write_str("BotApi")
    }
}

impl BotApi {
    /// `poll_timeout` is the long poll's; every request may take that long plus a margin.
    pub fn new(base: &str, token: &str, poll_timeout: Duration) -> Result<Self, ApiError> {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(poll_timeout + POLL_MARGIN)
            .build()
            .map_err(|e| ApiError::Transport(e.without_url().to_string()))?;
        let bot = Bot::builder()
            .api_url(format!("{}/bot{token}", base.trim_end_matches('/')))
            .client(client)
            .build();
        Ok(Self {
            bot,
            scrubber: Scrubber::new([token]),
        })
    }

    async fn call<P>(&self, method: &str, params: P) -> Result<Value, ApiError>
    where
        P: serde::Serialize + std::fmt::Debug + Send,
    {
        let envelope: Value = self
            .bot
            .request(method, Some(params))
            .await
            .map_err(|error| ApiError::from_frankenstein(error, &self.scrubber))?;
        if envelope.get("ok").and_then(Value::as_bool) == Some(false) {
            let description = envelope
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("no description");
            return Err(ApiError::Refused {
                code: envelope
                    .get("error_code")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                description: tau_core::display(&self.scrubber.scrub(description)),
            });
        }
        Ok(envelope.get("result").cloned().unwrap_or(Value::Null))
    }

    /// The next updates after `offset` (which also confirms every update before it),
    /// waiting up to `timeout_seconds` for one. Each update is returned as it came: the
    /// caller reads each on its own.
    pub async fn get_updates(
        &self,
        offset: Option<i64>,
        timeout_seconds: u32,
    ) -> Result<Vec<Value>, ApiError> {
        let params = GetUpdatesParams {
            offset,
            limit: Some(100),
            timeout: Some(timeout_seconds),
            allowed_updates: Some(vec![AllowedUpdate::Message, AllowedUpdate::CallbackQuery]),
        };
        match self.call("getUpdates", params).await? {
            Value::Array(updates) => Ok(updates),
            other => Err(ApiError::Malformed(format!(
                "getUpdates: the result is not a list but {}",
                tau_protocol::ellipsized(
                    &tau_core::display(&self.scrubber.scrub(&other.to_string())),
                    80
                )
            ))),
        }
    }

    /// Sends an HTML message; returns its id.
    pub async fn send_message(
        &self,
        chat: i64,
        html: &str,
        keyboard: Option<&Keyboard>,
    ) -> Result<i64, ApiError> {
        let params = SendMessageParams::builder()
            .chat_id(chat)
            .text(html)
            .parse_mode(ParseMode::Html)
            .link_preview_options(no_preview())
            .maybe_reply_markup(keyboard.map(|k| ReplyMarkup::InlineKeyboardMarkup(markup(k))))
            .build();
        let message = self.call("sendMessage", params).await?;
        message
            .get("message_id")
            .and_then(Value::as_i64)
            .ok_or_else(|| ApiError::Malformed("sendMessage: no message_id".into()))
    }

    /// Replaces a message's text and its buttons (`None`: no buttons left).
    pub async fn edit_message(
        &self,
        chat: i64,
        message_id: i64,
        html: &str,
        keyboard: Option<&Keyboard>,
    ) -> Result<(), ApiError> {
        let message_id = i32::try_from(message_id)
            .map_err(|_| ApiError::Malformed(format!("message id {message_id} out of range")))?;
        // An empty keyboard, not a missing one: some servers keep the old buttons when
        // the field is left out.
        let keyboard = markup(keyboard.unwrap_or(&Vec::new()));
        let params = EditMessageTextParams::builder()
            .chat_id(chat)
            .message_id(message_id)
            .text(html)
            .parse_mode(ParseMode::Html)
            .link_preview_options(no_preview())
            .reply_markup(keyboard)
            .build();
        // Telegram answers the message or `true`; an emulator may answer `null`.
        self.call("editMessageText", params).await.map(drop)
    }

    /// Answers a button press; `text` shows briefly on the presser's screen.
    pub async fn answer_callback(&self, callback_id: &str, text: &str) -> Result<(), ApiError> {
        let params = AnswerCallbackQueryParams::builder()
            .callback_query_id(callback_id)
            .text(text)
            .build();
        self.call("answerCallbackQuery", params).await.map(drop)
    }
}
