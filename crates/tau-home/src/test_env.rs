//! A process environment for unit tests: exactly the variables given, nothing of the
//! test runner's own.

use std::collections::HashMap;

/// A lookup that knows only `pairs`, as the functions that read the environment take it.
pub(crate) fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k| map.get(k).cloned()
}
