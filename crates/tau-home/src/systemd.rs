//! `tau serve` under systemd (`Type=notify`, see `tau service unit`): the notify protocol
//! on `$NOTIFY_SOCKET`, and the watchdog. Outside systemd (no `NOTIFY_SOCKET`) nothing here
//! sends anything.
//!
//! What systemd hears: a `STATUS=` line at each step of the start, `READY=1` once TauBar
//! listens and the channels are handed to the hub, `WATCHDOG=1` at half of
//! `WATCHDOG_USEC` from a task that first asks the hub whether it still serves
//! (the hub's health, handed in): a hub that answers no, or does not answer at all, is not vouched
//! for, and systemd restarts it when the watchdog's time runs out. `STOPPING=1` as soon as
//! SIGTERM (or Ctrl-C) arrives.

use std::time::Duration;

use sd_notify::NotifyState;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use crate::home::Env;

/// What the hub says when the watchdog asks whether it still serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Serving,
    /// It is shutting down: `STOPPING=1` said so already.
    Stopping,
    /// It does not serve, and why.
    NotServing(String),
}

/// Tells systemd how `tau serve` is doing; does nothing outside systemd.
#[derive(Debug, Clone, Copy)]
pub struct Notifier {
    on: bool,
}

impl Notifier {
    /// On when systemd gave a socket to notify (`NOTIFY_SOCKET`).
    pub fn from_env(env: Env<'_>) -> Self {
        Self {
            on: env("NOTIFY_SOCKET").is_some_and(|socket| !socket.is_empty()),
        }
    }

    fn send(self, states: &[NotifyState<'_>]) {
        if !self.on {
            return;
        }
        if let Err(error) = sd_notify::notify(states) {
            tracing::warn!(%error, "cannot notify systemd");
        }
    }

    /// A line `systemctl status` shows.
    pub fn status(self, text: &str) {
        self.send(&[NotifyState::Status(text)]);
    }

    /// The start is done: the hub serves.
    pub fn ready(self, status: &str) {
        self.send(&[NotifyState::Ready, NotifyState::Status(status)]);
    }

    /// The hub is stopping (SIGTERM or Ctrl-C arrived).
    pub fn stopping(self) {
        self.send(&[
            NotifyState::Stopping,
            NotifyState::Status("stopping: running turns are cancelled, waiting questions stay"),
        ]);
    }

    fn alive(self) {
        self.send(&[NotifyState::Watchdog]);
    }
}

/// How often the watchdog is fed: half of `WATCHDOG_USEC`, as sd_watchdog_enabled(3)
/// advises. `None` when systemd asked for no watchdog, or asked it of another process
/// (`WATCHDOG_PID` names a pid that is not `pid`).
pub fn watchdog_interval(env: Env<'_>, pid: u32) -> Option<Duration> {
    let usec: u64 = env("WATCHDOG_USEC")?
        .trim()
        .parse()
        .ok()
        .filter(|usec| *usec > 0)?;
    if let Some(owner) = env("WATCHDOG_PID")
        && owner.trim().parse::<u32>().ok() != Some(pid)
    {
        return None;
    }
    Some(Duration::from_micros(usec / 2))
}

/// Feeds the watchdog every `interval` while the hub serves, until `stop`. Each time it
/// first asks `health`: a hub that does not serve is not vouched for (the reason
/// goes to the log and to `systemctl status`), and one that hangs keeps this task from
/// saying anything. Either way systemd restarts tau when the watchdog's time runs out.
pub fn start_watchdog(
    notifier: Notifier,
    interval: Duration,
    health: impl Fn() -> Health + Send + 'static,
    stop: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            match health() {
                Health::Serving => {
                    notifier.alive();
                    if failing {
                        failing = false;
                        notifier.status("serving again");
                        tracing::info!("the hub serves again; systemd's watchdog is fed");
                    }
                }
                // Shutting down: `STOPPING=1` said it already.
                Health::Stopping => return,
                Health::NotServing(why) => {
                    failing = true;
                    tracing::warn!(%why, "the hub does not serve; systemd's watchdog is not fed");
                    notifier.status(&format!("not serving: {why}"));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env::env;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_watchdog_is_fed_at_half_its_time_and_only_by_the_process_it_names() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<Duration>);
        let cases: Vec<Case<'_>> = vec![
            (&[], None),
            (
                &[("WATCHDOG_USEC", "30000000")],
                Some(Duration::from_secs(15)),
            ),
            (
                &[("WATCHDOG_USEC", "30000000"), ("WATCHDOG_PID", "42")],
                Some(Duration::from_secs(15)),
            ),
            (
                &[("WATCHDOG_USEC", "30000000"), ("WATCHDOG_PID", "43")],
                None,
            ),
            (&[("WATCHDOG_USEC", "0")], None),
            (&[("WATCHDOG_USEC", "soon")], None),
        ];
        for (vars, expected) in cases {
            assert_eq!(watchdog_interval(&env(vars), 42), expected, "{vars:?}");
        }
    }

    #[test]
    fn outside_systemd_the_notifier_is_off() {
        assert!(!Notifier::from_env(&env(&[])).on);
        assert!(!Notifier::from_env(&env(&[("NOTIFY_SOCKET", "")])).on);
        assert!(Notifier::from_env(&env(&[("NOTIFY_SOCKET", "/run/x")])).on);
    }
}
