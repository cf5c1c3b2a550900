//! What a key does while a question's card is up: approve, refuse, grant, scroll the
//! card, and the second step's typed answer.

use std::time::Instant;
use tau_protocol::Decision;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{Action, App};

impl App {
    pub(super) fn card_key(&mut self, key: KeyEvent, at: Instant) -> Action {
        let Some(view) = self.card_view() else {
            return Action::Nothing;
        };
        let page = view.window.saturating_sub(1).max(1);
        let max_scroll = view.max_scroll();
        let Some(card) = self.cards.front_mut() else {
            return Action::Nothing;
        };
        if card.call_card.confirm.is_some() {
            return self.step_key(key, at, page, max_scroll);
        }
        let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
        let mut grant = None;
        // A card that offers a grant takes a word for it: letters other than y and n
        // start it, everything after them is part of it, Enter answers with it. A key
        // typed ahead can never make a grant.
        if card.grant.is_some() {
            let typing = !card.typed.is_empty();
            match key.code {
                KeyCode::Char(c)
                    if plain
                        && (!c.is_whitespace() || (typing && c == ' '))
                        && (typing || !matches!(c, 'y' | 'Y' | 'n' | 'N')) =>
                {
                    card.type_char(c, MAX_TYPED);
                    return Action::Nothing;
                }
                KeyCode::Backspace if typing => {
                    card.typed.pop();
                    return Action::Nothing;
                }
                KeyCode::Esc if typing => {
                    card.typed.clear();
                    return Action::Nothing;
                }
                KeyCode::Enter if plain && typing => {
                    let typed = std::mem::take(&mut card.typed);
                    let Some(scope) = grant_scope(&typed) else {
                        return Action::Nothing;
                    };
                    grant = Some(scope);
                }
                _ => {}
            }
        }
        let decision = match key.code {
            _ if grant.is_some() => Decision::Approved,
            KeyCode::Char('y' | 'Y')
                if key.modifiers.difference(KeyModifiers::SHIFT).is_empty() =>
            {
                Decision::Approved
            }
            KeyCode::Char('n' | 'N')
                if key.modifiers.difference(KeyModifiers::SHIFT).is_empty() =>
            {
                Decision::Rejected
            }
            KeyCode::Esc => Decision::Rejected,
            code => {
                card.scroll = scrolled(card.scroll, code, page, max_scroll);
                return Action::Nothing;
            }
        };
        if !card.answers_at(at) {
            card.ignored_early = true;
            return Action::Nothing;
        }
        if decision == Decision::Approved && !card.seen_end {
            // The footer says to scroll first; a yes to a card not read to its end is no answer.
            return Action::Nothing;
        }
        let approval_id = card.approval_id.clone();
        // Gone at once, so a second key can never land on the card behind it.
        self.cards.pop_front();
        Action::Answer {
            approval_id,
            decision,
            confirmation: None,
            grant,
        }
    }

    /// A key on a card with a second step: characters go into its field, Enter answers
    /// with what was typed (the device's name or the number runs it, a bare yes is
    /// ignored, anything else refuses), Esc refuses.
    fn step_key(&mut self, key: KeyEvent, at: Instant, page: usize, max_scroll: usize) -> Action {
        let Some(card) = self.cards.front_mut() else {
            return Action::Nothing;
        };
        let Some(step) = card.call_card.confirm.clone() else {
            return Action::Nothing;
        };
        let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
        let mut confirmation = None;
        let decision = match key.code {
            KeyCode::Esc => Decision::Rejected,
            KeyCode::Enter if plain => {
                let typed = std::mem::take(&mut card.typed);
                if step.accepts(&typed) {
                    confirmation = Some(typed);
                    Decision::Approved
                } else if is_bare_yes(&typed) {
                    card.bare_yes = true;
                    return Action::Nothing;
                } else {
                    Decision::Rejected
                }
            }
            KeyCode::Char(c) if plain && !c.is_whitespace() => {
                card.type_char(c, MAX_TYPED);
                return Action::Nothing;
            }
            KeyCode::Backspace => {
                card.typed.pop();
                return Action::Nothing;
            }
            code => {
                card.scroll = scrolled(card.scroll, code, page, max_scroll);
                return Action::Nothing;
            }
        };
        if !card.answers_at(at) {
            card.ignored_early = true;
            card.typed.clear();
            return Action::Nothing;
        }
        if decision == Decision::Approved && !card.seen_end {
            return Action::Nothing;
        }
        let approval_id = card.approval_id.clone();
        self.cards.pop_front();
        Action::Answer {
            approval_id,
            decision,
            confirmation,
            grant: None,
        }
    }
}

/// The longest answer a second step's field takes (a device name is at most 40).
const MAX_TYPED: usize = 64;

/// The word that approves a call and makes the grant its card offers.
pub(crate) const GRANT_WORD: &str = "always";

/// The grant a typed word asks for: `always` for this conversation, `always all` for every
/// conversation on the TUI (any case, any spacing); `None` for anything else.
pub(crate) fn grant_scope(typed: &str) -> Option<tau_protocol::GrantScope> {
    let mut words = typed.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case(GRANT_WORD) {
        return None;
    }
    match (words.next(), words.next()) {
        (None, _) => Some(tau_protocol::GrantScope::Conversation),
        (Some(all), None) if all.eq_ignore_ascii_case("all") => {
            Some(tau_protocol::GrantScope::Channel)
        }
        _ => None,
    }
}

/// `y`, `yes`, `e`, `evet` (any case): a plain yes, which a second step ignores.
/// Where a card's view is after a key that moves it; any other key leaves it.
fn scrolled(scroll: usize, code: KeyCode, page: usize, max_scroll: usize) -> usize {
    match code {
        KeyCode::Up => scroll.saturating_sub(1),
        KeyCode::Down => scroll + 1,
        KeyCode::PageUp => scroll.saturating_sub(page),
        KeyCode::PageDown | KeyCode::Char(' ') => scroll + page,
        KeyCode::Home => 0,
        KeyCode::End => max_scroll,
        _ => scroll,
    }
    .min(max_scroll)
}

fn is_bare_yes(typed: &str) -> bool {
    matches!(
        typed.trim().to_lowercase().as_str(),
        "y" | "yes" | "e" | "evet"
    )
}
