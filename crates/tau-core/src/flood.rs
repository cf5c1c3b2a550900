//! Bounded records of what outsiders can repeat at will (a wrong webhook secret, a
//! stranger's button press, a trigger that fires while its routine still runs): the first
//! event of a sender in a window is recorded as it happens; the rest of that window are
//! counted, and when the window ends one summary says how many there were. A flood then
//! costs at most two lines per sender and window, whatever its rate. Senders are bounded
//! too: past [`MAX_SENDERS`] at once, further senders are counted together.
//!
//! Also the one cap for texts from outside that reach a log or an audit line: [`capped`].

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::display::grouped_digits;

/// How long a window lasts by default.
pub const FLOOD_WINDOW: Duration = Duration::from_secs(10);
/// Senders with an open window at once; beyond them, one window counts everyone else.
pub const MAX_SENDERS: usize = 1024;

/// Whom a summary is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Sender<K> {
    One(K),
    /// Every sender past [`MAX_SENDERS`].
    Others,
}

/// What to do with one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tally {
    /// The first of its sender's window: record it now.
    Record,
    /// Counted; the window's summary will say so.
    Counted,
}

type Summarize<K> = dyn Fn(&Sender<K>, u64) + Send + Sync;

/// Counts events per sender and window; see the module text.
pub struct Flood<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for Flood<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct Inner<K> {
    window: Duration,
    /// Counted events of each open window.
    open: Mutex<HashMap<Sender<K>, u64>>,
    summarize: Box<Summarize<K>>,
}

impl<K> Inner<K> {
    fn lock(&self) -> MutexGuard<'_, HashMap<Sender<K>, u64>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K: Hash + Eq + Clone + Send + Sync + 'static> Flood<K> {
    /// `summarize(sender, count)` is called when a window ends in which `count` events
    /// were counted but not recorded (never with 0).
    pub fn new(
        window: Duration,
        summarize: impl Fn(&Sender<K>, u64) + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                window,
                open: Mutex::new(HashMap::new()),
                summarize: Box::new(summarize),
            }),
        }
    }

    /// One event of `sender`. Outside a tokio runtime nothing could end a window, so every
    /// event is recorded.
    pub fn event(&self, sender: K) -> Tally {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Tally::Record;
        };
        let mut open = self.inner.lock();
        let mut key = Sender::One(sender);
        if !open.contains_key(&key) && open.len() >= MAX_SENDERS {
            key = Sender::Others;
        }
        if let Some(count) = open.get_mut(&key) {
            *count = count.saturating_add(1);
            return Tally::Counted;
        }
        // The first of everyone past the bound is not one sender's: counted as well.
        let (first, tally) = match key {
            Sender::One(_) => (0, Tally::Record),
            Sender::Others => (1, Tally::Counted),
        };
        open.insert(key.clone(), first);
        drop(open);
        let inner = Arc::clone(&self.inner);
        runtime.spawn(async move {
            tokio::time::sleep(inner.window).await;
            let counted = inner.lock().remove(&key).unwrap_or(0);
            if counted > 0 {
                (inner.summarize)(&key, counted);
            }
        });
        tally
    }
}

/// A text from outside (a topic, a payload, a server's answer) as a log or audit line
/// keeps it: at most `max` characters, and when it was longer, how long it was:
/// `home/door/aaaa… (60,000 chars)`.
pub fn capped(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!(
            "{}… ({} chars)",
            text.get(..cut).unwrap_or_default(),
            grouped_digits(text.chars().count(), ',')
        ),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    type Seen = Arc<Mutex<Vec<(Sender<&'static str>, u64)>>>;
    type SeenBy<K> = Arc<Mutex<Vec<(Sender<K>, u64)>>>;

    fn flood(window: Duration) -> (Flood<&'static str>, Seen) {
        let seen: Seen = Arc::default();
        let sink = Arc::clone(&seen);
        let flood = Flood::new(window, move |sender: &Sender<&'static str>, count| {
            sink.lock().unwrap().push((sender.clone(), count));
        });
        (flood, seen)
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_of_a_window_is_recorded_and_the_rest_summed_up() {
        let (flood, seen) = flood(Duration::from_secs(10));
        assert_eq!(flood.event("a"), Tally::Record);
        for _ in 0..299 {
            assert_eq!(flood.event("a"), Tally::Counted);
        }
        assert_eq!(
            flood.event("b"),
            Tally::Record,
            "another sender has its own"
        );
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert_eq!(*seen.lock().unwrap(), vec![(Sender::One("a"), 299)]);
        assert_eq!(flood.event("a"), Tally::Record, "a new window");
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert_eq!(
            seen.lock().unwrap().len(),
            1,
            "a window of one says nothing more"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn senders_past_the_bound_share_one_window() {
        let seen: SeenBy<usize> = Arc::default();
        let sink = Arc::clone(&seen);
        let flood = Flood::new(
            Duration::from_secs(10),
            move |sender: &Sender<usize>, count| {
                sink.lock().unwrap().push((sender.clone(), count));
            },
        );
        for sender in 0..MAX_SENDERS {
            assert_eq!(flood.event(sender), Tally::Record);
        }
        for sender in MAX_SENDERS..MAX_SENDERS + 50 {
            assert_eq!(flood.event(sender), Tally::Counted);
        }
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert_eq!(*seen.lock().unwrap(), vec![(Sender::Others, 50)]);
    }

    #[test]
    fn outside_a_runtime_everything_is_recorded() {
        let (flood, _) = flood(Duration::from_secs(10));
        assert_eq!(flood.event("a"), Tally::Record);
        assert_eq!(flood.event("a"), Tally::Record);
    }

    #[test]
    fn long_texts_are_capped_with_their_length() {
        assert_eq!(capped("home/door/1", 20), "home/door/1");
        let topic = format!("home/{}", "a".repeat(59_995));
        assert_eq!(capped(&topic, 8), "home/aaa… (60,000 chars)");
        assert_eq!(capped("ééééé", 2), "éé… (5 chars)");
    }
}
