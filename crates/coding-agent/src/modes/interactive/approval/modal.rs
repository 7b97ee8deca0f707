//! One approval prompt: the choices it offers, keys to an answer, and its
//! lines. Terminal-free, so the keys' effects are unit tests.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::super::wrap::{spell_out_hidden, text_width};
use super::{ApprovalAnswer, ApprovalRequest, RuleScope};
use crate::render::{RenderOptions, ToolRenderers};
use crate::render::{Style, StyledLine};

/// One line of the prompt's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Run this call.
    AllowOnce,
    /// Run it; the suggested rule allows the same again this session.
    AllowSession,
    /// Run it; the suggested rule is written to the project's settings.
    AllowProject,
    /// Run it; the suggested rule is written to the global settings.
    AllowEverywhere,
    /// Refuse it, with a reason typed next.
    Deny,
}

/// A prompt below the transcript asking whether one call may run.
#[derive(Debug, Clone)]
pub struct ApprovalModal {
    request: ApprovalRequest,
    choices: Vec<Choice>,
    selected: usize,
    /// The reason being typed, once "Deny" was chosen.
    reason: Option<String>,
}

impl ApprovalModal {
    /// The prompt for `request`: the rule choices only when the policy
    /// suggested a rule (a call no rule can name is allowed once or denied).
    pub fn new(request: ApprovalRequest) -> Self {
        let choices = if !request.suggested_rules.is_empty() {
            let project = request.project_rules.then_some(Choice::AllowProject);
            [Choice::AllowOnce, Choice::AllowSession]
                .into_iter()
                .chain(project)
                .chain([Choice::AllowEverywhere, Choice::Deny])
                .collect()
        } else {
            vec![Choice::AllowOnce, Choice::Deny]
        };
        ApprovalModal {
            request,
            choices,
            selected: 0,
            reason: None,
        }
    }

    /// The call asked about.
    pub fn request(&self) -> &ApprovalRequest {
        &self.request
    }

    /// The choices offered, in order (number `i + 1` picks `choices()[i]`).
    pub fn choices(&self) -> &[Choice] {
        &self.choices
    }

    /// True while the deny reason is being typed.
    pub fn is_typing_reason(&self) -> bool {
        self.reason.is_some()
    }

    /// True when `key` picks a choice (Enter, or the number of one).
    pub fn answers(&self, key: KeyEvent) -> bool {
        match key.code {
            KeyCode::Enter => true,
            KeyCode::Char(c) => c
                .to_digit(10)
                .is_some_and(|n| n >= 1 && n as usize <= self.choices.len()),
            _ => false,
        }
    }

    /// A key press; `Some` once the user has answered. Up/Down move, Enter
    /// or a number picks, Esc denies at once (also while typing a reason,
    /// which is then dropped); "Deny" opens a one-line reason, sent with
    /// Enter (empty: no reason).
    pub fn handle_key(&mut self, key: KeyEvent) -> Option<ApprovalAnswer> {
        if key.code == KeyCode::Esc {
            return Some(ApprovalAnswer::Deny { reason: None });
        }
        if let Some(reason) = &mut self.reason {
            match key.code {
                KeyCode::Enter => {
                    let reason = reason.trim();
                    return Some(ApprovalAnswer::Deny {
                        reason: (!reason.is_empty()).then(|| reason.to_owned()),
                    });
                }
                KeyCode::Backspace => {
                    reason.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    reason.push(c);
                }
                _ => {}
            }
            return None;
        }
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(self.choices.len() - 1),
            KeyCode::Enter => return self.pick(self.selected),
            KeyCode::Char(c) => {
                let index = c.to_digit(10).and_then(|n| usize::try_from(n).ok());
                if let Some(index) = index.filter(|&n| n >= 1 && n <= self.choices.len()) {
                    self.selected = index - 1;
                    return self.pick(index - 1);
                }
            }
            _ => {}
        }
        None
    }

    /// Pasted text goes into the reason (on one line); elsewhere it is dropped.
    pub fn paste(&mut self, text: &str) {
        if let Some(reason) = &mut self.reason {
            reason.extend(text.chars().map(|c| if c.is_control() { ' ' } else { c }));
        }
    }

    fn pick(&mut self, index: usize) -> Option<ApprovalAnswer> {
        Some(match self.choices.get(index)? {
            Choice::AllowOnce => ApprovalAnswer::AllowOnce,
            Choice::AllowSession => ApprovalAnswer::AllowSession,
            Choice::AllowProject => ApprovalAnswer::AllowAlways {
                scope: RuleScope::Project,
            },
            Choice::AllowEverywhere => ApprovalAnswer::AllowAlways {
                scope: RuleScope::Global,
            },
            Choice::Deny => {
                self.reason = Some(String::new());
                return None;
            }
        })
    }

    /// What a choice says; `rules` is what "Allow for this session" says it
    /// adds: the rules themselves, or where they are listed.
    fn label(&self, choice: Choice, rules: &str) -> StyledLine {
        match choice {
            Choice::AllowOnce => StyledLine::new("Allow once", Style::Normal),
            Choice::AllowSession => StyledLine::new("Allow for this session: ", Style::Normal)
                .push(rules, Style::Accent),
            Choice::AllowProject => StyledLine::new("Always allow in this project", Style::Normal)
                .push(" (.coding-agent/settings.json)", Style::Dim),
            Choice::AllowEverywhere => StyledLine::new("Always allow everywhere", Style::Normal)
                .push(" (global settings)", Style::Dim),
            Choice::Deny => StyledLine::new("Deny…", Style::Normal),
        }
    }

    /// The prompt for `width` columns (lines not yet wrapped): the call as
    /// its renderer draws it, why the policy asks, then the choices or the
    /// reason being typed, then the keys.
    pub fn view(&self, renderers: &ToolRenderers, width: u16) -> ModalView {
        // Expanded: every line of the call, none cut at the width; what
        // does not fit is scrolled (`super::fit`), never left out.
        let whole = RenderOptions {
            expanded: true,
            width,
            ..RenderOptions::default()
        };
        let mut lines = renderers.call_lines(&self.request.tool_name, &self.request.args, whole);
        // The rules go on the choice's own row where they fit on it; else
        // they are listed under the call, one a row, and scrolled with it.
        // Joined on the choice, the six rules of six long `curl`s wrapped
        // to fourteen rows, pushed "Allow once" off a 24-row window and left
        // only a deny.
        let rules = &self.request.suggested_rules;
        let inline = rules.join(", ");
        let row = StyledLine::new(
            format!("› 2. Allow for this session: {inline}"),
            Style::Normal,
        );
        let fits = text_width(&spell_out_hidden(&row).plain()) <= usize::from(width);
        let session_label = if fits || rules.is_empty() {
            inline
        } else {
            lines.push(StyledLine::new(
                "Rules added by the choices to allow for longer:",
                Style::Bold,
            ));
            lines.extend(
                rules
                    .iter()
                    .map(|rule| StyledLine::new(format!("  {rule}"), Style::Accent)),
            );
            match rules.len() {
                1 => "the rule above".to_owned(),
                n => format!("the {n} rules above"),
            }
        };
        let call = lines.len();
        lines.push(StyledLine::new(self.request.reason.clone(), Style::Warning));
        lines.push(StyledLine::default());
        let answers_from = lines.len();
        let answers_to;
        let mut input = None;
        match &self.reason {
            None => {
                for (i, &choice) in self.choices.iter().enumerate() {
                    let (mark, style) = if i == self.selected {
                        ("› ", Style::Accent)
                    } else {
                        ("  ", Style::Normal)
                    };
                    let mut line = StyledLine::new(format!("{mark}{}. ", i + 1), style);
                    line.spans.extend(self.label(choice, &session_label).spans);
                    lines.push(line);
                }
                answers_to = lines.len();
                lines.push(StyledLine::new(
                    format!(
                        "↑↓ Enter or 1-{} to choose · Esc denies",
                        self.choices.len()
                    ),
                    Style::Dim,
                ));
            }
            Some(reason) => {
                lines.push(StyledLine::new(
                    "Deny: tell the model why (optional)",
                    Style::Bold,
                ));
                input = Some(lines.len());
                lines
                    .push(StyledLine::new("> ", Style::Accent).push(reason.clone(), Style::Normal));
                answers_to = lines.len();
                lines.push(StyledLine::new(
                    "Enter denies with this reason (empty: none) · Esc denies without one",
                    Style::Dim,
                ));
            }
        }
        ModalView {
            lines,
            input,
            call,
            answers: answers_from..answers_to,
        }
    }
}

/// The prompt as drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModalView {
    /// Its lines, not yet wrapped.
    pub lines: Vec<StyledLine>,
    /// The line the reason is typed on (the cursor goes at its end).
    pub input: Option<usize>,
    /// `lines[..call]` are the call (and the rules it would add, where they
    /// do not fit on their choice's row): what is scrolled, and must all
    /// have been shown before an allow is taken.
    pub call: usize,
    /// The lines answered with: the choices, or the reason being typed.
    /// The others (why the policy asks, the keys) may be left out where
    /// the screen is short.
    pub answers: std::ops::Range<usize>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(rule: Option<&str>) -> ApprovalRequest {
        ApprovalRequest {
            tool_call_id: "call_1".into(),
            tool_name: "bash".into(),
            args: json!({"command": "touch a.txt"}),
            reason: "touch may write files".into(),
            suggested_rules: rule.map(str::to_owned).into_iter().collect(),
            project_rules: true,
        }
    }

    fn press(modal: &mut ApprovalModal, codes: &[KeyCode]) -> Vec<Option<ApprovalAnswer>> {
        codes
            .iter()
            .map(|&code| modal.handle_key(KeyEvent::new(code, KeyModifiers::NONE)))
            .collect()
    }

    fn answer_after(codes: &[KeyCode]) -> Option<ApprovalAnswer> {
        let mut modal = ApprovalModal::new(request(Some("bash(touch a.txt)")));
        press(&mut modal, codes).pop().flatten()
    }

    #[test]
    fn arrows_and_enter_pick_each_choice_in_order() {
        use KeyCode::{Down, Enter, Up};
        assert_eq!(answer_after(&[Enter]), Some(ApprovalAnswer::AllowOnce));
        assert_eq!(
            answer_after(&[Down, Enter]),
            Some(ApprovalAnswer::AllowSession)
        );
        assert_eq!(
            answer_after(&[Down, Down, Enter]),
            Some(ApprovalAnswer::AllowAlways {
                scope: RuleScope::Project
            })
        );
        assert_eq!(
            answer_after(&[Down, Down, Down, Up, Down, Enter]),
            Some(ApprovalAnswer::AllowAlways {
                scope: RuleScope::Global
            })
        );
        // Up stops at the first choice, Down at the last (Deny, which asks
        // for a reason next).
        assert_eq!(
            answer_after(&[Up, Up, Enter]),
            Some(ApprovalAnswer::AllowOnce)
        );
        let mut modal = ApprovalModal::new(request(Some("bash(touch a.txt)")));
        assert!(press(&mut modal, &[Down; 9]).iter().all(Option::is_none));
        assert_eq!(press(&mut modal, &[Enter]), [None]);
        assert!(modal.is_typing_reason());
    }

    #[test]
    fn numbers_pick_at_once_and_out_of_range_numbers_do_nothing() {
        assert_eq!(
            answer_after(&[KeyCode::Char('2')]),
            Some(ApprovalAnswer::AllowSession)
        );
        assert_eq!(
            answer_after(&[KeyCode::Char('4')]),
            Some(ApprovalAnswer::AllowAlways {
                scope: RuleScope::Global
            })
        );
        let mut modal = ApprovalModal::new(request(Some("bash(touch a.txt)")));
        assert_eq!(
            press(
                &mut modal,
                &[KeyCode::Char('0'), KeyCode::Char('6'), KeyCode::Char('x')]
            ),
            [None, None, None]
        );
        assert!(!modal.is_typing_reason());
    }

    #[test]
    fn deny_takes_a_typed_reason_and_enter_sends_it() {
        let mut modal = ApprovalModal::new(request(Some("bash(touch a.txt)")));
        assert_eq!(press(&mut modal, &[KeyCode::Char('5')]), [None]);
        assert!(modal.is_typing_reason());
        let mut typed: Vec<KeyCode> = "use a temp dirx".chars().map(KeyCode::Char).collect();
        typed.push(KeyCode::Backspace);
        assert!(press(&mut modal, &typed).iter().all(Option::is_none));
        modal.paste("\nplease ");
        assert_eq!(
            press(&mut modal, &[KeyCode::Enter]),
            [Some(ApprovalAnswer::Deny {
                reason: Some("use a temp dir please".into())
            })]
        );
    }

    #[test]
    fn an_empty_reason_is_none_and_esc_denies_at_once_from_anywhere() {
        use KeyCode::{Char, Down, Enter, Esc};
        let deny = |reason: Option<&str>| {
            Some(ApprovalAnswer::Deny {
                reason: reason.map(str::to_owned),
            })
        };
        assert_eq!(
            answer_after(&[Down, Down, Down, Down, Enter, Char(' '), Enter]),
            deny(None)
        );
        assert_eq!(answer_after(&[Esc]), deny(None));
        assert_eq!(answer_after(&[Down, Esc]), deny(None));
        // Esc while typing drops the reason.
        assert_eq!(answer_after(&[Char('5'), Char('n'), Esc]), deny(None));
    }

    #[test]
    fn without_a_suggested_rule_only_once_and_deny_are_offered() {
        let mut modal = ApprovalModal::new(request(None));
        assert_eq!(modal.choices(), [Choice::AllowOnce, Choice::Deny]);
        assert_eq!(press(&mut modal, &[KeyCode::Char('3')]), [None]);
        assert_eq!(
            press(&mut modal, &[KeyCode::Down, KeyCode::Down, KeyCode::Enter]),
            [None, None, None]
        );
        assert!(modal.is_typing_reason());
    }

    /// An untrusted project's allow rules are ignored at the next start: a
    /// rule saved there would ask again, so it is not offered.
    #[test]
    fn in_an_untrusted_project_no_project_rule_is_offered() {
        let untrusted = ApprovalRequest {
            project_rules: false,
            ..request(Some("bash(touch a.txt)"))
        };
        let modal = ApprovalModal::new(untrusted);
        assert_eq!(
            modal.choices(),
            [
                Choice::AllowOnce,
                Choice::AllowSession,
                Choice::AllowEverywhere,
                Choice::Deny
            ]
        );
    }

    /// Rules too wide for their choice's row are listed under the call,
    /// and the choice points there; without rules nothing is listed.
    #[test]
    fn rules_too_wide_for_their_row_are_listed_under_the_call() {
        let renderers = ToolRenderers::builtin();
        let modal = ApprovalModal::new(request(Some("bash(touch a.txt)")));
        let view = modal.view(&renderers, 30);
        assert_eq!(
            crate::render::to_markup(&view.lines[..view.call]),
            "[bold]$[/] [accent]touch a.txt[/]\n\
             [bold]Rules added by the choices to allow for longer:[/]\n\
             [accent]  bash(touch a.txt)[/]"
        );
        assert_eq!(
            view.lines[view.answers.start + 1].plain(),
            "  2. Allow for this session: the rule above"
        );
        let view = ApprovalModal::new(request(None)).view(&renderers, 20);
        assert_eq!(view.call, 1);
    }

    #[test]
    fn the_prompt_shows_the_call_the_reason_and_the_choices() {
        let mut modal = ApprovalModal::new(request(Some("bash(touch a.txt)")));
        press(&mut modal, &[KeyCode::Down]);
        assert_eq!(
            crate::render::to_markup(&modal.view(&ToolRenderers::builtin(), 80).lines),
            "[bold]$[/] [accent]touch a.txt[/]\n\
             [warning]touch may write files[/]\n\
             \n\
             \u{20} 1. Allow once\n\
             [accent]› 2. [/]Allow for this session: [accent]bash(touch a.txt)[/]\n\
             \u{20} 3. Always allow in this project[dim] (.coding-agent/settings.json)[/]\n\
             \u{20} 4. Always allow everywhere[dim] (global settings)[/]\n\
             \u{20} 5. Deny…\n\
             [dim]↑↓ Enter or 1-5 to choose · Esc denies[/]"
        );
        assert_eq!(modal.view(&ToolRenderers::builtin(), 80).input, None);
        press(
            &mut modal,
            &[KeyCode::Char('5'), KeyCode::Char('n'), KeyCode::Char('o')],
        );
        let view = modal.view(&ToolRenderers::builtin(), 80);
        assert_eq!(
            crate::render::to_markup(&view.lines[3..]),
            "[bold]Deny: tell the model why (optional)[/]\n\
             [accent]> [/]no\n\
             [dim]Enter denies with this reason (empty: none) · Esc denies without one[/]"
        );
        assert_eq!(view.input, Some(4));
    }
}
