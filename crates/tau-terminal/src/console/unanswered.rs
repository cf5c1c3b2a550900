//! Lines typed to an open question that answer nothing: too soon, a yes no yes here
//! approves, a bare yes where a second step is asked. Each says so and asks again.

use tau_protocol::ApprovalId;

use super::{Console, escape_for_terminal, open_question_line, texts, write, write_question};

impl Console {
    /// A line came too soon to answer the open question: say so and, when the question is
    /// on screen, ask again.
    pub fn too_soon(&self, line: &str) {
        let s = self.style;
        let mut state = self.lock();
        if !self.tty {
            write(&mut state, &format!("{}\n", escape_for_terminal(line)));
        }
        let mut text = format!(
            "  {}· {}{}\n",
            s.dim,
            texts(self.language).too_soon,
            s.reset
        );
        if state.question_open {
            text.push_str(&open_question_line(self.language, &state));
        }
        write_question(&mut state, &text);
    }

    /// A yes (or the second step's answer) to a question no yes typed here approves:
    /// nothing was approved, for reason `why`. Say so, ask again, and start the question's
    /// guard anew.
    pub(crate) fn yes_refused(&self, line: &str, approval_id: &ApprovalId, why: &str) {
        let s = self.style;
        let mut state = self.lock();
        if !self.tty {
            write(&mut state, &format!("{}\n", escape_for_terminal(line)));
        }
        let text = format!(
            "  {}! {}{}\n{}",
            s.yellow,
            escape_for_terminal(why),
            s.reset,
            open_question_line(self.language, &state)
        );
        write_question(&mut state, &text);
        state.question_open = true;
        if let Some(questions) = &state.questions {
            questions.drawn(approval_id);
        }
    }

    /// A bare yes to a question with a second step: it is not an answer. Say so, ask for
    /// the step again, and start the question's guard anew.
    pub fn step_needed(&self, line: &str, approval_id: &ApprovalId) {
        let s = self.style;
        let mut state = self.lock();
        if !self.tty {
            write(&mut state, &format!("{}\n", escape_for_terminal(line)));
        }
        let text = format!(
            "  {}· {}{}\n{}",
            s.yellow,
            texts(self.language).bare_yes,
            s.reset,
            open_question_line(self.language, &state)
        );
        write_question(&mut state, &text);
        state.question_open = true;
        if let Some(questions) = &state.questions {
            questions.drawn(approval_id);
        }
    }
}
