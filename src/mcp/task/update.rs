//! `tasks/update`: a client's answers to the questions its task waits on, into the one
//! question service (where the run waiting on each, in this process or another, reads it),
//! then out of the task's record; a task that parked waiting for them runs again.

use super::talk::task_question;
use super::{Tasks, unavailable, work_id};
use crate::mcp::questions::read_response;
use crate::work::questions::Refused as NotAnswered;
use oxp_lambda_core::durable::StateError;
use rmcp::ErrorData;
use rmcp::model::{InputResponses, TaskStatus};
use serde_json::Value;
use std::sync::atomic::Ordering;

impl Tasks {
    /// `tasks/update`: answers to the questions the task waits on, any of them (other keys are
    /// ignored); the task works again once none is left open.
    pub(crate) async fn answer(
        &self,
        subject: Option<&str>,
        id: &str,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let record = self.owned(subject, id).await?;
        // Every response to an open question is read first: a malformed one changes nothing.
        let answered = record
            .inputs
            .iter()
            .filter_map(|(key, (seq, _))| Some((key, *seq, responses.get(key)?)))
            .map(|(key, seq, response)| Ok((key.clone(), seq, read_response(response)?)))
            .collect::<Result<Vec<_>, ErrorData>>()?;
        // Each into the one question service (where the run waiting on it, in this process or
        // another, reads it), then out of the record's open questions.
        let mut taken = Vec::with_capacity(answered.len());
        for (key, seq, response) in answered {
            let call = task_question(id, seq);
            let names_key = |asked: &Value| asked["key"].as_str() == Some(key.as_str());
            let owner = Some(record.owner.as_str());
            match self
                .questions
                .answer_call(&call, owner, names_key, response)
                .await
            {
                Ok(()) | Err(NotAnswered::Answered) => taken.push((key, seq)),
                Err(NotAnswered::Unknown | NotAnswered::Mismatch) => {}
                Err(NotAnswered::Unavailable) => {
                    return Err(unavailable(StateError("an answer not recorded".into())));
                }
            }
        }
        if taken.is_empty() {
            return Ok(());
        }
        let resumed = std::sync::atomic::AtomicBool::new(false);
        let written = self
            .store
            .update(id, |r| {
                // Said afresh by each try: one whose write lost may have taken `parked`.
                resumed.store(false, Ordering::Relaxed);
                if r.status != TaskStatus::InputRequired {
                    return false;
                }
                let mut changed = false;
                for (key, seq) in &taken {
                    if r.inputs.get(key).is_some_and(|(s, _)| s == seq) {
                        r.inputs.remove(key);
                        changed = true;
                    }
                }
                if changed && r.inputs.is_empty() {
                    r.status = TaskStatus::Working;
                    r.message = Some("The tool is running".into());
                    resumed.store(std::mem::take(&mut r.parked), Ordering::Relaxed);
                }
                changed
            })
            .await
            .map_err(unavailable)?;
        // No run waits for this answer (it was parked): its work runs again.
        if written.is_some()
            && resumed.load(Ordering::Relaxed)
            && let Err(e) = self.runner.wake(&work_id(id)).await
        {
            tracing::error!(target: "oxp::mcp", error = %e, "answered task not resumed");
            self.fail(id, "The task could not be resumed; call the tool again")
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }
}
