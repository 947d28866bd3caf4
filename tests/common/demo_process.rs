//! `service serve --demo` as a newcomer runs it: the real binary in a temporary directory, on
//! port 0, with its own SQLite file. Shared by the black-box suite and the browser suite.

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

pub struct Demo {
    pub child: Child,
    /// `demo.json` as the demo wrote it.
    pub summary: Value,
    dir: tempfile::TempDir,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Demo {
    /// What the demo wrote to stderr (its log), for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("err.txt")).unwrap_or_default()
    }
}

pub async fn start_demo() -> Demo {
    start_demo_with(Stdio::null()).await
}

pub async fn start_demo_with(stdout: Stdio) -> Demo {
    let dir = tempfile::tempdir().unwrap();
    let demo_file = dir.path().join("demo.json");
    let child = Command::new(env!("CARGO_BIN_EXE_service"))
        .args(["serve", "--demo", "--demo-file"])
        .arg(&demo_file)
        .env("SERVICE__SERVER__BIND", "127.0.0.1:0")
        .env(
            "SERVICE__DATABASE__URL",
            format!("sqlite://{}/demo.db?mode=rwc", dir.path().display()),
        )
        .env_remove("DATABASE_URL")
        .current_dir(dir.path())
        .stdout(stdout)
        .stderr(std::fs::File::create(dir.path().join("err.txt")).unwrap())
        .spawn()
        .unwrap();
    // Owned by `Demo` from here on, so it is killed and reaped even if the wait below fails.
    let mut demo = Demo {
        child,
        summary: Value::Null,
        dir,
    };
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(&demo_file)
            && let Ok(summary) = serde_json::from_str::<Value>(&text)
        {
            demo.summary = summary;
            return demo;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "demo did not start: {}",
            demo.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
