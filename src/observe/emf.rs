//! Metrics in CloudWatch Embedded Metric Format (feature `metrics`): written to stdout after
//! each Lambda invocation.

use super::MetricsConfig;
use metrics_cloudwatch_embedded::Collector;
use std::sync::OnceLock;

static COLLECTOR: OnceLock<&'static Collector> = OnceLock::new();

/// The values of a histogram the collector holds between two flushes (its
/// `MAX_HISTOGRAM_VALUES`, an EMF document's bound per metric): past them it drops each one with
/// an error line, which under a local server's load was a line per call.
const UNFLUSHED_VALUES: u32 = 100;

/// Installs the EMF recorder (once per process; later calls do nothing). Returns whether
/// metrics are recorded.
pub(crate) fn install(config: &MetricsConfig) -> bool {
    if !config.enabled {
        return false;
    }
    if COLLECTOR.get().is_some() {
        return true;
    }
    let built = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(config.namespace.clone())
        .with_dimension("service", config.service.clone())
        .init();
    match built {
        Ok(collector) => {
            metrics::describe_histogram!(
                oxp_lambda_core::invoke::metrics::DURATION,
                metrics::Unit::Milliseconds,
                "time in the tool"
            );
            metrics::describe_counter!(
                oxp_lambda_core::invoke::metrics::CALLS,
                metrics::Unit::Count,
                "calls"
            );
            metrics::describe_counter!(
                oxp_lambda_core::invoke::metrics::ERRORS,
                metrics::Unit::Count,
                "calls that did not succeed"
            );
            metrics::describe_counter!(
                oxp_lambda_core::invoke::metrics::COLD_STARTS,
                metrics::Unit::Count,
                "cold starts"
            );
            oxp_lambda_core::invoke::metrics::bound_unflushed(UNFLUSHED_VALUES);
            let _ = COLLECTOR.set(collector);
            true
        }
        Err(e) => {
            // Another recorder is installed (a program of its own): leave it be.
            tracing::warn!(error = %e, "EMF metrics not installed");
            false
        }
    }
}

/// Writes what was recorded since the last flush to stdout, one EMF document per line.
pub(crate) fn flush() {
    if let Some(collector) = COLLECTOR.get() {
        // Before the collector drains them: a value recorded meanwhile counts against the
        // next flush's room, so the collector never holds more than it keeps.
        oxp_lambda_core::invoke::metrics::flushed();
        let mut documents = Vec::with_capacity(4096);
        let written = collector
            .flush(&mut documents)
            .and_then(|()| write_documents(&documents, &mut std::io::stdout().lock()));
        if let Err(e) = written {
            tracing::warn!(error = %e, "EMF metrics not written");
        }
    }
}

/// `documents` (EMF lines) written to `out` one whole line per write. The collector serializes
/// a document in small pieces, and stdout's line buffer holds 1 KB: a document (2-3 KB with a
/// histogram's 100 values) went out in parts, and where stdout and stderr share a file or a
/// pipe (`2>&1`, a service's journal, Lambda's log) a log line written meanwhile landed inside
/// it; the document no longer parsed, and the calls it counted were lost. One write of a line
/// under the pipe's atomic size (4 KB) is never split.
fn write_documents(documents: &[u8], out: &mut impl std::io::Write) -> std::io::Result<()> {
    for document in documents.split_inclusive(|b| *b == b'\n') {
        out.write_all(document)?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::write_documents;
    use std::io::{LineWriter, Write};

    /// Each write that reaches the output, as stdout's writer makes them.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn each_document_reaches_stdout_whole_in_one_write() {
        let values: Vec<f64> = (1..=100).map(|i| f64::from(i) / 7.0).collect();
        let document =
            serde_json::json!({"_aws": {"Timestamp": 1}, "duration": values}).to_string();
        assert!(document.len() > 1024, "larger than stdout's line buffer");
        let documents = format!("{document}\n{{\"calls\":300}}\n");
        // As the collector wrote them: in pieces, into a 1 KB line buffer as stdout's is.
        let mut pieces = LineWriter::with_capacity(1024, Writes::default());
        for piece in documents.as_bytes().chunks(64) {
            pieces.write_all(piece).unwrap();
        }
        pieces.flush().unwrap();
        let parts = &pieces.get_ref().0;
        assert!(
            parts.iter().any(|w| !w.ends_with(b"\n")),
            "a document went out in parts"
        );
        // Now: a line a write.
        let mut out = LineWriter::with_capacity(1024, Writes::default());
        write_documents(documents.as_bytes(), &mut out).unwrap();
        let writes = &out.get_ref().0;
        assert_eq!(writes.len(), 2, "one write each");
        assert_eq!(writes[0], format!("{document}\n").into_bytes());
        assert_eq!(writes[1], b"{\"calls\":300}\n");
    }
}
