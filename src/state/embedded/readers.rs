//! The embedded store's readers: a few threads of its own that run reads against the database,
//! rather than the runtime's blocking pool. A burst of reads (every request of a busy server
//! reads the store) then keeps a fixed set of threads, not dozens that each start, take memory
//! of their own from the allocator, and linger: measured with 2,000 subscriptions opened 32 at
//! once, the blocking pool grew to 70 threads and the server to 365 MiB (docs/performance.md).

use super::open::{Slot, current, reopening};
use oxp_lambda_core::durable::StateError;
use redb::Database;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Reader threads. Reads are short (a row, a page of a partition), so a few keep up with
/// the writer's group commits.
pub(super) const THREADS: usize = 4;

/// A read, given the database (`None` while it is opened again).
type Job = Box<dyn FnOnce(Option<&Database>) + Send>;

/// The reader threads and their queue; dropping it ends them once the queue is drained.
pub(super) struct Readers {
    jobs: mpsc::Sender<Job>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Readers {
    /// [`THREADS`] readers of the database in `slot`.
    pub(super) fn start(slot: &Slot) -> Result<Self, StateError> {
        let (jobs, queue) = mpsc::channel::<Job>(THREADS * 64);
        let queue = Arc::new(Mutex::new(queue));
        let mut threads = Vec::with_capacity(THREADS);
        for n in 0..THREADS {
            let (slot, queue) = (slot.clone(), queue.clone());
            let thread = std::thread::Builder::new()
                .name(format!("oxp-state-reader-{n}"))
                .spawn(move || {
                    loop {
                        // One thread waits on the queue at a time; the others wait their turn.
                        let job = queue
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .blocking_recv();
                        match job {
                            // Taken for this read alone: the writer may close it to open
                            // it again (`open.rs`), once the reads under way end.
                            Some(job) => job(current(&slot).as_deref()),
                            None => return,
                        }
                    }
                })
                .map_err(|e| StateError(format!("state store: reader: {e}")))?;
            threads.push(thread);
        }
        Ok(Self { jobs, threads })
    }

    /// Runs `f` on a reader thread; its answer.
    pub(super) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T, StateError> + Send + 'static,
    ) -> Result<T, StateError> {
        let gone = || StateError("state store: the readers stopped".into());
        let (done, answer) = oneshot::channel();
        let job: Job = Box::new(move |db| {
            let _ = done.send(db.map_or_else(|| Err(reopening()), f));
        });
        self.jobs.send(job).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    /// Ends the threads (after the reads already queued) and waits for them: the database is
    /// closed once this returns and the writer stopped.
    pub(super) fn stop(self) {
        drop(self.jobs);
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}
