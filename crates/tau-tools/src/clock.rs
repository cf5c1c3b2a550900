//! `clock`: the current date and time in the configured zone.

use std::sync::Arc;

use async_trait::async_trait;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ZonedDateTime};
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::TauToolSpec;
use tau_protocol::Tier;

use crate::args;
use crate::config::{ClockConfig, ToolsConfigError};

/// Where "now" comes from: the configured zone and a clock tests can fix.
#[derive(Clone)]
pub(crate) struct TimeSource {
    zone: TimeZone,
    now: Arc<dyn Fn() -> Timestamp + Send + Sync>,
}

impl TimeSource {
    /// The system clock in the configured zone, or the system's own zone when none is set.
    pub(crate) fn from_config(config: &ClockConfig) -> Result<Self, ToolsConfigError> {
        let zone = match &config.zone {
            Some(name) => TimeZone::get(name)
                .map_err(|_| ToolsConfigError::UnknownZone { zone: name.clone() })?,
            None => TimeZone::system(),
        };
        Ok(Self {
            zone,
            now: Arc::new(Timestamp::now),
        })
    }

    #[cfg(test)]
    pub(crate) fn fixed(zone: &str, rfc3339: &str) -> Self {
        let at: Timestamp = rfc3339.parse().unwrap();
        Self {
            zone: TimeZone::get(zone).unwrap(),
            now: Arc::new(move || at),
        }
    }

    pub(crate) fn now(&self) -> ZonedDateTime {
        (self.now)().to_zoned_datetime(self.zone.clone())
    }

    /// The zone's IANA name; a zone from a POSIX `TZ` string has none.
    fn zone_name(&self) -> &str {
        self.zone.iana_name().unwrap_or("local")
    }
}

/// `2026-05-01T14:03:07+03:00`: whole seconds, numeric offset.
pub(crate) fn rfc3339(at: &ZonedDateTime) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

pub(crate) struct Clock {
    spec: ToolSpec,
    time: TimeSource,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClockArgs {}

impl Clock {
    pub(crate) fn new(time: TimeSource) -> Self {
        let spec = TauToolSpec::new(
            "clock",
            "Tells the current date, time and time zone of the person's home.",
            Tier::Read,
            "reads the current date and time",
        )
        .provenance(tau_core::provenance::ProvenanceRule::TRUSTED_LOCAL)
        .input_schema(json!({
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": false,
        }))
        .build();
        Self { spec, time }
    }
}

#[async_trait]
impl Tool for Clock {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let ClockArgs {} = args::parse("clock", input)?;
        let now = self.time.now();
        let zone = self.time.zone_name();
        let offset = now.strftime("%:z").to_string();
        Ok(ToolOutput::json(json!({
            "date": now.strftime("%Y-%m-%d").to_string(),
            "time": now.strftime("%H:%M:%S").to_string(),
            "zone": zone,
            "utc_offset": offset,
            "rfc3339": rfc3339(&now),
            "human": format!("{} ({zone}, UTC{offset})", now.strftime("%A, %-d %B %Y, %H:%M")),
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn context() -> ToolContext {
        ToolContext::new("t1", "clock", None)
    }

    #[tokio::test]
    async fn tells_local_time_with_its_offset() {
        let clock = Clock::new(TimeSource::fixed(
            "Europe/Istanbul",
            "2026-05-01T11:03:07.9Z",
        ));
        let output = clock.run(json!({}), context()).await.unwrap();
        assert_eq!(
            output,
            ToolOutput::json(json!({
                "date": "2026-05-01",
                "time": "14:03:07",
                "zone": "Europe/Istanbul",
                "utc_offset": "+03:00",
                "rfc3339": "2026-05-01T14:03:07+03:00",
                "human": "Friday, 1 May 2026, 14:03 (Europe/Istanbul, UTC+03:00)",
            }))
        );
    }

    #[tokio::test]
    async fn date_follows_the_zone_across_midnight() {
        let clock = Clock::new(TimeSource::fixed(
            "America/New_York",
            "2026-01-01T03:30:00Z",
        ));
        let output = clock.run(Value::Null, context()).await.unwrap();
        assert_eq!(
            output,
            ToolOutput::json(json!({
                "date": "2025-12-31",
                "time": "22:30:00",
                "zone": "America/New_York",
                "utc_offset": "-05:00",
                "rfc3339": "2025-12-31T22:30:00-05:00",
                "human": "Wednesday, 31 December 2025, 22:30 (America/New_York, UTC-05:00)",
            }))
        );
    }

    #[tokio::test]
    async fn arguments_are_refused() {
        let clock = Clock::new(TimeSource::fixed("UTC", "2026-05-01T00:00:00Z"));
        let error = clock
            .run(json!({"zone": "UTC"}), context())
            .await
            .unwrap_err();
        assert_eq!(
            error,
            ToolError::new(
                "invalid arguments for clock: unknown field `zone`, there are no fields"
            )
        );
    }

    #[test]
    fn an_unknown_zone_is_a_config_error() {
        let config = ClockConfig {
            zone: Some("Mars/Olympus".into()),
        };
        assert_eq!(
            TimeSource::from_config(&config).err(),
            Some(ToolsConfigError::UnknownZone {
                zone: "Mars/Olympus".into()
            })
        );
    }
}
