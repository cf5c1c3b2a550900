//! Triggers: what makes a routine run. Time triggers (`every`, `cron`, `at`) say when they
//! fire next; event triggers (`mqtt`, `webhook`) say whether an event is theirs.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use croner::Cron;
use croner::errors::CronError;
use croner::time::{CivilDate, CivilDateTime, CivilTime, CronDateTime, Resolution, Weekday};
use jiff::tz::{AmbiguousOffset, TimeZone};
use jiff::{SignedDuration, Timestamp, ZonedDateTime};

/// The shortest and longest `every`.
pub(crate) const MIN_EVERY: Duration = Duration::from_secs(1);
pub(crate) const MAX_EVERY: Duration = Duration::from_secs(366 * 86_400);
/// A webhook secret shorter than this is too easy to guess.
pub(crate) const MIN_SECRET_CHARS: usize = 16;

/// A secret read from the environment; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub(crate) fn new(text: String) -> Self {
        Self(text)
    }

    /// Compares in time independent of where the texts differ. An empty secret (one that
    /// was never read) matches nothing.
    pub(crate) fn matches(&self, offered: &str) -> bool {
        if self.0.is_empty() {
            return false;
        }
        let (a, b) = (self.0.as_bytes(), offered.as_bytes());
        let mut diff = u8::from(a.len() != b.len());
        for (i, byte) in a.iter().enumerate() {
            diff |= byte ^ b.get(i).copied().unwrap_or(0);
        }
        diff == 0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// What makes a routine run.
#[derive(Debug, Clone)]
pub enum Trigger {
    /// Every so long, counted from when the routine was set up.
    Every { text: String, period: Duration },
    /// A cron pattern in the routine zone.
    Cron { text: String, cron: Box<Cron> },
    /// Once.
    At { text: String, at: Timestamp },
    /// A message on a topic matching `filter` (with `payload`, only that exact payload).
    Mqtt {
        filter: String,
        payload: Option<String>,
    },
    /// `POST /hooks/NAME` with the secret as a bearer token.
    Webhook {
        secret: Secret,
        payload: Option<String>,
    },
}

impl Trigger {
    /// The trigger in words, as runs and the audit log name it.
    pub fn describe(&self) -> String {
        match self {
            Self::Every { text, .. } => format!("every {text}"),
            Self::Cron { text, .. } => format!("cron {text}"),
            Self::At { text, .. } => format!("at {text}"),
            Self::Mqtt { filter, .. } => format!("mqtt {filter}"),
            Self::Webhook { .. } => "webhook".to_owned(),
        }
    }

    pub fn is_timed(&self) -> bool {
        match self {
            Self::Every { .. } | Self::Cron { .. } | Self::At { .. } => true,
            Self::Mqtt { .. } | Self::Webhook { .. } => false,
        }
    }
}

/// Parses `every`: one or more `<number><unit>` with units `s`, `m`, `h`, `d`
/// (`"90s"`, `"10m"`, `"1h30m"`, `"2d"`).
pub(crate) fn parse_every(text: &str) -> Result<Duration, String> {
    let explain =
        || format!("'{text}' is not a period; write it like \"30s\", \"10m\", \"1h30m\" or \"2d\"");
    let mut seconds: u64 = 0;
    let mut digits = String::new();
    let mut parts = 0;
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(explain()),
        };
        let number: u64 = digits.parse().map_err(|_| explain())?;
        seconds = number
            .checked_mul(unit)
            .and_then(|s| seconds.checked_add(s))
            .ok_or_else(explain)?;
        digits.clear();
        parts += 1;
    }
    if parts == 0 || !digits.is_empty() {
        return Err(explain());
    }
    let period = Duration::from_secs(seconds);
    if !(MIN_EVERY..=MAX_EVERY).contains(&period) {
        return Err(format!("'{text}' must be from 1s to 366d"));
    }
    Ok(period)
}

/// Parses a cron pattern (5 fields, or 6 with seconds first) and checks it fires at all.
pub(crate) fn parse_cron(text: &str, zone: &TimeZone, now: Timestamp) -> Result<Cron, String> {
    let cron = Cron::from_str(text).map_err(|e| format!("'{text}' is not a cron pattern: {e}"))?;
    match next_cron(&cron, zone, now) {
        Some(_) => Ok(cron),
        None => Err(format!("'{text}' never fires")),
    }
}

/// Parses `at`: a local date and time in the routine zone (`2026-12-24T18:00`), or an
/// instant with its offset (`2026-12-24T18:00:00+03:00`, `...Z`).
pub(crate) fn parse_at(text: &str, zone: &TimeZone) -> Result<Timestamp, String> {
    if let Ok(instant) = text.parse::<Timestamp>() {
        return Ok(instant);
    }
    let civil: jiff::civil::DateTime = text.parse().map_err(|_| {
        format!("'{text}' is not a date and time; write it like \"2026-12-24T18:00\"")
    })?;
    zone.to_ambiguous_zoned_datetime(civil)
        .compatible()
        .map(|zoned| zoned.timestamp())
        .map_err(|e| format!("'{text}' cannot be placed in the routine zone: {e}"))
}

/// The first time `cron` fires strictly after `after`, in `zone`.
pub(crate) fn next_cron(cron: &Cron, zone: &TimeZone, after: Timestamp) -> Option<Timestamp> {
    let start = CronZoned(after.to_zoned_datetime(zone.clone()));
    cron.find_next_occurrence(&start, false)
        .ok()
        .map(|next| next.0.timestamp())
}

/// An MQTT topic filter as subscriptions allow it: `+` a whole level, `#` the whole last
/// level, nothing empty.
pub(crate) fn check_filter(filter: &str) -> Result<(), String> {
    if filter.is_empty() {
        return Err("is empty; name a topic like \"home/door/+\"".to_owned());
    }
    if filter.len() > 65_535 || filter.contains('\0') {
        return Err("is not a topic filter MQTT allows".to_owned());
    }
    let levels: Vec<&str> = filter.split('/').collect();
    for (index, level) in levels.iter().enumerate() {
        let misplaced_hash = level.contains('#') && (*level != "#" || index + 1 != levels.len());
        let misplaced_plus = level.contains('+') && *level != "+";
        if misplaced_hash || misplaced_plus {
            return Err(format!(
                "'{filter}' is not a topic filter: '+' stands for one whole level and '#' only for the whole last one"
            ));
        }
    }
    Ok(())
}

/// Whether `topic` matches the subscription `filter` (`+` one level, `#` the rest). A
/// filter starting with a wildcard does not match topics starting with `$`.
pub(crate) fn filter_matches(filter: &str, topic: &str) -> bool {
    if topic.starts_with('$') && filter.starts_with(['+', '#']) {
        return false;
    }
    let mut wanted = filter.split('/');
    let mut levels = topic.split('/');
    loop {
        match (wanted.next(), levels.next()) {
            (Some("#"), _) | (None, None) => return true,
            (Some("+"), Some(_)) => {}
            (Some(w), Some(l)) if w == l => {}
            _ => return false,
        }
    }
}

/// jiff's `Zoned` as croner searches it (croner's own jiff support is for an older jiff).
#[derive(Clone)]
struct CronZoned(ZonedDateTime);

impl CronDateTime for CronZoned {
    fn to_civil(&self) -> CivilDateTime {
        let d = self.0.datetime();
        CivilDateTime::new(
            CivilDate::from_parts_unchecked(
                i32::from(d.year()),
                d.month().unsigned_abs().into(),
                d.day().unsigned_abs().into(),
            ),
            CivilTime::from_parts_unchecked(
                d.hour().unsigned_abs().into(),
                d.minute().unsigned_abs().into(),
                d.second().unsigned_abs().into(),
            ),
        )
    }

    fn civil_weekday(&self) -> Weekday {
        Weekday::from_days_from_sunday(
            self.0
                .weekday()
                .to_sunday_zero_offset()
                .unsigned_abs()
                .into(),
        )
    }

    fn resolve_civil(&self, civil: CivilDateTime) -> Result<Resolution<Self>, CronError> {
        let part = |n: u32| i8::try_from(n).map_err(|_| CronError::InvalidDate);
        let year = i16::try_from(civil.year()).map_err(|_| CronError::InvalidDate)?;
        let datetime = jiff::civil::DateTime::new(
            year,
            part(civil.month())?,
            part(civil.day())?,
            part(civil.hour())?,
            part(civil.minute())?,
            part(civil.second())?,
            0,
        )
        .map_err(|_| CronError::InvalidDate)?;
        let ambiguous = self.0.time_zone().to_ambiguous_zoned_datetime(datetime);
        Ok(match ambiguous.offset() {
            AmbiguousOffset::Unambiguous { .. } => Resolution::Single(CronZoned(
                ambiguous
                    .unambiguous()
                    .map_err(|_| CronError::InvalidTime)?,
            )),
            AmbiguousOffset::Fold { .. } => {
                let earlier = ambiguous
                    .clone()
                    .earlier()
                    .map_err(|_| CronError::InvalidTime)?;
                let later = ambiguous.later().map_err(|_| CronError::InvalidTime)?;
                Resolution::Ambiguous(CronZoned(earlier), CronZoned(later))
            }
            AmbiguousOffset::Gap { .. } => Resolution::Gap,
        })
    }

    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        self.0
            .checked_add(SignedDuration::from_secs(seconds))
            .ok()
            .map(CronZoned)
    }

    fn cmp_instant(&self, other: &Self) -> Ordering {
        self.0.timestamp().cmp(&other.0.timestamp())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn periods_read_in_compact_units() {
        assert_eq!(parse_every("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_every("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_every("2d"), Ok(Duration::from_secs(172_800)));
        assert_eq!(parse_every("45s"), Ok(Duration::from_secs(45)));
        for bad in ["", "10", "m", "10 m", "ten minutes", "1.5h", "-1m", "10x"] {
            assert_eq!(
                parse_every(bad),
                Err(format!(
                    "'{bad}' is not a period; write it like \"30s\", \"10m\", \"1h30m\" or \"2d\""
                ))
            );
        }
        assert_eq!(
            parse_every("0s"),
            Err("'0s' must be from 1s to 366d".into())
        );
        assert_eq!(
            parse_every("400d"),
            Err("'400d' must be from 1s to 366d".into())
        );
        assert!(parse_every("99999999999999999999d").is_err());
    }

    #[test]
    fn cron_fires_in_the_routine_zone_across_daylight_saving() {
        let zone = TimeZone::get("Europe/Berlin").unwrap();
        let cron = parse_cron("0 7 * * *", &zone, at("2026-03-28T12:00:00Z")).unwrap();
        // 07:00 in Berlin is 06:00Z in winter and 05:00Z after the clocks went forward.
        assert_eq!(
            next_cron(&cron, &zone, at("2026-03-28T12:00:00Z")),
            Some(at("2026-03-29T05:00:00Z"))
        );
        assert_eq!(
            next_cron(&cron, &zone, at("2026-03-27T12:00:00Z")),
            Some(at("2026-03-28T06:00:00Z"))
        );
        // 02:30 does not exist on the night the clocks go forward: it fires when the
        // clocks jump, at 03:00 (01:00Z), not a day late.
        let gap = parse_cron("30 2 * * *", &zone, at("2026-03-28T12:00:00Z")).unwrap();
        assert_eq!(
            next_cron(&gap, &zone, at("2026-03-28T12:00:00Z")),
            Some(at("2026-03-29T01:00:00Z"))
        );
    }

    #[test]
    fn bad_and_unreachable_cron_patterns_are_refused() {
        let zone = TimeZone::UTC;
        let now = at("2026-01-01T00:00:00Z");
        assert!(
            parse_cron("61 * * * *", &zone, now)
                .unwrap_err()
                .starts_with("'61 * * * *' is not a cron pattern: ")
        );
        assert!(parse_cron("every morning", &zone, now).is_err());
        assert_eq!(
            parse_cron("0 0 30 2 *", &zone, now).unwrap_err(),
            "'0 0 30 2 *' never fires"
        );
    }

    #[test]
    fn at_reads_local_times_in_the_zone_and_instants_with_offsets() {
        let zone = TimeZone::get("Europe/Istanbul").unwrap();
        assert_eq!(
            parse_at("2026-12-24T18:00", &zone),
            Ok(at("2026-12-24T15:00:00Z"))
        );
        assert_eq!(
            parse_at("2026-12-24T18:00:00+01:00", &zone),
            Ok(at("2026-12-24T17:00:00Z"))
        );
        assert_eq!(
            parse_at("Christmas", &zone),
            Err("'Christmas' is not a date and time; write it like \"2026-12-24T18:00\"".into())
        );
    }

    #[test]
    fn topic_filters_match_like_a_broker() {
        for filter in ["home/door/+", "home/#", "#", "+/+", "home/door/front"] {
            assert_eq!(check_filter(filter), Ok(()), "{filter}");
        }
        for bad in ["", "home/#/x", "home/do+r", "home/x#"] {
            assert!(check_filter(bad).is_err(), "{bad}");
        }
        let cases = [
            ("home/door/+", "home/door/front", true),
            ("home/door/+", "home/door/front/open", false),
            ("home/door/+", "home/door", false),
            ("home/#", "home/door/front", true),
            ("home/#", "home", true),
            ("#", "$SYS/uptime", false),
            ("+/x", "$SYS/x", false),
            ("$SYS/#", "$SYS/uptime", true),
            ("home/door/front", "home/door/front", true),
            ("home/door/front", "home/door/back", false),
        ];
        for (filter, topic, expected) in cases {
            assert_eq!(filter_matches(filter, topic), expected, "{filter} {topic}");
        }
    }

    #[test]
    fn secrets_compare_whole_and_never_print() {
        let secret = Secret::new("correct horse battery".into());
        assert!(secret.matches("correct horse battery"));
        assert!(!secret.matches("correct horse batter"));
        assert!(!secret.matches("correct horse battery!"));
        assert!(!secret.matches(""));
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert!(
            !Secret::new(String::new()).matches(""),
            "an unread secret matches nothing"
        );
    }
}
