//! Frame snapshots.
