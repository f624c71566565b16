use super::*;
use crate::state::counting::CountingReads;
use crate::work::Settings;
use crate::{Tool, ToolContext, ToolError};
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::registry::Registry;
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_task_created_here_runs_from_the_record_it_wrote_without_reading_it_back() {
    let counting = CountingReads::of(crate::state::embedded::store(None).unwrap(), "mcp-task");
    let store: Arc<dyn StateStore> = counting.clone();
    let add = Tool::builder("Calc.Add", "1.0.0").raw_handler(
        json!({"type": "object"}),
        Some(json!({"type": "integer"})),
        |_: Value, _: ToolContext| async move { Ok::<_, ToolError>(Value::from(3)) },
    );
    let registry = Arc::new(Registry::builder().tool(add).build().unwrap());
    let invoker = Arc::new(Invoker::new(
        registry.clone(),
        oxp_lambda_core::secrets::Secrets::default(),
        None,
        4,
        None,
    ));
    let tools = registry.served(&[], "pins").unwrap();
    let runner = Runner::new(store.clone(), Settings::default());
    let questions = Arc::new(Questions::new(store));
    let tasks = Tasks::new(questions, invoker, &tools, runner.clone());
    super::runs::register(&tasks, &runner);

    let created = tasks
        .create(
            CallContext::default(),
            "Calc_Add",
            Map::new(),
            Answers::default(),
            Offers::forms(),
        )
        .await
        .unwrap();
    let id = created.task.task_id;
    let started = Instant::now();
    while runner.alive(&work_id(&id)).await.unwrap() {
        assert!(started.elapsed() < Duration::from_secs(10), "the run ended");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        counting.reads(),
        0,
        "the run began from the record as written"
    );
    let task = tasks.get(None, &id).await.unwrap();
    assert_eq!(task.task.status, TaskStatus::Completed);
    assert!(tasks.handed.lock().unwrap().is_empty(), "nothing held on");
}
