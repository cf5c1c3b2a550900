//! What the crate's tests share.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Everything written, shared with the console under test.
#[derive(Clone, Default)]
pub(crate) struct Screen(Arc<Mutex<Vec<u8>>>);

impl Screen {
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for Screen {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
