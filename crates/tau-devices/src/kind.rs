//! Kinds of devices and the actions each kind has. The kind decides which actions a device
//! may be given, which of them take a number, and whether it is lock-class: a device that
//! opens, unlocks or heats something, whose approval can ask for a second, deliberate step.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a device is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    Light,
    Switch,
    Plug,
    Fan,
    Lock,
    Cover,
    Garage,
    Valve,
    Climate,
    Heater,
    Sensor,
}

impl DeviceKind {
    pub const ALL: [Self; 11] = [
        Self::Light,
        Self::Switch,
        Self::Plug,
        Self::Fan,
        Self::Lock,
        Self::Cover,
        Self::Garage,
        Self::Valve,
        Self::Climate,
        Self::Heater,
        Self::Sensor,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Light => "light",
            Self::Switch => "switch",
            Self::Plug => "plug",
            Self::Fan => "fan",
            Self::Lock => "lock",
            Self::Cover => "cover",
            Self::Garage => "garage",
            Self::Valve => "valve",
            Self::Climate => "climate",
            Self::Heater => "heater",
            Self::Sensor => "sensor",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// The actions a device of this kind may have.
    pub fn actions(self) -> &'static [ActionName] {
        use ActionName::{
            Brightness, Close, Lock, Off, On, Open, Position, Set, Speed, Stop, Unlock,
        };
        match self {
            Self::Light => &[On, Off, Brightness],
            Self::Switch | Self::Plug => &[On, Off],
            Self::Fan => &[On, Off, Speed],
            Self::Lock => &[Lock, Unlock, Open],
            Self::Cover => &[Open, Close, Stop, Position],
            Self::Garage => &[Open, Close, Stop],
            Self::Valve => &[Open, Close, Position],
            Self::Climate | Self::Heater => &[On, Off, Set],
            Self::Sensor => &[],
        }
    }

    /// Locks, garage doors, covers and heaters: what they do lets someone in or can start a
    /// fire, so their approval can ask for a second step (`[approval] confirm_high_risk`).
    pub fn lock_class(self) -> bool {
        matches!(self, Self::Lock | Self::Garage | Self::Cover | Self::Heater)
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing a device can be told to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ActionName {
    On,
    Off,
    Lock,
    Unlock,
    Open,
    Close,
    Stop,
    /// A number: a temperature, a level.
    Set,
    Brightness,
    Position,
    Speed,
}

impl ActionName {
    pub const ALL: [Self; 11] = [
        Self::On,
        Self::Off,
        Self::Lock,
        Self::Unlock,
        Self::Open,
        Self::Close,
        Self::Stop,
        Self::Set,
        Self::Brightness,
        Self::Position,
        Self::Speed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
            Self::Lock => "lock",
            Self::Unlock => "unlock",
            Self::Open => "open",
            Self::Close => "close",
            Self::Stop => "stop",
            Self::Set => "set",
            Self::Brightness => "brightness",
            Self::Position => "position",
            Self::Speed => "speed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|action| action.as_str() == text)
    }

    /// True for the actions that take a number (`value`).
    pub fn takes_value(self) -> bool {
        matches!(
            self,
            Self::Set | Self::Brightness | Self::Position | Self::Speed
        )
    }

    /// The verb that opens a card's headline: `switch ON`, `OPEN`, `set`.
    pub fn verb(self) -> &'static str {
        match self {
            Self::On => "switch ON",
            Self::Off => "switch OFF",
            Self::Lock => "LOCK",
            Self::Unlock => "UNLOCK",
            Self::Open => "OPEN",
            Self::Close => "CLOSE",
            Self::Stop => "STOP",
            Self::Set => "set",
            Self::Brightness => "set brightness",
            Self::Position => "set position",
            Self::Speed => "set speed",
        }
    }
}

impl fmt::Display for ActionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn names_round_trip() {
        for kind in DeviceKind::ALL {
            assert_eq!(DeviceKind::parse(kind.as_str()), Some(kind));
        }
        for action in ActionName::ALL {
            assert_eq!(ActionName::parse(action.as_str()), Some(action));
        }
        assert_eq!(DeviceKind::parse("Light"), None);
        assert_eq!(ActionName::parse("ON"), None);
    }

    #[test]
    fn lock_class_kinds_are_locks_garages_covers_and_heaters() {
        let lock_class: Vec<_> = DeviceKind::ALL
            .into_iter()
            .filter(|kind| kind.lock_class())
            .map(DeviceKind::as_str)
            .collect();
        assert_eq!(lock_class, ["lock", "cover", "garage", "heater"]);
    }

    #[test]
    fn every_kind_lists_its_actions() {
        let table: Vec<String> = DeviceKind::ALL
            .into_iter()
            .map(|kind| {
                let actions: Vec<_> = kind.actions().iter().map(|a| a.as_str()).collect();
                if actions.is_empty() {
                    format!("{kind}: (no actions; read only)")
                } else {
                    format!("{kind}: {}", actions.join(", "))
                }
            })
            .collect();
        insta::assert_snapshot!(table.join("\n"));
    }
}
