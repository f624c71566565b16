//! Processes a test starts (the `oxp-lambda` binary, an example, Node or Python services): each
//! in a scratch directory of its own, which is its working directory and holds its state file
//! (`OXP_STATE_PATH`) and its output, so no server of the suite shares a file with another, or
//! with a server a developer left running in the repository. A process is killed when dropped;
//! if the test is failing then, the end of its output is printed with the failure.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The end of a process's output printed with a failing test.
const TAIL_LINES: usize = 60;

/// A directory of its own under the temporary directory, removed when dropped.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// A new, empty directory named for `what`.
    pub fn new(what: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("oxp-test-{what}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `name` inside it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running process; see the module's text.
pub struct Process {
    child: Child,
    name: String,
    output: PathBuf,
    _dir: Scratch,
}

impl Process {
    /// Starts `command` (named `name` in a failure's report) and waits for the first line it
    /// prints to stdout, which it answers; what it prints after that, and its stderr, go to
    /// `output.log` in its directory. Its working directory and `OXP_STATE_PATH` are its own
    /// unless `command` sets them.
    pub fn start(name: &str, mut command: Command) -> (Self, String) {
        let dir = Scratch::new(name);
        let output = dir.join("output.log");
        // Appended to by two writers (its stderr, and the copy of its stdout below).
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&output)
            .unwrap();
        if command.get_current_dir().is_none() {
            command.current_dir(dir.path());
        }
        if !command.get_envs().any(|(k, _)| k == "OXP_STATE_PATH") {
            command.env("OXP_STATE_PATH", dir.join("oxp-state.redb"));
        }
        // The log levels a test reads are its own, not the developer's shell's.
        if !command.get_envs().any(|(k, _)| k == "RUST_LOG") {
            command.env_remove("RUST_LOG");
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log.try_clone().unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{name} did not start: {e}"));
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        // The rest of stdout is kept too (and drained: a process writing to a closed pipe
        // would die of it).
        let mut rest = log;
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut rest));
        let process = Self {
            child,
            name: name.to_owned(),
            output,
            _dir: dir,
        };
        if line.is_empty() {
            panic!("{name} printed nothing:\n{}", process.output());
        }
        (process, line)
    }

    /// Everything it wrote after its first line.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.output).unwrap_or_default()
    }

    /// Its output once it holds `needle`, waiting up to 10 s for it: the server's log lines are
    /// written by a thread of their own, a moment after what they tell happened.
    pub async fn output_holding(&self, needle: &str) -> String {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let output = self.output();
            if output.contains(needle) || std::time::Instant::now() > until {
                return output;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// The file its output goes to.
    pub fn output_path(&self) -> &Path {
        &self.output
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether it has exited (without waiting).
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Sends it SIGTERM and waits for it to exit: whether it exited with 0, and its output.
    pub fn terminate(self) -> (bool, String) {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        self.wait()
    }

    /// Waits for it to exit: whether it exited with 0, and its output.
    pub fn wait(mut self) -> (bool, String) {
        let status = self.child.wait().unwrap();
        (status.success(), self.output())
    }

    /// Sends it SIGKILL and waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            let output = self.output();
            let lines: Vec<&str> = output.lines().collect();
            let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
            eprintln!(
                "--- the last {} lines {} wrote ---\n{}\n--- end of {} ---",
                tail.len(),
                self.name,
                tail.join("\n"),
                self.name
            );
        }
    }
}

/// The `oxp-lambda` binary as a local server on a free loopback port, outside Lambda, with
/// `env`: the process and its base URL (`http://127.0.0.1:PORT`).
pub fn start_binary(exe: &str, env: &[(&str, &str)]) -> (Process, String) {
    let mut command = Command::new(exe);
    command
        .args(["--port", "0"])
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .envs(env.iter().copied());
    let (process, line) = Process::start("oxp-lambda", command);
    let base = line
        .trim()
        .strip_prefix("OXP server listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}\n{}", process.output()))
        .to_owned();
    (process, base)
}
